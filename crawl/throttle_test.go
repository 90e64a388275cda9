package crawl

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// throttlingSite answers the first refusals requests with status and a
// Retry-After of retry, then 200, and records when each request came.
type throttlingSite struct {
	srv  *httptest.Server
	mu   sync.Mutex
	at   []time.Time
	left int
}

func newThrottlingSite(t *testing.T, status, refusals int, retry string) *throttlingSite {
	ts := &throttlingSite{left: refusals}
	ts.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.mu.Lock()
		ts.at = append(ts.at, time.Now())
		refuse := ts.left > 0
		ts.left--
		ts.mu.Unlock()
		if refuse {
			w.Header().Set("Retry-After", retry)
			http.Error(w, "slow down", status)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html><body><p>fine</p></body></html>")
	}))
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *throttlingSite) times() []time.Time {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]time.Time(nil), ts.at...)
}

func throttleCrawler(t *testing.T, site string, maxWait time.Duration) *Crawler {
	t.Helper()
	o, err := ParseOrigin(site)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &Crawler{Opts: Options{MaxRetryAfter: maxWait}, Log: log, Fetcher: NewFetcher(o, 5*time.Second, 1<<20, "askwpd-test", log)}
}

// TestThrottle_RetryAfter: a 429 or 503 with Retry-After pauses the host
// for at least the time asked, then the same URL is fetched again; a
// site that keeps asking ends as a bounded number of retries, a 429 as
// a throttled site fault.
func TestThrottle_RetryAfter(t *testing.T) {
	ctx := context.Background()
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		ts := newThrottlingSite(t, status, 1, "1")
		c := throttleCrawler(t, ts.srv.URL, 0)
		page, err := c.getPaced(ctx, ts.srv.URL+"/p/", Conditional{})
		at := ts.times()
		if err != nil || page == nil || page.Status != 200 || len(at) != 2 {
			t.Fatalf("%d then 200: page %+v, err %v, %d requests; want the retry's 200", status, page, err, len(at))
		}
		gap := at[1].Sub(at[0])
		t.Logf("%d with Retry-After: 1: retried after %v", status, gap.Round(time.Millisecond))
		if gap < time.Second {
			t.Errorf("%d with Retry-After: 1: retried after %v, want >= 1s", status, gap)
		}
		st, ok := c.Throttled()
		if !ok || st.RetryAfter != time.Second || st.Count != 1 {
			t.Errorf("throttle state after one pause: %+v %v", st, ok)
		}
	}

	// The site never stops asking: maxThrottleRetries retries, then a
	// throttled fault that the breaker counts.
	ts := newThrottlingSite(t, http.StatusTooManyRequests, 100, "0")
	c := throttleCrawler(t, ts.srv.URL, 0)
	_, err := c.getPaced(ctx, ts.srv.URL+"/p/", Conditional{})
	if n := len(ts.times()); n != 1 || ErrorClass(err) != "throttled" || !SiteFault(err) {
		t.Errorf("429 without a usable Retry-After: %d requests, class %q (%v); want 1 request, throttled, a site fault", n, ErrorClass(err), err)
	}
	ts = newThrottlingSite(t, http.StatusTooManyRequests, 100, "1")
	c = throttleCrawler(t, ts.srv.URL, 0)
	start := time.Now()
	_, err = c.getPaced(ctx, ts.srv.URL+"/p/", Conditional{})
	n := len(ts.times())
	t.Logf("429 for ever: %d requests in %v, %v", n, time.Since(start).Round(time.Millisecond), err)
	if n != maxThrottleRetries+1 || ErrorClass(err) != "throttled" || !SiteFault(err) {
		t.Errorf("429 for ever: %d requests, class %q; want %d and throttled", n, ErrorClass(err), maxThrottleRetries+1)
	}
}

// TestThrottle_PastTheCap: a pause longer than the cap is not waited for:
// the URL fails at once, and so do the next ones while the pause runs,
// without a request.
func TestThrottle_PastTheCap(t *testing.T) {
	ctx := context.Background()
	ts := newThrottlingSite(t, http.StatusServiceUnavailable, 1, "3600")
	c := throttleCrawler(t, ts.srv.URL, 2*time.Second)
	start := time.Now()
	_, err := c.getPaced(ctx, ts.srv.URL+"/p/", Conditional{})
	if !errors.Is(err, ErrServer) || !SiteFault(err) {
		t.Errorf("503 with Retry-After: 3600: %v, want a server error", err)
	}
	_, err2 := c.getPaced(ctx, ts.srv.URL+"/q/", Conditional{})
	took := time.Since(start)
	if !errors.Is(err2, ErrThrottled) {
		t.Errorf("next URL during an hour's pause: %v, want throttled at once", err2)
	}
	if n := len(ts.times()); n != 1 || took > time.Second {
		t.Errorf("an hour's pause with a 2s cap: %d requests in %v; want 1, at once", n, took)
	}
	if st, ok := c.Throttled(); !ok || st.Until.Sub(start) < 59*time.Minute {
		t.Errorf("throttle state: %+v", st)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		status int
		v      string
		want   time.Duration
	}{
		{429, "3", 3 * time.Second},
		{503, " 120 ", 2 * time.Minute},
		{503, now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{503, now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{429, "-1", 0},
		{429, "soon", 0},
		{429, "99999999999", 24 * time.Hour},
		{500, "3", 0},
		{200, "3", 0},
	} {
		if got := retryAfter(tc.status, tc.v, now); got != tc.want {
			t.Errorf("retryAfter(%d, %q) = %v, want %v", tc.status, tc.v, got, tc.want)
		}
	}
}
