package daemon

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
	"github.com/askwp/askwpd/wp"
)

// network is the daemon's sites, by blog id, and what they share: a
// single site is a network of one; a multisite install's indexable sites
// each have their own index, as ElasticPress keeps an index per site.
type network struct {
	// conf is what wp-config.php says of the network; nil for a single
	// site.
	conf  *wp.Network
	share *crawl.Share
	main  int64
	// obs are the per-site series, on a multisite network only: a single
	// site's metrics stay as they were.
	obs *netMetrics

	mu    sync.RWMutex
	sites map[int64]*Site
	// bg is the serving lifetime, set by Serve: sites added while it runs
	// start at once.
	bg context.Context
	// syncMu keeps two reads of the blogs table from adding a site twice.
	syncMu sync.Mutex
	// warm is the bound for warming the caches of the sites but the main
	// one.
	warm warmPool
}

// multisite reports whether the network is a multisite install's rather
// than a single site.
func (n *network) multisite() bool { return n.conf != nil }

// networkWarmBytes bounds what warming takes, over the daemon's life,
// for all the network's sites but the main one, which has its own
// caches' bound: each site's caches would take as much, and a network
// has dozens. Sites that get visitors fill their caches as they ask.
const networkWarmBytes = 16 << 20

// openNetwork makes the main site a network of one and, when the install
// is a network, adds each of its other indexable sites.
func (d *Daemon) openNetwork(ctx context.Context) error {
	n := &network{main: d.ID, sites: map[int64]*Site{d.ID: d.Site},
		share: crawl.NewShare(d.Config.Crawl.Concurrency, d.Config.Crawl.RatePerSec)}
	n.warm.left = networkWarmBytes
	n.share.Join(d.Crawler)
	d.net = n
	if d.wpNet == nil || d.WP == nil {
		return nil
	}
	ok, err := d.WP.IsNetwork(ctx)
	if err != nil {
		return err
	}
	if !ok {
		d.Log.Warn("wp-config.php says MULTISITE but the database has no blogs table; indexing the main site only")
		return nil
	}
	n.conf = d.wpNet
	n.obs = d.registerNetMetrics()
	all, err := d.WP.Sites(ctx)
	if err != nil {
		return err
	}
	// The main site's origin holds a subdirectory network's other sites:
	// its crawl leaves their paths to them (syncSites keeps the set).
	return d.syncSites(ctx, all)
}

// nestedPaths are the home paths of the other sites that live under
// home's path on home's origin.
func nestedPaths(home string, self int64, all []*wp.NetSite) []string {
	hu, err := url.Parse(home)
	if err != nil {
		return nil
	}
	base := strings.TrimRight(hu.Path, "/") + "/"
	var out []string
	for _, s := range all {
		su, err := url.Parse(siteHome(s))
		if err != nil || s.BlogID == self || !strings.EqualFold(su.Host, hu.Host) {
			continue
		}
		p := strings.TrimRight(su.Path, "/") + "/"
		if p != base && strings.HasPrefix(p, base) {
			out = append(out, p)
		}
	}
	return out
}

// siteHome is a site's address: its home option, or, for a row whose
// options are unreadable, the blogs row's domain and path.
func siteHome(s *wp.NetSite) string {
	if s.Home != "" {
		return strings.TrimRight(s.Home, "/")
	}
	return strings.TrimRight("http://"+s.Domain+s.Path, "/")
}

// syncSites brings the network's indexes in step with its blogs table:
// a new site gets an index, a site archived, spammed, deleted or opted out
// loses its own, files and all. all is the table as read; nil reads it.
func (d *Daemon) syncSites(ctx context.Context, all []*wp.NetSite) error {
	n := d.net
	if !n.multisite() {
		return nil
	}
	n.syncMu.Lock()
	defer n.syncMu.Unlock()
	if all == nil {
		var err error
		if all, err = d.WP.Sites(ctx); err != nil {
			return err
		}
	}
	want := map[int64]*wp.NetSite{}
	for _, s := range all {
		if s.BlogID != n.main && s.Indexable() {
			want[s.BlogID] = s
		}
	}
	n.mu.RLock()
	var gone []*Site
	for id, s := range n.sites {
		if id != n.main && want[id] == nil {
			gone = append(gone, s)
		}
	}
	var added []*wp.NetSite
	for id, s := range want {
		if _, ok := n.sites[id]; !ok {
			added = append(added, s)
		}
	}
	n.mu.RUnlock()
	var errs []error
	for _, s := range gone {
		if err := d.removeSite(s); err != nil {
			errs = append(errs, err)
		}
	}
	slices.SortFunc(added, func(a, b *wp.NetSite) int { return int(a.BlogID - b.BlogID) })
	for _, s := range added {
		if err := d.addSite(ctx, s); err != nil {
			errs = append(errs, fmt.Errorf("site %d (%s): %w", s.BlogID, siteHome(s), err))
		}
	}
	// Each site leaves the paths of the sites under its own (on a
	// subdirectory network, the main site every other's) to them, including
	// sites askwpd does not index.
	for _, s := range d.allSites() {
		s.Crawler.Site.Exclude.Set(nestedPaths(s.Home, s.ID, all))
	}
	return errors.Join(errs...)
}

