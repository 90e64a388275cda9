package crawl

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A site that answers 429 or 503 with Retry-After is asking for a pause,
// not reporting a broken page: a crawl that went on at its rate would get
// the same answer for every URL until the breaker stopped the pass, and
// the site's pages would wait hours for their retry time. So the crawl
// pauses the host for the time asked and tries the URL again.

const (
	// DefaultMaxRetryAfter caps the pause a Retry-After can impose on a
	// pass. A site asking for longer is not coming back within the pass:
	// its URLs fail at once (throttled) and wait for their retry time,
	// rather than the pass holding the crawl lease for an hour.
	DefaultMaxRetryAfter = time.Minute
	// maxThrottleRetries bounds the retries of one URL: a site that keeps
	// asking for pauses ends as a throttled fault, which the breaker
	// counts.
	maxThrottleRetries = 3
)

// throttle is the pause the site asked for. The fetcher talks to one
// origin, so one pause covers the host.
type throttle struct {
	mu    sync.Mutex
	until time.Time // no request before this
	asked time.Duration
	since time.Time // when the latest pause began
	count int64     // pauses asked for since the start
}

// ThrottleState is what status shows of the site's latest request to
// slow down: when it came, how long it asked for, and until when.
type ThrottleState struct {
	Since      time.Time     `json:"since"`
	Until      time.Time     `json:"until"`
	RetryAfter time.Duration `json:"retry_after_ns"`
	Count      int64         `json:"count"`
}

// pause holds requests until now+d (a later pause already set stands).
func (th *throttle) pause(now time.Time, d time.Duration) {
	th.mu.Lock()
	defer th.mu.Unlock()
	if u := now.Add(d); u.After(th.until) {
		th.until = u
	}
	th.asked, th.since = d, now
	th.count++
}

// remaining is how long requests must still wait.
func (th *throttle) remaining(now time.Time) time.Duration {
	th.mu.Lock()
	defer th.mu.Unlock()
	return max(0, th.until.Sub(now))
}

// wait blocks until the pause is over or ctx is done.
func (th *throttle) wait(ctx context.Context) error {
	for {
		d := th.remaining(time.Now())
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Throttled returns the site's latest request to slow down, and false
// when it never asked.
func (c *Crawler) Throttled() (ThrottleState, bool) {
	th := &c.throttle
	th.mu.Lock()
	defer th.mu.Unlock()
	if th.count == 0 {
		return ThrottleState{}, false
	}
	return ThrottleState{Since: th.since, Until: th.until, RetryAfter: th.asked, Count: th.count}, true
}

func (c *Crawler) maxRetryAfter() time.Duration {
	if c.Opts.MaxRetryAfter > 0 {
		return c.Opts.MaxRetryAfter
	}
	return DefaultMaxRetryAfter
}

// getPaced fetches u, waiting out any pause the site asked for first.
// A 429 or 503 with a Retry-After within the cap pauses the host and is
// retried, up to maxThrottleRetries times; beyond the cap, or while a
// pause beyond it runs, the URL fails at once as throttled.
func (c *Crawler) getPaced(ctx context.Context, u string, cond Conditional) (*Page, error) {
	capWait := c.maxRetryAfter()
	for attempt := 0; ; attempt++ {
		if left := c.throttle.remaining(time.Now()); left > capWait {
			return nil, fmt.Errorf("%w: %s not fetched: the site asked for a pause of %v more, past the %v a pass waits",
				ErrThrottled, u, left.Round(time.Second), capWait)
		}
		if err := c.throttle.wait(ctx); err != nil {
			return nil, err
		}
		page, err := c.Fetcher.Get(ctx, u, cond)
		if page == nil || page.RetryAfter <= 0 || err == nil {
			return page, err
		}
		c.throttle.pause(time.Now(), page.RetryAfter)
		if page.RetryAfter > capWait {
			c.Log.Warn("The site asked for a pause longer than a pass waits; its pages wait for their retry time",
				"url", u, "status", page.Status, "retry_after", page.RetryAfter.String(), "max", capWait.String())
			return page, fmt.Errorf("%w (Retry-After %v)", err, page.RetryAfter)
		}
		if attempt >= maxThrottleRetries {
			return page, fmt.Errorf("%w (still asked to wait after %d retries)", err, attempt)
		}
		c.Log.Info("The site asked the crawl to wait; pausing", "url", u, "status", page.Status,
			"retry_after", page.RetryAfter.String(), "attempt", attempt+1)
	}
}

// retryAfter reads a 429 or 503's Retry-After: delay-seconds or an HTTP
// date. It returns 0 for any other status, an absent or unreadable value,
// or a date already past.
func retryAfter(status int, v string, now time.Time) time.Duration {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return 0
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		// A day is as good as forever to a pass, and keeps the product
		// from overflowing.
		return time.Duration(min(n, 86400)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}
