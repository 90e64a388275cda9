package crawl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/wp"
)

// ErrCrawlRunning is returned when an index pass is asked for while
// another is still running.
var ErrCrawlRunning = errors.New("an index pass is already running")

// errLeaseLost stops a pass whose crawl lease another process took.
var errLeaseLost = errors.New("the crawl lease was taken over by another process")

// ErrSiteFailing stops a pass whose requests the site keeps failing.
var ErrSiteFailing = errors.New("the site is failing")

// IndexOptions steer one pass.
type IndexOptions struct {
	// Full re-fetches every page without conditional requests, oldest
	// first within the budget, and removes indexed pages that discovery no
	// longer finds.
	Full bool
	// Incremental fetches only what changed: posts the database says were
	// modified since the last pass, sitemap entries with a newer lastmod,
	// URLs never fetched, and failed URLs whose retry time has come.
	Incremental bool
	// SkipCurrent, with Incremental, also skips posts whose page was
	// fetched after their last change, and links of listing pages that
	// were fetched before: for a store filled from elsewhere, which has
	// no pass of its own to go by (a cluster node that took over).
	SkipCurrent bool
	// Kind labels the pass in the run history ("index", "incremental", …).
	Kind string
	// Progress, when set, is called after each page.
	Progress func(done, total int)
}

// Index discovers the site's public pages, fetches them within the crawl
// budget and indexes what changed. A pass that was interrupted (killed,
// or its context cancelled) is resumed first: its frontier is in the
// store, so pages it already fetched are not fetched again. A pass also
// stops early, keeping its frontier for the next one, when the site fails
// request after request (ErrSiteFailing) or the state dir is full
// (ErrDiskFull).
func (c *Crawler) Index(ctx context.Context, opt IndexOptions) (_ *store.Run, err error) {
	defer func() {
		switch {
		case err == nil:
			c.storeWrote()
		case !errors.Is(err, ErrCrawlRunning):
			err = c.StoreFailed(err)
		}
	}()
	if !c.passMu.TryLock() {
		return nil, ErrCrawlRunning
	}
	defer c.passMu.Unlock()
	c.init()
	if opt.Kind == "" {
		opt.Kind = "index"
		if opt.Incremental {
			opt.Kind = "incremental"
		}
	}
	holder := c.PassHolder
	if holder == "" {
		holder = "askwpd"
	}
	release, lost, err := c.holdPass(ctx, holder+", "+opt.Kind+" pass,")
	if err != nil {
		return nil, err
	}
	defer release()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-lost:
			cancel(errLeaseLost)
		case <-ctx.Done():
		}
	}()
	started := c.Store.Now()
	run, ropt, discoveryOK, err := c.Store.ResumableRun(ctx)
	resumed := err == nil
	switch {
	case resumed:
		c.Log.Info("Resuming an interrupted pass", "run_id", run.ID, "kind", run.Kind)
		opt.Full, opt.Incremental, opt.Kind = ropt.Full, ropt.Incremental, run.Kind
		if err := c.Store.MarkResumed(ctx, run.ID); err != nil {
			return nil, err
		}
	case errors.Is(err, store.ErrNotFound):
		id, err := c.Store.StartRunWith(ctx, opt.Kind, store.RunOptions{Full: opt.Full, Incremental: opt.Incremental})
		if err != nil {
			return nil, err
		}
		run = &store.Run{ID: id, Kind: opt.Kind, StartedAt: started}
	default:
		return nil, err
	}
	if n, err := c.Store.CloseInterruptedRuns(ctx, run.ID); err != nil {
		return nil, err
	} else if n > 0 {
		c.Log.Info("Closed passes that were interrupted and cannot resume", "count", n)
	}
	ps := &passState{run: run, opt: opt, seenPost: map[int64]bool{}, seenURL: map[string]bool{}}
	err = c.pass(ctx, ps, resumed, discoveryOK)
	if err != nil && errors.Is(context.Cause(ctx), errLeaseLost) {
		err = errLeaseLost
	}
	c.indexed()
	if err != nil {
		run.Error = err.Error()
	}
	// The run record is written even when the pass was cancelled; its
	// frontier stays for the next start to resume.
	if ferr := c.Store.FinishRun(context.WithoutCancel(ctx), run); ferr != nil && err == nil {
		err = ferr
	}
	c.Log.Info("Index pass finished", "kind", opt.Kind, "run_id", run.ID, "resumed", resumed, "discovered", run.Discovered,
		"fetched", run.Fetched, "indexed", run.Indexed, "unchanged", run.Unchanged, "removed", run.Removed,
		"errors", run.Errors, "error", run.Error)
	return run, err
}