// addSite builds a network site from its blogs row, its state under
// sites/<blog_id>/; while serving, it starts it.
func (d *Daemon) addSite(ctx context.Context, s *wp.NetSite) error {
	n := d.net
	home := siteHome(s)
	o, err := crawl.ParseOrigin(home)
	if err != nil {
		return err
	}
	bw := d.WP.ForBlog(s.BlogID)
	info, err := bw.Site(ctx)
	if err != nil {
		return err
	}
	site := crawl.Site{URL: home, Name: html.UnescapeString(info.Name), Tagline: html.UnescapeString(info.Tagline), Origin: o,
		PageOnFront: info.PageOnFront, PageForPosts: info.PageForPosts, Exclude: &crawl.PathSet{}}
	if hu, err := url.Parse(home); err == nil && strings.Trim(hu.Path, "/") != "" {
		site.Within = strings.TrimRight(hu.Path, "/") + "/"
	}
	dir := filepath.Join(d.Config.StateDir, "sites", strconv.FormatInt(s.BlogID, 10))
	ns, err := d.newSite(ctx, siteSpec{id: s.BlogID, site: site, wp: bw, dir: dir, log: d.Log.With("site", s.BlogID), warm: &n.warm,
		// Each site's chat uses its own AskWP settings and falls back to
		// the network's.
		option: fallbackOption(bw.Option, d.WP.Option, d.WP.NetworkOption)})
	if err != nil {
		return err
	}
	n.share.Join(ns.Crawler)
	n.mu.Lock()
	n.sites[s.BlogID] = ns
	bg := n.bg
	n.mu.Unlock()
	d.Log.Info("Network site opened", "site", s.BlogID, "home", home, "state_dir", dir)
	if bg != nil {
		d.startSite(bg, ns, nil)
	}
	return nil
}

// fallbackOption reads an option from the first source that has it: the
// site, then the main site, then the network. Each site's chat thereby
// uses its own AskWP settings and falls back to the network's.
func fallbackOption(srcs ...func(context.Context, string) (string, error)) func(context.Context, string) (string, error) {
	return func(ctx context.Context, name string) (string, error) {
		for _, src := range srcs {
			v, err := src(ctx, name)
			if err != nil || strings.TrimSpace(v) != "" {
				return v, err
			}
		}
		return "", nil
	}
}

// removeSite takes a site out of the network's indexes and deletes its
// state dir: an archived or deleted site's pages must leave the disk, not
// only the answers.
func (d *Daemon) removeSite(s *Site) error {
	n := d.net
	n.mu.Lock()
	delete(n.sites, s.ID)
	n.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
		s.stopEvents()
	}
	s.Crawler.Wait()
	err := closeSite(s, false)
	if rerr := os.RemoveAll(s.dir); rerr != nil {
		err = errors.Join(err, rerr)
	}
	d.Log.Info("Network site removed from the index", "site", s.ID, "home", s.Home)
	return err
}

// serveNetwork starts every non-main site and re-reads the blogs table on
// a schedule; it returns a func that stops them and waits for their passes.
func (d *Daemon) serveNetwork(bg context.Context) func() {
	n := d.net
	n.mu.Lock()
	n.bg = bg
	var start []*Site
	for id, s := range n.sites {
		if id != n.main {
			start = append(start, s)
		}
	}
	n.mu.Unlock()
	for _, s := range start {
		d.startSite(bg, s, nil)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(freshness.SiteResync)
		defer t.Stop()
		for {
			select {
			case <-bg.Done():
				return
			case <-t.C:
				if err := d.syncSites(bg, nil); err != nil && bg.Err() == nil {
					d.Log.Warn("Unable to re-read the network's sites", "error", err)
				}
			}
		}
	}()
	return func() {
		<-done
		for _, s := range d.otherSites() {
			if s.stopEvents != nil {
				s.stopEvents()
			}
			s.Crawler.Wait()
		}
	}
}

