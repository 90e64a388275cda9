package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/sitemap"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/wp"
)

// ErrCrawlRunning is returned when an index pass is asked for while
// another is still running.
var ErrCrawlRunning = errors.New("an index pass is already running")

// IndexOptions steer one pass.
type IndexOptions struct {
	// Full re-fetches every page without conditional requests, and removes
	// indexed pages that discovery no longer finds.
	Full bool
	// Kind labels the pass in the run history ("index", "incremental", …).
	Kind string
	// Progress, when set, is called after each page.
	Progress func(done, total int)
}

// target is a URL to fetch and what discovery knows about it.
type target struct {
	url     string
	sources []string
	postID  int64
	lastmod time.Time
}

// Index discovers the site's public pages, fetches them within the crawl
// budget and indexes what changed.
func (d *Daemon) Index(ctx context.Context, opt IndexOptions) (*store.Run, error) {
	if !d.crawlMu.TryLock() {
		return nil, ErrCrawlRunning
	}
	defer d.crawlMu.Unlock()
	if opt.Kind == "" {
		opt.Kind = "index"
	}
	runID, err := d.Store.StartRun(ctx, opt.Kind)
	if err != nil {
		return nil, err
	}
	run := &store.Run{ID: runID, Kind: opt.Kind}
	err = d.index(ctx, run, opt)
	if err != nil {
		run.Error = err.Error()
	}
	// The run record is written even when the pass was cancelled.
	if ferr := d.Store.FinishRun(context.WithoutCancel(ctx), run); ferr != nil && err == nil {
		err = ferr
	}
	d.Log.Info("Index pass finished", "kind", opt.Kind, "discovered", run.Discovered, "fetched", run.Fetched,
		"indexed", run.Indexed, "unchanged", run.Unchanged, "removed", run.Removed, "errors", run.Errors, "error", run.Error)
	return run, err
}

func (d *Daemon) index(ctx context.Context, run *store.Run, opt IndexOptions) error {
	targets, public, discoveryOK, err := d.discover(ctx, run.ID)
	if err != nil {
		return err
	}
	run.Discovered = len(targets)

	var (
		done     atomic.Int64
		budget   = int64(d.Config.Crawl.Budget)
		fetched  atomic.Int64
		mu       sync.Mutex
		seenPost = map[int64]bool{}
		seenURL  = map[string]bool{}
	)
	total := len(targets)
	crawl := func(ts []*target) {
		p := pool.New().WithMaxGoroutines(d.Config.Crawl.Concurrency).WithContext(ctx)
		for _, t := range ts {
			if ctx.Err() != nil || fetched.Load() >= budget {
				break
			}
			fetched.Add(1)
			p.Go(func(ctx context.Context) error {
				out := d.indexTarget(ctx, t, public, opt.Full)
				mu.Lock()
				switch out.status {
				case "indexed":
					run.Indexed++
				case "unchanged":
					run.Unchanged++
				case "gone", "private":
					if out.removed {
						run.Removed++
					}
				}
				if out.err != nil && out.status == "error" {
					run.Errors++
				}
				if out.postID > 0 {
					seenPost[out.postID] = true
				}
				if out.url != "" {
					seenURL[out.url] = true
				}
				seenURL[t.url] = true
				mu.Unlock()
				if opt.Progress != nil {
					opt.Progress(int(done.Add(1)), total)
				}
				return nil
			})
		}
		_ = p.Wait()
	}

	// Sitemap and other URL-first targets go first: they tell us which
	// post IDs they cover, so posts need no extra fetch of /?p=ID.
	var byURL, byID []*target
	for _, t := range targets {
		if t.url != "" {
			byURL = append(byURL, t)
		} else {
			byID = append(byID, t)
		}
	}
	crawl(byURL)
	var rest []*target
	for _, t := range byID {
		if !seenPost[t.postID] {
			rest = append(rest, t)
		}
	}
	total = len(byURL) + len(rest)
	run.Discovered = total
	for _, t := range rest {
		t.url = d.postURL(t.postID, public[t.postID])
	}
	crawl(rest)
	run.Fetched = int(fetched.Load())
	if err := ctx.Err(); err != nil {
		return err
	}

	// Reconcile: pages no longer discovered, or whose post is no longer
	// public, leave the index. Only after a complete discovery and a pass
	// that fetched everything, or an incomplete source would empty it.
	if discoveryOK && fetched.Load() < budget {
		urls, err := d.Store.DocumentURLs(ctx)
		if err != nil {
			return err
		}
		for u, postID := range urls {
			if seenURL[u] {
				continue
			}
			if postID > 0 && public != nil && public[postID] != nil {
				continue
			}
			if ok, err := d.Store.DeleteDocument(ctx, u); err != nil {
				return err
			} else if ok {
				run.Removed++
				d.Log.Info("Removed page no longer discovered", "url", u, "post_id", postID)
			}
		}
	}
	return nil
}

