package crawl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/store"
)

// One pass at a time across processes: the daemon's scheduled pass and an
// `askwpd index` beside it would otherwise both resume the same
// interrupted pass. The pass holds the store's "crawl" lease (passMu
// keeps two passes of one process apart). It replaces the flock on
// state_dir/crawl.lock that did this before: the lease names its holder,
// so a refused pass can say who runs and since when, and it needs no
// state dir, only the store.
//
// A holder renews the lease every freshness.PassLeaseTTL/3. A holder that is
// killed stops renewing: on its own host the next pass sees that its
// pid is gone and takes the lease at once; anywhere else, or if the pid
// was reused, the lease lapses within freshness.PassLeaseTTL.
const passLease = "crawl"

// holdPass takes the crawl lease for a pass described by what, and
// renews it until release is called. When the lease is lost (this
// process stalled past its expiry and another took it), lost is closed,
// and the pass must stop. It returns an error wrapping ErrCrawlRunning,
// naming the holder, when another process runs a pass.
func (c *Crawler) holdPass(ctx context.Context, what string) (release func(), lost <-chan struct{}, err error) {
	host, _ := os.Hostname()
	var b [8]byte
	_, _ = rand.Read(b[:])
	l := store.Lease{Name: passLease, Holder: hex.EncodeToString(b[:]), PID: os.Getpid(), Host: host, What: what}
	unreleased, _ := c.unreleased.Load().(string)
	gone := func(h store.Lease) bool { return h.Holder == unreleased || holderGone(h) }
	if _, err := c.Store.AcquireLease(ctx, l, freshness.PassLeaseTTL, gone); err != nil {
		var held *store.LeaseHeldError
		if errors.As(err, &held) {
			return nil, nil, fmt.Errorf("%w: %w", ErrCrawlRunning, held)
		}
		return nil, nil, fmt.Errorf("crawl lease: %w", err)
	}
	stop, done, lostc := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(freshness.PassLeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			_, err := c.Store.RenewLease(context.WithoutCancel(ctx), passLease, l.Holder, freshness.PassLeaseTTL)
			if errors.Is(err, store.ErrLeaseLost) {
				c.Log.Error("The crawl lease was taken over; stopping the pass", "error", err)
				close(lostc)
				return
			}
			if err != nil {
				// Retried at the next tick, well before the lease lapses.
				c.Log.Warn("Unable to renew the crawl lease", "error", err)
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		if err := c.Store.ReleaseLease(context.WithoutCancel(ctx), passLease, l.Holder); err != nil {
			// A full disk refuses even this delete. The lease is still
			// this process's to take back; others wait for it to lapse.
			c.unreleased.Store(l.Holder)
			c.Log.Warn("Unable to release the crawl lease; it lapses by itself", "error", err)
		}
	}, lostc, nil
}

// holderGone says whether a lease's holder was a process of this host
// that has exited.
func holderGone(l store.Lease) bool {
	host, err := os.Hostname()
	if err != nil || l.Host != host || l.PID <= 0 {
		return false
	}
	return errors.Is(syscall.Kill(l.PID, 0), syscall.ESRCH)
}