func (c *Crawler) pass(ctx context.Context, ps *passState, resumed, discoveryOK bool) error {
	run, opt := ps.run, ps.opt
	c.loadConventions(ctx)
	ok, err := c.frontier(ctx, ps, resumed)
	if err != nil {
		return err
	}
	if !resumed {
		discoveryOK = ok
	}
	rows, err := c.Store.Frontier(ctx, run.ID)
	if err != nil {
		return err
	}
	if opt.Full {
		sortOldestFirst(rows)
	}
	q := newQueue(rows)
	if ps.public != nil {
		q.refill = func() []*store.URLState { return c.missingPosts(ctx, ps) }
	}
	brk := &breaker{limit: siteFaultLimit(c.Opts.Concurrency)}
	exhausted := c.crawlQueue(ctx, ps, q, brk)
	run.Discovered = max(run.Discovered, q.size())
	run.Fetched = ps.fetched
	if err := ctx.Err(); err != nil {
		return err
	}
	ps.mu.Lock()
	storeErr := ps.storeErr
	ps.mu.Unlock()
	if storeErr != nil {
		return storeErr
	}
	if n, last := brk.tripped(); last != nil {
		// The frontier stays: the next pass resumes where this one stopped,
		// and the URLs that failed wait out their retry time.
		return fmt.Errorf("%w: %d requests in a row failed (last: %v); the pass stops and the next one resumes it", ErrSiteFailing, n, last)
	}
	// A pass that ran to its end (or its budget) leaves no frontier: only
	// an interrupted one is resumed.
	if err := c.Store.DropFrontier(ctx, 0); err != nil {
		return err
	}
	if opt.Incremental {
		return c.Store.SetMeta(ctx, "last_incremental", c.Store.Now().Format(time.RFC3339))
	}
	// A page the site failed may have been the only one linking to
	// others: with a fault in the pass, "not found again" proves nothing.
	return c.reconcile(ctx, ps, discoveryOK && !exhausted && brk.faults() == 0)
}

// frontier fills the pass's frontier: from discovery for a new pass, or,
// for a resumed one, from what it had fetched already. It reports whether
// a new pass's discovery completed.
func (c *Crawler) frontier(ctx context.Context, ps *passState, resumed bool) (discoveryOK bool, err error) {
	run, opt := ps.run, ps.opt
	if resumed {
		prog, err := c.Store.Progress(ctx, run.ID)
		if err != nil {
			return false, err
		}
		ps.fetched, ps.seenPost, ps.seenURL = prog.Fetched, prog.Posts, prog.URLs
		// A resumed incremental pass looks posts up one by one: the whole
		// public set would make it re-fetch every post not yet seen.
		if c.WP != nil && !opt.Incremental {
			types := c.knownTypes(ctx)
			posts, err := c.WP.Posts(ctx, wp.PostFilter{Types: types, Light: true})
			if err != nil {
				return false, err
			}
			ps.public, ps.publicComplete = postMap(posts), !opt.Incremental
		}
	} else {
		items, public, ok, err := c.discover(ctx, opt)
		if err != nil {
			return false, err
		}
		discoveryOK = ok
		ps.public, ps.publicComplete = public, public != nil && !opt.Incremental
		if err := c.Store.DropFrontier(ctx, run.ID); err != nil {
			return false, err
		}
		if err := c.Store.Enqueue(ctx, run.ID, items); err != nil {
			return false, err
		}
		run.Discovered = len(items)
		if err := c.Store.SetDiscovery(ctx, run.ID, len(items), ok); err != nil {
			return false, err
		}
	}
	return discoveryOK, nil
}

