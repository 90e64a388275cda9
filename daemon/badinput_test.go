package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/tool"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
)

// hostileSite serves pages built to break a crawler: huge, deeply nested,
// not UTF-8, bodiless, one giant <pre>, mislabelled, slow.
func hostileSite(t *testing.T) *httptest.Server {
	t.Helper()
	pages := map[string]func(w http.ResponseWriter){
		"/huge/": func(w http.ResponseWriter) { // 50 MB
			io.WriteString(w, "<html><body><main><p>huge page start words</p>")
			chunk := strings.Repeat("<p>filler words about nothing in particular</p>\n", 1000)
			for written := 0; written < 50<<20; written += len(chunk) {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
			io.WriteString(w, "</main></body></html>")
		},
		"/deep/": func(w http.ResponseWriter) {
			io.WriteString(w, "<html><body><main>"+strings.Repeat("<div>", 10000)+"deep nesting words"+strings.Repeat("</div>", 10000)+"</main></body></html>")
		},
		"/latin1/": func(w http.ResponseWriter) {
			w.Write([]byte("<html><body><main><p>caf\xe9 cr\xe8me \xff\xfe invalid utf8 words</p></main></body></html>"))
		},
		"/nobody/": func(w http.ResponseWriter) { io.WriteString(w, "<html><head><title>No body</title></head></html>") },
		"/empty/":  func(w http.ResponseWriter) {},
		"/pre/": func(w http.ResponseWriter) {
			io.WriteString(w, "<html><body><pre>"+strings.Repeat("line of preformatted code text\n", 200000)+"</pre></body></html>")
		},
		"/binary/": func(w http.ResponseWriter) { w.Write(bytes.Repeat([]byte{0, 1, 2, 0xff}, 10000)) },
		"/ok/": func(w http.ResponseWriter) {
			io.WriteString(w, "<html><body><main><h1>Ordinary page</h1><p>Gardens, sheds and fences are discussed here at length.</p></main></body></html>")
		},
	}
	var site *httptest.Server
	site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wp-sitemap.xml" {
			w.Header().Set("Content-Type", "application/xml")
			io.WriteString(w, "<urlset>")
			for p := range pages {
				fmt.Fprintf(w, "<url><loc>%s%s</loc></url>", site.URL, p)
			}
			io.WriteString(w, "</urlset>")
			return
		}
		if p, ok := pages[r.URL.Path]; ok {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			p(w)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(site.Close)
	return site
}

// TestBadInput crawls a hostile site, then sends malformed requests to
// every route. Each gets a clear 4xx or a valid answer: never a 500, a
// panic or a hang.
func TestBadInput(t *testing.T) {
	site := hostileSite(t)
	cfg := config.Default()
	cfg.SiteURL = site.URL
	cfg.StateDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.Crawl.RatePerSec = 500
	cfg.Crawl.Timeout = config.Duration{Duration: 20 * time.Second}
	cfg.Schedule.Disabled = true
	logs := &wptest.SyncBuffer{}
	d, err := Open(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	start := time.Now()
	run, err := d.Index(context.Background(), crawl.IndexOptions{Full: true})
	if err != nil {
		t.Fatalf("index pass over the hostile site: %v", err)
	}
	if el := time.Since(start); el > 60*time.Second {
		t.Errorf("index pass took %s", el)
	}
	if doc, err := d.Store.FindDocument(context.Background(), site.URL+"/ok/", false); err != nil || doc.Title != "Ordinary page" {
		t.Errorf("the ordinary page next to the hostile ones was not indexed: %v", err)
	}
	if doc, err := d.Store.FindDocument(context.Background(), site.URL+"/huge/", false); err == nil && len(doc.Body) > 6<<20 {
		t.Errorf("the 50 MB page was stored whole (%d bytes)", len(doc.Body))
	}
	t.Logf("hostile crawl: %+v", *run)

	// fetch_live_url on the 50 MB page returns its beginning and says it
	// was cut, as a structured too_large error.
	live, err := d.Call(context.Background(), "fetch_live_url", json.RawMessage(`{"url": "`+site.URL+`/huge/"}`))
	if err != nil {
		t.Fatalf("fetch_live_url on the huge page: %v", err)
	}
	lr, ok := live.(*tool.LiveResponse)
	if !ok || !lr.OK || lr.Error == nil || lr.Error.Code != "too_large" || lr.Document == nil {
		b, _ := json.Marshal(live)
		t.Errorf("fetch_live_url on the huge page: want ok with a too_large error and the document, got %.300s", b)
	}

	token := "test-token-0123456789abcdef"
	srv := httptest.NewServer(api.New(d, api.Options{Token: token, Log: d.Log}).Handler())
	defer srv.Close()
	call := func(method, path, body string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	long := strings.Repeat("gardens ", 1250) // 10k characters
	tools := []string{"search_site", "get_document", "get_recent", "search_in_document", "fetch_live_url", "verify_quote"}
	bodies := []string{
		``, `{`, `[]`, `"str"`, `null`, `{"query": 5}`, `{"query": ["a"]}`, `{"limit": "ten"}`,
		`{"query": "gardens", "limit": 1000000}`, `{"query": "gardens", "limit": -3}`,
		`{"query": "` + long + `"}`, `{"query": "the and of to"}`, `{"query": "!!! ??? ..."}`,
		`{"query": "Сады и сараи 花园 棚子"}`, `{"query": "\u0000\u0001"}`, `{"query": "\"unbalanced"}`,
		`{"query": "NEAR(a b) OR * AND"}`, `{"id_or_url": "` + site.URL + `/ok/", "start": -5, "max_chars": -1}`,
		`{"id_or_url": "` + site.URL + `/ok/", "start": 99999999}`, `{"id_or_url": 12}`,
		`{"url": "` + site.URL + `/ok/", "quote": ""}`, `{"url": "not a url", "quote": "x"}`,
		`{"type": "nonexistent", "limit": 5}`, `{"unknown_field": true}`,
		`{"query": "gardens", "filters": {"after": "yesterday"}}`,
		`{"query": "gardens", "filters": {"chunk_type": "poetry"}}`,
	}
	for _, tool := range tools {
		for _, b := range bodies {
			status, out := call("POST", "/v1/tools/"+tool, b, nil)
			if status >= 500 || (status != 200 && (status < 400 || status >= 500)) {
				t.Errorf("%s %.60q: status %d: %.200s", tool, b, status, out)
			}
			if status == 200 && !json.Valid([]byte(out)) {
				t.Errorf("%s %.60q: invalid JSON: %.200s", tool, b, out)
			}
		}
	}
	// Valid but odd queries answer 200 with an action, possibly no_match.
	for _, q := range []string{long, "the and of to", "!!! ??? ...", "Сады и сараи 花园 棚子"} {
		b, _ := json.Marshal(map[string]string{"query": q})
		status, out := call("POST", "/v1/tools/search_site", string(b), nil)
		if status != 200 || !strings.Contains(out, `"action"`) {
			t.Errorf("search_site %.40q: status %d: %.200s", q, status, out)
		}
	}
	for _, tc := range []struct {
		method, path, body string
		hdr                map[string]string
	}{
		{"POST", "/v1/tools/no_such_tool", `{}`, nil},
		{"POST", "/v1/tools/search_site", strings.Repeat("x", 11<<20), nil},
		{"GET", "/v1/tools/search_site", ``, nil},
		{"POST", "/v1/events", `not json`, nil},
		{"POST", "/v1/events", `{"events": [{"id": "x", "type": "post_updated", "post_id": 1}]}`,
			map[string]string{"X-Askwpd-Timestamp": fmt.Sprint(time.Now().Unix()), "X-Askwpd-Signature": "sha256=00"}},
		{"POST", "/v1/events", `{"events": []}`, map[string]string{"X-Askwpd-Timestamp": "1", "X-Askwpd-Signature": "sha256=00"}},
		{"POST", "/v1/events", strings.Repeat("x", 10<<20), map[string]string{"X-Askwpd-Timestamp": fmt.Sprint(time.Now().Unix())}},
		{"POST", "/v1/chat", `{`, nil},
		{"POST", "/v1/chat", `{"messages": "hello"}`, nil},
		{"POST", "/v1/chat", `{"messages": []}`, nil},
		{"POST", "/v1/chat", strings.Repeat("x", 11<<20), nil},
		{"POST", "/mcp", `{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "askwp_search_site", "arguments": "nope"}}`,
			map[string]string{"Accept": "application/json, text/event-stream"}},
		{"POST", "/mcp", `garbage`, map[string]string{"Accept": "application/json, text/event-stream"}},
	} {
		status, out := call(tc.method, tc.path, tc.body, tc.hdr)
		if status >= 500 {
			t.Errorf("%s %s %.40q: status %d: %.200s", tc.method, tc.path, tc.body, status, out)
		}
	}
	if strings.Contains(logs.String(), "panic") {
		t.Errorf("a handler panicked:\n%s", logs.String())
	}
}

// quietSite is a site of one ordinary page, for tests about the API
// rather than the crawl.
func quietSite(t *testing.T) *httptest.Server {
	t.Helper()
	var site *httptest.Server
	site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/wp-sitemap.xml":
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, "<urlset><url><loc>%s/ok/</loc></url></urlset>", site.URL)
		case "/ok/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, "<html><body><main><h1>Ordinary page</h1><p>Gardens, sheds and fences are discussed here at length.</p></main></body></html>")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(site.Close)
	return site
}

// serveQuiet runs Serve over quietSite with cfg's changes until the test
// ends, and returns the daemon and the address it listens on.
func serveQuiet(t *testing.T, change func(*config.Config)) (*Daemon, string) {
	t.Helper()
	cfg := config.Default()
	cfg.SiteURL = quietSite(t).URL
	cfg.StateDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.Crawl.RatePerSec = 500
	cfg.Schedule.Disabled = true
	if change != nil {
		change(&cfg)
	}
	logs := &wptest.SyncBuffer{}
	d, err := Open(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		d.Close()
	})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, line := range strings.Split(logs.String(), "\n") {
			var l struct{ Msg, Listen string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "Serving" {
				return d, l.Listen
			}
		}
	}
	t.Fatalf("the daemon did not log its address; logs:\n%s", logs.String())
	return nil, ""
}

// TestBadInput_ForeignHost is DNS rebinding: a page on evil.example whose
// name now resolves to 127.0.0.1 reaches the daemon from the operator's
// browser with Host evil.example:PORT. Every route, /healthz included,
// refuses it with a JSON 403: /admin shows no CSRF token, ?token= gives no
// session and the reindex button starts no pass. The listen address's
// names, and a name set in allowed_hosts, still work.
func TestBadInput_ForeignHost(t *testing.T) {
	d, listen := serveQuiet(t, func(c *config.Config) { c.AllowedHosts = []string{"askwpd.internal", "proxy.internal:8443"} })
	_, port, _ := net.SplitHostPort(listen)
	token, err := EnsureSecret(d.Config.StateDir, "token")
	if err != nil {
		t.Fatal(err)
	}
	cl := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	call := func(method, path, host string, withToken bool) (*http.Response, string) {
		t.Helper()
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader(`{"query": "gardens"}`)
		}
		req, _ := http.NewRequest(method, "http://"+listen+path, body)
		req.Host = host
		if withToken {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("%s %s (Host %s): %v", method, path, host, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	routes := []struct{ method, path string }{
		{"GET", "/healthz"}, {"GET", "/v1/status"}, {"GET", "/v1/tools"}, {"GET", "/metrics"},
		{"GET", "/admin"}, {"GET", "/admin?token=" + url.QueryEscape(token)}, {"POST", "/admin/reindex"},
		{"POST", "/v1/tools/search_site"}, {"POST", "/v1/events"}, {"POST", "/v1/chat"}, {"POST", "/mcp"},
		{"HEAD", "/healthz"}, {"GET", "/no/such/route"},
	}
	runs := func() int {
		rs, err := d.Store.Runs(context.Background(), 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(rs)
	}
	// The initial pass starts in its own goroutine after "Serving" is
	// logged; wait for its run row before waiting it out, or it lands in
	// the middle of the loop below and looks like a pass a foreign Host began.
	for deadline := time.Now().Add(30 * time.Second); runs() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the initial pass never started")
		}
	}
	d.Crawler.Wait()
	before := runs()
	for _, host := range []string{"evil.example:" + port, "evil.example", "localhost.evil.example:" + port,
		"127.0.0.1.nip.io:" + port, "askwpd.internal.evil.example:" + port, "proxy.internal:" + port, "localhost:1"} {
		for _, r := range routes {
			for _, withToken := range []bool{true, false} {
				resp, body := call(r.method, r.path, host, withToken)
				if resp.StatusCode != http.StatusForbidden {
					t.Errorf("%s %s with Host %s (token %v) answered %d, want 403: %.200s", r.method, r.path, host, withToken, resp.StatusCode, body)
					continue
				}
				var e struct {
					Error struct{ Code, Message string }
				}
				if r.method != "HEAD" && (json.Unmarshal([]byte(body), &e) != nil || e.Error.Code == "") {
					t.Errorf("%s %s with Host %s: the 403 is not a JSON error: %.200s", r.method, r.path, host, body)
				}
				if c := resp.Header.Get("Set-Cookie"); c != "" {
					t.Errorf("%s %s with Host %s set a cookie: %s", r.method, r.path, host, c)
				}
				if strings.Contains(body, "csrf") {
					t.Errorf("%s %s with Host %s shows a CSRF token", r.method, r.path, host)
				}
			}
		}
	}
	d.Crawler.Wait()
	if n := runs(); n != before {
		t.Errorf("a foreign Host started %d index pass(es)", n-before)
	}

	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port,
		"askwpd.internal", "askwpd.internal:" + port, "proxy.internal:8443"} {
		for _, r := range []struct {
			method, path string
			want         int
		}{
			{"GET", "/healthz", 200}, {"GET", "/v1/status", 200}, {"GET", "/admin", 200}, {"HEAD", "/v1/tools", 200},
			{"GET", "/admin?token=" + url.QueryEscape(token), http.StatusSeeOther},
		} {
			if resp, body := call(r.method, r.path, host, true); resp.StatusCode != r.want {
				t.Errorf("%s %s with Host %s answered %d, want %d: %.200s", r.method, r.path, host, resp.StatusCode, r.want, body)
			}
		}
	}
}

// TestBadInput_ForeignHostUnixSocket: on a unix socket, where a Host
// names no port, the loopback names are accepted with any port or none,
// and any other name is refused.
func TestBadInput_ForeignHostUnixSocket(t *testing.T) {
	d := openQuiet(t)
	sock := filepath.Join(t.TempDir(), "askwpd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: api.New(d, api.Options{Token: "unix-token-0123456789", Log: d.Log}).Handler()}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	for host, want := range map[string]int{
		"localhost": 200, "localhost:80": 200, "127.0.0.1": 200, "[::1]:8787": 200,
		"evil.example": 403, "evil.example:80": 403,
	} {
		req, _ := http.NewRequest("GET", "http://askwpd/healthz", nil)
		req.Host = host
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /healthz over the socket with Host %s answered %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// openQuiet opens a daemon over quietSite without serving it.
func openQuiet(t *testing.T) *Daemon {
	t.Helper()
	return openOn(t, quietSite(t).URL, func(cfg *config.Config) { cfg.Listen = "127.0.0.1:0" })
}

// unsized hides a reader's length, so the client sends it chunked.
type unsized struct{ io.Reader }

// TestBadInput_TooLarge: a body over the 1 MiB cap gets a JSON 413 on
// every route that takes one (on /mcp, with a JSON-RPC error), whether it
// declares its length or comes chunked, and from a caller with or without
// the token.
func TestBadInput_TooLarge(t *testing.T) {
	d := openQuiet(t)
	token := "large-token-0123456789"
	srv := httptest.NewServer(api.New(d, api.Options{Token: token, Log: d.Log}).Handler())
	defer srv.Close()
	big := `{"query": "` + strings.Repeat("gardens ", 300<<10) + `"}` // 2.4 MB
	for _, path := range []string{"/v1/tools/search_site", "/v1/events", "/v1/chat", "/mcp", "/admin/reindex"} {
		for _, chunked := range []bool{true, false} {
			var body io.Reader = strings.NewReader(big)
			if chunked {
				body = unsized{body}
			}
			req, _ := http.NewRequest("POST", srv.URL+path, body)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			if path == "/admin/reindex" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			req.Header.Set("Accept", "application/json, text/event-stream")
			ts := fmt.Sprint(time.Now().Unix())
			req.Header.Set(api.HeaderTimestamp, ts)
			req.Header.Set(api.HeaderSignature, api.Sign([]byte("x"), ts, []byte(big)))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("POST %s (chunked %v): %v", path, chunked, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if chunked && req.ContentLength != -1 && req.ContentLength != 0 {
				t.Fatalf("the request was sent with a length (%d)", req.ContentLength)
			}
			if path == "/mcp" {
				// An MCP client reads a JSON-RPC error.
				var e struct {
					Error struct {
						Code    int
						Message string
					}
				}
				if resp.StatusCode != http.StatusRequestEntityTooLarge || json.Unmarshal(b, &e) != nil || e.Error.Code != -32600 ||
					!strings.Contains(e.Error.Message, "larger than") {
					t.Errorf("POST %s with %d bytes (chunked %v) answered %d %.200s, want a 413 with a JSON-RPC error", path, len(big), chunked, resp.StatusCode, b)
				}
				continue
			}
			var e struct {
				Error struct{ Code, Message string }
			}
			if resp.StatusCode != http.StatusRequestEntityTooLarge || json.Unmarshal(b, &e) != nil || e.Error.Code != "too_large" {
				t.Errorf("POST %s with %d bytes (chunked %v) answered %d %.200s, want a JSON 413 too_large", path, len(big), chunked, resp.StatusCode, b)
			}
		}
	}
}

// TestBadInput_Head: HEAD on a GET route answers as GET would, status,
// type and authentication alike, without a body.
func TestBadInput_Head(t *testing.T) {
	d := openQuiet(t)
	token := "head-token-0123456789"
	srv := httptest.NewServer(api.New(d, api.Options{Token: token, Log: d.Log}).Handler())
	defer srv.Close()
	do := func(method, path string, withToken bool) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if withToken {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	for _, path := range []string{"/healthz", "/v1/status", "/v1/tools", "/metrics", "/admin", "/no/such/route"} {
		for _, withToken := range []bool{true, false} {
			get, _ := do("GET", path, withToken)
			head, b := do("HEAD", path, withToken)
			if head.StatusCode != get.StatusCode || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") || len(b) != 0 {
				t.Errorf("HEAD %s (token %v) = %d %q with %d body bytes; GET = %d %q",
					path, withToken, head.StatusCode, head.Header.Get("Content-Type"), len(b), get.StatusCode, get.Header.Get("Content-Type"))
			}
		}
	}
	if resp, _ := do("HEAD", "/healthz", false); resp.StatusCode != 200 {
		t.Errorf("HEAD /healthz answered %d, want 200", resp.StatusCode)
	}
}

// TestBadInput_SignedEventsMalformed: a correctly signed batch whose ids
// are not UTF-8, or which has bytes after its JSON, is refused with 400
// and stores nothing.
func TestBadInput_SignedEventsMalformed(t *testing.T) {
	d := openQuiet(t)
	srv := httptest.NewServer(api.New(d, api.Options{Token: "events-token-0123456789", Log: d.Log}).Handler())
	defer srv.Close()
	secret, err := d.WebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	send := func(body string) (int, string) {
		t.Helper()
		ts := fmt.Sprint(time.Now().Unix())
		req, _ := http.NewRequest("POST", srv.URL+"/v1/events", strings.NewReader(body))
		req.Header.Set(api.HeaderTimestamp, ts)
		req.Header.Set(api.HeaderSignature, api.Sign(secret, ts, []byte(body)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	pending := func() int {
		evs, err := d.Store.PendingEvents(context.Background(), 1000, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	ev := func(id string) string {
		return `{"events": [{"id": "` + id + `", "type": "post_updated", "post_id": 5}]}`
	}
	for name, body := range map[string]string{
		"id not UTF-8":            ev("a\xff\xfeb"),
		"id of a lone surrogate":  ev(`a\ud800b`),
		"id of a control char":    ev(`a\u0001b`),
		"url not UTF-8":           `{"events": [{"id": "u1", "type": "post_updated", "post_id": 5, "url": "http://x/` + "\xc3" + `"}]}`,
		"payload not UTF-8":       `{"events": [{"id": "u2", "type": "post_updated", "post_id": 5, "note": "` + "\xff" + `"}]}`,
		"garbage after the JSON":  ev("t1") + "garbage",
		"a second JSON value":     ev("t2") + ev("t3"),
		"a stray bracket":         ev("t4") + "}",
		"a NUL byte after a line": ev("t5") + "\n\x00",
	} {
		before := pending()
		code, out := send(body)
		if code != http.StatusBadRequest {
			t.Errorf("%s: answered %d, want 400: %.200s", name, code, out)
		}
		if n := pending() - before; n != 0 {
			t.Errorf("%s: %d event(s) stored", name, n)
		}
	}
	// Whitespace after the JSON is no trailing data.
	if code, out := send(ev("ok1") + " \n"); code != http.StatusAccepted {
		t.Errorf("a batch ending in a newline answered %d: %s", code, out)
	}
}

// TestBadInput_PageTextStaysText publishes a post whose text shows markup
// (WordPress keeps it escaped in the page) and reads it back the way a
// client does: get_document's Markdown, its outline, and search_site's
// passages, each rendered by a CommonMark renderer. What the page showed
// as text must render as text: no live script, no javascript: link.
func TestBadInput_PageTextStaysText(t *testing.T) {
	d, site := indexedDaemon(t)
	ctx := context.Background()
	w := wptest.Word("zq", "mark")
	content := `<h2>Tags &amp; &lt;b&gt; in ` + w + `</h2>` +
		`<p>The ` + w + ` note shows &lt;script&gt;alert(1)&lt;/script&gt; and [a link](javascript:alert(1)) as text, ` +
		`plus *not emphasis* and &amp;amp; too.</p>` +
		`<ul><li>&lt;em&gt; means stress &amp; ` + w + `</li><li>1. not a number</li></ul>` +
		`<pre><code>echo "&lt;script&gt;" &amp;&amp; true</code></pre>`
	var p phpPost
	out := site.PHP(t, `kses_remove_filters();
		$id = wp_insert_post(array('post_title' => 'Markup as text `+w+`', 'post_content' => `+phpString(content)+`, 'post_status' => 'publish'), true);
		if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); }
		echo json_encode(array('id' => $id, 'url' => get_permalink($id)));`)
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &p); err != nil {
		t.Fatalf("php: %v: %s", err, out)
	}
	// The index is shared with later tests: once the post is gone from
	// WordPress (cleanups run last first), a fetch takes it out again.
	t.Cleanup(func() { d.Crawler.FetchNow(context.Background(), p.URL, "test") })
	t.Cleanup(func() { site.PHP(t, fmt.Sprintf(`wp_delete_post(%d, true);`, p.ID)) })
	if live := d.Crawler.FetchNow(ctx, p.URL, "test"); live.Err != nil {
		t.Fatalf("indexing %s: %v", p.URL, live.Err)
	}

	var doc tool.DocumentResponse
	call(t, d, "get_document", map[string]any{"id_or_url": p.URL, "max_chars": 20000}, &doc)
	html := renderMarkdown(t, doc.Content)
	assertInert(t, "get_document", html)
	for _, shown := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "[a link](javascript:alert(1))", "*not emphasis*",
		"&amp;amp;", "&lt;em&gt; means stress", "1. not a number", `echo &quot;&lt;script&gt;&quot; &amp;&amp; true`} {
		if !strings.Contains(html, shown) {
			t.Errorf("get_document renders without the page's text %q:\n%s", shown, html)
		}
	}
	var outline tool.DocumentResponse
	call(t, d, "get_document", map[string]any{"id_or_url": p.URL, "mode": "outline"}, &outline)
	var headings []string
	for _, h := range outline.Outline {
		headings = append(headings, h.Heading)
	}
	if want := "Tags & <b> in " + w; !slices.Contains(headings, want) {
		t.Errorf("outline %q lacks the heading as shown, %q", headings, want)
	}

	var res tool.SearchResponse
	call(t, d, "search_site", map[string]any{"query": w + " note script alert", "passages": true}, &res)
	found := false
	for _, e := range res.Results {
		if crawl.Canonical(e.URL) != crawl.Canonical(p.URL) {
			continue
		}
		found = true
		assertInert(t, "search_site passage", renderMarkdown(t, e.Passage))
		assertInert(t, "search_site snippet", renderMarkdown(t, e.Snippet))
	}
	if !found {
		t.Fatalf("search_site did not find %s: %+v", p.URL, res.Results)
	}

	// verify_quote still finds what a reader copies off the rendered page.
	var vq struct {
		Found bool `json:"found"`
	}
	call(t, d, "verify_quote", map[string]any{"url": p.URL, "quote": "shows <script>alert(1)</script> and [a link](javascript:alert(1)) as text"}, &vq)
	if !vq.Found {
		t.Errorf("verify_quote does not find the page's visible text")
	}
}

func renderMarkdown(t *testing.T, md string) string {
	t.Helper()
	var buf bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	if err := gm.Convert([]byte(md), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func assertInert(t *testing.T, what, html string) {
	t.Helper()
	low := strings.ToLower(html)
	if strings.Contains(low, "<script") || strings.Contains(low, `href="javascript:`) || strings.Contains(low, "<b>") || strings.Contains(low, "<em>&lt;") {
		t.Errorf("%s renders live markup:\n%s", what, html)
	}
}

// phpString quotes s as a PHP single-quoted string.
func phpString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
