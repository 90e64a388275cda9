package daemon

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/askwp/askwpd/internal/wptest"
)

// syncBuffer collects logs written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// openTestDaemon opens a daemon on the test site with a fresh state dir,
// configured from wp_root alone, as a site owner would.
func openTestDaemon(t testing.TB, site *wptest.Site, logs io.Writer) *Daemon {
	t.Helper()
	cfg := DefaultConfig()
	cfg.WPRoot = site.Root()
	cfg.StateDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.Crawl.RatePerSec = 200
	cfg.Schedule.Disabled = true
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
