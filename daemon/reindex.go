package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/crawl"
)

var _ api.Reindexer = (*Daemon)(nil)

// Reindex starts an index pass in the background and returns at once. The
// pass outlives the request that asked for it, but not the daemon: a
// shutdown cancels it like any other pass. An error wrapping
// ErrCrawlRunning (and api.ErrAlreadyRunning) means a pass is running.
func (d *Daemon) Reindex(ctx context.Context) error {
	if d.Crawler.Running() {
		return fmt.Errorf("%w (%w)", crawl.ErrCrawlRunning, api.ErrAlreadyRunning)
	}
	bg := d.lifetime(ctx)
	go func() {
		run, err := d.Index(bg, crawl.IndexOptions{Kind: "admin"})
		if err != nil {
			if errors.Is(err, crawl.ErrCrawlRunning) {
				d.Log.Info("Reindex not started", "reason", err.Error())
				return
			}
			d.Log.Error("Reindex failed", "error", err)
			return
		}
		d.Log.Info("Reindex finished", "run", run.ID, "indexed", run.Indexed, "errors", run.Errors)
		// As after a scheduled pass (sitePass): the pass dropped the
		// changed pages' texts from the caches, and a first one filled an
		// index that was empty when it was warmed. The admin's "reindex
		// now" that won the race with the initial pass left the first
		// visitors to read every text themselves. On a network the pass
		// was every site's.
		for _, s := range d.allSites() {
			d.warmSite(bg, s)
		}
		if s, err := d.Store.Stats(bg); err == nil {
			var lag int64
			if !s.OldestFetch.IsZero() {
				lag = int64(d.Store.Now().Sub(s.OldestFetch).Seconds())
			}
			_ = d.sampleIndex(bg, s, lag, true)
		}
	}()
	return nil
}
