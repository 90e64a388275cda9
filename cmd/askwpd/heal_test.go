package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
	_ "github.com/askwp/askwpd/store" // the "sqlite" driver
)

// healServe is askwpd serve run as a subprocess on the test site, and
// the client a test calls it with.
type healServe struct {
	t      *testing.T
	cmd    *exec.Cmd
	state  string
	base   string
	token  string
	stderr *wptest.SyncBuffer
}

func startHealServe(t *testing.T, bin, state string, site *wptest.Site) *healServe {
	t.Helper()
	listen := freePort(t)
	s := &healServe{t: t, state: state, base: "http://" + listen, stderr: &wptest.SyncBuffer{}}
	s.cmd = exec.Command(bin, "serve", "--wp-root", site.Root(), "--state-dir", state, "--listen", listen,
		"--set", "schedule.disabled=true", "--set", "crawl.rate_per_sec=200")
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		_, _ = s.cmd.Process.Wait()
		if t.Failed() {
			t.Logf("serve's log (tail):\n%s", tail([]byte(s.stderr.String()), 4000))
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(state, "token")); err == nil && len(b) > 0 {
			s.token = strings.TrimSpace(string(b))
			if code, _ := s.get("/v1/status"); code == 200 {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer within 60 s:\n%s", tail([]byte(s.stderr.String()), 3000))
		}
	}
}

func (s *healServe) do(method, path string, body any) (int, []byte) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error()) // restarting: the caller tries again
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (s *healServe) get(path string) (int, []byte) { return s.do("GET", path, nil) }

func (s *healServe) status() *api.Status {
	code, b := s.get("/v1/status")
	if code != 200 {
		return nil
	}
	var st api.Status
	if json.Unmarshal(b, &st) != nil {
		return nil
	}
	return &st
}

// questions is the question log's count, as the insights report gives it.
func (s *healServe) questions() int {
	code, b := s.get("/v1/insights?days=1")
	if code != 200 {
		return -1
	}
	var r struct {
		Questions int `json:"questions"`
	}
	_ = json.Unmarshal(b, &r)
	return r.Questions
}

// missing lists the public posts get_document does not find.
func (s *healServe) missing(truth *wptest.Truth) []string {
	var out []string
	for _, p := range truth.Public {
		if code, _ := s.do("POST", "/v1/tools/get_document", map[string]any{"id_or_url": crawl.Canonical(p.URL)}); code != 200 {
			out = append(out, p.URL)
		}
	}
	return out
}

