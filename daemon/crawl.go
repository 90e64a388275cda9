package daemon

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"
	"golang.org/x/time/rate"

	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/wp"
)

// crawlState is the daemon's crawl, event and schedule state.
type crawlState struct {
	// trailingSlash is the permalink convention: 1 with a trailing slash,
	// -1 without, 0 unknown.
	trailingSlash atomic.Int32

	once sync.Once
	// wake nudges the event worker.
	wake chan struct{}
	// eventLimiter paces event re-renders apart from the crawl, so a
	// running pass does not delay a publish, while both stay bounded.
	eventLimiter *rate.Limiter

	mu        sync.Mutex
	cron      *cron.Cron
	entries   map[string]cron.EntryID
	secret    []byte
	lastApply time.Duration // how long the last applied event waited
}

func (d *Daemon) crawlInit() {
	d.crawl.once.Do(func() {
		d.crawl.wake = make(chan struct{}, 1)
		r := max(1, d.Config.Crawl.RatePerSec/2)
		d.crawl.eventLimiter = rate.NewLimiter(rate.Limit(r), max(2, d.Config.Crawl.Concurrency/2))
	})
}

// Link-following bounds: links are followed from the home page and from
// listing pages (archives, the blog) only, this many hops deep.
const maxLinkDepth = 2

// Frontier priorities: URLs that sources name come first, then posts known
// only by ID (fetched as /?p=ID when no page of theirs was seen), then
// links found on listing pages.
const (
	prioURL  = 0
	prioPost = 1
	prioLink = 2
)

// queue hands a pass's frontier to the workers, lowest priority first,
// and holds back a higher class while a lower one is still in flight, so
// a post's /?p=ID is not fetched while its permalink is.
type queue struct {
	mu       sync.Mutex
	cond     *sync.Cond
	items    [][]*store.URLState // by priority class
	inflight [3]int
	stopped  bool
	queued   map[string]bool
	// refill, when set, is called once, when the first class is done: it
	// returns the posts that class did not cover.
	refill func() []*store.URLState
}

func newQueue(rows []*store.URLState) *queue {
	q := &queue{items: make([][]*store.URLState, 3), queued: map[string]bool{}}
	q.cond = sync.NewCond(&q.mu)
	for _, r := range rows {
		q.addLocked(r)
	}
	return q
}

func (q *queue) addLocked(r *store.URLState) bool {
	if q.queued[r.URL] {
		return false
	}
	q.queued[r.URL] = true
	p := min(max(r.Priority, 0), 2)
	q.items[p] = append(q.items[p], r)
	return true
}

func (q *queue) push(rs ...*store.URLState) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, r := range rs {
		if q.addLocked(r) {
			n++
		}
	}
	q.cond.Broadcast()
	return n
}

// next blocks until an item may start, or returns nil when the frontier
// is exhausted or stopped.
func (q *queue) next() *store.URLState {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.stopped {
			return nil
		}
		if q.refill != nil && len(q.items[0]) == 0 && q.inflight[0] == 0 {
			refill := q.refill
			q.refill = nil
			for _, r := range refill() {
				q.addLocked(r)
			}
		}
		busy := false
		for p := range q.items {
			if len(q.items[p]) > 0 {
				r := q.items[p][0]
				q.items[p] = q.items[p][1:]
				q.inflight[p]++
				return r
			}
			if q.inflight[p] > 0 {
				busy = true
				break
			}
		}
		if !busy {
			return nil
		}
		q.cond.Wait()
	}
}

func (q *queue) done(r *store.URLState) {
	q.mu.Lock()
	q.inflight[min(max(r.Priority, 0), 2)]--
	q.cond.Broadcast()
	q.mu.Unlock()
}

func (q *queue) stop() {
	q.mu.Lock()
	q.stopped = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

func (q *queue) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queued)
}

// passState is what one pass shares between its workers.
type passState struct {
	run    *store.Run
	opt    IndexOptions
	public map[int64]*wp.Post
	// publicComplete is true when public holds every public post (not an
	// incremental subset), so a post missing from it is not public.
	publicComplete bool

	mu       sync.Mutex
	seenPost map[int64]bool
	seenURL  map[string]bool
	fetched  int
	done     int
	// storeErr is the write that stopped the pass: the state dir is full.
	storeErr error
}

// stopIfFull stops the pass when err says the store has no room left:
// every page fetched after it would be fetched for nothing.
func (ps *passState) stopIfFull(q *queue, err error) {
	if !store.IsDiskFull(err) {
		return
	}
	ps.mu.Lock()
	if ps.storeErr == nil {
		ps.storeErr = err
	}
	ps.mu.Unlock()
	q.stop()
}

func (ps *passState) markSeen(u string, postID int64) {
	ps.mu.Lock()
	if u != "" {
		ps.seenURL[u] = true
	}
	if postID > 0 {
		ps.seenPost[postID] = true
	}
	ps.mu.Unlock()
}
