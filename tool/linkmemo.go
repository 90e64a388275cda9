package tool

import (
	"sync"
	"time"

	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/store"
)

// linkMemo remembers, for a while, each page's links that expansion could
// fetch: to this origin, Expandable, and to no stored page when they were
// read. Most searches that trigger expansion find none or none that
// shares a word with the query, and reading them from the store at each
// such search was nearly a tenth of a search's CPU on a WordPress site,
// where every page links to its home page, categories and menu pages.
//
// A commit that removes a page forgets every page (committed): links to
// it are now links expansion could fetch. One that replaces a page
// forgets that page, whose links changed. Adding pages forgets nothing:
// it only turns remembered links into links to stored pages, which the
// candidates' check in the frontier (scoreLinks) passes over. A page's
// new links are stored just after its commit, so what is read in between
// can be wrong until it expires; expansion is a best effort, and a
// minute's delay costs it little.
type linkMemo struct {
	mu    sync.Mutex
	pages map[int64]memoPage
	links int   // links held, for linkMemoMaxLinks
	gen   int64 // the last commit seen
}

type memoPage struct {
	at    time.Time
	links []store.LinkCandidate
}

const (
	// Past either bound, every page is forgotten.
	linkMemoMaxPages = 10000
	linkMemoMaxLinks = 50000
)

// get returns the links remembered for ids within freshness.LinkMemoFor
// of now, and the ids it has nothing on, in order.
func (l *linkMemo) get(ids []int64, now time.Time) (known map[int64][]store.LinkCandidate, unknown []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		p, ok := l.pages[id]
		if !ok || now.Sub(p.at) >= freshness.LinkMemoFor {
			unknown = append(unknown, id)
			continue
		}
		if known == nil {
			known = map[int64][]store.LinkCandidate{}
		}
		known[id] = p.links
	}
	return known, unknown
}

// put remembers the links of the pages ids at now: byDoc's, or none.
func (l *linkMemo) put(ids []int64, byDoc map[int64][]store.LinkCandidate, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, id := range ids {
		n += len(byDoc[id])
	}
	if l.pages == nil || len(l.pages)+len(ids) > linkMemoMaxPages || l.links+n > linkMemoMaxLinks {
		l.pages, l.links = make(map[int64]memoPage, len(ids)), 0
	}
	for _, id := range ids {
		l.links += len(byDoc[id]) - len(l.pages[id].links)
		l.pages[id] = memoPage{at: now, links: byDoc[id]}
	}
}

// committed forgets what c may have changed: every page when it removed
// a page, or when commits were missed (another process wrote the store
// in between); else the pages it replaced.
func (l *linkMemo) committed(c store.IndexCommit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	missed := l.gen != 0 && c.Gen != l.gen+1
	l.gen = c.Gen
	if missed {
		l.pages, l.links = nil, 0
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
			id := op.Add.Doc.ID
			delete(deleted, id)
			l.links -= len(l.pages[id].links)
			delete(l.pages, id)
		}
	}
	if len(deleted) > 0 {
		l.pages, l.links = nil, 0
	}
}
