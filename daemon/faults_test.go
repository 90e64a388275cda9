package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
	"github.com/askwp/askwpd/wp"
)

// Crash and fault safety: the database going away, WordPress
// failing or hanging, and a full disk under the state dir. The faults are
// injected by proxies in front of the real MariaDB and WordPress (never by
// stopping them: other tests use them) and by a tiny tmpfs.

// faultLog keeps the latest log lines: a long fault run must not grow the
// heap through its own log.
type faultLog struct {
	mu      sync.Mutex
	lines   []string
	next    int
	written int
}

func newFaultLog() *faultLog { return &faultLog{} }

func (l *faultLog) Write(p []byte) (int, error) {
	line := string(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.written++
	if len(l.lines) < 300 {
		l.lines = append(l.lines, line)
	} else {
		l.lines[l.next] = line
		l.next = (l.next + 1) % len(l.lines)
	}
	return len(p), nil
}

// grep returns the kept lines containing every one of subs.
func (l *faultLog) grep(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
next:
	for _, s := range l.lines {
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				continue next
			}
		}
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

// mark is the number of lines written so far, for waitLine.
func (l *faultLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.written
}

// waitLine waits until a line containing sub is written after mark.
func (l *faultLog) waitLine(t *testing.T, mark int, sub string, limit time.Duration) {
	t.Helper()
	waitFor(t, limit, "a log line "+strconv.Quote(sub), func() bool { return l.since(mark, sub) })
}

// since reports whether a line containing sub was written after mark.
func (l *faultLog) since(mark int, sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Line k is kept at k % 300 while it is among the last 300.
	for k := max(mark, l.written-len(l.lines)); k < l.written; k++ {
		if strings.Contains(l.lines[k%len(l.lines)], sub) {
			return true
		}
	}
	return false
}

func (l *faultLog) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(l, nil)) }

// resetConn closes c with a TCP RST, as a host whose server is gone does.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// tcpProxy forwards connections to target until it is cut; cut, it
// resets every open connection and every new one, and counts the
// attempts. Stalled, it takes new connections and never answers, as a
// database too busy to.
type tcpProxy struct {
	ln      net.Listener
	target  string
	down    atomic.Bool
	stall   atomic.Bool
	accepts atomic.Int64
	mu      sync.Mutex
	conns   map[net.Conn]bool
	wg      sync.WaitGroup

	// cutReplies, set, cuts every connection half way through the reply
	// to its next query (fault_db_test.go); cuts counts them.
	cutReplies atomic.Bool
	cuts       atomic.Int64
	// refusing is the closed listener's address while the proxy refuses
	// connections (refuse); cur is the listener accepting otherwise.
	refusing bool
	cur      net.Listener
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, cur: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve(ln)
	t.Cleanup(func() {
		p.mu.Lock()
		p.cur.Close()
		p.mu.Unlock()
		p.setDown(true)
		p.wg.Wait()
	})
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.accepts.Add(1)
		if p.down.Load() {
			resetConn(c)
			continue
		}
		if p.stall.Load() {
			p.mu.Lock()
			p.conns[c] = true // reset with the rest when the link is cut
			p.mu.Unlock()
			continue
		}
		p.wg.Add(1)
		go p.pipe(c)
	}
}

func (p *tcpProxy) pipe(c net.Conn) {
	defer p.wg.Done()
	u, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		resetConn(c)
		return
	}
	p.mu.Lock()
	if p.down.Load() {
		p.mu.Unlock()
		resetConn(c)
		u.Close()
		return
	}
	p.conns[c], p.conns[u] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	var queried atomic.Bool
	go func() { p.copyQueries(u, c, &queried); done <- struct{}{} }()
	go func() { p.copyReplies(c, u, &queried); done <- struct{}{} }()
	<-done
	c.Close()
	u.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

// setDown cuts (or restores) the link; cutting resets the connections
// open through it, so the client's pool finds them dead.
func (p *tcpProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down.Store(down)
	if down {
		for c := range p.conns {
			resetConn(c)
		}
	}
}

// Site proxy modes.
const (
	sitePass int32 = iota
	site500
	siteHang
	siteRefuse
)

// siteProxy stands in for the site at its own address. Passing, it asks
// the real WordPress and rewrites the WordPress origin to its own in
// bodies and redirects, so the pages' links and sitemaps name it and the
// same-origin fetcher follows them. It can instead answer 500, hang (hold
// the request until the client gives up) or reset the connection.
type siteProxy struct {
	srv      *httptest.Server
	upstream string // host:port of the real WordPress
	self     string // host:port of the proxy
	client   *http.Client
	mode     atomic.Int32
	requests atomic.Int64
	hanging  atomic.Int64
	closing  chan struct{}

	mu     sync.Mutex
	perSec map[int64]int

	// fault, when set, sees each request first and answers those it
	// returns true for (fault_site_test.go).
	fault atomic.Pointer[faultHook]
	// offline is the proxy's listening state when refusing (goOffline).
	offline offlineState
}

