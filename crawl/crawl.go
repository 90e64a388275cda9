// Package crawl keeps the store's documents in step with the site:
// discovery (the database, sitemaps, feeds, links), a durable frontier, a
// same-origin fetcher, URL canonicalization, the index pass and the
// webhook events that trigger re-renders. It reports what it indexed
// through a callback and knows nothing of search or embeddings.
package crawl

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/wp"
)

// Options bound fetching so the crawler never crowds out the PHP workers
// it shares a host with.
type Options struct {
	Concurrency int
	RatePerSec  float64
	Budget      int // pages fetched per pass
	Timeout     time.Duration
	MaxBytes    int64
	UserAgent   string
	// IndexArchives also indexes category, tag and author archive pages.
	IndexArchives bool
	// MaxRetryAfter caps the pause a site's Retry-After imposes on a pass
	// (0: DefaultMaxRetryAfter).
	MaxRetryAfter time.Duration
	// IndexNoindex also indexes pages marked noindex (seo.go).
	IndexNoindex bool
}

// Site is what the crawler knows about the WordPress site.
type Site struct {
	URL     string `json:"url"`
	Name    string `json:"name"`
	Tagline string `json:"tagline"`
	Origin  Origin `json:"-"`
	// PageOnFront and PageForPosts are the static front and posts pages.
	PageOnFront  int64 `json:"-"`
	PageForPosts int64 `json:"-"`
	// Within and Exclude confine a site of a subdirectory network, whose
	// sites share one origin, to its own pages: Within is its path
	// ("/site2/"), Exclude the paths of the others under it. Both are empty
	// for a single site, which owns its whole origin.
	Within  string   `json:"-"`
	Exclude *PathSet `json:"-"`
}

// PathSet is a set of path prefixes that may change while crawls read it:
// a network gains and loses sites while its main site is crawled.
type PathSet struct{ p atomic.Pointer[[]string] }

// Set replaces the prefixes.
func (ps *PathSet) Set(prefixes []string) { ps.p.Store(&prefixes) }

// covers reports whether p is, or is under, one of the prefixes.
func (ps *PathSet) covers(p string) bool {
	if ps == nil {
		return false
	}
	xs := ps.p.Load()
	if xs == nil {
		return false
	}
	for _, x := range *xs {
		if p == strings.TrimRight(x, "/") || strings.HasPrefix(p, x) {
			return true
		}
	}
	return false
}