// crawlQueue fetches and indexes the queue's URLs within the budget until
// the queue is empty, ctx is done or brk trips. It reports whether the
// budget ran out.
func (c *Crawler) crawlQueue(ctx context.Context, ps *passState, q *queue, brk *breaker) bool {
	opt := ps.opt
	budget := c.Opts.Budget
	if budget <= 0 {
		budget = int(^uint(0) >> 1)
	}
	var exhausted atomic.Bool

	// Concurrency fetchers keep that many requests at the site; half as
	// many processors extract and store behind them (a page's processing
	// takes a small part of its render time), and the hand-off holds no
	// buffer, so few pages are in memory at once.
	results := make(chan fetched)
	nproc := max(1, (c.Opts.Concurrency+1)/2)
	procs := pool.New().WithMaxGoroutines(nproc)
	for range nproc {
		procs.Go(func() {
			for f := range results {
				c.crawlOne(ctx, ps, q, f)
				q.done(f.t)
				ps.mu.Lock()
				ps.done++
				done := ps.done
				ps.mu.Unlock()
				if opt.Progress != nil {
					opt.Progress(done, q.size())
				}
			}
		})
	}
	p := pool.New().WithMaxGoroutines(c.Opts.Concurrency)
	for range c.Opts.Concurrency {
		p.Go(func() {
			for {
				t := q.next()
				if t == nil {
					return
				}
				if ctx.Err() != nil {
					// Release the others waiting on this item's class.
					q.stop()
					q.done(t)
					return
				}
				covered, skip, over := ps.claim(t, budget)
				switch {
				case over:
					exhausted.Store(true)
					q.stop()
					q.done(t)
				case skip:
					if covered {
						c.recordCovered(ctx, ps, t)
					}
					q.done(t)
				default:
					f := c.crawlFetch(ctx, ps, t)
					if brk.observe(f.err) {
						q.stop()
					}
					results <- f
				}
			}
		})
	}
	p.Wait()
	close(results)
	procs.Wait()
	return exhausted.Load()
}

// claim decides whether the pass fetches t, counting it against the
// budget if so. skip: covered already, its post fetched at its permalink
// (covered: t is a /?p=ID row) or another row's redirect landed on it.
// over: the budget is spent.
func (ps *passState) claim(t *store.URLState, budget int) (covered, skip, over bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	covered = t.PostID > 0 && postIDURL(t.URL) && ps.seenPost[t.PostID] && !ps.seenURL[t.URL]
	skip = covered || ps.seenURL[t.URL]
	over = !skip && ps.fetched >= budget
	if !skip && !over {
		ps.fetched++
	}
	return covered, skip, over
}

// recordCovered records a /?p=ID row whose post the pass fetched at its
// permalink: it is that page, as a redirect would have shown, and leaves
// the frontier as a duplicate rather than stay pending. Other skips need
// no write: a resumed pass skips them the same way, and the end of the
// pass clears the frontier.
func (c *Crawler) recordCovered(ctx context.Context, ps *passState, t *store.URLState) {
	rec := store.URLResult{Status: "duplicate", PostID: t.PostID, Run: ps.run.ID}
	if err := c.Store.RecordFetch(context.WithoutCancel(ctx), t.URL, rec); err != nil {
		c.Log.Error("Unable to record fetch", "url", t.URL, "error", err)
	}
}

// breaker counts the site's failures in a pass. A site that is down
// answers every URL with a 5xx, a timeout or a refused connection; a
// pass that went on would send it the whole frontier at full rate, while
// it is least able to take it, and do the same again at every schedule.
type breaker struct {
	mu    sync.Mutex
	limit int
	run   int // failures in a row
	total int
	last  error // set when the run reached limit
}

// siteFaultLimit is how many requests in a row must fail before a pass
// stops: more than the requests in flight at once, so one bad moment of
// the site does not stop it.
func siteFaultLimit(concurrency int) int { return max(8, 2*concurrency) }

// observe records a fetch's outcome and reports whether it trips the
// breaker (once).
func (b *breaker) observe(err error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case SiteFault(err):
		b.run++
		b.total++
		if b.run >= b.limit && b.last == nil {
			b.last = err
			return true
		}
	case err == nil || !errors.Is(err, context.Canceled):
		b.run = 0
	}
	return false
}

// tripped returns the failures in a row, at least the limit once it
// tripped (a request in flight may have succeeded since), and the
// failure that tripped it.
func (b *breaker) tripped() (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last != nil {
		return max(b.run, b.limit), b.last
	}
	return b.run, b.last
}

func (b *breaker) faults() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// missingPosts puts in the frontier, as /?p=ID, the public posts the URL
// sources did not cover.
func (c *Crawler) missingPosts(ctx context.Context, ps *passState) []*store.URLState {
	ps.mu.Lock()
	var ids []int64
	for id := range ps.public {
		if !ps.seenPost[id] {
			ids = append(ids, id)
		}
	}
	ps.mu.Unlock()
	if len(ids) == 0 || ctx.Err() != nil {
		return nil
	}
	slices.Sort(ids)
	items := make([]store.FrontierItem, len(ids))
	rows := make([]*store.URLState, len(ids))
	for i, id := range ids {
		p := ps.public[id]
		items[i] = store.FrontierItem{URL: c.postAddress(id, p, ps.public), Sources: []string{SourceDB}, PostID: id, LastMod: p.Modified, Priority: prioPost}
		rows[i] = &store.URLState{URL: items[i].URL, Sources: items[i].Sources, PostID: id, Priority: prioPost,
			RunID: ps.run.ID, Queued: true}
	}
	if err := c.Store.Enqueue(ctx, ps.run.ID, items); err != nil {
		c.Log.Error("Unable to extend the frontier", "error", err)
		return nil
	}
	return rows
}

