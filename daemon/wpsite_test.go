package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
)

// openTestDaemon opens a daemon on the test site with a fresh state dir,
// configured from wp_root alone, as a site owner would; tune, when given,
// changes the configuration first.
func openTestDaemon(t testing.TB, site *wptest.Site, logs io.Writer, tune ...func(*config.Config)) *Daemon {
	t.Helper()
	cfg := config.Default()
	cfg.WPRoot = site.Root()
	cfg.StateDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.Crawl.RatePerSec = 200
	cfg.Schedule.Disabled = true
	for _, f := range tune {
		f(&cfg)
	}
	if logs == nil {
		logs = io.Discard
	}
	d, err := Open(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

var (
	indexedOnce sync.Once
	indexedD    *Daemon
	indexedErr  error
	indexedLogs = &wptest.SyncBuffer{}
)

// indexedDaemon is one daemon over the indexed test site, opened from
// wp_root alone as a site owner would, and shared by the tests that read it
// (indexing takes seconds). Each caller still takes the site lock, since
// it compares the index with WordPress. Its logs collect in indexedLogs.
func indexedDaemon(t *testing.T) (*Daemon, *wptest.Site) {
	t.Helper()
	site := wptest.Get(t)
	site.Lock(t)
	indexedOnce.Do(func() {
		cfg := config.Default()
		cfg.WPRoot = site.Root()
		// Not t.TempDir: the store outlives the first test that opens it.
		dir, err := os.MkdirTemp("", "askwpd-indexed-test-")
		if err != nil {
			indexedErr = err
			return
		}
		cfg.StateDir = dir
		cfg.Listen = "127.0.0.1:0"
		cfg.Crawl.RatePerSec = 200
		cfg.Schedule.Disabled = true
		d, err := Open(context.Background(), cfg, slog.New(slog.NewJSONHandler(indexedLogs, nil)))
		if err != nil {
			indexedErr = err
			return
		}
		if _, err := d.Index(context.Background(), crawl.IndexOptions{Full: true}); err != nil {
			indexedErr = err
			return
		}
		indexedD = d
	})
	if indexedErr != nil {
		t.Fatal(indexedErr)
	}
	return indexedD, site
}
