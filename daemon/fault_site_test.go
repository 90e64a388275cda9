package daemon

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
)

// The site's faults, one test each, each during a full pass and during
// an incremental one. The site proxy (faults_test.go) passes the real
// WordPress through, then, from the pass's third page on, answers with
// the fault for a while, then passes it through again. Each test asserts
// nothing lost and nothing wrong: the pages indexed before are still
// there after the faulted pass, the pass returns, a pass after the fault
// finishes without error, and then every public page is indexed at its
// address (no /?p=, no redirect), nothing else is, and no private text is
// in any file of the state dir.

// faultHook answers a request in the fault's place; false passes it on.
type faultHook func(w http.ResponseWriter, r *http.Request) bool

// offlineState is the proxy's listener while it refuses connections.
type offlineState struct {
	mu    sync.Mutex
	down  bool
	extra *http.Server // serves once the proxy listened again
}

// goOffline refuses connections at the proxy's address for d: it stops
// listening and drops its open connections, then listens again at the
// same address.
func (p *siteProxy) goOffline(t *testing.T, d time.Duration) {
	o := &p.offline
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down {
		return
	}
	o.down = true
	if o.extra != nil {
		o.extra.Close()
	} else {
		p.srv.Listener.Close()
		go p.srv.CloseClientConnections()
	}
	time.AfterFunc(d, func() {
		var ln net.Listener
		var err error
		for range 50 {
			if ln, err = net.Listen("tcp", p.self); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("the site proxy cannot listen again at %s: %v", p.self, err)
			return
		}
		srv := &http.Server{Handler: http.HandlerFunc(p.serve)}
		o.mu.Lock()
		o.extra, o.down = srv, false
		o.mu.Unlock()
		go srv.Serve(ln)
	})
}

// siteFault is one fault of the site.
type siteFault struct {
	// hits picks the requests the fault hits: pages, or sitemaps.
	hits func(r *http.Request) bool
	// window is how long the fault lasts from its first hit; 0 lasts the
	// whole faulted pass.
	window time.Duration
	// answer answers a hit request.
	answer func(t *testing.T, p *siteProxy, w http.ResponseWriter, r *http.Request, left time.Duration)
	// timeout is crawl.timeout for the faulted pass: short where the
	// client has to give up, long enough for a loaded site otherwise.
	timeout time.Duration
	// clean: the faulted pass itself must finish, without an error, as
	// a site that asked for a pause and got it.
	clean bool
	// after, when set, checks the daemon right after the faulted pass.
	after func(t *testing.T, d *Daemon)
	// skip is how many of the requests it hits pass before the fault
	// starts, so that it starts in the middle of the pass.
	skip int
}

func pageRequest(r *http.Request) bool {
	p := r.URL.Path
	return !sitemapRequest(r) && !strings.HasPrefix(p, "/feed") && !strings.HasPrefix(p, "/wp-json") &&
		!strings.HasPrefix(p, "/wp-content") && r.URL.Query().Get("rest_route") == ""
}

func sitemapRequest(r *http.Request) bool {
	return strings.Contains(r.URL.Path, "sitemap") || r.URL.Path == "/robots.txt"
}

// hang holds the request until the client gives up.
func hang(p *siteProxy, r *http.Request) {
	p.hanging.Add(1)
	defer p.hanging.Add(-1)
	select {
	case <-r.Context().Done():
	case <-p.closing:
	}
}

// faultTally is what the fault did.
type faultTally struct {
	hits  atomic.Int64
	first atomic.Int64 // unix nanos of the first hit
	mu    sync.Mutex
	at    []string // each hit's time from the first, and its path
}

func (ft *faultTally) String() string {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return strings.Join(ft.at, " ")
}

// arm starts the fault after skip of the requests it hits have passed.
func (p *siteProxy) arm(t *testing.T, f siteFault, skip int) *faultTally {
	tally := &faultTally{}
	var seen atomic.Int64
	hook := faultHook(func(w http.ResponseWriter, r *http.Request) bool {
		if !f.hits(r) || seen.Add(1) <= int64(skip) {
			return false
		}
		now := time.Now().UnixNano()
		tally.first.CompareAndSwap(0, now)
		left := time.Duration(tally.first.Load() + int64(f.window) - now)
		if f.window > 0 && left <= 0 {
			return false
		}
		tally.hits.Add(1)
		tally.mu.Lock()
		tally.at = append(tally.at, fmt.Sprintf("%.2fs:%s", time.Duration(now-tally.first.Load()).Seconds(), r.URL.Path))
		tally.mu.Unlock()
		f.answer(t, p, w, r, left)
		return true
	})
	p.fault.Store(&hook)
	return tally
}

