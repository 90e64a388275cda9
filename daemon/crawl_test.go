package daemon

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
)

// withoutSitemap switches WordPress's sitemap off through an mu-plugin for
// the rest of the test.
func withoutSitemap(t *testing.T, site *wptest.Site) {
	t.Helper()
	dir := filepath.Join(site.Env["WP_CONTENT_DIR"], "mu-plugins")
	created := false
	if _, err := os.Stat(dir); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		created = true
	}
	file := filepath.Join(dir, "askwpd-test-no-sitemap.php")
	if err := os.WriteFile(file, []byte("<?php\nadd_filter('wp_sitemaps_enabled', '__return_false');\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Remove(file)
		if created {
			os.Remove(dir) // only when empty
		}
	})
	resp, err := http.Get(site.URL() + "/wp-sitemap.xml")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("wp-sitemap.xml answers %d with the sitemap switched off", resp.StatusCode)
	}
}

// TestDiscover_WithoutSitemap is discovery's acceptance: with WordPress's
// sitemap switched off, the database, menus, home page and feed still
// find every public URL, and each URL records its sources.
func TestDiscover_WithoutSitemap(t *testing.T) {
	site := wptest.Get(t)
	site.Lock(t)
	withoutSitemap(t, site)
	ctx := context.Background()
	d := openTestDaemon(t, site, nil)
	run, err := d.Index(ctx, crawl.IndexOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	truth := site.Truth(t)
	want := map[string]bool{}
	for _, p := range truth.Public {
		want[crawl.Canonical(p.URL)] = true
	}
	got, err := d.Store.DocumentURLs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var missing, extra []string
	for u := range want {
		if _, ok := got[u]; !ok {
			missing = append(missing, u)
		}
	}
	for u := range got {
		if !want[u] {
			extra = append(extra, u)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("without a sitemap, indexed URLs differ from WordPress's public URLs:\nmissing: %v\nextra: %v", missing, extra)
	}
	rows, err := d.Store.ListURLs(ctx, store.URLFilter{})
	if err != nil {
		t.Fatal(err)
	}
	bySource := map[string]int{}
	for _, r := range rows {
		for _, s := range r.Sources {
			bySource[s]++
		}
		if slices.Contains(r.Sources, crawl.SourceSitemap) {
			t.Errorf("%s has source sitemap with the sitemap off", r.URL)
		}
	}
	t.Logf("run %+v; URLs by source: %v", *run, bySource)
	for _, s := range []string{crawl.SourceDB, crawl.SourceHome, crawl.SourceMenu, crawl.SourceFeed} {
		if bySource[s] == 0 {
			t.Errorf("no URL found through %s", s)
		}
	}
	// Menu entries pointing at public pages are recorded as such.
	menu, err := d.WP.MenuLinks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(menu) == 0 {
		t.Fatal("the seeded site has no menu links")
	}
}

// TestCrawl_ResumeAfterKill kills a crawling askwpd process mid-pass and
// starts another on the same state: it resumes the same pass, fetches
// none of the pages the first one finished, ends with exactly the public
// pages, and applies the event the first process accepted.
func TestCrawl_ResumeAfterKill(t *testing.T) {
	if os.Getenv("ASKWPD_CRAWL_CHILD") != "" {
		t.Skip("child process")
	}
	site := wptest.Get(t)
	site.Lock(t)
	ctx := context.Background()
	state := t.TempDir()

	w := wptest.Word("zq", "kil")
	out := site.PHP(t, `$id = wp_insert_post(array('post_title' => 'Killed `+w+`', 'post_content' => '<p>The `+w+` paragraph on ferry timetables.</p>', 'post_status' => 'publish'));
		echo $id, ' ', get_permalink($id);`)
	var postID int64
	var postURL string
	fmt.Sscanf(out[strings.LastIndex(out, "\n")+1:], "%d %s", &postID, &postURL)
	if postID == 0 {
		t.Fatalf("php: %s", out)
	}
	t.Cleanup(func() { site.PHP(t, fmt.Sprintf(`wp_delete_post(%d, true);`, postID)) })

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCrawlChild$", "-test.v")
	cmd.Env = append(os.Environ(), "ASKWPD_CRAWL_CHILD=1", "ASKWPD_CHILD_STATE="+state,
		fmt.Sprintf("ASKWPD_CHILD_EVENT=%d %s", postID, postURL))
	var childOut wptest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &childOut, &childOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	// Watch the child's store until it has fetched some pages, then kill it.
	var db *store.DB
	deadline := time.Now().Add(60 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the child did not start crawling:\n%s", childOut.String())
		}
		time.Sleep(50 * time.Millisecond)
		if db == nil {
			if _, err := os.Stat(filepath.Join(state, "askwpd.db")); err != nil {
				continue
			}
			var err error
			if db, err = store.Open(ctx, filepath.Join(state, "askwpd.db")); err != nil {
				continue
			}
		}
		p, err := db.Progress(ctx, 1)
		if err == nil && p.Fetched >= 12 {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	before, err := db.Progress(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	pending, _ := db.FrontierPending(ctx)
	db.Close()
	if pending == 0 {
		t.Fatalf("the child finished before it was killed (fetched %d)", before.Fetched)
	}
	t.Logf("killed after %d pages, %d still queued", before.Fetched, pending)

	// A new process on the same state resumes.
	cfg := childConfig(site, state)
	d, err := Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var mu sync.Mutex
	requested := map[string]int{}
	tr := d.Crawler.Fetcher.Client.Transport
	d.Crawler.Fetcher.Client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		requested[crawl.Canonical(r.URL.String())]++
		mu.Unlock()
		return tr.RoundTrip(r)
	})
	run, err := d.Index(ctx, crawl.IndexOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if run.ID != 1 {
		t.Errorf("the restart ran pass %d, want the interrupted pass 1", run.ID)
	}
	for u, n := range requested {
		if before.URLs[u] {
			t.Errorf("%s was fetched before the kill and again after", u)
		}
		if n > 1 {
			t.Errorf("%s fetched %d times in the resumed pass", u, n)
		}
	}
	if len(requested) == 0 {
		t.Error("the resumed pass fetched nothing")
	}

	truth := site.Truth(t)
	got, err := d.Store.DocumentURLs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, p := range truth.Public {
		want[crawl.Canonical(p.URL)] = true
		if _, ok := got[crawl.Canonical(p.URL)]; !ok {
			t.Errorf("after the resumed pass, %s is missing", p.URL)
		}
	}
	perPost := map[int64]int{}
	for u, id := range got {
		if !want[u] {
			t.Errorf("after the resumed pass, %s is indexed but not public", u)
		}
		perPost[id]++
		if id > 0 && perPost[id] > 1 {
			t.Errorf("post %d is indexed twice", id)
		}
	}

	// The event the killed process accepted is applied now.
	stop := d.Crawler.StartEvents(ctx, false)
	defer stop()
	waitApplied(t, d)
	e, err := d.Store.FindEvent(ctx, "child-"+fmt.Sprint(postID))
	if err != nil || e.AppliedAt.IsZero() {
		t.Fatalf("the event accepted before the kill: %+v, %v", e, err)
	}
	if !searchHas(t, d, w, crawl.Canonical(postURL)) {
		t.Errorf("the post the event named is not searchable")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func childConfig(site *wptest.Site, state string) config.Config {
	cfg := config.Default()
	cfg.WPRoot = site.Root()
	cfg.StateDir = state
	cfg.Listen = "127.0.0.1:0"
	cfg.Crawl.RatePerSec = 200
	cfg.Schedule.Disabled = true
	return cfg
}

// TestHelperCrawlChild is the process TestCrawl_ResumeAfterKill kills: it
// accepts one event, then crawls slowly.
func TestHelperCrawlChild(t *testing.T) {
	if os.Getenv("ASKWPD_CRAWL_CHILD") == "" {
		t.Skip("run by TestCrawl_ResumeAfterKill")
	}
	site := wptest.Get(t)
	ctx := context.Background()
	cfg := childConfig(site, os.Getenv("ASKWPD_CHILD_STATE"))
	cfg.Crawl.RatePerSec = 6
	cfg.Crawl.Concurrency = 2
	d, err := Open(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	var u string
	fmt.Sscanf(os.Getenv("ASKWPD_CHILD_EVENT"), "%d %s", &id, &u)
	if _, err := d.ReceiveEvents(ctx, []*store.Event{{EventID: fmt.Sprint("child-", id), Type: store.EventPostPublished,
		PostID: id, URL: u, Payload: []byte(`{"public":true}`)}}); err != nil {
		t.Fatal(err)
	}
	d.Index(ctx, crawl.IndexOptions{Full: true})
	t.Fatal("the child was not killed")
}

// TestIndex_CancelResumes cancels a pass mid-crawl (as a shutdown does):
// Index returns promptly, the frontier stays, and the next pass resumes it
// without fetching any page twice.
func TestIndex_CancelResumes(t *testing.T) {
	var (
		mu   sync.Mutex
		hits = map[string]int{}
	)
	const pages = 40
	srv := pagesSite(t, pages, func(_ http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/", "/wp-sitemap.xml", "/robots.txt", "/feed/":
		default:
			// Simulates a slow site, so the pass is still crawling when
			// it is cancelled; nothing waits on this.
			time.Sleep(40 * time.Millisecond)
		}
		return false
	})
	const workers = 2
	d := pagesDaemon(t, srv, workers)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	_, err := d.Index(ctx, crawl.IndexOptions{Full: true, Progress: func(n, _ int) {
		if n >= 10 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled pass: err = %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("cancelled pass took %v to return", took)
	}
	if n, _ := d.Store.FrontierPending(context.Background()); n == 0 {
		t.Fatal("no frontier left to resume")
	}
	st, err := d.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Freshness == nil || st.Freshness.FrontierPending == 0 {
		t.Fatalf("status does not show the pending frontier: %+v", st.Freshness)
	}
	run, err := d.Index(context.Background(), crawl.IndexOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if run.ID != 1 {
		t.Errorf("resumed run %d, want 1", run.ID)
	}
	mu.Lock()
	defer mu.Unlock()
	// Fetches the cancellation cut off (at most one per worker) are
	// repeated; nothing that completed is.
	twice := 0
	for i := range pages {
		p := fmt.Sprintf("/p%d/", i)
		switch hits[p] {
		case 1:
		case 2:
			twice++
		default:
			t.Errorf("%s fetched %d times", p, hits[p])
		}
	}
	if twice > workers {
		t.Errorf("%d pages fetched twice; only the %d in flight at the cancel may be", twice, workers)
	}
	if hits["/wp-sitemap.xml"] != 1 {
		t.Errorf("the resumed pass ran discovery again (%d sitemap fetches)", hits["/wp-sitemap.xml"])
	}
	stats, _ := d.Store.Stats(context.Background())
	if stats.Documents != pages+1 { // and the home page
		t.Errorf("%d documents, want %d", stats.Documents, pages+1)
	}
}

// TestIndex_UnchangedPages: a pass that finds a page as it was, by a 304
// or by the body it was indexed from, counts it unchanged without
// extracting and storing it again, and starts its fetch age over; a page
// whose body changed is indexed again. So do an event's re-render and a
// full pass, which fetches every page without validators.
func TestIndex_UnchangedPages(t *testing.T) {
	var edited atomic.Bool
	srv := pagesSite(t, 3, func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/p0/":
			// Validators, as nginx sends for a page cache's files.
			if r.Header.Get("If-None-Match") == `"v1"` {
				w.WriteHeader(http.StatusNotModified)
				return true
			}
			w.Header().Set("ETag", `"v1"`)
		case "/p2/":
			if edited.Load() {
				w.Header().Set("Content-Type", "text/html")
				io.WriteString(w, `<html><head><title>Page 2</title></head><body class="page"><main><h1>Page 2</h1>`+
					`<p>Edited: the keeper's log of the storm, the lamp and the ships it saw home.</p></main></body></html>`)
				return true
			}
		}
		return false
	})
	d := pagesDaemon(t, srv, 0)
	ctx := context.Background()
	if _, err := d.Index(ctx, crawl.IndexOptions{}); err != nil {
		t.Fatal(err)
	}

	// What the pages were indexed from is marked stale, as an older
	// build's extraction or a fetch long ago would have left it: a page
	// extracted again gets its hash back, one skipped keeps the mark.
	raw, err := sql.Open("sqlite", "file:"+d.Store.Path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	const long = "2020-01-01T00:00:00Z"
	mark := func() {
		t.Helper()
		if _, err := raw.Exec(`UPDATE documents SET content_hash = 'stale', fetched_at = ? WHERE url LIKE '%/p_/'`, long); err != nil {
			t.Fatal(err)
		}
	}
	page := func(p string) (hash string, fetched string) {
		t.Helper()
		if err := raw.QueryRow(`SELECT content_hash, fetched_at FROM documents WHERE url = ?`, srv.URL+p).Scan(&hash, &fetched); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return hash, fetched
	}
	mark()
	edited.Store(true)
	run, err := d.Index(ctx, crawl.IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if run.Indexed != 1 || run.Unchanged != 3 { // p0, p1 and the home page
		t.Errorf("second pass: %d indexed, %d unchanged; want 1 (p2) and 3", run.Indexed, run.Unchanged)
	}
	for _, c := range []struct {
		page  string
		stale bool
	}{{"/p0/", true}, {"/p1/", true}, {"/p2/", false}} {
		hash, fetched := page(c.page)
		if (hash == "stale") != c.stale {
			t.Errorf("%s: content hash %q after a pass; extracted again: %v, want %v", c.page, hash, hash != "stale", !c.stale)
		}
		if fetched == long {
			t.Errorf("%s: fetch time not renewed by the pass", c.page)
		}
	}
	if st, err := d.Store.Stats(ctx); err != nil || st.OldestFetch.Before(run.StartedAt.Truncate(time.Second)) {
		t.Errorf("oldest fetch %v, before the pass began at %v (%v)", st.OldestFetch, run.StartedAt, err)
	}

	// An event re-renders its post's page: one that comes back as it was
	// is not extracted again, one that changed is.
	mark()
	edited.Store(false)
	if err := d.Store.InsertEvents(ctx, []*store.Event{
		{EventID: "same-1", Type: store.EventPostUpdated, PostID: 1, URL: srv.URL + "/p1/"},
		{EventID: "edited-2", Type: store.EventPostUpdated, PostID: 2, URL: srv.URL + "/p2/"},
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Crawler.ApplyEvents(ctx); err != nil || n != 2 {
		t.Fatalf("applied %d events (%v), want 2", n, err)
	}
	for _, c := range []struct {
		page  string
		stale bool
	}{{"/p1/", true}, {"/p2/", false}} {
		hash, fetched := page(c.page)
		if (hash == "stale") != c.stale || fetched == long {
			t.Errorf("%s after its event: content hash %q, fetched %s; want extracted again: %v, fetched now", c.page, hash, fetched, !c.stale)
		}
	}

	mark()
	full, err := d.Index(ctx, crawl.IndexOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if full.Fetched < 4 || full.Indexed != 0 {
		t.Errorf("full pass: %d fetched, %d indexed; want the 3 pages and the home page, none indexed", full.Fetched, full.Indexed)
	}
	for _, p := range []string{"/p0/", "/p1/", "/p2/"} {
		if hash, fetched := page(p); hash != "stale" || fetched == long {
			t.Errorf("%s after a full pass: content hash %q, fetched %s; want it skipped, fetched now", p, hash, fetched)
		}
	}
}

// TestCrawl_OnePassAcrossProcesses: two daemons on one state dir, as
// `askwpd serve` and an `askwpd index` beside it are, never run a pass at
// once. The second is refused while the first runs, and runs once it is
// done.
func TestCrawl_OnePassAcrossProcesses(t *testing.T) {
	site := wptest.Get(t)
	site.Lock(t)
	d1 := openTestDaemon(t, site, nil)
	cfg := d1.Config
	d2, err := Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d2.Close() })

	started, tried := make(chan struct{}), make(chan struct{})
	var once sync.Once
	first := make(chan error, 1)
	go func() {
		_, err := d1.Index(context.Background(), crawl.IndexOptions{Full: true, Progress: func(int, int) {
			once.Do(func() { close(started); <-tried })
		}})
		first <- err
	}()
	select {
	case <-started:
	case err := <-first:
		t.Fatalf("the first pass ended before its first page: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the first pass did not start within 30 s")
	}
	_, err = d2.Index(context.Background(), crawl.IndexOptions{})
	close(tried)
	if !errors.Is(err, crawl.ErrCrawlRunning) {
		t.Errorf("a second process's pass during the first: %v, want ErrCrawlRunning", err)
	} else if want := fmt.Sprintf("(pid %d on ", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("the refusal %q does not name the holder (%q)", err, want)
	}
	if err := <-first; err != nil {
		t.Fatalf("first pass: %v", err)
	}
	if _, err := d2.Index(context.Background(), crawl.IndexOptions{}); err != nil {
		t.Errorf("the second process's pass after the first: %v", err)
	}
	runs, err := d2.Store.Runs(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Errorf("%d passes recorded, want 2 (the refused one starts none)", len(runs))
	}

	// A holder killed mid-pass leaves its lease unexpired; the next pass
	// sees its pid is gone and takes over at once. A holder elsewhere is
	// waited out.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	for _, c := range []struct {
		l      store.Lease
		refuse bool
	}{
		{store.Lease{Name: "crawl", Holder: "killed", PID: dead.Process.Pid, Host: host, What: "askwpd index"}, false},
		{store.Lease{Name: "crawl", Holder: "other-host", PID: os.Getpid(), Host: host + ".elsewhere", What: "askwpd index"}, true},
	} {
		if _, err := d2.Store.AcquireLease(context.Background(), c.l, time.Hour, nil); err != nil {
			t.Fatal(err)
		}
		_, err := d2.Index(context.Background(), crawl.IndexOptions{})
		if c.refuse != errors.Is(err, crawl.ErrCrawlRunning) {
			t.Errorf("a pass beside a lease held by %s: %v; want refused: %v", c.l.Holder, err, c.refuse)
		}
		_ = d2.Store.ReleaseLease(context.Background(), "crawl", c.l.Holder)
	}
	runs, err = d2.Store.Runs(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.FinishedAt.IsZero() {
			t.Errorf("pass %d has no finish record", r.ID)
		}
	}
}

// pagesDaemon opens a daemon for srv in a state dir of its own, crawling
// as fast as the site answers, with workers fetchers (0: the default),
// and no schedule.
func pagesDaemon(t *testing.T, srv *httptest.Server, workers int) *Daemon {
	t.Helper()
	return openOn(t, srv.URL, func(cfg *config.Config) {
		cfg.Crawl.RatePerSec = 1000
		if workers > 0 {
			cfg.Crawl.Concurrency = workers
		}
	})
}

// openOn opens a daemon, not served, for the site at siteURL in a state
// dir of its own, with no schedule and its log discarded; set, when not
// nil, adjusts the rest of its config. It closes when the test ends.
func openOn(t *testing.T, siteURL string, set func(*config.Config)) *Daemon {
	t.Helper()
	cfg := config.Default()
	cfg.SiteURL = siteURL
	cfg.StateDir = t.TempDir()
	cfg.Schedule.Disabled = true
	if set != nil {
		set(&cfg)
	}
	d, err := Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// pagesSite serves a site of n pages, /p0/ to /p{n-1}/, listed in its
// sitemap, each a main element of some thirty sentences; before, when
// set, sees each request first, and answers it in their stead when it
// returns true.
func pagesSite(t *testing.T, n int, before func(http.ResponseWriter, *http.Request) bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if before != nil && before(w, r) {
			return
		}
		switch r.URL.Path {
		case "/wp-sitemap.xml":
			w.Header().Set("Content-Type", "application/xml")
			io.WriteString(w, `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
			for i := range n {
				fmt.Fprintf(w, "<url><loc>http://%s/p%d/</loc></url>", r.Host, i)
			}
			io.WriteString(w, `</urlset>`)
		case "/robots.txt", "/feed/":
			http.NotFound(w, r)
		default:
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<html><head><title>Page %s</title></head><body class="page"><main><h1>Page %s</h1><p>%s</p></main></body></html>`,
				r.URL.Path, r.URL.Path, strings.Repeat("Words about the lighthouse at "+r.URL.Path+". ", 30))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
