package crawl

import (
	"context"

	"golang.org/x/time/rate"
)

// Share is the crawl budget a network's crawlers draw on together: the
// fetches in flight at the web server and their rate. A site's crawler
// takes a slot for each fetch, so twenty sites crawling at once put no
// more load on PHP than one site would.
//
// Fairness comes from the order of waiting: a channel hands its slots to
// blocked senders first come, first served, and each crawler has at most
// its own Concurrency fetchers waiting, so a site with 10,000 pages gets
// a slot no more often than a site with 10 while both have work.
type Share struct {
	slots   chan struct{}
	limiter *rate.Limiter
}

// NewShare returns a budget of concurrency fetches in flight at most
// ratePerSec per second, across every crawler given it.
func NewShare(concurrency int, ratePerSec float64) *Share {
	concurrency = max(1, concurrency)
	return &Share{slots: make(chan struct{}, concurrency), limiter: rate.NewLimiter(rate.Limit(ratePerSec), concurrency)}
}

// Join makes c draw on the share: its fetch rate becomes the network's.
func (s *Share) Join(c *Crawler) {
	c.share = s
	c.Limiter = s.limiter
}

func (s *Share) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Share) release() { <-s.slots }
