package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/tool"
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
	logs := &syncBuffer{}
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
