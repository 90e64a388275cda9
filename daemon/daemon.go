// Package daemon is askwpd's composition root: it resolves the
// configuration against the WordPress install, builds the store, the
// search index, the crawler, embeddings, the tools and the chat agent, and
// runs them: the HTTP API, the schedule, the event worker, metrics and
// status. It holds no logic of its own beyond that wiring.
//
// Where to start reading: site.go builds one site's services (newSite)
// and starts them (startSite), the main site's and a network's alike;
// network.go holds the sites (a single site is a network of one) and
// route.go picks the one a call is for; compose.go is the one place the
// wrappers (CPU slots, the question log, routing) stand between callers
// and a site's services. The timing rules are the freshness package's.
package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/insights"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/wp"
)

// Daemon is askwpd's services, wired together: the sites (the main one
// and, on a network, the others) and what serves them.
type Daemon struct {
	Config config.Config
	Log    *slog.Logger
	// Site is the main site's services: d.Store, d.Search, d.Crawler,
	// d.Embed, d.Tools and d.Agent are the main site's.
	*Site
	WP *wp.DB // nil when running from the sitemap alone
	// Questions is the question log behind the insights report.
	Questions *insights.Log
	// net is the sites and their routing; a single site is a network of
	// one.
	net *network
	// cluster is cluster mode's node and its database pool; nil when off.
	cluster *clusterState
	// origins is the address each site's fetcher dials (origin.go).
	origins originState
	// wpDSN and wpPrefix are how the WordPress database was reached.
	wpDSN, wpPrefix string

	// What every site shares: the synonyms, read once; the chat's cap and
	// daily budget; wp-config.php's constants, for the chat's keys.
	synonyms  *search.Synonyms
	gate      *chat.Gate
	constants func() (map[string]string, error)

	startedAt time.Time

	// wpNet is what wp-config.php says of a network; nil for a single site.
	wpNet *wp.Network

	// life is cancelled when Serve shuts down; work started by a request
	// but meant to outlive it (an admin reindex) runs under it.
	lifeMu sync.Mutex
	life   context.Context

	// metrics are made on first use, so a Daemon built by Open needs
	// nothing more.
	metricsOnce sync.Once
	metrics     *metrics
	// slots bound the tool calls running at once (withSlot).
	slotsOnce sync.Once
	slots     chan struct{}

	// statusCache holds the store's part of the status (status.go).
	statusCache statusCache
	// dbState is the WordPress database's, as status reports it.
	dbState dbState
	// damage is the stores found damaged while serving (heal.go).
	damage storeDamage

	// cronMu guards the schedule, for the status page's next runs.
	cronMu  sync.Mutex
	cron    *cron.Cron
	entries map[string]cron.EntryID

	secretMu sync.Mutex
	secret   []byte // the webhook secret, read once

	// wpFiles are the WordPress config files read, whose group is the web
	// server's; web and webGID are found from them once (webGroup).
	wpFiles []string
	webOnce sync.Once
	web     WebGroup
	webGID  int
	webErr  error
}

// Open resolves the configuration against the WordPress install, opens
// the store and builds the services. Each failure names what to fix in one
// line.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Daemon{Config: cfg, Log: log, startedAt: time.Now()}
	if path := cfg.Search.Synonyms; path != "" {
		syn, err := search.LoadSynonyms(path)
		if err != nil {
			return nil, fmt.Errorf("config: search.synonyms: %w", err)
		}
		d.synonyms = syn
	}
	site, err := d.openSite(ctx)
	if err != nil {
		d.closeWP()
		return nil, err
	}
	d.constants = d.siteConstants(site.URL)
	sp := siteSpec{id: 1, site: site, wp: d.WP, dir: cfg.StateDir, log: log}
	if d.wpNet != nil {
		sp.id = d.wpNet.MainBlogID
	}
	if d.WP != nil {
		sp.option = d.WP.Option
	}
	if d.Site, err = d.newSite(ctx, sp); err != nil {
		d.closeWP()
		return nil, err
	}
	d.openQuestions(site.URL)
	if err := d.openNetwork(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("network: %w", err)
	}
	if err := d.openCluster(ctx, d.wpDSN, d.wpPrefix); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// openSite finds the main site: its database from wp-config.php (or db_dsn),
