package crawl

import (
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"

	"github.com/askwp/askwpd/freshness"
)

// A page's first re-render in a while goes out at once while tokens last;
// its repeats, and renders past the burst, wait for the event rate.
func TestFreshRenders(t *testing.T) {
	f := freshRenders{limiter: rate.NewLimiter(0.4, 3)}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, u := range []string{"/a/", "/b/", "/c/"} {
		if !f.take(u, t0) {
			t.Fatalf("render %d (%s), within the burst: paced", i, u)
		}
	}
	if f.take("/a/", t0.Add(time.Second)) {
		t.Errorf("a repeat of /a/ a second later went out at once")
	}
	if f.take("/d/", t0.Add(time.Second)) {
		t.Errorf("a fourth page past a burst of three went out at once")
	}
	// 10 s later a token has come back, but /a/ was re-rendered 9 s ago.
	if f.take("/a/", t0.Add(10*time.Second)) {
		t.Errorf("/a/ again, 9 s after its last re-render, went out at once")
	}
	if !f.take("/a/", t0.Add(10*time.Second+freshness.RerenderFreshFor)) {
		t.Errorf("/a/ after freshness.RerenderFreshFor, with tokens back: paced")
	}
}

// TestFreshness_Rules checks crawl's freshness rules on the bubble's
// clock: a page re-rendered is fresh for freshness.RerenderFreshFor and
// no longer; a refresh covers a change only when it began more than
// freshness.CoverSlack after it; a fetch sees a change from the database's
// next whole second; a failing URL's retries wait from RetryFirst,
// doubling, up to RetryMax.
func TestFreshness_Rules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := freshRenders{limiter: rate.NewLimiter(rate.Inf, 1)}
		if !f.take("/a/", time.Now()) {
			t.Fatal("a first re-render was paced")
		}
		time.Sleep(freshness.RerenderFreshFor - time.Millisecond)
		if f.take("/a/", time.Now()) {
			t.Errorf("re-rendered again %v after the last one, within RerenderFreshFor", freshness.RerenderFreshFor-time.Millisecond)
		}
		// The repeat just now is a re-render too: a full window after it.
		time.Sleep(freshness.RerenderFreshFor)
		if !f.take("/a/", time.Now()) {
			t.Errorf("not re-rendered at once %v after the last one", freshness.RerenderFreshFor)
		}

		var r refreshLog
		changed := time.Now()
		time.Sleep(freshness.CoverSlack)
		r.note(1, time.Now())
		if r.covers(1, changed) {
			t.Errorf("a refresh begun CoverSlack after a change covers it")
		}
		time.Sleep(time.Millisecond)
		r.note(1, time.Now())
		if !r.covers(1, changed) {
			t.Errorf("a refresh begun past CoverSlack after a change does not cover it")
		}

		modified := time.Now().Truncate(time.Second)
		if fetchedAfter(modified.Add(freshness.DatabaseGrain-time.Nanosecond), modified) ||
			!fetchedAfter(modified.Add(freshness.DatabaseGrain), modified) {
			t.Errorf("a fetch within the database's second counts as after the change, or one past it does not")
		}
	})
	want := freshness.RetryFirst
	for attempt := 1; attempt <= 12; attempt++ {
		if got := backoff(attempt); got != min(want, freshness.RetryMax) {
			t.Errorf("backoff(%d) = %v, want %v", attempt, got, min(want, freshness.RetryMax))
		}
		want *= 2
	}
}
