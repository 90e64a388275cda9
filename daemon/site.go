package daemon

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/embed"
	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
	"github.com/askwp/askwpd/wp"
)

// Site is one site's services over its own index. The main site and each
// site of a network are built alike, by newSite, and started alike, by
// startSite; what stands between them and their callers is composed in
// compose.go.
type Site struct {
	// ID is the site's blog id (1 for a single site); Home its address,
	// without the trailing slash.
	ID   int64
	Home string
	Name string

	Store  *store.DB
	Search *search.Index
	// Crawler keeps the store in step with the site.
	Crawler *crawl.Crawler
	// Embed is hybrid retrieval's worker; nil when embeddings are off.
	Embed *embed.Worker
	// Tools runs the tool contract over the site's index.
	Tools *tool.Service
	// Agent answers the site's chat turns.
	Agent *chat.Agent

	// dir is the site's state dir: state_dir for the main site, which
	// keeps the single-site layout, sites/<blog_id> under it for the others.
	dir string
	log *slog.Logger
	// warm is the bound the site's cache warming draws on; nil warms as
	// far as the caches go (the main site).
	warm *warmPool

	// cancel stops the site's work (startSite); stopEvents its event
	// worker.
	cancel     context.CancelFunc
	stopEvents func()
}

// siteSpec is what newSite builds a site from: which site it is, where
// its state lives and how its WordPress tables are read.
type siteSpec struct {
	id   int64
	site crawl.Site
	// wp reads the site's tables; nil when running from the sitemap alone.
	wp *wp.DB
	// option reads the settings of the site's chat (chat.Agent.SiteOption).
	option func(ctx context.Context, name string) (string, error)
	dir    string
	log    *slog.Logger
	warm   *warmPool
}

// newSite opens a site's store in its state dir and builds every service
// over it: the search index (with the synonyms and its snapshot), the
// crawler, embeddings, the tools and the chat agent. It is the one
// constructor of a site; the main site's differs from a network site's
// only by its spec.
func (d *Daemon) newSite(ctx context.Context, sp siteSpec) (_ *Site, err error) {
	// A damaged store is moved aside and a fresh one started: the pass
	// startSite runs on an empty store fills it again.
	st, _, err := store.OpenHealing(ctx, filepath.Join(sp.dir, "askwpd.db"), sp.log)
	if err != nil {
		return nil, err
	}
	s := &Site{ID: sp.id, Home: sp.site.URL, Name: sp.site.Name, Store: st, dir: sp.dir, log: sp.log, warm: sp.warm}
	defer func() {
		if err != nil {
			closeSite(s, false)
		}
	}()
	st.Observe(staleOnCommit{&d.statusCache})
	s.Search = search.New(st)
	s.Search.SetSynonyms(d.synonyms)
	if err := setSnapshot(ctx, s); err != nil {
		sp.log.Warn("Unable to keep a snapshot of the search index; each start loads it from the store", "error", err)
	}
	s.Crawler = crawl.New(sp.site, crawlOptions(d.Config.Crawl), st, sp.wp, sp.log)
	s.Crawler.StateDir = sp.dir
	s.Crawler.BuildKey, _ = buildID() // setSnapshot said why there is none: every page is extracted
	d.pinOrigin(ctx, s)
	if s.Embed, err = embed.Open(ctx, d.Config.Embeddings, st, sp.log); err != nil {
		return nil, err
	}
	if s.Embed != nil {
		s.Embed.OnFallback = func(reason string) { d.obs().embedFallbacks.WithLabelValues(reason).Inc() }
		s.Crawler.OnIndexed = s.Embed.Kick
	}
	s.Tools = &tool.Service{Log: sp.log, Store: st, Search: s.Search, Crawler: s.Crawler, Embed: s.Embed, Metrics: d.obs()}
	st.Observe(s.Tools) // for the store's life
	if d.gate == nil {
		// One cap and one day's budget for the whole network (one daemon,
		// one provider account), kept in the first site's store: the main
		// site's.
		d.gate = chat.NewGate(ctx, d.Config.Chat.MaxConcurrent, d.Config.Chat.DailyModelCalls, st, d.Log)
	}
	s.Agent = &chat.Agent{Tools: d.agentTools(s.ID, false), Reader: d.agentTools(s.ID, true), Log: sp.log,
		Provider: chat.ProviderConfig(d.Config.Provider), Site: chat.Site{URL: sp.site.URL, Name: sp.site.Name, Tagline: sp.site.Tagline},
		SiteOption: sp.option, SiteConstants: d.constants, Gate: d.gate,
		OnResponse: func(r *chat.Response) { d.obs().observeChat(len(r.ToolCalls), len(r.Sources)) }}
	if sp.site.Name != "" {
		_ = st.SetMeta(ctx, "site_name", sp.site.Name)
		_ = st.SetMeta(ctx, "site_tagline", sp.site.Tagline)
	}
	return s, nil
}