// discover merges the sitemap and the database into one target list.
// public maps post IDs to published, password-free posts (nil without a
// database). ok is false when a source failed, so nothing may be removed
// on its evidence.
func (d *Daemon) discover(ctx context.Context, runID int64) (targets []*target, public map[int64]*wp.Post, ok bool, err error) {
	ok = true
	byURL := map[string]*target{}
	add := func(u, source string, lastmod time.Time) {
		c := Canonical(u)
		if c == "" {
			return
		}
		pu, perr := parseURL(c)
		if perr != nil || !d.Site.Origin.Same(pu) {
			d.Log.Warn("Skipped off-origin URL from discovery", "url", u, "source", source)
			return
		}
		t := byURL[c]
		if t == nil {
			t = &target{url: c}
			byURL[c] = t
			targets = append(targets, t)
		}
		if !contains(t.sources, source) {
			t.sources = append(t.sources, source)
		}
		if lastmod.After(t.lastmod) {
			t.lastmod = lastmod
		}
	}

	roots := []string{d.Site.URL + "/wp-sitemap.xml"}
	res, err := sitemap.Walk(ctx, d.Fetcher.Open, roots, sitemap.Options{
		Skip: func(u string) bool { return !d.Config.Crawl.IndexArchives && archiveSitemap(u) },
	})
	if err != nil {
		return nil, nil, false, err
	}
	for _, e := range res.Entries {
		add(e.URL, "sitemap", e.LastMod)
	}
	if len(res.Errors) > 0 {
		d.Log.Warn("Sitemap errors", "errors", fmt.Sprint(res.Errors))
		if len(res.Sitemaps) == 0 && d.WP == nil {
			ok = false
		}
	}

	if d.WP != nil {
		posts, err := d.WP.Posts(ctx, wp.PostFilter{})
		if err != nil {
			return nil, nil, false, err
		}
		public = make(map[int64]*wp.Post, len(posts))
		for _, p := range posts {
			public[p.ID] = p
			targets = append(targets, &target{postID: p.ID, sources: []string{"db"}, lastmod: p.Modified})
		}
	}
	for _, t := range targets {
		if t.url == "" {
			continue
		}
		if err := d.Store.DiscoverURL(ctx, runID, t.url, t.sources, t.postID, t.lastmod); err != nil {
			return nil, nil, false, err
		}
	}
	return targets, public, ok, nil
}

// postURL is the address WordPress redirects to a post's permalink.
func (d *Daemon) postURL(id int64, p *wp.Post) string {
	if p != nil && p.Type == "page" {
		return d.Site.URL + "/?page_id=" + strconv.FormatInt(id, 10)
	}
	return d.Site.URL + "/?p=" + strconv.FormatInt(id, 10)
}

type outcome struct {
	status  string // indexed, unchanged, gone, private, skipped, error
	url     string // canonical URL of the indexed page
	postID  int64
	removed bool
	err     error
}

// indexTarget fetches, extracts and stores one page.
func (d *Daemon) indexTarget(ctx context.Context, t *target, public map[int64]*wp.Post, full bool) outcome {
	if err := d.Limiter.Wait(ctx); err != nil {
		return outcome{status: "error", err: err}
	}
	var cond Conditional
	if !full {
		if st, err := d.Store.FindURL(ctx, t.url); err == nil && st.Status != "error" {
			cond = Conditional{ETag: st.ETag, LastModified: st.LastModified}
		}
	}
	out, rec := d.indexURL(ctx, t.url, cond, t.sources, public)
	if out.status == "error" && ctx.Err() != nil {
		return out // shutting down: not the page's fault
	}
	if err := d.Store.RecordFetch(ctx, t.url, rec); err != nil {
		d.Log.Error("Unable to record fetch", "url", t.url, "error", err)
	}
	if out.url != "" && out.url != t.url {
		rec.Status = out.status
		_ = d.Store.RecordFetch(ctx, out.url, rec)
	}
	return out
}

