package crawl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/sitemap"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/wp"
)

// Discovery sources, as recorded in urls.sources and documents.sources.
const (
	SourceSitemap = "sitemap"
	SourceDB      = "db"
	SourceHome    = "home"
	SourceArchive = "archive"
	SourceFeed    = "feed"
	SourceMenu    = "menu"
	SourceRetry   = "retry"
)

// discovery merges what every source found into frontier items, one per
// canonical URL, each remembering its sources.
type discovery struct {
	c     *Crawler
	byURL map[string]*store.FrontierItem
	order []string
}

func (ds *discovery) add(raw, source string, lastmod time.Time, postID int64, prio int) {
	c := ds.c.resolve(raw)
	if c == "" {
		if raw != "" {
			ds.c.Log.Warn("Skipped off-origin URL from discovery", "url", raw, "source", source)
		}
		return
	}
	if !postIDURL(c) && !crawlable(c) {
		return
	}
	it := ds.byURL[c]
	if it == nil {
		it = &store.FrontierItem{URL: c, Priority: prio}
		ds.byURL[c] = it
		ds.order = append(ds.order, c)
	}
	if !contains(it.Sources, source) {
		it.Sources = append(it.Sources, source)
	}
	if lastmod.After(it.LastMod) {
		it.LastMod = lastmod
	}
	if postID > 0 && it.PostID == 0 {
		it.PostID = postID
	}
	it.Priority = min(it.Priority, prio)
}

func (ds *discovery) items() []store.FrontierItem {
	out := make([]store.FrontierItem, 0, len(ds.order))
	for _, u := range ds.order {
		out = append(out, *ds.byURL[u])
	}
	return out
}

