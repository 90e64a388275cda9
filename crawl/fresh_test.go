package crawl

import (
	"testing"
	"time"

	"golang.org/x/time/rate"
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
	if !f.take("/a/", t0.Add(10*time.Second+freshAfter)) {
		t.Errorf("/a/ after freshAfter, with tokens back: paced")
	}
}