// its name and static pages from the options table, and its address from
// site_url, WP_HOME or the options, in that order. It leaves d.WP open
// when there is a database.
func (d *Daemon) openSite(ctx context.Context) (crawl.Site, error) {
	cfg := d.Config
	var site crawl.Site
	dsn, prefix := cfg.DBDSN, cfg.TablePrefix
	var wpc *wp.Config
	if cfg.WPRoot != "" && dsn == "" {
		path, err := wp.FindConfig(cfg.WPRoot)
		if err != nil {
			return site, err
		}
		wpc, err = wp.ReadConfig(path, hostOf(cfg.SiteURL))
		if err != nil {
			return site, err
		}
		dsn = wpc.DSN()
		if prefix == "" {
			prefix = wpc.TablePrefix
		}
		d.wpFiles = wpc.Files
		if n, ok := wpc.Network(); ok {
			d.wpNet = &n
		}
		d.Log.Info("Read WordPress config", "files", wpc.Files, "db_name", wpc.DBName, "db_host", wpc.DBHost, "table_prefix", prefix)
	}
	if prefix == "" {
		prefix = "wp_"
	}
	siteURL := cfg.SiteURL
	if dsn != "" {
		w, err := wp.Open(ctx, dsn, prefix)
		if err != nil {
			return site, err
		}
		d.WP = w
		d.wpDSN, d.wpPrefix = dsn, prefix
		info, err := w.Site(ctx)
		if err != nil {
			return site, err
		}
		site.Name, site.Tagline = html.UnescapeString(info.Name), html.UnescapeString(info.Tagline)
		site.PageOnFront, site.PageForPosts = info.PageOnFront, info.PageForPosts
		if siteURL == "" && wpc != nil {
			siteURL = wpc.Home
		}
		if siteURL == "" {
			siteURL = info.Home
		}
	}
	if siteURL == "" {
		return site, errors.New("config: cannot tell the site's address: WP_HOME is not defined and the options table has no home; set site_url")
	}
	o, err := crawl.ParseOrigin(siteURL)
	if err != nil {
		return site, fmt.Errorf("config: %w", err)
	}
	site.URL = strings.TrimRight(siteURL, "/")
	site.Origin = o
	site.Exclude = &crawl.PathSet{} // on a subdirectory network, the other sites' paths (syncSites)
	return site, nil
}