// Owns reports whether u is one of this site's pages: on its origin,
// under Within, and not under another site's path.
func (s *Site) Owns(u *url.URL) bool {
	if !s.Origin.Same(u) {
		return false
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	if w := s.Within; w != "" && p != strings.TrimRight(w, "/") && !strings.HasPrefix(p, w) {
		return false
	}
	return !s.Exclude.covers(p)
}

// Crawler discovers the site's public pages, fetches them from the origin
// and keeps the store's documents in step with them, in passes and on
// events. Set the exported fields before the first call.
type Crawler struct {
	Opts    Options
	Log     *slog.Logger
	Store   *store.DB
	WP      *wp.DB // nil when running from the sitemap alone
	Site    Site
	Fetcher *Fetcher
	Limiter *rate.Limiter
	// StateDir is named in the error a full disk gives.
	StateDir string
	// PassHolder names this process in the crawl lease ("askwpd serve",
	// "askwpd index"), for the message a pass refused beside it prints.
	PassHolder string
	// OnIndexed, when set, is called after a pass or a live fetch may have
	// indexed new chunks (the embeddings worker listens).
	OnIndexed func()
	// BuildKey names the code that extracts and chunks a page (the
	// daemon's Go build ID). A pass marks a page unchanged without
	// extracting it again when its body and this key are the ones it was
	// last indexed from, so a new build extracts every page once. Empty,
	// every page is extracted.
	BuildKey string

	// throttle is the pause the site asked for (throttle.go).
	throttle throttle

	// share, when set, is the network's crawl budget (Share.Join).
	share *Share

	// passMu keeps two index passes from overlapping.
	passMu sync.Mutex
	// unreleased is the holder id of this crawler's last crawl lease when
	// its release failed (passlock.go).
	unreleased atomic.Value

	// structure is the permalink structure ("/%year%/%postname%/"), empty
	// for plain /?p=ID links or when not read. It says whether the site's
	// URLs end with a slash (canon) and spells permalinks (permalink).
	structure atomic.Value

	once sync.Once
	// wake nudges the event worker.
	wake chan struct{}
	// eventLimiter paces event re-renders apart from the crawl, so a
	// running pass does not delay a publish, while both stay bounded.
	eventLimiter *rate.Limiter
	// fresh lets a page's first re-render in a while go out at once
	// (freshRender).
	fresh freshRenders
	// refreshed is when each post's last refresh began (refreshLog).
	refreshed refreshLog

	// diskFull is the last write the store refused for lack of space,
	// until a pass succeeds again.
	diskFull struct {
		sync.Mutex
		err   string
		since time.Time
	}
}

// New returns a crawler of site, fetching with opts' bounds.
func New(site Site, opts Options, st *store.DB, w *wp.DB, log *slog.Logger) *Crawler {
	return &Crawler{
		Opts: opts, Log: log, Store: st, WP: w, Site: site,
		Fetcher: NewFetcher(site.Origin, opts.Timeout, opts.MaxBytes, opts.UserAgent, log),
		Limiter: rate.NewLimiter(rate.Limit(opts.RatePerSec), max(1, opts.Concurrency)),
	}
}

func (c *Crawler) init() {
	c.once.Do(func() {
		c.wake = make(chan struct{}, 1)
		r := max(1, c.Opts.RatePerSec/2)
		c.eventLimiter = rate.NewLimiter(rate.Limit(r), max(2, c.Opts.Concurrency/2))
		c.fresh.limiter = rate.NewLimiter(rate.Limit(r/10), freshBurst)
	})
}

func (c *Crawler) indexed() {
	if c.OnIndexed != nil {
		c.OnIndexed()
	}
}

// Running says whether an index pass is running.
func (c *Crawler) Running() bool {
	if c.passMu.TryLock() {
		c.passMu.Unlock()
		return false
	}
	return true
}

// Wait blocks until a running pass has finished its last write.
func (c *Crawler) Wait() {
	// Taking the pass lock is the wait: a pass holds it until its last write.
	c.passMu.Lock()
	//lint:ignore SA2001 the empty section is a barrier behind a running pass, not a guard
	c.passMu.Unlock()
}

// ErrDiskFull wraps store writes refused because the state dir is full.
var ErrDiskFull = errors.New("the state dir is out of disk space")

// StoreFailed turns a store error into one that says what to do when the
// state dir is full, and remembers it for the status page.
func (c *Crawler) StoreFailed(err error) error {
	if err == nil || !store.IsDiskFull(err) || errors.Is(err, ErrDiskFull) {
		return err
	}
	c.diskFull.Lock()
	if c.diskFull.err == "" {
		c.diskFull.since = time.Now()
	}
	c.diskFull.err = err.Error()
	c.diskFull.Unlock()
	return fmt.Errorf("%w (%s): nothing new is indexed until space is freed; search still answers from the index: %w",
		ErrDiskFull, c.StateDir, err)
}

// DiskFullSince is when the store last started refusing writes for lack
// of space, with the error, or zero when it writes again.
func (c *Crawler) DiskFullSince() (time.Time, string) {
	c.diskFull.Lock()
	defer c.diskFull.Unlock()
	return c.diskFull.since, c.diskFull.err
}

func (c *Crawler) storeWrote() {
	c.diskFull.Lock()
	c.diskFull.err, c.diskFull.since = "", time.Time{}
	c.diskFull.Unlock()
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
