package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// wpSite is the real test WordPress brought up by scripts/wp-up.sh.
type wpSite struct {
	Env map[string]string
}

func (s *wpSite) URL() string    { return s.Env["SITE_URL"] }
func (s *wpSite) Root() string   { return s.Env["WP_ROOT"] }
func (s *wpSite) Host() string   { u, _ := url.Parse(s.URL()); return u.Hostname() }
func (s *wpSite) DBName() string { return s.Env["WP_DB_NAME"] }

// testSite returns the running test WordPress. Tests that need it skip
// when it is not up, except in CI, where its absence is a failure.
func testSite(t testing.TB) *wpSite {
	t.Helper()
	path := os.Getenv("ASKWPD_TEST_WP_ENV")
	if path == "" {
		path = filepath.Join("..", ".wp-test", "env")
	}
	f, err := os.Open(path)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the test WordPress is not up (%v); run scripts/wp-up.sh first", err)
		}
		t.Skipf("the test WordPress is not up (%v); run scripts/wp-up.sh", err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = strings.Trim(v, `"'`)
		}
	}
	return &wpSite{Env: env}
}

// wpTruth is what WordPress itself says is public and private.
type wpTruth struct {
	Home   string `json:"home"`
	Public []struct {
		ID        int64  `json:"id"`
		Type      string `json:"type"`
		Title     string `json:"title"`
		URL       string `json:"url"`
		Published string `json:"published"`
		Modified  string `json:"modified"`
	} `json:"public"`
	Private []struct {
		ID      int64  `json:"id"`
		Status  string `json:"status"`
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"private"`
}

func (s *wpSite) truth(t testing.TB) *wpTruth {
	t.Helper()
	out, err := exec.Command("php", "testdata/public-urls.php", s.Root(), s.Host()).Output()
	if err != nil {
		t.Fatalf("asking WordPress for its public URLs: %v", err)
	}
	var tr wpTruth
	if err := json.Unmarshal(out, &tr); err != nil {
		t.Fatalf("public-urls.php: %v: %.200s", err, out)
	}
	return &tr
}

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
func openTestDaemon(t testing.TB, site *wpSite, logs io.Writer) *Daemon {
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
