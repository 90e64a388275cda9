// Package wptest finds the real test WordPress that scripts/wp-up.sh
// brings up, for integration tests. Tests skip when it is not up, except
// in CI, where its absence fails them.
package wptest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Site is the running test WordPress.
type Site struct {
	Env map[string]string
}

// URL is the site's home URL.
func (s *Site) URL() string { return s.Env["SITE_URL"] }

// Root is the WordPress root (the folder of wp-config.php).
func (s *Site) Root() string { return s.Env["WP_ROOT"] }

// Host is the site's host name.
func (s *Site) Host() string {
	u, _ := url.Parse(s.URL())
	return u.Hostname()
}

// RepoRoot is the repository's top folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Get returns the running test site.
func Get(t testing.TB) *Site {
	t.Helper()
	s, err := Open()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v; run scripts/wp-up.sh first", err)
		}
		t.Skipf("%v; run scripts/wp-up.sh", err)
	}
	return s
}

// Open reads the running test site's env file ($ASKWPD_TEST_WP_ENV, else
// .wp-test/env), for programs: benchmarks use the site as tests do.
func Open() (*Site, error) {
	path := os.Getenv("ASKWPD_TEST_WP_ENV")
	if path == "" {
		path = filepath.Join(RepoRoot(), ".wp-test", "env")
	}
	return OpenFile(path)
}

// OpenFile reads the env file of a site wp-up.sh brought up, for tests
// of a site of their own (ASKWPD_SITE_NAME, ASKWPD_WP_STATE).
func OpenFile(path string) (*Site, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the test WordPress is not up (%w)", err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = strings.Trim(v, `"'`)
		}
	}
	return &Site{Env: env}, sc.Err()
}

// Truth is what WordPress itself says is public and private.
type Truth struct {
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
		// Password: published behind a password; Login: published behind
		// a redirect to wp-login.php.
		Password bool `json:"password"`
		Login    bool `json:"login"`
	} `json:"private"`
}

// Truth asks WordPress, through PHP, for its public and private posts.
func (s *Site) Truth(t testing.TB) *Truth {
	t.Helper()
	out, err := exec.Command("php", filepath.Join(RepoRoot(), "internal", "wptest", "public-urls.php"), s.Root(), s.Host()).Output()
	if err != nil {
		t.Fatalf("asking WordPress for its public URLs: %v", err)
	}
	var tr Truth
	if err := json.Unmarshal(out, &tr); err != nil {
		t.Fatalf("public-urls.php: %v: %.200s", err, out)
	}
	return &tr
}

// PHP runs a PHP snippet inside the test WordPress (wp-load.php is
// already required) and returns its standard output.
func (s *Site) PHP(t testing.TB, code string) string {
	t.Helper()
	script := `$_SERVER['HTTP_HOST'] = '` + s.Host() + `'; $_SERVER['REQUEST_URI'] = '/'; define('WP_USE_THEMES', false); require '` +
		strings.TrimRight(s.Root(), "/") + `/wp-load.php'; ` + code
	out, err := exec.Command("php", "-r", script).CombinedOutput()
	if err != nil {
		t.Fatalf("php: %v: %s", err, out)
	}
	return string(out)
}

// Lock holds an exclusive lock on the test site until the test ends.
// Tests in several packages run at once against one WordPress: every test
// that changes the site, or that compares the index with the site's exact
// content, takes it, so none sees another's half-done change.
func (s *Site) Lock(t testing.TB) {
	t.Helper()
	release, err := s.Acquire(context.Background())
	if err != nil {
		t.Fatalf("wptest: lock: %v", err)
	}
	t.Cleanup(release)
}

// Acquire takes the lock Lock takes, waiting until ctx is done, and
// returns its release. The fd is close-on-exec, so neither a daemon nor
// PHP started meanwhile inherits it.
func (s *Site) Acquire(ctx context.Context) (release func(), err error) {
	dir := s.Env["WP_STATE_DIR"]
	if dir == "" {
		dir = filepath.Join(RepoRoot(), ".wp-test")
	}
	f, err := os.OpenFile(filepath.Join(dir, "test.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Word returns a made-up word, prefix + random letters + suffix, that no
// page holds until a test writes it. Letters only: a word mixing letters
// and digits is indexed with its parts too ("zq2pu" as zq, 2, pu), and two
// such words would then share parts and match each other.
func Word(prefix, suffix string) string {
	b := []byte(prefix)
	for i := 0; i < 8; i++ {
		b = append(b, byte('a'+rand.IntN(26)))
	}
	return string(append(b, suffix...))
}