// discover runs the five sources: sitemaps (robots.txt, core, SEO
// plugins), the database's public posts, the home page, the recent
// archives (posts page, feed) and the menus. public maps post IDs to
// published, password-free posts (nil without a database). ok is false
// when no source could be trusted to be complete, so nothing may be
// removed on its evidence.
func (c *Crawler) discover(ctx context.Context, opt IndexOptions) (items []store.FrontierItem, public map[int64]*wp.Post, ok bool, err error) {
	ds := &discovery{c: c, byURL: map[string]*store.FrontierItem{}}
	known, postURLs, err := c.indexedURLs(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	// changed says whether an incremental pass should look at u again.
	changed := func(u string, lastmod time.Time) bool {
		if !opt.Incremental {
			return true
		}
		k := known[c.canon(u)]
		return k == nil || k.FetchedAt.IsZero() || (!lastmod.IsZero() && lastmod.After(k.FetchedAt))
	}

	// The network sources and the menus are read at once: on a small site
	// their round trips would otherwise be a good part of the pass.
	var (
		sm    *sitemap.Result
		feed  []sitemap.Entry
		menu  []wp.MenuLink
		mErr  error
		group sync.WaitGroup
	)
	group.Go(func() { sm = c.walkSitemaps(ctx) })
	group.Go(func() { feed = c.readFeed(ctx) })
	if c.WP != nil && !opt.Incremental {
		group.Go(func() { menu, mErr = c.WP.MenuLinks(ctx) })
	}
	group.Wait()

	// 1. Sitemaps.
	for _, e := range sm.Entries {
		if changed(e.URL, e.LastMod) {
			ds.add(e.URL, SourceSitemap, e.LastMod, 0, prioURL)
		}
	}
	ok = len(sm.Sitemaps) > 0

	// A sitemap the site failed to serve (5xx, timeout) may have listed
	// pages no other source names: nothing may be removed on its silence.
	smFault := false
	for _, e := range sm.Errors {
		smFault = smFault || SiteFault(e)
	}

	// 2. The database: public post types, public statuses, no password.
	if c.WP != nil {
		types := sitemap.PostTypes(sm.Sitemaps)
		if len(types) == 0 {
			types = c.restTypes(ctx)
		}
		if len(types) == 0 {
			types = []string{"post", "page"}
		}
		_ = c.Store.SetMeta(ctx, "public_types", strings.Join(types, ","))
		f := wp.PostFilter{Types: types, Light: true}
		if opt.Incremental {
			f.ModifiedSince = c.lastPassStart(ctx)
		}
		posts, err := c.WP.Posts(ctx, f)
		if err != nil {
			return nil, nil, false, err
		}
		fresh := posts[:0:0]
		for _, p := range posts {
			// A page fetched after its post last changed is current
			// (SkipCurrent). It stays out of public too, or the pass would
			// fetch it as /?p=ID (missingPosts).
			if u := postURLs[p.ID]; opt.Incremental && opt.SkipCurrent && u != "" && !p.Modified.IsZero() {
				if k := known[u]; k != nil && k.FetchedAt.After(p.Modified) {
					continue
				}
			}
			fresh = append(fresh, p)
			c.addPost(ds, p, SourceDB, postURLs, nil)
		}
		public = postMap(fresh)
		ok = !smFault
	}

	if !opt.Incremental {
		// 3. The home page, read for links.
		ds.add(c.Site.URL+"/", SourceHome, time.Time{}, 0, prioURL)
		// 4. The posts page, when it is not the home page.
		if c.Site.PageForPosts > 0 {
			if p := public[c.Site.PageForPosts]; p != nil {
				c.addPost(ds, p, SourceArchive, postURLs, public)
			}
		}
	}
	// 5. The feed: the latest posts, found even without a sitemap.
	for _, e := range feed {
		if changed(e.URL, e.LastMod) {
			ds.add(e.URL, SourceFeed, e.LastMod, 0, prioURL)
		}
	}
	// 6. Menus: classic nav_menu_item posts and block wp_navigation posts.
	if c.WP != nil && !opt.Incremental {
		if mErr != nil {
			c.Log.Warn("Unable to read menus", "error", mErr)
		}
		c.addMenu(ds, menu, public, postURLs)
	}
	// Failed URLs whose retry time has come.
	if opt.Incremental {
		due, err := c.Store.DueURLs(ctx, c.Store.Now(), max(c.Opts.Budget, 100))
		if err != nil {
			return nil, nil, false, err
		}
		for _, u := range due {
			ds.add(u.URL, SourceRetry, time.Time{}, u.PostID, prioURL)
		}
	}
	return ds.items(), public, ok, nil
}

// indexedURLs are the URLs the store knows, by canonical URL, and the
// shortest indexed URL of each post.
func (c *Crawler) indexedURLs(ctx context.Context) (map[string]*store.URLState, map[int64]string, error) {
	rows, err := c.Store.ListURLs(ctx, store.URLFilter{})
	if err != nil {
		return nil, nil, err
	}
	known := make(map[string]*store.URLState, len(rows))
	for _, r := range rows {
		known[r.URL] = r
	}
	docs, err := c.Store.DocumentURLs(ctx)
	if err != nil {
		return nil, nil, err
	}
	postURLs := map[int64]string{}
	for u, id := range docs {
		if id > 0 && (postURLs[id] == "" || len(u) < len(postURLs[id])) {
			postURLs[id] = u
		}
	}
	return known, postURLs, nil
}

// addMenu adds the menus' links: a public post at its page, a custom link
// as it is.
func (c *Crawler) addMenu(ds *discovery, menu []wp.MenuLink, public map[int64]*wp.Post, postURLs map[int64]string) {
	for _, l := range menu {
		switch {
		case l.PostID > 0 && public[l.PostID] != nil:
			c.addPost(ds, public[l.PostID], SourceMenu, postURLs, public)
		case l.PostID > 0:
			// Not a public post: never fetched on the menu's word.
		case l.URL != "":
			ds.add(l.URL, SourceMenu, time.Time{}, 0, prioURL)
		}
	}
}

// addPost targets a post at the address its page was last indexed at, or
// at its permalink, or at /?p=ID, which WordPress redirects to the
// permalink (see postAddress). A menu's page is then the sitemap's URL,
// not a second row that the pass skips once the post is fetched. Posts the
// database alone names without a known address wait: the pass adds them
// once the URL sources are crawled and it knows which posts those covered
// (see missingPosts), so a large site's frontier does not hold every post
// twice.
func (c *Crawler) addPost(ds *discovery, p *wp.Post, source string, postURLs map[int64]string, public map[int64]*wp.Post) {
	if u := postURLs[p.ID]; u != "" {
		ds.add(u, source, p.Modified, p.ID, prioURL)
		return
	}
	if source != SourceDB {
		ds.add(c.postAddress(p.ID, p, public), source, p.Modified, p.ID, prioPost)
	}
}

// walkSitemaps reads the sitemaps robots.txt names and WordPress core's;
// only when neither answers, the SEO plugins' usual index names.
func (c *Crawler) walkSitemaps(ctx context.Context) *sitemap.Result {
	roots := []string{}
	body, robotsErr := c.readSmall(ctx, c.Site.URL+"/robots.txt", 512<<10)
	if robotsErr == nil {
		for _, u := range sitemap.FromRobots(body) {
			if cu := c.resolve(u); cu != "" {
				roots = append(roots, cu)
			} else {
				c.Log.Warn("Skipped off-origin sitemap from robots.txt", "url", u)
			}
		}
	}
	core := c.Site.URL + "/wp-sitemap.xml"
	if !contains(roots, core) {
		roots = append(roots, core)
	}
	opt := sitemap.Options{Skip: func(u string) bool { return !c.Opts.IndexArchives && ArchiveSitemap(u) }}
	res, err := sitemap.Walk(ctx, c.Fetcher.Open, roots, opt)
	if err != nil {
		return &sitemap.Result{Errors: []error{err}}
	}
	// When the site failed the core sitemap, the SEO plugins' names are
	// not tried: they would fail the same way.
	if len(res.Sitemaps) == 0 && !slices.ContainsFunc(res.Errors, SiteFault) {
		more, err := sitemap.Walk(ctx, c.Fetcher.Open, []string{c.Site.URL + "/sitemap_index.xml", c.Site.URL + "/sitemap.xml"}, opt)
		if err == nil && len(more.Sitemaps) > 0 {
			res = more
		}
	}
	if len(res.Sitemaps) == 0 {
		c.Log.Info("No sitemap found; discovering from the database, menus, home page and feed")
	}
	if SiteFault(robotsErr) {
		// The sitemaps robots.txt names are unknown, so the walk is not
		// the whole list.
		res.Errors = append(res.Errors, fmt.Errorf("robots.txt: %w", robotsErr))
	}
	return res
}

func (c *Crawler) readFeed(ctx context.Context) []sitemap.Entry {
	body, err := c.readSmall(ctx, c.Site.URL+"/feed/", 8<<20)
	if err != nil {
		c.Log.Info("No feed", "error", err)
		return nil
	}
	return sitemap.FromFeed(body)
}

// readSmall fetches a non-HTML resource of the origin, capped.
func (c *Crawler) readSmall(ctx context.Context, u string, limit int64) ([]byte, error) {
	rc, err := c.Fetcher.Open(ctx, u)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, limit))
}

