package crawl

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/askwp/askwpd/freshness"
)

const (
	// freshBurst is how many pages' first re-renders in a while go out at
	// once, at the crawl's concurrency. A site owner's bulk edit, or the
	// backlog the shim kept while the daemon was away, arrives as one
	// batch of distinct posts: paced from the first page at the default
	// rate, 35 changed posts took nine seconds to show. The bucket refills
	// at a tenth of the event rate, so a long stream of distinct posts is
	// still paced near the event rate.
	freshBurst = 50
	// freshMax bounds the pages remembered.
	freshMax = 10000
)

// freshRenders decides which event re-renders skip the event rate.
type freshRenders struct {
	limiter *rate.Limiter
	mu      sync.Mutex
	last    map[string]time.Time // page → its last re-render
}

// take reports whether the re-render of u at now goes out at once: u was
// not re-rendered within freshness.RerenderFreshFor and a token was free.
// Either way it notes now as u's last re-render.
func (f *freshRenders) take(u string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	at, seen := f.last[u]
	if f.last == nil || len(f.last) >= freshMax {
		f.prune(now)
	}
	f.last[u] = now
	return (!seen || now.Sub(at) >= freshness.RerenderFreshFor) && f.limiter.AllowN(now, 1)
}

// prune forgets the pages past freshness.RerenderFreshFor, or all of
// them when that is not enough.
func (f *freshRenders) prune(now time.Time) {
	for u, at := range f.last {
		if now.Sub(at) >= freshness.RerenderFreshFor {
			delete(f.last, u)
		}
	}
	if f.last == nil || len(f.last) >= freshMax {
		f.last = map[string]time.Time{}
	}
}

// refreshLog remembers when each post's last refresh on an event or the
// catch-up began, for this process's life: an event whose change came
// before it (changedAt) needs no refresh of its own.
type refreshLog struct {
	mu sync.Mutex
	at map[int64]time.Time
}

func (r *refreshLog) note(postID int64, began time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil || len(r.at) >= freshMax {
		// A new map rather than an eviction: a post forgotten is merely
		// refreshed again.
		r.at = map[int64]time.Time{}
	}
	if began.After(r.at[postID]) {
		r.at[postID] = began
	}
}

// covers reports whether a refresh of postID began after a change at
// changed.
func (r *refreshLog) covers(postID int64, changed time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	began, ok := r.at[postID]
	return ok && !changed.IsZero() && changed.Add(freshness.CoverSlack).Before(began)
}
