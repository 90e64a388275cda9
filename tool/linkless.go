package tool

import (
	"sync"
	"time"

	"github.com/askwp/askwpd/store"
)

// linkless remembers, for a while, the pages found to link to no page
// that expansion could fetch. Most searches that trigger expansion stop
// there, and asking the store again cost a quarter of a millisecond (on a
// WordPress site every page links to the home page and its categories,
// none of which is fetched). An index commit that removes a page forgets
// them all (committed): links to it are now links expansion could fetch.
// One that replaces a page forgets that page, whose links changed; adding
// pages only turns links that were not indexed into links that are, and
// forgets nothing: a crawl that went over the site forgot every verdict
// at each of its commits, and the store was asked at nearly every
// search. A page's new links are stored just after its commit, so a
// verdict reached in between can be wrong until it expires; expansion is
// a best effort, and a minute's delay costs it little.
type linkless struct {
	mu    sync.Mutex
	since map[int64]time.Time
	gen   int64 // the last commit seen
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

// committed forgets what c may have changed: every verdict when it
// removed a page, or when commits were missed (another process wrote the
// store in between); else the verdicts on the pages it replaced.
func (l *linkless) committed(c store.IndexCommit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	missed := l.gen != 0 && c.Gen != l.gen+1
	l.gen = c.Gen
	if missed {
		l.since = nil
		return
	}
	deleted := map[int64]bool{}
	for _, op := range c.Ops {
		if op.Add == nil {
			deleted[op.Delete] = true
		}
	}
	for _, op := range c.Ops {
		if op.Add != nil && deleted[op.Add.Doc.ID] {
			delete(deleted, op.Add.Doc.ID)
			delete(l.since, op.Add.Doc.ID)
		}
	}
	if len(deleted) > 0 {
		l.since = nil
	}
}