// restTypes asks the REST API which post types are viewable.
func (c *Crawler) restTypes(ctx context.Context) []string {
	body, err := c.readSmall(ctx, c.Site.URL+"/?rest_route=/wp/v2/types", 2<<20)
	if err != nil {
		return nil
	}
	var types map[string]struct {
		Slug     string `json:"slug"`
		Viewable *bool  `json:"viewable"`
	}
	if err := json.Unmarshal(body, &types); err != nil {
		return nil
	}
	var out []string
	for k, t := range types {
		slug := t.Slug
		if slug == "" {
			slug = k
		}
		if slug == "attachment" || slug == "nav_menu_item" || strings.HasPrefix(slug, "wp_") || (t.Viewable != nil && !*t.Viewable) {
			continue
		}
		out = append(out, slug)
	}
	return out
}

// knownTypes are the public post types the last discovery found.
func (c *Crawler) knownTypes(ctx context.Context) []string {
	if v, _ := c.Store.GetMeta(ctx, "public_types"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"post", "page"}
}

// lastPassStart is when the last completed pass started: an incremental
// pass looks at posts modified since (freshness.PassStartSlack earlier,
// for clock skew between the database and this host).
func (c *Crawler) lastPassStart(ctx context.Context) time.Time {
	t, err := c.Store.LastRunStart(ctx, "index", "initial", "incremental", "nightly")
	if err != nil || t.IsZero() {
		return time.Time{}
	}
	return t.Add(-freshness.PassStartSlack)
}

// loadConventions reads the permalink structure, which says whether the
// site's URLs end with a slash and how a post's address is spelled.
func (c *Crawler) loadConventions(ctx context.Context) {
	if c.WP == nil {
		return
	}
	info, err := c.WP.Site(ctx)
	if err != nil {
		return
	}
	c.structure.Store(info.PermalinkStructure)
}

func sortOldestFirst(rows []*store.URLState) {
	// Stable: within one age the discovery order stays.
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		return a.FetchedAt.Before(b.FetchedAt)
	})
}