func newSiteProxy(t *testing.T, siteURL string) *siteProxy {
	t.Helper()
	up, err := url.Parse(siteURL)
	if err != nil || up.Host == "" {
		t.Fatalf("site url %q: %v", siteURL, err)
	}
	p := &siteProxy{upstream: up.Host, closing: make(chan struct{}), perSec: map[int64]int{},
		client: &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.self = p.srv.Listener.Addr().String()
	t.Cleanup(func() {
		close(p.closing) // frees hanging handlers, which Close waits for
		p.srv.Close()
	})
	return p
}

func (p *siteProxy) URL() string { return "http://" + p.self }

func (p *siteProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	p.mu.Lock()
	p.perSec[time.Now().Unix()]++
	p.mu.Unlock()
	if f := p.fault.Load(); f != nil && (*f)(w, r) {
		return
	}
	switch p.mode.Load() {
	case site500:
		http.Error(w, "Error establishing a database connection", http.StatusInternalServerError)
		return
	case siteHang:
		p.hanging.Add(1)
		defer p.hanging.Add(-1)
		select {
		case <-r.Context().Done():
		case <-p.closing:
		}
		return
	case siteRefuse:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				resetConn(c)
				return
			}
		}
		http.Error(w, "refused", http.StatusServiceUnavailable)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+p.upstream+r.URL.RequestURI(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for _, h := range []string{"User-Agent", "Accept", "If-None-Match", "If-Modified-Since"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	body = bytes.ReplaceAll(body, []byte(p.upstream), []byte(p.self))
	for k, vs := range resp.Header {
		if k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, strings.ReplaceAll(v, p.upstream, p.self))
		}
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

// peakPerSec is the most requests the proxy saw in one clock second
// since from.
func (p *siteProxy) peakPerSec(from time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	peak := 0
	for s, n := range p.perSec {
		if s >= from.Unix() && n > peak {
			peak = n
		}
	}
	return peak
}

// apiClient calls the daemon's HTTP API as a client would.
type apiClient struct {
	t     *testing.T
	base  string
	token string
}

func (c *apiClient) do(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// search calls search_site and returns the HTTP status and the results.
func (c *apiClient) search(q string) (int, *tool.SearchResponse) {
	c.t.Helper()
	code, b := c.do("POST", "/v1/tools/search_site", map[string]any{"query": q, "limit": 5})
	var r tool.SearchResponse
	if code == 200 {
		if err := json.Unmarshal(b, &r); err != nil {
			c.t.Fatalf("search_site: %v: %.200s", err, b)
		}
	}
	return code, &r
}

func (c *apiClient) status() *api.Status {
	c.t.Helper()
	code, b := c.do("GET", "/v1/status", nil)
	if code != 200 {
		c.t.Fatalf("/v1/status answered %d: %.300s", code, b)
	}
	var st api.Status
	if err := json.Unmarshal(b, &st); err != nil {
		c.t.Fatalf("/v1/status: %v", err)
	}
	return &st
}

// event sends one signed webhook event as the shim does.
func (c *apiClient) event(secret []byte, ev map[string]any) (int, string) {
	c.t.Helper()
	body, _ := json.Marshal(map[string]any{"events": []any{ev}})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequest("POST", c.base+"/v1/events", bytes.NewReader(body))
	req.Header.Set(api.HeaderTimestamp, ts)
	req.Header.Set(api.HeaderSignature, api.Sign(secret, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// serveAPI serves the daemon's HTTP API with its event worker running,
// as Serve does, without the schedule. stop ends both; the test's end
// calls it too.
func serveAPI(t *testing.T, d *Daemon) (c *apiClient, stop func()) {
	t.Helper()
	token := "fault-test-token-0123456789"
	srv := httptest.NewServer(api.New(d, api.Options{Token: token, Log: d.Log}).Handler())
	stopEvents := d.Crawler.StartEvents(context.Background(), false)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			stopEvents()
			srv.Close()
		})
	}
	t.Cleanup(stop)
	return &apiClient{t: t, base: srv.URL, token: token}, stop
}

// samplePost is an indexed post the tests query and send events about.
type samplePost struct {
	id    int64
	url   string
	title string
}

func pickPost(t *testing.T, d *Daemon) samplePost {
	t.Helper()
	ctx := context.Background()
	urls, err := d.Store.DocumentURLs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for u, id := range urls {
		if id > 0 {
			keys = append(keys, u)
		}
	}
	if len(keys) == 0 {
		t.Fatal("no post was indexed")
	}
	sort.Strings(keys)
	for _, u := range keys {
		doc, err := d.Store.FindDocument(ctx, u, false)
		if err == nil && len(strings.Fields(doc.Title)) >= 3 {
			return samplePost{id: urls[u], url: u, title: doc.Title}
		}
	}
	t.Fatal("no indexed post has a title of three words")
	return samplePost{}
}

func docURLs(t *testing.T, d *Daemon) map[string]int64 {
	t.Helper()
	urls, err := d.Store.DocumentURLs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return urls
}

// sameDocs fails the test when the index's pages are not those of want.
func sameDocs(t *testing.T, d *Daemon, want map[string]int64, when string) {
	t.Helper()
	got := docURLs(t, d)
	for u := range want {
		if _, ok := got[u]; !ok {
			t.Errorf("%s: %s was removed from the index", when, u)
		}
	}
	for u := range got {
		if _, ok := want[u]; !ok {
			t.Errorf("%s: %s was added to the index", when, u)
		}
	}
}

func dbDSN(site *wptest.Site, addr string) string {
	return fmt.Sprintf("%s:%s@tcp(%s)/%s?parseTime=true&loc=UTC&charset=utf8mb4&collation=utf8mb4_unicode_ci&timeout=5s&readTimeout=30s",
		site.Env["WP_DB_USER"], site.Env["WP_DB_PASSWORD"], addr, site.Env["WP_DB_NAME"])
}

// proxiedDBConfig is a daemon's configuration for site that reaches its
// database through a proxy the test can cut or stall.
func proxiedDBConfig(t *testing.T, site *wptest.Site) (config.Config, *tcpProxy) {
	t.Helper()
	dbp := newTCPProxy(t, net.JoinHostPort(site.Env["WP_DB_HOST"], site.Env["WP_DB_PORT"]))
	cfg := config.Default()
	cfg.SiteURL = site.URL()
	cfg.DBDSN = dbDSN(site, dbp.addr())
	cfg.TablePrefix = site.Env["WP_TABLE_PREFIX"]
	cfg.StateDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.Schedule.Disabled = true
	return cfg, dbp
}

// databaseDownWhileServing (TestFault_DatabaseRefused/serve) cuts the
// WordPress database under an indexed daemon: search and get_document
// keep answering from the index, a crawl and an event fail softly
// without hammering the database, and both work again once it is back,
// without a restart.
func databaseDownWhileServing(t *testing.T) {
	site := wptest.Get(t)
	lockWait := time.Now()
	site.Lock(t) // compares the index before and after
	t.Logf("waited %v for the site lock", time.Since(lockWait).Round(time.Millisecond))
	ctx := context.Background()
	cfg, dbp := proxiedDBConfig(t, site)
	logs := newFaultLog()
	cfg.Crawl.RatePerSec = 200
	cfg.Crawl.Timeout = config.Duration{Duration: 5 * time.Second}
	d, err := Open(ctx, cfg, logs.logger())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	start := time.Now()
	if _, err := d.Index(ctx, crawl.IndexOptions{Full: true}); err != nil {
		t.Fatalf("first index: %v", err)
	}
	docs := docURLs(t, d)
	t.Logf("indexed %d documents in %v", len(docs), time.Since(start).Round(time.Millisecond))
	c, _ := serveAPI(t, d)
	secret, err := d.WebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	post := pickPost(t, d)
	if code, r := c.search(post.title); code != 200 || len(r.Results) == 0 {
		t.Fatalf("search %q before the fault: %d, %d results", post.title, code, len(r.Results))
	}

	dbp.setDown(true)
	cut := time.Now()
	a0 := dbp.accepts.Load()

	// Reads come from the index alone: not one error, not one connection.
	var readErrs, empty int
	for i := 0; i < 25; i++ {
		code, r := c.search(post.title)
		if code != 200 {
			readErrs++
		} else if len(r.Results) == 0 {
			empty++
		}
		if code, b := c.do("POST", "/v1/tools/get_document", map[string]any{"id_or_url": post.url}); code != 200 {
			readErrs++
			t.Logf("get_document: %d %.200s", code, b)
		}
	}
	readConns := dbp.accepts.Load() - a0
	t.Logf("database down: 50 reads, %d errors, %d empty searches, %d database connection attempts", readErrs, empty, readConns)
	if readErrs > 0 || empty > 0 {
		t.Errorf("reads with the database down: %d errors, %d empty searches; want none", readErrs, empty)
	}

	// The status says what is wrong, and /metrics still answers.
	st := c.status()
	t.Logf("status: database=%q", st.Database)
	if !strings.HasPrefix(st.Database, "unreachable") {
		t.Errorf("status database = %q, want unreachable: …", st.Database)
	}
	if code, b := c.do("GET", "/metrics", nil); code != 200 || !bytes.Contains(b, []byte("askwpd_wp_database_up 0")) {
		t.Errorf("/metrics with the database down: %d, askwpd_wp_database_up 0 shown: %v", code, bytes.Contains(b, []byte("askwpd_wp_database_up 0")))
	}

	// A crawl fails, quickly, with a database error, and removes nothing.
	for _, opt := range []crawl.IndexOptions{{Incremental: true}, {Full: true}} {
		before := dbp.accepts.Load()
		t0 := time.Now()
		run, err := d.Index(ctx, opt)
		took := time.Since(t0)
		if err == nil {
			t.Errorf("index (incremental=%v) with the database down succeeded", opt.Incremental)
			continue
		}
		t.Logf("index (incremental=%v) with the database down: %v after %v, %d connection attempts", opt.Incremental, err,
			took.Round(time.Millisecond), dbp.accepts.Load()-before)
		if run == nil || run.Error == "" {
			t.Errorf("the failed pass left no run record with its error: %+v", run)
		}
		if !errors.Is(err, wp.ErrUnreachable) {
			t.Errorf("the pass's error does not say the database is unreachable: %v", err)
		}
		if took > 15*time.Second {
			t.Errorf("a pass took %v to give up on a database that is down", took)
		}
	}
	sameDocs(t, d, docs, "after passes with the database down")
	if lines := logs.grep("Index pass finished", "database unreachable"); len(lines) == 0 {
		t.Error("no log line tells the pass failed on the database")
	} else {
		t.Logf("log: %.300s", lines[len(lines)-1])
	}
	st = c.status()
	if st.LastRun == nil || st.LastRun.Error == "" {
		t.Errorf("status last_crawl does not show the failure: %+v", st.LastRun)
	}

	// An event is accepted (it only needs the local store) and waits.
	evID := fmt.Sprintf("fault-db-%d", time.Now().UnixNano())
	if code, body := c.event(secret, map[string]any{"id": evID, "type": "post_updated", "post_id": post.id, "post_type": "post",
		"url": post.url, "status": "publish", "public": true}); code != 202 {
		t.Fatalf("event with the database down answered %d %s", code, body)
	}
	var ev *store.Event
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ev, err = d.Store.FindEvent(ctx, evID); err == nil && ev.Error != "" {
			break
		}
	}
	// An outage is not the event's fault: it is tried, noted, and keeps
	// its attempts, so an outage of any length ends with it applied.
	if ev == nil || ev.Error == "" || ev.Attempts != 0 || !ev.AppliedAt.IsZero() {
		t.Fatalf("event with the database down: %+v (%v), want a noted error and no attempt counted", ev, err)
	}
	t.Logf("event with the database down: attempts=%d error=%q", ev.Attempts, ev.Error)
	if !strings.Contains(ev.Error, wp.ErrUnreachable.Error()) {
		t.Errorf("the event's error does not say the database is unreachable: %q", ev.Error)
	}
	if st := c.status(); st.Freshness == nil || st.Freshness.PendingEvents != 1 {
		t.Errorf("status freshness with one waiting event: %+v", st.Freshness)
	}

	// Left alone, the daemon does not hammer the dead database: count the
	// connection attempts over a window longer than the event worker's
	// tick. The window must hold the worker's retry on its own tick, or the
	// count proves nothing on a machine too loaded to tick in time.
	window := freshness.EventTick + 2*time.Second
	mark := logs.mark()
	w0 := dbp.accepts.Load()
	idleFrom := time.Now()
	logs.waitLine(t, mark, "Event not applied; will retry", freshness.EventTick+30*time.Second)
	// The rest of the window is time left alone, over which the rate is
	// measured: it waits for nothing.
	time.Sleep(window - time.Since(idleFrom))
	window = time.Since(idleFrom)
	idle := dbp.accepts.Load() - w0
	ev, _ = d.Store.FindEvent(ctx, evID)
	t.Logf("database down, idle for %v: %d connection attempts (%.2f/s); event attempts now %d", window, idle,
		float64(idle)/window.Seconds(), ev.Attempts)
	if idle > 10 {
		t.Errorf("%d connection attempts in %v to a database that is down; want a handful", idle, window)
	}
	total := dbp.accepts.Load() - a0
	t.Logf("database down for %v: %d connection attempts in all", time.Since(cut).Round(time.Second), total)

	// Back up: the next event and the next pass succeed, and the waiting
	// event is applied with them, without a restart.
	dbp.setDown(false)
	ev2 := fmt.Sprintf("fault-db-back-%d", time.Now().UnixNano())
	if code, body := c.event(secret, map[string]any{"id": ev2, "type": "post_updated", "post_id": post.id, "post_type": "post",
		"url": post.url, "status": "publish", "public": true}); code != 202 {
		t.Fatalf("event after recovery answered %d %s", code, body)
	}
	back := time.Now()
	for {
		es, err := d.Store.EventStats(ctx, crawl.MaxEventAttempts)
		if err != nil {
			t.Fatal(err)
		}
		if es.Pending == 0 && es.Failed == 0 {
			break
		}
		if time.Since(back) > 15*time.Second {
			t.Fatalf("events not applied 15 s after the database came back: %+v", es)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("database back: both events applied %v after the next event", time.Since(back).Round(time.Millisecond))
	for _, id := range []string{evID, ev2} {
		if e, err := d.Store.FindEvent(ctx, id); err != nil || e.AppliedAt.IsZero() {
			t.Errorf("event %s after recovery: %+v, %v", id, e, err)
		}
	}
	run, err := d.Index(ctx, crawl.IndexOptions{Incremental: true})
	if err != nil || run.Error != "" {
		t.Fatalf("incremental pass after recovery: %v (%+v)", err, run)
	}
	run, err = d.Index(ctx, crawl.IndexOptions{Full: true})
	if err != nil || run.Error != "" || run.Errors > 0 {
		t.Fatalf("full pass after recovery: %v (%+v)", err, run)
	}
	if st := c.status(); st.Database != "ok" {
		t.Errorf("status database after recovery = %q", st.Database)
	}
	if _, b := c.do("GET", "/metrics", nil); !bytes.Contains(b, []byte("askwpd_wp_database_up 1")) {
		t.Error("/metrics after recovery does not show askwpd_wp_database_up 1")
	}
	sameDocs(t, d, docs, "after the database came back")
}

// faultSample is the daemon's footprint after one fault cycle.
type faultSample struct {
	mode       string
	requests   int64
	took       time.Duration
	goroutines int
	heap       uint64
}

// TestFaults_SiteErrorsAndHangs puts WordPress behind a proxy that answers
// 500 for everything, then hangs every request, then resets connections,
// for many crawl cycles: the daemon's requests stay paced, its goroutines
// and heap stay flat, the index loses nothing, and the first pass after
// the site is back succeeds.
func TestFaults_SiteErrorsAndHangs(t *testing.T) {
	site := wptest.Get(t)
	lockWait := time.Now()
	site.Lock(t) // compares the index before and after
	t.Logf("waited %v for the site lock", time.Since(lockWait).Round(time.Millisecond))
	ctx := context.Background()
	sp := newSiteProxy(t, site.URL())
	logs := newFaultLog()
	cfg := config.Default()
	cfg.WPRoot = site.Root()
	cfg.SiteURL = sp.URL()
	cfg.StateDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.Crawl.Concurrency = 2
	cfg.Crawl.RatePerSec = 20
	cfg.Crawl.Timeout = config.Duration{Duration: 500 * time.Millisecond}
	cfg.Schedule.Disabled = true
	d, err := Open(ctx, cfg, logs.logger())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	// WordPress answers slowly under the other tests' load: the first
	// pass gets a timeout it can meet; the fault cycles keep the short one.
	d.Crawler.Fetcher = crawl.NewFetcher(d.Crawler.Site.Origin, 20*time.Second, cfg.Crawl.MaxBytes, cfg.Crawl.UserAgent, d.Log)
	start := time.Now()
	run, err := d.Index(ctx, crawl.IndexOptions{Full: true})
	if err != nil {
		t.Fatalf("first index through the proxy: %v", err)
	}
	docs := docURLs(t, d)
	t.Logf("indexed %d documents through the proxy in %v (%d requests)", len(docs), time.Since(start).Round(time.Millisecond), sp.requests.Load())
	if len(docs) < 5 || run.Errors > 0 {
		t.Fatalf("first index through the proxy: %d documents, run %+v", len(docs), run)
	}
	for u := range docs {
		if !strings.HasPrefix(u, sp.URL()+"/") {
			t.Fatalf("indexed %s, not through the proxy %s", u, sp.URL())
		}
	}
	post := pickPost(t, d)
	d.Crawler.Fetcher = crawl.NewFetcher(d.Crawler.Site.Origin, cfg.Crawl.Timeout.Duration, cfg.Crawl.MaxBytes, cfg.Crawl.UserAgent, d.Log)

	measure := func(mode string, reqs int64, took time.Duration) faultSample {
		// Hung requests end when the client gives up; wait for that, then
		// for the server side of closed connections to wind down.
		for deadline := time.Now().Add(5 * time.Second); sp.hanging.Load() > 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		// Until the count holds still for a few samples, goroutines of
		// the connections just closed are still exiting; a loaded machine
		// takes longer than an idle one.
		for last, still, deadline := -1, 0, time.Now().Add(2*time.Second); still < 5 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if n := runtime.NumGoroutine(); n == last {
				still++
			} else {
				last, still = n, 0
			}
		}
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return faultSample{mode: mode, requests: reqs, took: took, goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc}
	}
	base := measure("pass", 0, 0)
	t.Logf("baseline: %d goroutines, heap %.1f MB", base.goroutines, float64(base.heap)/1e6)

	// Goroutines are sampled throughout, not only between cycles: a pile-up
	// of hung requests would show while they hang.
	var peakG atomic.Int64
	samplerDone := make(chan struct{})
	stopSampler := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampler:
				return
			case <-tick.C:
				if g := int64(runtime.NumGoroutine()); g > peakG.Load() {
					peakG.Store(g)
				}
			}
		}
	}()
	faultsFrom := time.Now()
	var samples []faultSample
	cycle := func(mode int32, name string) {
		sp.mode.Store(mode)
		r0 := sp.requests.Load()
		t0 := time.Now()
		var passes []string
		for _, opt := range []crawl.IndexOptions{{Full: true}, {Incremental: true}} {
			p0 := sp.requests.Load()
			run, err := d.Index(ctx, opt)
			if err == nil && run.Errors == 0 && run.Fetched > 0 {
				t.Errorf("%s: a pass against a failing site reports success: %+v", name, run)
			}
			stopped := ""
			if errors.Is(err, crawl.ErrSiteFailing) {
				stopped = ", stopped"
			}
			if run != nil {
				passes = append(passes, fmt.Sprintf("%s: %d fetched/%d errors/%d requests%s", run.Kind, run.Fetched, run.Errors, sp.requests.Load()-p0, stopped))
			}
		}
		// Reads keep answering from the index.
		args, _ := json.Marshal(map[string]any{"query": post.title})
		s0 := time.Now()
		if _, err := d.Call(ctx, "search_site", args); err != nil {
			t.Errorf("%s: search_site: %v", name, err)
		}
		passes = append(passes, fmt.Sprintf("search %v", time.Since(s0).Round(time.Millisecond)))
		s := measure(name, sp.requests.Load()-r0, time.Since(t0))
		samples = append(samples, s)
		t.Logf("%-6s cycle: %3d requests in %v, %d goroutines, heap %.2f MB (%s)", name, s.requests, s.took.Round(time.Millisecond),
			s.goroutines, float64(s.heap)/1e6, strings.Join(passes, "; "))
	}
	for range 5 {
		cycle(site500, "500")
	}
	for range 3 {
		cycle(siteHang, "hang")
	}
	for range 3 {
		cycle(siteRefuse, "refuse")
	}
	close(stopSampler)
	<-samplerDone

	peak := sp.peakPerSec(faultsFrom)
	t.Logf("peak request rate at the proxy during the faults: %d/s (crawl.rate_per_sec %v)", peak, cfg.Crawl.RatePerSec)
	if limit := int(2*cfg.Crawl.RatePerSec) + 4; peak > limit {
		t.Errorf("peak request rate %d/s during the faults, want <= %d", peak, limit)
	}
	maxG, maxHeap := 0, uint64(0)
	for _, s := range samples {
		maxG = max(maxG, s.goroutines)
		maxHeap = max(maxHeap, s.heap)
	}
	first, last := samples[0], samples[len(samples)-1]
	t.Logf("goroutines: %d at the baseline, %d at most between cycles, %d at most during them; heap %.2f MB after the first cycle, %.2f MB after the last, %.2f MB at most",
		base.goroutines, maxG, peakG.Load(), float64(first.heap)/1e6, float64(last.heap)/1e6, float64(maxHeap)/1e6)
	// In flight at once: the crawl's fetchers and the sitemap and feed
	// readers, each with a client connection (2 goroutines) and the
	// proxy's side of it (2 more), and the pools around them.
	if g := int(peakG.Load()); g > base.goroutines+60 {
		t.Errorf("goroutines: %d at the baseline, up to %d during the faults", base.goroutines, g)
	}
	if maxG > base.goroutines+10 {
		t.Errorf("goroutines: %d at the baseline, up to %d between fault cycles", base.goroutines, maxG)
	}
	if last.goroutines > first.goroutines+10 {
		t.Errorf("goroutines grow across fault cycles: %d after the first, %d after the last", first.goroutines, last.goroutines)
	}
	if last.heap > first.heap+8<<20 {
		t.Errorf("heap grows across fault cycles: %.1f MB after the first, %.1f MB after the last", float64(first.heap)/1e6, float64(last.heap)/1e6)
	}
	sameDocs(t, d, docs, "after the fault cycles")

	// Back up: the next pass succeeds and the index is whole.
	sp.mode.Store(sitePass)
	d.Crawler.Fetcher = crawl.NewFetcher(d.Crawler.Site.Origin, 20*time.Second, cfg.Crawl.MaxBytes, cfg.Crawl.UserAgent, d.Log)
	var after *store.Run
	for _, opt := range []crawl.IndexOptions{{Full: true}, {Full: true}} {
		// The first pass may be the resumption of one the faults stopped.
		if after, err = d.Index(ctx, opt); err != nil {
			t.Fatalf("pass after the site came back: %v", err)
		}
	}
	t.Logf("pass after recovery: %+v", *after)
	if after.Errors > 0 || after.Error != "" {
		t.Errorf("pass after the site came back: %+v", *after)
	}
	sameDocs(t, d, docs, "after the site came back")
}