func (p *siteProxy) disarm() { p.fault.Store(nil) }

// siteTruth is what the index must hold once a fault is over.
type siteTruth struct {
	public  map[string]bool // canonical URLs, through the proxy
	markers []string        // private items' words
}

// readSiteTruth reads what WordPress says; through a site proxy, the
// public URLs name the proxy (sp nil: the site itself).
func readSiteTruth(t *testing.T, site *wptest.Site, sp *siteProxy) *siteTruth {
	t.Helper()
	tr := &siteTruth{public: map[string]bool{}}
	for _, p := range site.Truth(t).Public {
		u := p.URL
		if sp != nil {
			u = strings.Replace(u, sp.upstream, sp.self, 1)
		}
		tr.public[crawl.Canonical(u)] = true
	}
	if len(tr.public) < 5 {
		t.Fatalf("WordPress lists %d public pages", len(tr.public))
	}
	byKey := map[string]seedItem{}
	for _, it := range readSeed(t, site).Items {
		byKey[it.Key] = it
	}
	for _, k := range privateKinds {
		if it := byKey[k]; it.BodyMarker != "" {
			tr.markers = append(tr.markers, it.BodyMarker, it.Marker)
		}
	}
	if len(tr.markers) == 0 {
		t.Fatal("the seed manifest has no private markers: re-run scripts/wp-up.sh")
	}
	return tr
}

// checkWhole fails the test unless the index holds every public page at
// its address and nothing else, and no private word is in the state dir.
func checkWhole(t *testing.T, d *Daemon, tr *siteTruth, when string) {
	t.Helper()
	got := docURLs(t, d)
	for u := range tr.public {
		if _, ok := got[u]; !ok {
			t.Errorf("%s: public %s is not indexed", when, u)
		}
	}
	for u := range got {
		switch {
		case strings.Contains(u, "?p=") || strings.Contains(u, "&p="):
			t.Errorf("%s: a page is stored at its /?p= address %s", when, u)
		case !tr.public[u]:
			t.Errorf("%s: %s is indexed but is not a public page's address (a redirect, or not public)", when, u)
		}
	}
	if found := wptest.FilesHolding(t, d.Config.StateDir, tr.markers...); len(found) > 0 {
		t.Errorf("%s: private text in the state dir: %v", when, found)
	}
}

// runSiteFault runs f during a full pass and during an incremental one,
// each on a fresh daemon indexed through the proxy first.
func runSiteFault(t *testing.T, f siteFault) {
	site := wptest.Get(t)
	site.Lock(t) // compares the index with the site
	for _, kind := range []string{"full", "incremental"} {
		// Each has its own proxy, daemon and store; most of their time is
		// spent waiting on the site and on the fault's window, which
		// overlap.
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			siteFaultPass(t, site, f, kind == "incremental")
		})
	}
}

// siteFaultPass is one subtest of runSiteFault.
func siteFaultPass(t *testing.T, site *wptest.Site, f siteFault, incremental bool) {
	ctx := context.Background()
	sp := newSiteProxy(t, site.URL())
	t.Cleanup(func() {
		sp.offline.mu.Lock()
		defer sp.offline.mu.Unlock()
		if sp.offline.extra != nil {
			sp.offline.extra.Close()
		}
	})
	tr := readSiteTruth(t, site, sp)
	logs := newFaultLog()
	cfg := config.Default()
	cfg.WPRoot = site.Root()
	cfg.SiteURL = sp.URL()
	cfg.StateDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.Crawl.Concurrency = 2
	cfg.Crawl.RatePerSec = 50
	cfg.Crawl.Timeout = config.Duration{Duration: f.timeout}
	cfg.Schedule.Disabled = true
	d, err := Open(ctx, cfg, logs.logger())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	slow := crawl.NewFetcher(d.Crawler.Site.Origin, 20*time.Second, cfg.Crawl.MaxBytes, cfg.Crawl.UserAgent, d.Log)
	short := d.Crawler.Fetcher

	d.Crawler.Fetcher = slow
	opt, before := faultBaseline(t, d, tr, incremental)
	d.Crawler.Fetcher = short
	if f.timeout >= 20*time.Second {
		d.Crawler.Fetcher = slow
	}
	tally := sp.arm(t, f, f.skip)
	r0 := sp.requests.Load()
	t0 := time.Now()
	run, err := d.Index(ctx, opt)
	took := time.Since(t0)
	sp.disarm()
	// The fault is over when the proxy listens again.
	waitFor(t, 10*time.Second, "the site proxy to listen again", func() bool {
		sp.offline.mu.Lock()
		defer sp.offline.mu.Unlock()
		return !sp.offline.down
	})
	if run == nil {
		t.Fatalf("faulted %s pass: no run (%v)", passKind(incremental), err)
	}
	t.Logf("faulted %s pass: %v, %d hits of the fault (%v), %d requests; fetched %d, indexed %d, unchanged %d, errors %d, error %q",
		passKind(incremental), took.Round(time.Millisecond), tally.hits.Load(), tally, sp.requests.Load()-r0,
		run.Fetched, run.Indexed, run.Unchanged, run.Errors, run.Error)
	if tally.hits.Load() == 0 {
		t.Fatal("the fault never hit the pass")
	}
	if f.clean && (err != nil || run.Errors > 0 || run.Error != "") {
		t.Errorf("the site asked for a pause and the pass did not finish cleanly: %v, %d errors", err, run.Errors)
	}
	if f.after != nil {
		f.after(t, d)
	}
	d.Crawler.Fetcher = slow
	faultAftermath(t, d, tr, opt, before, took)
}

