package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/askwp/askwpd/crawl"
)

// schedule starts the cron jobs: an incremental pass every few minutes
// and a nightly full reconciliation. Recover sits inside
// SkipIfStillRunning: the other order leaves a job that once panicked
// locked forever. Passes never overlap in any case (the crawler refuses a second), and an
// interrupted pass is resumed at once.
func (d *Daemon) schedule(ctx context.Context) *cron.Cron {
	if d.Config.Schedule.Disabled {
		return nil
	}
	logger := cron.PrintfLogger(slogPrintf{d})
	c := cron.New(cron.WithChain(cron.SkipIfStillRunning(logger), cron.Recover(logger)))
	entries := map[string]cron.EntryID{}
	add := func(spec, kind string, opt crawl.IndexOptions) {
		if spec == "" {
			return
		}
		id, err := c.AddFunc(spec, func() { d.runPass(ctx, opt) })
		if err != nil {
			d.Log.Error("Bad schedule; job disabled", "kind", kind, "spec", spec, "error", err)
			return
		}
		entries[kind] = id
	}
	add(d.Config.Schedule.Incremental, "incremental", crawl.IndexOptions{Kind: "incremental", Incremental: true})
	add(d.Config.Schedule.Nightly, "nightly", crawl.IndexOptions{Kind: "nightly", Full: true})
	// The question log's retention, applied hourly: a question is kept
	// at most an hour past it.
	if id, err := c.AddFunc("@hourly", func() { d.purgeQuestions(ctx) }); err == nil {
		entries["purge_questions"] = id
	}
	d.scheduleSites(ctx, c)
	d.cronMu.Lock()
	d.cron, d.entries = c, entries
	d.cronMu.Unlock()
	c.Start()
	return c
}

// nextRuns says when the scheduled passes run next (zero when not
// scheduled).
func (d *Daemon) nextRuns() (incremental, nightly time.Time) {
	d.cronMu.Lock()
	defer d.cronMu.Unlock()
	if d.cron == nil {
		return
	}
	return d.cron.Entry(d.entries["incremental"]).Next, d.cron.Entry(d.entries["nightly"]).Next
}

type slogPrintf struct{ d *Daemon }

func (l slogPrintf) Printf(format string, args ...any) {
	l.d.Log.Info("cron: " + fmt.Sprintf(format, args...))
}