// reconcile removes indexed pages whose post is no longer public, and,
// after a complete discovery and a pass that fetched all of it, pages
// that discovery no longer finds. An incomplete source would otherwise
// empty the index.
func (c *Crawler) reconcile(ctx context.Context, ps *passState, complete bool) error {
	urls, err := c.Store.DocumentURLs(ctx)
	if err != nil {
		return err
	}
	for u, postID := range urls {
		var why string
		switch {
		case ps.seenURL[u]:
			continue
		case postID > 0 && ps.publicComplete && ps.public[postID] == nil:
			why = "post no longer public"
		case !complete:
			continue
		case postID > 0 && ps.public != nil && ps.public[postID] != nil:
			continue
		default:
			why = "no longer discovered"
		}
		if ok, err := c.Store.DeleteDocument(ctx, u); err != nil {
			return err
		} else if ok {
			ps.run.Removed++
			c.Log.Info("Removed page", "url", u, "post_id", postID, "reason", why)
		}
	}
	return nil
}

// fetched is a frontier URL's response, handed from a fetcher to a
// processor.
type fetched struct {
	t    *store.URLState
	page *Page
	err  error
}

// crawlFetch GETs one frontier URL. Fetchers only fetch, so the site's PHP
// workers always have the crawl's requests in flight while processors
// extract and store what came back.
func (c *Crawler) crawlFetch(ctx context.Context, ps *passState, t *store.URLState) fetched {
	if c.share != nil {
		if err := c.share.acquire(ctx); err != nil {
			return fetched{t: t, err: err}
		}
		defer c.share.release()
	}
	if err := c.Limiter.Wait(ctx); err != nil {
		return fetched{t: t, err: err}
	}
	var cond Conditional
	if !ps.opt.Full && t.Status != "error" {
		cond = Conditional{ETag: t.ETag, LastModified: t.LastModified}
	}
	page, err := c.getPaced(ctx, t.URL, cond)
	return fetched{t: t, page: page, err: err}
}

// crawlOne processes one fetched frontier URL and records the outcome,
// taking it out of the frontier in the same write.
func (c *Crawler) crawlOne(ctx context.Context, ps *passState, q *queue, f fetched) {
	t := f.t
	if f.err != nil && ctx.Err() != nil {
		return // shutting down cut the fetch: it stays queued
	}
	// A page already fetched is finished even when the pass is stopping,
	// so a restart does not fetch it again.
	ctx = context.WithoutCancel(ctx)
	out, rec := c.process(ctx, t.URL, t, f.page, f.err, t.Sources, ps.public)
	if out.status == "error" && ctx.Err() != nil {
		return // shutting down: not the page's fault, and it stays queued
	}
	if rec.ErrorClass != "" && !rec.Retry.IsZero() {
		rec.Retry = c.Store.Now().Add(backoff(t.Attempts + 1))
	}
	rec.Run = ps.run.ID
	ps.stopIfFull(q, out.err)
	if out.url != "" && out.url != t.URL {
		rec2 := rec
		rec2.Status = out.status
		if err := c.Store.RecordFetch(ctx, out.url, rec2); err != nil {
			c.Log.Error("Unable to record fetch", "url", out.url, "error", err)
			ps.stopIfFull(q, err)
		}
	}
	if err := c.Store.RecordFetch(ctx, t.URL, rec); err != nil {
		c.Log.Error("Unable to record fetch", "url", t.URL, "error", err)
		ps.stopIfFull(q, err)
	}

	ps.mu.Lock()
	switch out.status {
	case "indexed":
		ps.run.Indexed++
	case "unchanged":
		ps.run.Unchanged++
	case "gone", "private":
		if out.removed {
			ps.run.Removed++
		}
	case "error":
		ps.run.Errors++
	}
	ps.mu.Unlock()
	ps.markSeen(t.URL, 0)
	if out.status == "indexed" || out.status == "unchanged" || out.status == "duplicate" {
		id := out.postID
		if id == 0 && !postIDURL(t.URL) {
			id = t.PostID
		}
		ps.markSeen(out.url, id)
	}

	// A known permalink that stopped answering may have moved: ask
	// WordPress where the post is now.
	if out.status == "gone" && t.PostID > 0 && !postIDURL(t.URL) && ps.public != nil && ps.public[t.PostID] != nil {
		c.enqueue(ctx, ps, q, store.FrontierItem{URL: c.postURL(t.PostID, ps.public[t.PostID]), Sources: t.Sources,
			PostID: t.PostID, Priority: prioPost})
	}
	// Listing pages are read for links, a bounded number of hops deep.
	if out.listing && t.Depth < maxLinkDepth {
		var items []store.FrontierItem
		for _, l := range out.links {
			cu := c.resolve(l.URL)
			if cu == "" || !crawlable(cu) {
				continue
			}
			if ps.opt.Incremental && ps.opt.SkipCurrent {
				// What was never fetched; the listing's other links were,
				// and their changes come by the database, the sitemaps and
				// events.
				if st, err := c.Store.FindURL(ctx, cu); err == nil && !st.FetchedAt.IsZero() {
					continue
				}
			}
			src := "link"
			if t.Depth == 0 && c.isHome(t.URL) {
				src = "home"
			}
			items = append(items, store.FrontierItem{URL: cu, Sources: []string{src}, Priority: prioLink, Depth: t.Depth + 1})
		}
		c.enqueue(ctx, ps, q, items...)
	}
}

