package daemon

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/insights"
)

// openQuestions starts the question log, in the main site's store; it
// sits between callers and the sites' tools and agents (compose.go).
func (d *Daemon) openQuestions(site string) {
	d.Questions = insights.Open(d.Store, insights.Options{
		Retention: time.Duration(d.Config.Insights.RetentionDays) * 24 * time.Hour,
		Site:      site, Synonyms: d.synonyms, Log: d.Log,
	})
	d.obs().reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "askwpd_questions_logged_total", Help: "Visitor questions written to the question log.",
		}, func() float64 { return float64(d.Questions.Logged()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "askwpd_questions_dropped_total", Help: "Visitor questions not logged because the log's queue was full or the store refused them.",
		}, func() float64 { return float64(d.Questions.Dropped()) }),
	)
}

// purgeQuestions deletes the questions older than the retention (all of
// them when the log is off).
func (d *Daemon) purgeQuestions(ctx context.Context) {
	n, err := d.Questions.Purge(ctx)
	if err != nil {
		d.Log.Warn("Unable to purge the question log", "error", err)
		return
	}
	if n > 0 {
		d.Log.Info("Purged the question log", "questions", n, "retention_days", d.Config.Insights.RetentionDays)
	}
}

// Insights is the gap report.
func (d *Daemon) Insights(ctx context.Context, opt insights.ReportOptions) (*insights.Report, error) {
	return d.Questions.Report(ctx, opt)
}

// Feedback records a visitor's vote on a chat turn.
func (d *Daemon) Feedback(ctx context.Context, turnID, vote, comment string) error {
	return d.Questions.Vote(ctx, turnID, vote, comment)
}

var _ api.Insighter = (*Daemon)(nil)
