package daemon

import (
	"context"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

var _ api.EventReceiver = (*Daemon)(nil)

// WebhookSecret is the shared secret the shim signs events with, created
// in the state dir on first use.
func (d *Daemon) WebhookSecret() ([]byte, error) {
	d.secretMu.Lock()
	defer d.secretMu.Unlock()
	if d.secret == nil {
		s, err := EnsureSecret(d.Config.StateDir, "webhook.secret")
		if err != nil {
			return nil, err
		}
		d.secret = []byte(s)
	}
	return d.secret, nil
}

// ReceiveEvents stores a batch of verified events for the crawler to
// apply; on a network, for the crawler of the site each names.
func (d *Daemon) ReceiveEvents(ctx context.Context, evs []*store.Event) (int, error) {
	if d.cluster != nil {
		// For the leader, through the cluster's table; the shim has
		// written these there already, and this is its ping.
		return d.cluster.node.Receive(ctx, evs)
	}
	return d.receiveEvents(ctx, tool.SiteOf(ctx), evs)
}

// freshness fills the queue and schedule state of /v1/status.
func (d *Daemon) freshness(ctx context.Context) (*api.Freshness, error) {
	es, err := d.Store.EventStats(ctx, crawl.MaxEventAttempts)
	if err != nil {
		return nil, err
	}
	fp, err := d.Store.FrontierPending(ctx)
	if err != nil {
		return nil, err
	}
	f := &api.Freshness{
		PendingEvents: es.Pending, FailedEvents: es.Failed, OldestPendingEvent: es.OldestPending,
		LastEventApplied: es.LastApplied, LastEventLagMS: es.LastLag.Milliseconds(), FrontierPending: fp,
	}
	f.RecrawlPending, _ = d.Store.GetMeta(ctx, "recrawl_pending")
	f.NextIncremental, f.NextNightly = d.nextRuns()
	return f, nil
}