// enqueue adds URLs found during a pass to its frontier, in the store
// first so a restart still knows them.
func (c *Crawler) enqueue(ctx context.Context, ps *passState, q *queue, items ...store.FrontierItem) {
	var fresh []store.FrontierItem
	ps.mu.Lock()
	for _, it := range items {
		if !ps.seenURL[it.URL] {
			fresh = append(fresh, it)
		}
	}
	ps.mu.Unlock()
	if len(fresh) == 0 {
		return
	}
	if err := c.Store.Enqueue(ctx, ps.run.ID, fresh); err != nil {
		c.Log.Error("Unable to extend the frontier", "error", err)
		ps.stopIfFull(q, err)
		return
	}
	rows := make([]*store.URLState, len(fresh))
	for i, it := range fresh {
		rows[i] = &store.URLState{URL: it.URL, Sources: it.Sources, PostID: it.PostID, Priority: it.Priority, Depth: it.Depth,
			RunID: ps.run.ID, Queued: true}
	}
	q.push(rows...)
}

func (c *Crawler) isHome(u string) bool { return u == c.canon(c.Site.URL+"/") }

// isListing reports a page read for its links: the home page or an
// archive.
func (c *Crawler) isListing(u string, body []byte) bool { return isArchive(body) || c.isHome(u) }

// permalinkTag is a structure tag of WordPress's permalinks.
var permalinkTag = regexp.MustCompile(`%[a-z_]+%`)

// permalink spells a post's address as WordPress does for the common
// structures (dates, %postname%, %post_id%), and a page's (its slug under
// its parents', found in pages), so a post the index has no page for is
// fetched where it is, not as /?p=ID, which WordPress first answers with a
// redirect: a quarter of a render. "" where it cannot tell: another post
// type (its own base), a tag such as %category%, no slug, a parent page not
// in pages. A wrong guess is a 404, after which the caller asks /?p=ID.
func (c *Crawler) permalink(p *wp.Post, pages map[int64]*wp.Post) string {
	s, _ := c.structure.Load().(string)
	if !strings.HasPrefix(s, "/") || p == nil || p.Name == "" {
		return ""
	}
	if p.Type == "page" {
		return c.pageLink(p, s, pages)
	}
	if p.Type != "post" || p.Date.IsZero() {
		return ""
	}
	d, known := p.Date, true
	path := permalinkTag.ReplaceAllStringFunc(s, func(tag string) string {
		switch tag {
		case "%year%":
			return fmt.Sprintf("%04d", d.Year())
		case "%monthnum%":
			return fmt.Sprintf("%02d", int(d.Month()))
		case "%day%":
			return fmt.Sprintf("%02d", d.Day())
		case "%hour%":
			return fmt.Sprintf("%02d", d.Hour())
		case "%minute%":
			return fmt.Sprintf("%02d", d.Minute())
		case "%second%":
			return fmt.Sprintf("%02d", d.Second())
		case "%postname%":
			return p.Name
		case "%post_id%":
			return strconv.FormatInt(p.ID, 10)
		}
		known = false
		return tag
	})
	if !known {
		return ""
	}
	return c.Site.URL + path
}