// loginMarkers show a page that WordPress rendered for a visitor who must
// log in or type a password: never public content.
var (
	passwordForm = []byte(`post-password-form`)
	bodyClassRe  = regexp.MustCompile(`<body[^>]*class="([^"]*)"`)
)

// indexURL does the work of one page and says what happened, both for the
// run counters and the frontier row.
func (d *Daemon) indexURL(ctx context.Context, u string, cond Conditional, sources []string, public map[int64]*wp.Post) (outcome, store.URLResult) {
	page, err := d.Fetcher.Get(ctx, u, cond)
	if err != nil {
		rec := store.URLResult{Status: "error", Error: err.Error(), ErrorClass: ErrorClass(err)}
		if page != nil {
			rec.HTTPStatus = page.Status
		}
		switch {
		case errors.Is(err, ErrGone), errors.Is(err, ErrLoginWall):
			rec.Status = "gone"
			removed, derr := d.Store.DeleteDocument(ctx, u)
			if derr != nil {
				return outcome{status: "error", err: derr}, rec
			}
			if removed {
				d.Log.Info("Removed page", "url", u, "reason", rec.ErrorClass)
			}
			return outcome{status: "gone", removed: removed, err: err}, rec
		case errors.Is(err, ErrNotHTML):
			rec.Status = "skipped"
			return outcome{status: "skipped", err: err}, rec
		case errors.Is(err, ErrForbidden), errors.Is(err, ErrServer), errors.Is(err, ErrTimeout):
			rec.Retry = d.Store.Now().Add(backoff(1))
		}
		d.Log.Warn("Fetch failed", "url", u, "class", rec.ErrorClass, "error", err)
		return outcome{status: "error", err: err}, rec
	}
	rec := store.URLResult{HTTPStatus: page.Status, ETag: page.ETag, LastModified: page.LastModified}
	if page.NotModified {
		rec.Status = "unchanged"
		return outcome{status: "unchanged", url: u}, rec
	}
	final := Canonical(page.URL)

	res, err := extract.Extract(ctx, bytes.NewReader(page.Body), extract.Options{URL: page.URL, SiteName: d.Site.Name})
	if err != nil {
		rec.Status, rec.Error, rec.ErrorClass = "error", err.Error(), "extract"
		return outcome{status: "error", err: err}, rec
	}
	rec.PostID = res.PostID

	// Private content never enters the index: a password form, or a post
	// the database says is not public, removes the page instead.
	var post *wp.Post
	if res.PostID > 0 && d.WP != nil {
		post = public[res.PostID]
		if post == nil {
			post, err = d.lookupPost(ctx, res.PostID)
			if err != nil {
				rec.Status, rec.Error, rec.ErrorClass = "error", err.Error(), "database"
				return outcome{status: "error", err: err}, rec
			}
		}
	}
	if bytes.Contains(page.Body, passwordForm) || (d.WP != nil && res.PostID > 0 && (post == nil || !post.Public())) {
		rec.Status = "private"
		removed, derr := d.Store.DeleteDocument(ctx, final)
		if derr == nil && res.PostID > 0 {
			var r2 bool
			r2, derr = d.Store.DeletePost(ctx, res.PostID)
			removed = removed || r2
		}
		if derr != nil {
			return outcome{status: "error", err: derr}, rec
		}
		return outcome{status: "private", removed: removed, postID: res.PostID}, rec
	}
	if res.PostID == 0 && !d.Config.Crawl.IndexArchives && isArchive(page.Body) {
		rec.Status = "skipped"
		return outcome{status: "skipped", url: final}, rec
	}

	doc := documentFrom(res, post, final, sources, d.Store.Now())
	pr, err := d.Store.PutDocument(ctx, doc)
	if err != nil {
		rec.Status, rec.Error, rec.ErrorClass = "error", err.Error(), "store"
		return outcome{status: "error", err: err}, rec
	}
	rec.Status = "indexed"
	if pr.Unchanged {
		rec.Status = "unchanged"
	}
	return outcome{status: rec.Status, url: final, postID: res.PostID}, rec
}

func (d *Daemon) lookupPost(ctx context.Context, id int64) (*wp.Post, error) {
	posts, err := d.WP.Posts(ctx, wp.PostFilter{IDs: []int64{id}})
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
		Chunks: StoreChunks(res.Chunks),
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

func backoff(attempt int) time.Duration {
	d := time.Minute << min(attempt, 8)
	return min(d, 6*time.Hour)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