// faultBaseline indexes the whole site and checks it, and returns the
// options of the pass to fault and the pages indexed. For an incremental
// pass to fetch every page, the baseline is indexed as of long ago: every
// post and sitemap entry changed since.
func faultBaseline(t *testing.T, d *Daemon, tr *siteTruth, incremental bool) (crawl.IndexOptions, map[string]int64) {
	t.Helper()
	opt := crawl.IndexOptions{Full: true}
	if incremental {
		opt = crawl.IndexOptions{Incremental: true}
		d.Store.Now = func() time.Time { return time.Now().AddDate(-30, 0, 0) }
	}
	t0 := time.Now()
	if run, err := d.Index(context.Background(), crawl.IndexOptions{Full: true}); err != nil || run.Errors > 0 {
		t.Fatalf("baseline pass: %v %+v", err, run)
	}
	d.Store.Now = time.Now
	before := docURLs(t, d)
	t.Logf("baseline: %d documents in %v", len(before), time.Since(t0).Round(time.Millisecond))
	checkWhole(t, d, tr, "after the baseline")
	return opt, before
}

// faultAftermath checks what a faulted pass that took took left, then
// that once the fault is over the next pass of the same kind finishes
// (the one the fault stopped is resumed first), the pages that failed
// coming back once their retry time has, and the index is whole.
func faultAftermath(t *testing.T, d *Daemon, tr *siteTruth, opt crawl.IndexOptions, before map[string]int64, took time.Duration) {
	t.Helper()
	if took > 90*time.Second {
		t.Errorf("the faulted pass took %v to return", took)
	}
	after := docURLs(t, d)
	for u := range before {
		if _, ok := after[u]; !ok {
			t.Errorf("the faulted pass removed %s", u)
		}
	}
	checkWhole(t, d, tr, "after the faulted pass, before the retries")

	d.Store.Now = func() time.Time { return time.Now().Add(freshness.RetryMax + time.Hour) }
	var (
		passes []string
		run    *store.Run
		err    error
	)
	// A pass the fault stopped is resumed first, and finishes the URLs it
	// had not fetched; the ones that failed come in the pass after.
	var failed []string
	for range 3 {
		run, err = d.Index(context.Background(), opt)
		if run != nil {
			passes = append(passes, fmt.Sprintf("%s: fetched %d, %d errors, %v", run.Kind, run.Fetched, run.Errors, err))
		}
		if failed = failedPublic(t, d, tr); err == nil && run.Errors == 0 && len(failed) == 0 {
			break
		}
	}
	t.Logf("passes after the fault: %v", passes)
	if err != nil || run == nil || run.Errors > 0 || run.Error != "" {
		t.Fatalf("no pass finished cleanly after the fault ended: %v", passes)
	}
	// A page indexed before the fault is still in the index even when its
	// fetch failed and was never tried again: its record tells.
	for _, f := range failed {
		t.Errorf("after the fault ended: public %s is left failed, never fetched again", f)
	}
	checkWhole(t, d, tr, "after the fault ended")
}

// failedPublic lists the public pages whose last fetch failed.
func failedPublic(t *testing.T, d *Daemon, tr *siteTruth) []string {
	t.Helper()
	var out []string
	for u := range tr.public {
		if st, err := d.Store.FindURL(context.Background(), u); err != nil || st.Status == "error" {
			out = append(out, u)
		}
	}
	return out
}