// pageLink is a page's address under the permalink structure s: the home
// page for the static front page, else the slugs of its parents and its own
// (WordPress's %pagename%), with the structure's trailing slash.
func (c *Crawler) pageLink(p *wp.Post, s string, pages map[int64]*wp.Post) string {
	if p.ID == c.Site.PageOnFront {
		return c.Site.URL + "/"
	}
	path := p.Name
	seen := map[int64]bool{p.ID: true}
	for parent := p.Parent; parent != 0; {
		pp := pages[parent]
		if pp == nil || pp.Name == "" || seen[parent] {
			return ""
		}
		seen[parent] = true
		path = pp.Name + "/" + path
		parent = pp.Parent
	}
	root := ""
	if strings.HasPrefix(s, "/index.php/") {
		root = "/index.php"
	}
	if strings.HasSuffix(s, "/") {
		path += "/"
	}
	return c.Site.URL + root + "/" + path
}

// postAddress is where to fetch a post whose page the index does not
// know: its permalink when that can be spelled (pages holds the public
// pages, for a page's parents), else /?p=ID.
func (c *Crawler) postAddress(id int64, p *wp.Post, pages map[int64]*wp.Post) string {
	if u := c.permalink(p, pages); u != "" {
		return u
	}
	return c.postURL(id, p)
}

// postURL is the address WordPress redirects to a post's permalink.
func (c *Crawler) postURL(id int64, p *wp.Post) string {
	if p != nil && p.Type == "page" {
		return c.Site.URL + "/?page_id=" + strconv.FormatInt(id, 10)
	}
	return c.Site.URL + "/?p=" + strconv.FormatInt(id, 10)
}

type outcome struct {
	status  string // indexed, unchanged, duplicate, gone, private, skipped, error
	url     string // canonical URL of the indexed page
	postID  int64
	removed bool
	err     error
	// listing is true for a page that lists others (home, archives): not
	// indexed by default, but read for links.
	listing bool
	links   []extract.Link
	// truncated is true when the page was larger than crawl.max_bytes and
	// only its beginning was indexed.
	truncated bool
}

// passwordForm marks a page that WordPress rendered for a visitor who
// must type a password.
var (
	passwordForm = []byte(`post-password-form`)
	bodyClassRe  = regexp.MustCompile(`<body[^>]*class="([^"]*)"`)
)

// protected reports a page WordPress rendered for a visitor who must type
// its password: never public content. A blog index or an archive lists a
// password-protected post with its form, in that post's item; such a page
// is a listing (the extractor leaves the item out). The extractor tells
// the page's own form from a listed post's (Result.Protected); any form on
// a page that names no post and is no listing counts as the page's.
func protected(body []byte, res *extract.Result) bool {
	return res.Protected || bytes.Contains(body, passwordForm) && res.PostID == 0 && !isArchive(body)
}

// indexURL does the work of one page and says what happened, both for the
// run counters and the frontier row. public, when not nil, holds posts the
// database already confirmed public; any other post is looked up.
func (c *Crawler) indexURL(ctx context.Context, u string, sources []string, public map[int64]*wp.Post) (outcome, store.URLResult) {
	page, err := c.Fetcher.Get(ctx, u, Conditional{})
	return c.afterFetch(ctx, u, page, err, sources, public)
}

// afterFetch is everything after the GET: the error's consequences, or
// extracting and storing the page.
func (c *Crawler) afterFetch(ctx context.Context, u string, page *Page, err error, sources []string, public map[int64]*wp.Post) (outcome, store.URLResult) {
	if err != nil {
		rec := store.URLResult{Status: "error", Error: err.Error(), ErrorClass: ErrorClass(err)}
		if page != nil {
			rec.HTTPStatus = page.Status
		}
		switch {
		case errors.Is(err, ErrGone), errors.Is(err, ErrLoginWall):
			rec.Status = "gone"
			removed, derr := c.Store.DeleteDocument(ctx, c.canon(u))
			if derr != nil {
				return outcome{status: "error", err: derr}, rec
			}
			if removed {
				c.Log.Info("Removed page", "url", u, "reason", rec.ErrorClass)
			}
			return outcome{status: "gone", removed: removed, err: err}, rec
		case errors.Is(err, ErrNotHTML):
			rec.Status = "skipped"
			return outcome{status: "skipped", err: err}, rec
		case errors.Is(err, ErrForbidden), SiteFault(err):
			rec.Retry = c.Store.Now().Add(backoff(1))
		}
		c.Log.Warn("Fetch failed", "url", u, "class", rec.ErrorClass, "error", err)
		return outcome{status: "error", err: err}, rec
	}
	rec := store.URLResult{HTTPStatus: page.Status, ETag: page.ETag, LastModified: page.LastModified}
	if page.NotModified {
		// The page was verified now: its fetch age starts again, or the
		// status would call a site that answers 304s ever staler.
		rec.Status = "unchanged"
		if _, err := c.Store.TouchDocument(ctx, c.canon(u), c.Store.Now(), nil); err != nil {
			return outcome{status: "error", err: err}, rec
		}
		return outcome{status: "unchanged", url: u}, rec
	}
	return c.indexPage(ctx, page, sources, public, rec)
}