// closeSite releases a site's services; keep writes the search index's
// snapshot first, which the next start reads rather than analyzing the
// store.
func closeSite(s *Site, keep bool) error {
	s.Embed.Close()
	if s.Search != nil {
		if keep {
			if err := s.Search.WriteSnapshot(); err != nil {
				s.log.Warn("Unable to write the search index's snapshot", "error", err)
			}
		}
		s.Search.Close()
	}
	return s.Store.Close()
}

// startSite runs a site's own work under the serving lifetime bg: its
// event worker, its search index (loaded, warmed, its snapshot kept), and
// a pass at once when its store is empty or a pass was cut short. A
// cluster's leader catches up and fills its store by its own passes when
// it takes the lease. loaded, when set, runs once the index is in memory.
func (d *Daemon) startSite(bg context.Context, s *Site, loaded func(context.Context)) {
	ctx, cancel := context.WithCancel(bg)
	s.cancel = cancel
	own := d.cluster == nil
	s.stopEvents = s.Crawler.StartEvents(ctx, d.Config.Schedule.CatchUp && own)
	go d.loadSearchIndex(ctx, s, loaded)
	if !own {
		return
	}
	if empty, err := s.Store.Empty(ctx); err == nil && empty {
		go d.sitePass(ctx, s, crawl.IndexOptions{Kind: "initial"})
	} else if n, err := s.Store.FrontierPending(ctx); err == nil && n > 0 {
		go d.sitePass(ctx, s, crawl.IndexOptions{Kind: "resume"})
	}
}

// loadSearchIndex builds a site's in-memory search index; until it is
// ready, the site's searches wait for it. Then it keeps the index's
// snapshot on disk until ctx ends.
func (d *Daemon) loadSearchIndex(ctx context.Context, s *Site, loaded func(context.Context)) {
	start := time.Now()
	if err := s.Search.Load(ctx); err != nil {
		if ctx.Err() == nil {
			s.log.Warn("Unable to load the search index into memory; the next search retries", "error", err)
		}
		return
	}
	if loaded != nil {
		loaded(ctx)
	}
	si := s.Search.Stats()
	s.log.Info("Search index loaded into memory", "chunks", si.Chunks, "took_ms", time.Since(start).Milliseconds(),
		"from_snapshot", s.Search.FromSnapshot())
	if !s.Search.FromSnapshot() {
		start = time.Now()
		if err := s.Search.WriteSnapshot(); err != nil {
			s.log.Warn("Unable to write the search index's snapshot", "error", err)
		} else {
			s.log.Info("Search index snapshot written", "took_ms", time.Since(start).Milliseconds())
		}
	}
	d.warmSite(ctx, s)
	t := time.NewTicker(freshness.SnapshotQuiet)
	defer t.Stop()
	keepSnapshot(ctx, s.Search, t.C, s.log)
}

// sitePass runs one pass of a site. In a cluster, only the leader
// crawls.
func (d *Daemon) sitePass(ctx context.Context, s *Site, opt crawl.IndexOptions) {
	if !d.passAllowed(opt) {
		return
	}
	_, err := s.Crawler.Index(ctx, opt)
	d.statusCache.forgetSite(s.ID)
	d.invalidateView()
	switch {
	case err == nil:
		// A first pass fills an index that was empty when it was warmed,
		// and any pass drops the changed pages' texts from the caches.
		d.warmSite(ctx, s)
	case ctx.Err() != nil:
	case errors.Is(err, crawl.ErrCrawlRunning):
		// Another process's pass (askwpd index) covers this one.
		s.log.Info("Index pass skipped", "kind", opt.Kind, "reason", err.Error())
	default:
		s.log.Error("Index pass failed", "kind", opt.Kind, "error", err)
	}
}

// warmPool is what the caches of a network's sites but the main one may
// still take when they are warmed (networkWarmBytes at first), one site
// at a time.
type warmPool struct {
	sync.Mutex
	left int
}

// warmSite warms a site's search caches: as far as they go for the main
// site, else with what is left of the network's bound.
func (d *Daemon) warmSite(ctx context.Context, s *Site) {
	w := s.warm
	if w == nil {
		d.warmSearch(ctx, s.Search, 0, s.log)
		return
	}
	w.Lock()
	defer w.Unlock()
	if w.left > 0 {
		w.left -= d.warmSearch(ctx, s.Search, w.left, s.log)
	}
}