// mountTiny mounts a filesystem of size bytes on dir: a tmpfs, else a
// loop-mounted ext4 image. It returns "" when neither can be mounted.
func mountTiny(t *testing.T, dir string, size int64) string {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err == nil {
		t.Cleanup(func() { unmount(t, dir) })
		return "tmpfs"
	} else {
		t.Logf("tmpfs mount: %v", err)
	}
	img := filepath.Join(t.TempDir(), "state.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		return ""
	}
	if err := os.Truncate(img, size); err != nil {
		return ""
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Logf("mkfs.ext4: %v: %s", err, out)
		return ""
	}
	if out, err := exec.Command("mount", "-o", "loop", img, dir).CombinedOutput(); err != nil {
		t.Logf("loop mount: %v: %s", err, out)
		return ""
	}
	t.Cleanup(func() { unmount(t, dir) })
	return "ext4 (loop)"
}

func unmount(t *testing.T, dir string) {
	if err := syscall.Unmount(dir, 0); err != nil {
		t.Logf("unmount %s: %v; detaching", dir, err)
		_ = syscall.Unmount(dir, syscall.MNT_DETACH)
	}
}

// fill writes to path until the filesystem refuses, and returns how many
// bytes it took.
func fill(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	var n int64
	for {
		k, err := f.Write(buf)
		n += int64(k)
		if err != nil {
			if !strings.Contains(err.Error(), "no space") {
				t.Fatalf("filling %s: %v", path, err)
			}
			return n
		}
	}
}