// IndexPage extracts, checks and stores one fetched page, as a crawl
// does after the fetch, and returns what happened (indexed, unchanged,
// duplicate, private, skipped). The benchmarks time it on its own.
func (c *Crawler) IndexPage(ctx context.Context, page *Page, public map[int64]*wp.Post) (string, error) {
	out, _ := c.indexPage(ctx, page, []string{"bench"}, public, store.URLResult{HTTPStatus: page.Status})
	return out.status, out.err
}

func (c *Crawler) indexPage(ctx context.Context, page *Page, sources []string, public map[int64]*wp.Post, rec store.URLResult) (outcome, store.URLResult) {
	final := c.canon(page.URL)

	res, err := extract.Extract(ctx, bytes.NewReader(page.Body), extract.Options{URL: page.URL, SiteName: c.Site.Name})
	if err != nil {
		rec.Status, rec.Error, rec.ErrorClass = "error", err.Error(), "extract"
		return outcome{status: "error", err: err}, rec
	}
	rec.PostID = res.PostID
	// The site's own rel=canonical names the page, when it stays on the
	// origin; one naming another page makes this one its copy (seo.go).
	if out, rec, dup := c.canonicalCopy(ctx, final, res, rec); dup {
		return out, rec
	}

	// Private content never enters the index: a password form, or a post
	// the database says is not public, removes the page instead.
	var post *wp.Post
	if res.PostID > 0 && c.WP != nil {
		post = public[res.PostID]
		if post == nil {
			post, err = c.lookupPost(ctx, res.PostID)
			if err != nil {
				// The page is fine and the database will be back: without a
				// retry time, an incremental pass never looks at it again,
				// as its fetch is newer than its lastmod.
				rec.Status, rec.Error, rec.ErrorClass = "error", err.Error(), "database"
				rec.Retry = c.Store.Now().Add(backoff(1))
				return outcome{status: "error", err: err}, rec
			}
		}
	}
	if protected(page.Body, res) || (c.WP != nil && res.PostID > 0 && (post == nil || !post.Public())) {
		rec.Status = "private"
		removed, derr := c.Store.DeleteDocument(ctx, final)
		if derr == nil && res.PostID > 0 {
			var r2 bool
			r2, derr = c.Store.DeletePost(ctx, res.PostID)
			removed = removed || r2
		}
		if derr != nil {
			return outcome{status: "error", err: derr}, rec
		}
		return outcome{status: "private", removed: removed, postID: res.PostID}, rec
	}
	listing := c.isListing(final, page.Body)
	if out, rec, skip := c.noindexed(ctx, final, page, res, listing, rec); skip {
		return out, rec
	}
	if res.PostID == 0 && !c.Opts.IndexArchives && isArchive(page.Body) {
		rec.Status = "skipped"
		return outcome{status: "skipped", url: final, listing: true, links: res.Links}, rec
	}

	// The same content under a second URL is indexed once. A post seen
	// under a new address has moved: the new address wins.
	if other, otherPost, err := c.Store.DocumentByHash(ctx, res.ContentHash, final); err == nil {
		if res.PostID == 0 && otherPost == 0 {
			rec.Status = "duplicate"
			return outcome{status: "duplicate", url: other, listing: listing, links: res.Links}, rec
		}
	}

	if post != nil && public[post.ID] != nil && !contains(sources, SourceDB) {
		sources = append(slices.Clone(sources), SourceDB)
	}
	doc := documentFrom(res, post, final, sources, c.Store.Now())
	pr, err := c.Store.PutDocument(ctx, doc)
	if err != nil {
		rec.Status, rec.Error, rec.ErrorClass = "error", err.Error(), "store"
		return outcome{status: "error", err: err}, rec
	}
	c.saveLinks(ctx, pr.ID, final, res.Links)
	if !pr.Unchanged {
		c.indexed()
	}
	if res.PostID > 0 {
		c.dropMovedCopies(ctx, res.PostID, final)
	}
	rec.Status = "indexed"
	if pr.Unchanged {
		rec.Status = "unchanged"
	}
	return outcome{status: rec.Status, url: final, postID: res.PostID, listing: listing, links: res.Links, truncated: page.Truncated}, rec
}