func passKind(incremental bool) string {
	if incremental {
		return "incremental"
	}
	return "full"
}

func TestFault_Site500(t *testing.T) {
	runSiteFault(t, siteFault{hits: pageRequest, skip: 2, window: 1500 * time.Millisecond, timeout: 20 * time.Second,
		answer: func(_ *testing.T, _ *siteProxy, w http.ResponseWriter, _ *http.Request, _ time.Duration) {
			http.Error(w, "Error establishing a database connection", http.StatusInternalServerError)
		}})
}

// retryAfterFault answers status with a Retry-After of a second for a
// window longer than one pause, so some URLs are retried twice.
func retryAfterFault(status int) siteFault {
	return siteFault{hits: pageRequest, skip: 2, window: 1500 * time.Millisecond, timeout: 20 * time.Second, clean: true,
		answer: func(_ *testing.T, _ *siteProxy, w http.ResponseWriter, _ *http.Request, _ time.Duration) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy, come back in a second", status)
		}}
}

func TestFault_Site503RetryAfter(t *testing.T) {
	runSiteFault(t, retryAfterFault(http.StatusServiceUnavailable))
}

// TestFault_Site429RetryAfter also checks that the status names the
// throttling as a site fault.
func TestFault_Site429RetryAfter(t *testing.T) {
	f := retryAfterFault(http.StatusTooManyRequests)
	f.after = func(t *testing.T, d *Daemon) {
		st, err := d.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sf, _ := st.Extra["site_fault"].(map[string]any)
		t.Logf("status site_fault: %v", sf)
		if sf["class"] != "throttled" {
			t.Errorf("status after a 429 with Retry-After: site_fault = %v, want class throttled", st.Extra["site_fault"])
		}
	}
	runSiteFault(t, f)
}

func TestFault_SiteTimeout(t *testing.T) {
	runSiteFault(t, siteFault{hits: pageRequest, skip: 2, window: 1500 * time.Millisecond, timeout: 2500 * time.Millisecond,
		answer: func(_ *testing.T, p *siteProxy, _ http.ResponseWriter, r *http.Request, _ time.Duration) { hang(p, r) }})
}

func TestFault_SiteRefused(t *testing.T) {
	runSiteFault(t, siteFault{hits: pageRequest, skip: 2, window: 1500 * time.Millisecond, timeout: 20 * time.Second,
		answer: func(t *testing.T, p *siteProxy, w http.ResponseWriter, _ *http.Request, left time.Duration) {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					resetConn(c)
				}
			}
			p.goOffline(t, left)
		}})
}

// TestFault_SiteHangsMidBody sends the page's headers and the first half
// of its body, then nothing until the client gives up.
func TestFault_SiteHangsMidBody(t *testing.T) {
	runSiteFault(t, siteFault{hits: pageRequest, skip: 2, window: 1500 * time.Millisecond, timeout: 2500 * time.Millisecond,
		answer: func(t *testing.T, p *siteProxy, w http.ResponseWriter, r *http.Request, _ time.Duration) {
			body, ctype := p.upstreamBody(r)
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(http.StatusOK)
			w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			hang(p, r)
		}})
}

// TestFault_SitemapsTimeOut hangs robots.txt and every sitemap through
// the faulted pass: its discovery is incomplete, so it must remove
// nothing, and it still finds the pages from the database.
func TestFault_SitemapsTimeOut(t *testing.T) {
	runSiteFault(t, siteFault{hits: sitemapRequest, timeout: 2500 * time.Millisecond,
		answer: func(_ *testing.T, p *siteProxy, _ http.ResponseWriter, r *http.Request, _ time.Duration) { hang(p, r) }})
}

// upstreamBody is the real page's body, its origin rewritten to the
// proxy's, and its content type.
func (p *siteProxy) upstreamBody(r *http.Request) ([]byte, string) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, "http://"+p.upstream+r.URL.RequestURI(), nil)
	if err != nil {
		return []byte("<html><body>"), "text/html"
	}
	req.Header.Set("User-Agent", r.Header.Get("User-Agent"))
	resp, err := p.client.Do(req)
	if err != nil {
		return []byte("<html><body>"), "text/html"
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || len(b) < 2 {
		return []byte("<html><body>"), "text/html"
	}
	return []byte(strings.ReplaceAll(string(b), p.upstream, p.self)), resp.Header.Get("Content-Type")
}
