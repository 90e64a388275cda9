package crawl

import (
	"context"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A site with endless work and one with a little share two slots: the
// little one finishes while the big one has taken about as many slots,
// not all of them.
func TestShareIsFair(t *testing.T) {
	s := NewShare(2, 1e9)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var big atomic.Int64
	var wg sync.WaitGroup
	for range 4 { // the big site's fetchers, never out of work
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s.acquire(ctx) == nil {
				time.Sleep(200 * time.Microsecond)
				big.Add(1)
				s.release()
			}
		}()
	}
	time.Sleep(20 * time.Millisecond) // the big site is in full swing first
	const smallWork = 200
	var left atomic.Int64
	left.Store(smallWork)
	var small sync.WaitGroup
	startBig := big.Load()
	for range 4 {
		small.Add(1)
		go func() {
			defer small.Done()
			for left.Add(-1) >= 0 {
				if err := s.acquire(ctx); err != nil {
					return
				}
				time.Sleep(200 * time.Microsecond)
				s.release()
			}
		}()
	}
	small.Wait()
	tookBig := big.Load() - startBig
	cancel()
	wg.Wait()
	t.Logf("while the small site fetched %d pages, the big one fetched %d", smallWork, tookBig)
	if tookBig > 3*smallWork {
		t.Errorf("the big site took %d slots to the small one's %d: not a fair share", tookBig, smallWork)
	}
}

func TestSiteOwns(t *testing.T) {
	o, _ := ParseOrigin("http://example.org")
	main := Site{URL: "http://example.org", Origin: o, Exclude: &PathSet{}}
	main.Exclude.Set([]string{"/site2/"})
	sub := Site{URL: "http://example.org/site2", Origin: o, Within: "/site2/"}
	single := Site{URL: "http://example.org", Origin: o}
	for _, c := range []struct {
		u                 string
		main, sub, single bool
	}{
		{"http://example.org/", true, false, true},
		{"http://example.org/about/", true, false, true},
		{"http://example.org/site2", false, true, true},
		{"http://example.org/site2/2026/01/01/post/", false, true, true},
		{"http://example.org/site2x/", true, false, true},
		{"http://other.example/site2/", false, false, false},
	} {
		u, _ := url.Parse(c.u)
		if main.Owns(u) != c.main || sub.Owns(u) != c.sub || single.Owns(u) != c.single {
			t.Errorf("%s: main %v sub %v single %v, want %v %v %v", c.u, main.Owns(u), sub.Owns(u), single.Owns(u), c.main, c.sub, c.single)
		}
	}
}