// dropMovedCopies removes a post's pages at other addresses (an old slug
// or permalink structure), keeping its own sub-pages (page/2/) and, when
// keep is one of them, the pages it is a sub-page of: a post split by
// <!--nextpage--> is one post at /post/, /post/2/, /post/3/, fetched in
// any order.
func (c *Crawler) dropMovedCopies(ctx context.Context, postID int64, keep string) {
	urls, err := c.Store.PostDocuments(ctx, postID)
	if err != nil {
		return
	}
	for _, u := range urls {
		if u == keep || strings.HasPrefix(u, strings.TrimSuffix(keep, "/")+"/") || subPage(keep, u) {
			continue
		}
		if ok, err := c.Store.DeleteDocument(ctx, u); err == nil && ok {
			c.Log.Info("Removed page", "url", u, "post_id", postID, "reason", "post moved to "+keep)
		}
	}
}

// subPage reports whether u is a numbered page of base: base/N or base/N/.
func subPage(u, base string) bool {
	rest, ok := strings.CutPrefix(u, strings.TrimSuffix(base, "/")+"/")
	rest = strings.TrimSuffix(rest, "/")
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}

func (c *Crawler) lookupPost(ctx context.Context, id int64) (*wp.Post, error) {
	posts, err := c.WP.Posts(ctx, wp.PostFilter{IDs: []int64{id}, Light: true})
	if err != nil {
		return nil, err
	}
	if len(posts) == 0 {
		return nil, nil
	}
	return posts[0], nil
}

// isArchive reads WordPress's body classes: archives, the blog listing and
// search results list other pages rather than being content themselves,
// and they show the titles of password-protected posts.
func isArchive(body []byte) bool {
	m := bodyClassRe.FindSubmatch(body)
	if m == nil {
		return false
	}
	for _, c := range strings.Fields(string(m[1])) {
		switch c {
		case "archive", "blog", "search", "search-results", "error404", "author", "category", "tag", "date":
			return true
		}
	}
	return false
}

// documentFrom is the one place an extracted page and its post row become
// a stored document. Database values win over what the page says.
func documentFrom(res *extract.Result, post *wp.Post, url string, sources []string, now time.Time) *store.Document {
	doc := &store.Document{
		URL: url, PostID: res.PostID, PostType: res.PostType, Title: res.Title, Lang: res.Lang,
		Published: res.Published, Modified: res.Modified, Description: res.Description, Author: res.Author,
		Categories: res.Categories, Tags: res.Tags, Body: res.Markdown, Text: res.Text,
		Thin: res.Thin, ThinReason: res.ThinReason, Source: res.Source, WordCount: res.WordCount,
		ContentHash: res.ContentHash, FetchedAt: now, Sources: sources,
		Chunks: StoreChunks(res.Chunks), Translations: storeTranslations(res.Translations),
	}
	if res.Product != nil {
		doc.Product, _ = json.Marshal(res.Product)
	}
	if post != nil {
		doc.PostID, doc.PostType = post.ID, post.Type
		if t := strings.TrimSpace(html.UnescapeString(post.Title)); t != "" {
			doc.Title = t
		}
		if !post.Published.IsZero() {
			doc.Published = post.Published
		}
		if !post.Modified.IsZero() {
			doc.Modified = post.Modified
		}
		if len(post.Categories) > 0 {
			doc.Categories = post.Categories
		}
		if len(post.Tags) > 0 {
			doc.Tags = post.Tags
		}
		if post.AuthorName != "" {
			doc.Author = post.AuthorName
		}
	}
	if doc.PostType == "" {
		doc.PostType = "page"
	}
	return doc
}

func storeTranslations(ts []extract.Translation) []store.Translation {
	var out []store.Translation
	for _, t := range ts {
		out = append(out, store.Translation{Lang: t.Lang, URL: t.URL})
	}
	return out
}

// StoreChunks converts the extractor's chunks to the store's.
func StoreChunks(cs []extract.Chunk) []store.Chunk {
	out := make([]store.Chunk, len(cs))
	for i, c := range cs {
		out[i] = store.Chunk{
			Ord: c.Ord, Start: c.Start, End: c.End, Text: c.Text, HeadingPath: c.HeadingPath,
			Type: c.Type, CodeLang: c.CodeLang, ContentHash: c.ContentHash, Tokens: c.Tokens,
		}
	}
	return out
}

// backoff is the wait before the attempt-th retry of a failing URL.
func backoff(attempt int) time.Duration {
	d := freshness.RetryFirst << (min(max(attempt, 1), 9) - 1)
	return min(d, freshness.RetryMax)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func postMap(posts []*wp.Post) map[int64]*wp.Post {
	m := make(map[int64]*wp.Post, len(posts))
	for _, p := range posts {
		m[p.ID] = p
	}
	return m
}
