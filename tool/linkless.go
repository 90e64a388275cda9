package tool

import (
	"sync"
	"time"
)

// linkless remembers, for a while, the pages found to link to no page
// that expansion could fetch. Most searches that trigger expansion stop
// there, and asking the store again cost a quarter of a millisecond (on a
// WordPress site every page links to the home page and its categories,
// none of which is fetched). Every index commit of this process forgets
// them all (Service.IndexCommitted): a commit may remove a page that links
// pointed to. A page's new links are stored just after its commit, so a
// verdict reached in between can be wrong until it expires; expansion is
// a best effort, and a minute's delay costs it little.
type linkless struct {
	mu    sync.Mutex
	since map[int64]time.Time
}

const (
	linklessFor = time.Minute
	// linklessMax bounds the pages remembered; past it, all are forgotten.
	linklessMax = 10000
)

// unknown returns the ids not found linkless within linklessFor of now,
// in order.
func (l *linkless) unknown(ids []int64, now time.Time) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int64
	for _, id := range ids {
		if t, ok := l.since[id]; !ok || now.Sub(t) >= linklessFor {
			out = append(out, id)
		}
	}
	return out
}

// note remembers ids as linkless at now.
func (l *linkless) note(ids []int64, now time.Time) {
	if len(ids) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.since == nil || len(l.since)+len(ids) > linklessMax {
		l.since = make(map[int64]time.Time, len(ids))
	}
	for _, id := range ids {
		l.since[id] = now
	}
}

// forget drops every verdict.
func (l *linkless) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.since = nil
}