// CheckSite GETs the home page, so a site that does not answer is reported
// at start-up rather than as a crawl full of errors.
func (d *Daemon) CheckSite(ctx context.Context) error {
	if d.cluster != nil {
		// A cluster node serves from the changelog whether or not the site
		// answers now, and only the leader fetches: it need not wait.
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	site := d.Crawler.Site.URL
	if _, err := d.Crawler.Fetcher.Get(ctx, site+"/", crawl.Conditional{}); err != nil {
		return fmt.Errorf("site %s does not answer (is WordPress running? is site_url right?): %w", site, err)
	}
	return nil
}

// lifetime returns the serving lifetime's context, or, outside Serve, a
// context detached from the caller's.
func (d *Daemon) lifetime(ctx context.Context) context.Context {
	d.lifeMu.Lock()
	defer d.lifeMu.Unlock()
	if d.life != nil {
		return d.life
	}
	return context.WithoutCancel(ctx)
}

func (d *Daemon) closeWP() {
	if d.WP != nil {
		d.WP.Close()
		d.WP = nil
	}
}

// Close releases the sites' services and the database connection.
func (d *Daemon) Close() error {
	d.Questions.Close()
	var errs []error
	for _, s := range d.otherSites() {
		errs = append(errs, closeSite(s, true))
	}
	errs = append(errs, d.closeCluster())
	if d.Site != nil {
		errs = append(errs, closeSite(d.Site, true))
	}
	if d.WP != nil {
		errs = append(errs, d.WP.Close())
	}
	return errors.Join(errs...)
}

// crawlOptions copies the crawl section into the crawler's options.
func crawlOptions(c config.CrawlConfig) crawl.Options {
	return crawl.Options{Concurrency: c.Concurrency, RatePerSec: c.RatePerSec, Budget: c.Budget, Timeout: c.Timeout.Duration,
		MaxBytes: c.MaxBytes, UserAgent: c.UserAgent, IndexArchives: c.IndexArchives,
		IndexNoindex: c.IndexNoindex}
}

// siteConstants reads wp-config.php's constants again at each call, for
// the chat's provider keys (WordPress's Connectors name OPENAI_API_KEY and
// friends); nil without a wp_root. What wp-config.php says of the
// database is not its concern: a config that names none still has its
// constants read.
func (d *Daemon) siteConstants(siteURL string) func() (map[string]string, error) {
	if d.Config.WPRoot == "" {
		return nil
	}
	root, host := d.Config.WPRoot, hostOf(siteURL)
	return func() (map[string]string, error) {
		path, err := wp.FindConfig(root)
		if err != nil {
			return nil, err
		}
		c, err := wp.ReadConfig(path, host)
		if c == nil {
			return nil, err
		}
		return c.Constants, nil
	}
}

func hostOf(site string) string {
	if site == "" {
		return ""
	}
	u, err := url.Parse(site)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// EnsureSecret returns the content of a secret file in the state dir,
// creating it on first use with mode 0640 and the state dir's group, which
// PrepareStateDir made the web server's.
func EnsureSecret(stateDir, name string) (string, error) {
	path := filepath.Join(stateDir, name)
	b, err := os.ReadFile(path)
	if err == nil {
		s := strings.TrimSpace(string(b))
		if len(s) < 16 {
			return "", fmt.Errorf("%s is shorter than 16 characters; delete it to have a new one made", path)
		}
		return s, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if err := os.MkdirAll(stateDir, StateDirMode); err != nil {
		return "", fmt.Errorf("create state dir: %w", err)
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	s := hex.EncodeToString(buf)
	// O_EXCL: two processes starting at once must not both write one.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, SecretMode)
	if errors.Is(err, fs.ErrExist) {
		return EnsureSecret(stateDir, name)
	}
	if err != nil {
		return "", fmt.Errorf("create %s: %w", path, err)
	}
	// The umask may have narrowed the mode, and the file has this process's
	// primary group, which need not be the web server's; both before the
	// secret is written, so it is never readable by a group it is not for.
	if err := secretOwnership(f, stateDir); err != nil {
		f.Close()
		return "", fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := f.WriteString(s + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return s, nil
}

// secretOwnership gives a new secret file the contract's mode and the
// state dir's group. A group this process may not give is left, as
// PrepareStateDir has already said why.
func secretOwnership(f *os.File, stateDir string) error {
	if err := f.Chmod(SecretMode); err != nil {
		return err
	}
	dfi, err := os.Stat(stateDir)
	if err != nil {
		return err
	}
	ffi, err := f.Stat()
	if err != nil {
		return err
	}
	ds, ok1 := dfi.Sys().(*syscall.Stat_t)
	fst, ok2 := ffi.Sys().(*syscall.Stat_t)
	if ok1 && ok2 && ds.Gid != fst.Gid && (os.Geteuid() == 0 || inGroup(int(ds.Gid))) {
		return f.Chown(-1, int(ds.Gid))
	}
	return nil
}

// ErrCrawlRunning is returned by Index while another pass runs, in this
// process or another; its message names the holder.
var ErrCrawlRunning = crawl.ErrCrawlRunning

// IndexOptions steer a one-shot pass.
type IndexOptions = crawl.IndexOptions

// Index runs one discovery, crawl and index pass (askwpd index); on a
// network, one per site at once, drawing on the shared budget. The run
// returned is the main site's.
func (d *Daemon) Index(ctx context.Context, opt IndexOptions) (*store.Run, error) {
	if d.cluster != nil {
		// A pass outside serve would fill this store alone, and no other
		// node would see it.
		return nil, errors.New(`cluster mode: the leader runs the passes; askwpd index is for a daemon with cluster.mode off`)
	}
	defer d.invalidateView()
	others := d.otherSites()
	errs := make([]error, len(others))
	var wg sync.WaitGroup
	for i, s := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Crawler.Index(ctx, opt); err != nil {
				errs[i] = fmt.Errorf("site %d (%s): %w", s.ID, s.Home, err)
			}
		}()
	}
	run, err := d.Crawler.Index(ctx, opt)
	wg.Wait()
	return run, errors.Join(append([]error{err}, errs...)...)
}
