// Package daemon is askwpd's composition root: it resolves the
// configuration, and turns what wp and sitemap discover and what extract
// makes of fetched pages into the store's documents, on a schedule, on
// events and on demand. It is the only package that knows all the others.
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
	"time"

	"golang.org/x/time/rate"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/wp"
)

// Site is what the daemon knows about the WordPress site.
type Site struct {
	URL     string `json:"url"`
	Name    string `json:"name"`
	Tagline string `json:"tagline"`
	Origin  Origin `json:"-"`
	// PageOnFront and PageForPosts are the static front and posts pages.
	PageOnFront  int64 `json:"-"`
	PageForPosts int64 `json:"-"`
}

// Daemon holds the open store, the WordPress connection and the fetcher.
type Daemon struct {
	Config  config.Config
	Log     *slog.Logger
	Store   *store.DB
	Search  *search.Index
	WP      *wp.DB // nil when running from the sitemap alone
	Site    Site
	Fetcher *Fetcher
	Limiter *rate.Limiter

	// crawlMu keeps two index passes from overlapping.
	crawlMu sync.Mutex

	// life is cancelled when Serve shuts down; work started by a request
	// but meant to outlive it (an admin reindex) runs under it.
	lifeMu sync.Mutex
	life   context.Context

	startedAt time.Time

	tools toolRuntime // metrics and state of the tool calls (tools*.go)

	crawl crawlState // frontier, events and schedule state (crawl.go, events.go, schedule.go)

	// Chat tunes the /v1/chat agent loop (chat.go); zero values are defaults.
	ChatOpts ChatOptions

	// diskFull is the last write the store refused for lack of space,
	// until a pass succeeds again: shown in /v1/status and /metrics.
	diskFull struct {
		sync.Mutex
		err   string
		since time.Time
	}

	embed embedRuntime // hybrid retrieval: embeddings client and worker (embed.go)
}

// Open resolves the configuration against the WordPress install, opens
// the store and checks that the site answers. Each failure names what to
// fix in one line.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Daemon{Config: cfg, Log: log, startedAt: time.Now()}

	dsn, prefix := cfg.DBDSN, cfg.TablePrefix
	var wpc *wp.Config
	if cfg.WPRoot != "" && dsn == "" {
		path, err := wp.FindConfig(cfg.WPRoot)
		if err != nil {
			return nil, err
		}
		wpc, err = wp.ReadConfig(path, hostOf(cfg.SiteURL))
		if err != nil {
			return nil, err
		}
		dsn = wpc.DSN()
		if prefix == "" {
			prefix = wpc.TablePrefix
		}
		log.Info("Read WordPress config", "files", wpc.Files, "db_name", wpc.DBName, "db_host", wpc.DBHost, "table_prefix", prefix)
	}
	if prefix == "" {
		prefix = "wp_"
	}
	siteURL := cfg.SiteURL
	if dsn != "" {
		w, err := wp.Open(ctx, dsn, prefix)
		if err != nil {
			return nil, err
		}
		d.WP = w
		info, err := w.Site(ctx)
		if err != nil {
			w.Close()
			return nil, err
		}
		d.Site.Name, d.Site.Tagline = html.UnescapeString(info.Name), html.UnescapeString(info.Tagline)
		d.Site.PageOnFront, d.Site.PageForPosts = info.PageOnFront, info.PageForPosts
		if siteURL == "" && wpc != nil {
			siteURL = wpc.Home
		}
		if siteURL == "" {
			siteURL = info.Home
		}
	}
	if siteURL == "" {
		d.closeWP()
		return nil, errors.New("config: cannot tell the site's address: WP_HOME is not defined and the options table has no home; set site_url")
	}
	o, err := ParseOrigin(siteURL)
	if err != nil {
		d.closeWP()
		return nil, fmt.Errorf("config: %w", err)
	}
	d.Site.URL = strings.TrimRight(siteURL, "/")
	d.Site.Origin = o
	d.Fetcher = NewFetcher(o, cfg.Crawl.Timeout.Duration, cfg.Crawl.MaxBytes, cfg.Crawl.UserAgent, log)
	d.Limiter = rate.NewLimiter(rate.Limit(cfg.Crawl.RatePerSec), max(1, cfg.Crawl.Concurrency))

	st, err := store.Open(ctx, filepath.Join(cfg.StateDir, "askwpd.db"))
	if err != nil {
		d.closeWP()
		return nil, fmt.Errorf("%w (check state_dir %s is writable)", err, cfg.StateDir)
	}
	d.Store = st
	d.Search = search.New(st)
	if path := cfg.Search.Synonyms; path != "" {
		syn, err := search.LoadSynonyms(path)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("config: search.synonyms: %w", err)
		}
		d.Search.SetSynonyms(syn)
	}
	if err := d.openEmbeddings(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if d.Site.Name != "" {
		_ = st.SetMeta(ctx, "site_name", d.Site.Name)
		_ = st.SetMeta(ctx, "site_tagline", d.Site.Tagline)
	}
	return d, nil
}

// CheckSite GETs the home page, so a site that does not answer is reported
// at start-up rather than as a crawl full of errors.
func (d *Daemon) CheckSite(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := d.Fetcher.Get(ctx, d.Site.URL+"/", Conditional{}); err != nil {
		return fmt.Errorf("site %s does not answer (is WordPress running? is site_url right?): %w", d.Site.URL, err)
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

// Close releases the store and the database connection.
func (d *Daemon) Close() error {
	d.stopEmbedder()
	var errs []error
	if d.Store != nil {
		errs = append(errs, d.Store.Close())
	}
	if d.WP != nil {
		errs = append(errs, d.WP.Close())
	}
	return errors.Join(errs...)
}

// ErrDiskFull wraps store writes refused because the state dir is full.
var ErrDiskFull = errors.New("the state dir is out of disk space")

// storeFailed turns a store error into one that says what to do when the
// state dir is full, and remembers it for the status page.
func (d *Daemon) storeFailed(err error) error {
	if err == nil || !store.IsDiskFull(err) || errors.Is(err, ErrDiskFull) {
		return err
	}
	d.diskFull.Lock()
	if d.diskFull.err == "" {
		d.diskFull.since = time.Now()
	}
	d.diskFull.err = err.Error()
	d.diskFull.Unlock()
	return fmt.Errorf("%w (%s): nothing new is indexed until space is freed; search still answers from the index: %w",
		ErrDiskFull, d.Config.StateDir, err)
}

// diskFullSince is when the store last started refusing writes for lack
// of space, with the error, or zero when it writes again.
func (d *Daemon) diskFullSince() (time.Time, string) {
	d.diskFull.Lock()
	defer d.diskFull.Unlock()
	return d.diskFull.since, d.diskFull.err
}

func (d *Daemon) storeWrote() {
	d.diskFull.Lock()
	d.diskFull.err, d.diskFull.since = "", time.Time{}
	d.diskFull.Unlock()
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
// creating it with mode 0600 on first use.
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
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", fmt.Errorf("create state dir: %w", err)
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	s := hex.EncodeToString(buf)
	// O_EXCL: two processes starting at once must not both write one.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return EnsureSecret(stateDir, name)
	}
	if err != nil {
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