// waitAll waits until every public post is found, and returns how long
// that took; it fails the test past limit.
func (s *healServe) waitAll(truth *wptest.Truth, limit time.Duration, healed func(*api.Status) bool) time.Duration {
	s.t.Helper()
	t0 := time.Now()
	var miss []string
	for time.Since(t0) < limit {
		if st := s.status(); st != nil && healed(st) && !st.Crawling {
			if miss = s.missing(truth); len(miss) == 0 {
				return time.Since(t0)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	st := s.status()
	s.t.Fatalf("not healed within %v: %d public posts missing (%.3q); status store %+v", limit, len(miss), miss, st)
	return 0
}

// TestServe_HealsDamagedStore damages a serving daemon's store three
// ways, and a stopped one's once, and checks that serve comes back by
// itself: every public post found again within 2 minutes, no private
// text in the state dir, the damaged file kept, the question log kept
// where SQLite could read it, the status telling what happened.
func TestServe_HealsDamagedStore(t *testing.T) {
	site := wptest.Get(t)
	site.Lock(t) // compares the index with the site's posts
	bin := buildBinary(t)
	truth := site.Truth(t)
	var needles []string
	for _, p := range truth.Private {
		if c := strings.TrimSpace(p.Content); len(c) >= 24 {
			needles = append(needles, c[:24])
		}
	}
	const nq = 12
	const limit = 2 * time.Minute
	for _, tc := range []struct {
		name string
		hurt func(t *testing.T, db string)
		// whileServing: hurt the store of a running serve; else of a
		// stopped one, then start it.
		whileServing bool
		kept         bool
	}{
		{"deleted while serving", func(t *testing.T, db string) {
			for _, sfx := range []string{"", "-wal", "-shm"} {
				_ = os.Remove(db + sfx)
			}
		}, true, false},
		{"random pages while serving", func(t *testing.T, db string) { scribble(t, db, 4) }, true, true},
		{"truncated while serving", func(t *testing.T, db string) {
			fi, err := os.Stat(db)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(db, fi.Size()/3); err != nil {
				t.Fatal(err)
			}
		}, true, true},
		{"random pages while stopped", func(t *testing.T, db string) { scribble(t, db, 4) }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			s := startHealServe(t, bin, state, site)
			took := s.waitAll(truth, 3*time.Minute, func(*api.Status) bool { return true })
			t.Logf("first pass: %d public posts found after %v", len(truth.Public), took.Round(time.Second))
			for i := range nq {
				if code, b := s.do("POST", "/v1/tools/search_site", map[string]any{"query": fmt.Sprintf("heal question %d %s", i, truth.Public[i%len(truth.Public)].Title)}); code != 200 {
					t.Fatalf("search: %d %s", code, b)
				}
			}
			for deadline := time.Now().Add(20 * time.Second); s.questions() != nq; time.Sleep(200 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the question log holds %d, want %d", s.questions(), nq)
				}
			}
			db := filepath.Join(state, "askwpd.db")
			if !tc.whileServing {
				_ = s.cmd.Process.Signal(syscall.SIGTERM)
				_, _ = s.cmd.Process.Wait()
			}
			if tc.whileServing {
				checkpoint(t, db)
			}
			hurtAt := time.Now()
			tc.hurt(t, db)
			if !tc.whileServing {
				s = startHealServe(t, bin, state, site)
			}
			var heal *api.StoreStatus
			took = s.waitAll(truth, limit, func(st *api.Status) bool {
				heal = st.Store
				return st.Store != nil && st.Store.LastHeal != nil && st.Store.LastHeal.At.After(hurtAt.Add(-time.Second)) && st.Store.Healthy
			})
			h := heal.LastHeal
			got := s.questions()
			t.Logf("%s: every public post (%d) found again %v after the damage; cause %q, kept %q, restored %v; questions %d of %d (salvaged %v, unreadable %v, uncounted %v)",
				tc.name, len(truth.Public), took.Round(100*time.Millisecond), h.Cause, filepath.Base(h.Damaged), h.Restored, got, nq, h.Salvaged, h.Unreadable, h.Uncounted)
			if tc.kept {
				if _, err := os.Stat(h.Damaged); err != nil || !strings.HasPrefix(filepath.Base(h.Damaged), "askwpd.db.corrupt-") {
					t.Errorf("damaged file not kept aside: %q: %v", h.Damaged, err)
				}
				// Every question is in the log or counted lost, unless the
				// damage took the table's end, which the heal then says.
				uncounted := slices.Contains(h.Uncounted, "questions")
				if got != h.Salvaged["questions"] || (!uncounted && got+h.Unreadable["questions"] < nq) {
					t.Errorf("questions: %d in the log, %d salvaged, %d unreadable (uncounted %v), of %d",
						got, h.Salvaged["questions"], h.Unreadable["questions"], h.Uncounted, nq)
				}
			} else if got != nq || !h.Restored {
				t.Errorf("a deleted store lost questions (%d of %d) or was not restored (%v)", got, nq, h.Restored)
			}
			// doctor says it too, and where the damaged file is.
			out, _ := exec.Command(bin, "doctor", "--wp-root", site.Root(), "--state-dir", state).CombinedOutput()
			line := ""
			for l := range strings.Lines(string(out)) {
				if strings.Contains(l, " store ") {
					line = strings.TrimSpace(l)
				}
			}
			if !strings.HasPrefix(line, "warn store") || (tc.kept && !strings.Contains(line, h.Damaged)) {
				t.Errorf("doctor after the heal: %q", line)
			}
			if found := wptest.FilesHolding(t, state, needles...); len(found) > 0 {
				t.Errorf("private text in the state dir: %v", found)
			}
		})
	}
}

// checkpoint moves the serving store's WAL into its file, as SQLite's
// own checkpoints do as a daemon goes on writing: damage to the file is
// then damage to the store, not to pages the WAL still covers.
func checkpoint(t *testing.T, path string) {
	t.Helper()
	c, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var busy, logged, moved int
	if err := c.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &moved); err != nil || busy != 0 {
		t.Fatalf("checkpoint: busy %d, %v", busy, err)
	}
	fi, _ := os.Stat(path)
	t.Logf("checkpointed %d WAL pages: the store's file is %d bytes", moved, fi.Size())
}