// otherSites are the network's sites but the main one, by blog id.
func (d *Daemon) otherSites() []*Site {
	n := d.net
	if n == nil { // Open failed before the network was made
		return nil
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	out := make([]*Site, 0, len(n.sites))
	for id, s := range n.sites {
		if id != n.main {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *Site) int { return int(a.ID - b.ID) })
	return out
}

// allSites are every site of the network, the main one first.
func (d *Daemon) allSites() []*Site {
	return append([]*Site{d.Site}, d.otherSites()...)
}

// siteFor finds a site by a site argument: a blog id or a home URL; ""
// is the main site, and so is every reference on a single site.
func (d *Daemon) siteFor(ref string) (*Site, error) {
	n := d.net
	if ref == "" || !n.multisite() {
		return d.Site, nil
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	if id, ok := tool.ParseBlogID(ref); ok {
		if s := n.sites[id]; s != nil {
			return s, nil
		}
		return nil, tool.Invalid(fmt.Sprintf("site %d is not an indexed site of this network", id))
	}
	want := strings.TrimRight(crawl.Canonical(ref), "/")
	for _, s := range n.sites {
		if want != "" && strings.TrimRight(crawl.Canonical(s.Home), "/") == want {
			return s, nil
		}
	}
	return nil, tool.Invalid(fmt.Sprintf("%q is not the blog id or home URL of an indexed site of this network", ref))
}

// siteOwning finds the site a page's URL belongs to: the one whose
// address is the longest prefix of it.
func (d *Daemon) siteOwning(raw string) *Site {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return nil
	}
	var best *Site
	for _, s := range d.allSites() {
		if s.Crawler.Site.Owns(u) && (best == nil || len(s.Home) > len(best.Home)) {
			best = s
		}
	}
	return best
}

// networkStatus is each site's index and the network's total, from the
// status view v.
func (d *Daemon) networkStatus(ctx context.Context, v *statusView) (*api.NetworkStatus, error) {
	ns := &api.NetworkStatus{Sites: []api.SiteStatus{}, Total: store.Stats{ByType: map[string]int{}}}
	for _, s := range d.allSites() {
		sv, err := v.siteView(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("site %d: %w", s.ID, err)
		}
		stats := sv.stats
		ns.Sites = append(ns.Sites, api.SiteStatus{ID: s.ID, URL: s.Home, Name: s.Name, Index: stats, Crawling: s.Crawler.Running(), LastRun: sv.last})
		ns.Total.Documents += stats.Documents
		ns.Total.Chunks += stats.Chunks
		ns.Total.Thin += stats.Thin
		for k, v := range stats.ByType {
			ns.Total.ByType[k] += v
		}
		if stats.LastIndexedAt.After(ns.Total.LastIndexedAt) {
			ns.Total.LastIndexedAt = stats.LastIndexedAt
		}
	}
	return ns, nil
}

// scheduleSites adds the cron entries of the sites that have a schedule
// of their own ([network.sites.ID]); runPass leaves them out of the
// network-wide schedule. A site named there but not (yet) indexed is
// looked up at each run.
func (d *Daemon) scheduleSites(ctx context.Context, c *cron.Cron) {
	if !d.net.multisite() {
		return
	}
	for id, sc := range d.Config.Network.Sites {
		for _, job := range []struct {
			spec string
			opt  crawl.IndexOptions
		}{
			{sc.Incremental, crawl.IndexOptions{Kind: "incremental", Incremental: true}},
			{sc.Nightly, crawl.IndexOptions{Kind: "nightly", Full: true}},
		} {
			if job.spec == "" {
				continue
			}
			if _, err := c.AddFunc(job.spec, func() {
				if s, err := d.siteFor(id); err == nil {
					d.sitePass(ctx, s, job.opt)
				}
			}); err != nil {
				d.Log.Error("Bad site schedule; job disabled", "site", id, "kind", job.opt.Kind, "spec", job.spec, "error", err)
			}
		}
	}
}

// ownSchedule reports whether a scheduled pass of kind leaves site s to
// its own schedule.
func (d *Daemon) ownSchedule(s *Site, kind string) bool {
	if !d.net.multisite() {
		return false // [network.sites] is for a network's sites
	}
	_, own := d.Config.Network.Sites[strconv.FormatInt(s.ID, 10)]
	return own && (kind == "incremental" || kind == "nightly")
}