// TestFaults_DiskFull runs the daemon with its state dir on a tiny
// filesystem, fills it, and checks that a write fails with a clear error
// while search keeps answering, and that once space is freed the store is
// intact and writes work again.
func TestFaults_DiskFull(t *testing.T) {
	site := wptest.Get(t)
	lockWait := time.Now()
	site.Lock(t) // compares the index before and after
	t.Logf("waited %v for the site lock", time.Since(lockWait).Round(time.Millisecond))
	ctx := context.Background()
	dir := t.TempDir()
	how := mountTiny(t, dir, 16<<20)
	if how == "" {
		// CI must exercise a full disk: a skip there would hide that it never ran.
		if os.Getenv("CI") != "" {
			t.Fatal("cannot mount a small filesystem (no tmpfs, no loop device); CI needs one")
		}
		t.Skip("cannot mount a small filesystem here (no tmpfs, no loop device)")
	}
	logs := newFaultLog()
	cfg := config.Default()
	cfg.WPRoot = site.Root()
	cfg.StateDir = dir
	cfg.Listen = "127.0.0.1:0"
	cfg.Crawl.RatePerSec = 200
	cfg.Schedule.Disabled = true
	d, err := Open(ctx, cfg, logs.logger())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			d.Close()
		}
	})
	if _, err := d.Index(ctx, crawl.IndexOptions{Full: true}); err != nil {
		t.Fatalf("first index: %v", err)
	}
	docs := docURLs(t, d)
	c, stopAPI := serveAPI(t, d)
	secret, err := d.WebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	post := pickPost(t, d)
	var sfs syscall.Statfs_t
	_ = syscall.Statfs(dir, &sfs)
	t.Logf("state dir on %s: %d documents, store %d bytes, %d bytes free", how, len(docs), d.Store.Size(), int64(sfs.Bavail)*sfs.Bsize)

	// The disk fills up in the middle of a pass: the pass stops at once
	// rather than fetching the rest of the site for nothing.
	filler := filepath.Join(dir, "filler")
	var once sync.Once
	var filled int64
	run, err := d.Index(ctx, crawl.IndexOptions{Full: true, Progress: func(done, total int) {
		once.Do(func() { filled = fill(t, filler) })
	}})
	t.Logf("full pass, disk filled (%d bytes) after its first page: err=%v", filled, err)
	if run != nil {
		t.Logf("  run: fetched %d of %d discovered, %d errors", run.Fetched, run.Discovered, run.Errors)
		if run.Fetched > run.Discovered/2 {
			t.Errorf("the pass fetched %d of %d pages after the disk was full", run.Fetched, run.Discovered)
		}
	}
	if !errors.Is(err, crawl.ErrDiskFull) || !strings.Contains(err.Error(), dir) {
		t.Errorf("pass on a full disk: %v, want crawl.ErrDiskFull naming %s", err, dir)
	}

	// The next pass fails at once, with the same clear error.
	t0 := time.Now()
	if _, err = d.Index(ctx, crawl.IndexOptions{Incremental: true}); !errors.Is(err, crawl.ErrDiskFull) {
		t.Errorf("second pass on a full disk: %v, want crawl.ErrDiskFull", err)
	}
	t.Logf("second pass on a full disk: %v after %v", err, time.Since(t0).Round(time.Millisecond))
	if lines := logs.grep("Unable to record fetch", "disk is full"); len(lines) == 0 {
		t.Error("no log line says a write failed for lack of space")
	} else {
		t.Logf("log: %.300s", lines[0])
	}

	// An event cannot be stored, so it is refused with a 5xx the shim
	// retries.
	evID := fmt.Sprintf("fault-disk-%d", time.Now().UnixNano())
	ev := map[string]any{"id": evID, "type": "post_updated", "post_id": post.id, "post_type": "post",
		"url": post.url, "status": "publish", "public": true}
	code, body := c.event(secret, ev)
	t.Logf("event on a full disk: %d %s", code, body)
	if code != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(body), "disk_full") {
		t.Errorf("event on a full disk answered %d %v, want 503 disk_full so the sender retries", code, body)
	}

	// Reads keep answering.
	var readErrs int
	for i := 0; i < 20; i++ {
		if code, r := c.search(post.title); code != 200 || len(r.Results) == 0 {
			readErrs++
		}
		if code, _ := c.do("POST", "/v1/tools/get_document", map[string]any{"id_or_url": post.url}); code != 200 {
			readErrs++
		}
	}
	if readErrs > 0 {
		t.Errorf("%d of 40 reads failed on a full disk", readErrs)
	}
	// The status and the metrics say what is wrong.
	st := c.status()
	if df, ok := st.Extra["disk_full"].(map[string]any); !ok {
		t.Errorf("status on a full disk has no disk_full: extra=%v", st.Extra)
	} else {
		t.Logf("status on a full disk: disk_full.hint=%q", df["hint"])
	}
	_, metrics := c.do("GET", "/metrics", nil)
	if !bytes.Contains(metrics, []byte("askwpd_store_disk_full 1")) {
		t.Error("/metrics does not show askwpd_store_disk_full 1")
	}

	// Space back: the store is intact, and without a restart the next
	// pass finishes the one the disk stopped, and the event goes through.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := d.Store.IntegrityCheck(ctx); err != nil {
		t.Errorf("after the disk was full: %v", err)
	}
	run, err = d.Index(ctx, crawl.IndexOptions{Full: true})
	if err != nil || run.Error != "" {
		t.Errorf("pass after space was freed: %v (%+v)", err, run)
	} else {
		t.Logf("pass after space was freed: kind %s, fetched %d, errors %d", run.Kind, run.Fetched, run.Errors)
	}
	if code, body := c.event(secret, ev); code != 202 {
		t.Errorf("event resent after space was freed: %d %s", code, body)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		e, err := d.Store.FindEvent(ctx, evID)
		if err == nil && !e.AppliedAt.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("event not applied after space was freed: %+v %v", e, err)
		}
	}
	if st := c.status(); st.Extra["disk_full"] != nil {
		t.Errorf("status still shows disk_full after a successful pass: %v", st.Extra["disk_full"])
	}
	sameDocs(t, d, docs, "after the disk was full")
	stopAPI()
	closed = true
	if err := d.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	st2, err := store.Open(ctx, filepath.Join(dir, "askwpd.db"))
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer st2.Close()
	if err := st2.IntegrityCheck(ctx); err != nil {
		t.Errorf("after reopening: %v", err)
	}
}