// scribble writes random bytes over every n-th page of the store but the
// first (its header and schema), in place, as a failing disk or a
// half-restored backup leaves it.
func scribble(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	const page = 4096
	rng := rand.New(rand.NewPCG(7, 9))
	buf := make([]byte, page)
	for p := int64(1); p < fi.Size()/page; p += int64(n) {
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		if _, err := f.WriteAt(buf, p*page); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestStore_EarlierBuildMigrated builds askwpd as it was just before the
// newest migration was added, indexes the test site with it, and opens
// its store with this build: migrated to the newest version, every
// document kept. A store whose version is newer than this build knows is
// refused, with what to do, and left as it is.
func TestStore_EarlierBuildMigrated(t *testing.T) {
	site := wptest.Get(t)
	root := wptest.RepoRoot()
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skip("not a git checkout: no earlier build to make")
	}
	migs, _ := filepath.Glob(filepath.Join(root, "store", "migrations", "*.sql"))
	slices.Sort(migs)
	newest := migs[len(migs)-1]
	out, err := exec.Command("git", "-C", root, "log", "--format=%H", "--diff-filter=A", "--", newest).Output()
	added := strings.Fields(string(out))
	if err != nil || len(added) == 0 {
		t.Skipf("git does not say when %s was added (a shallow clone?): %v", filepath.Base(newest), err)
	}
	base := added[len(added)-1] + "^"
	wt := filepath.Join(t.TempDir(), "earlier")
	if out, err := exec.Command("git", "-C", root, "worktree", "add", "--detach", wt, base).CombinedOutput(); err != nil {
		t.Fatalf("git worktree add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("git", "-C", root, "worktree", "remove", "--force", wt).Run() })
	old := filepath.Join(t.TempDir(), "askwpd-earlier")
	build := exec.Command("go", "build", "-o", old, "./cmd/askwpd")
	build.Dir = wt
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the earlier askwpd: %v: %s", err, out)
	}
	state := t.TempDir()
	if out, err := exec.Command(old, "index", "--wp-root", site.Root(), "--state-dir", state).CombinedOutput(); err != nil {
		t.Fatalf("earlier askwpd index: %v: %s", err, tail(out, 2000))
	}
	db := filepath.Join(state, "askwpd.db")
	before, docs := schemaOf(t, db)
	if before != len(migs)-1 || docs == 0 {
		t.Fatalf("the earlier build left version %d with %d documents, want version %d and documents", before, docs, len(migs)-1)
	}
	bin := buildBinary(t)
	if out, err := exec.Command(bin, "index", "--wp-root", site.Root(), "--state-dir", state).CombinedOutput(); err != nil {
		t.Fatalf("this askwpd on the earlier store: %v: %s", err, tail(out, 2000))
	}
	after, kept := schemaOf(t, db)
	t.Logf("store of %s (%s): version %d, %d documents; after this build: version %d, %d documents",
		base, filepath.Base(newest), before, docs, after, kept)
	if after != len(migs) || kept < docs {
		t.Errorf("migrated to version %d with %d documents, want %d with at least %d", after, kept, len(migs), docs)
	}
	if m, _ := filepath.Glob(db + ".corrupt-*"); len(m) > 0 {
		t.Errorf("a sound earlier store was moved aside: %v", m)
	}

	// A newer schema: refused by serve and index alike, nothing moved.
	c, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, len(migs)+5)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, cmd := range []string{"index", "serve"} {
		out, err := exec.Command(bin, cmd, "--wp-root", site.Root(), "--state-dir", state, "--listen", freePort(t)).CombinedOutput()
		t.Logf("%s on a newer store: %v: %s", cmd, err, strings.TrimSpace(tail(out, 300)))
		if err == nil || !bytes.Contains(out, []byte("upgrade askwpd")) {
			t.Errorf("%s on a store of version %d: %v, want a refusal saying to upgrade askwpd", cmd, len(migs)+5, err)
		}
	}
	if v, n := schemaOf(t, db); v != len(migs)+5 || n != kept {
		t.Errorf("the refused store changed: version %d, %d documents", v, n)
	}
	if m, _ := filepath.Glob(db + ".corrupt-*"); len(m) > 0 {
		t.Errorf("a newer store was moved aside: %v", m)
	}
}

// schemaOf reads a store's schema version and document count.
func schemaOf(t *testing.T, path string) (version, docs int) {
	t.Helper()
	c, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(`SELECT count(*) FROM documents`).Scan(&docs); err != nil {
		t.Fatal(err)
	}
	return version, docs
}
