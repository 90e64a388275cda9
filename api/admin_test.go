package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// fakeBackend is a Backend with Fn fields, for routing and auth tests.
type fakeBackend struct {
	CallToolFn func(ctx context.Context, name string, args json.RawMessage) (any, error)
	reindexed  atomic.Int32
	running    bool
	provider   *chat.ProviderStatus
	cluster    *ClusterStatus
	store      *StoreStatus
}

func (f *fakeBackend) Call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	if f.CallToolFn != nil {
		return f.CallToolFn(ctx, name, args)
	}
	return map[string]any{"tool": name, "args": json.RawMessage(args)}, nil
}

func (f *fakeBackend) Status(ctx context.Context) (*Status, error) {
	return &Status{
		Site: map[string]string{"Name": "Test <Site>", "URL": "http://example.test"}, Version: "test",
		Index:  store.Stats{Documents: 7, Chunks: 21, Thin: 1},
		Errors: []*store.URLState{{URL: "http://example.test/<gone>", ErrorClass: "not_found", HTTPStatus: 404}},
		Observability: &Observability{
			Retrieval: RetrievalStats{Searches: 4, SuccessRate: 0.75, NoEvidenceRate: 0.25},
			Tools:     map[string]ToolStats{"search_site": {Calls: 4, P50Ms: 1.5, P95Ms: 3}},
			Latency:   []LatencyPoint{{Tool: "search_site", Ms: 1.5}, {Tool: "<x>", Ms: 3}},
			History:   []store.StatsSample{{At: time.Unix(1000, 0), Documents: 3}, {At: time.Unix(2000, 0), Documents: 7}},
			FetchAges: []store.AgeBucket{{Label: "< 1 h", Documents: 7}},
			Queue:     map[string]int{"indexed": 7},
		},
		Provider: f.provider,
		Cluster:  f.cluster,
		Store:    f.store,
	}, nil
}

func (f *fakeBackend) Reindex(ctx context.Context) error {
	if f.running {
		return fmt.Errorf("busy: %w", ErrAlreadyRunning)
	}
	f.reindexed.Add(1)
	return nil
}

var (
	_ Backend   = (*fakeBackend)(nil)
	_ Reindexer = (*fakeBackend)(nil)
)

const testToken = "0123456789abcdef0123456789abcdef"

func newTestServer(t *testing.T, b Backend) *httptest.Server {
	t.Helper()
	s := New(b, Options{Token: testToken, Log: slog.New(slog.NewTextHandler(tlog{t}, nil))})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// authGet GETs path from a test server over b with the token and returns
// the body.
func authGet(t *testing.T, b Backend, path string) string {
	t.Helper()
	ts := newTestServer(t, b)
	req, _ := http.NewRequest("GET", ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// noRedirect is a client that shows redirects instead of following them.
func noRedirect() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func TestAdmin_Auth(t *testing.T) {
	b := &fakeBackend{}
	ts := newTestServer(t, b)
	c := noRedirect()

	for _, u := range []string{"/admin", "/admin?token=wrong", "/admin?token="} {
		resp, err := c.Get(ts.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s: %d, want 401", u, resp.StatusCode)
		}
	}
	resp, err := c.Get(ts.URL + "/admin?token=" + testToken)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin" {
		t.Fatalf("GET /admin?token=…: %d to %q, want 303 to /admin", resp.StatusCode, resp.Header.Get("Location"))
	}
	var ck *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == adminCookie {
			ck = k
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/admin" {
		t.Fatalf("session cookie = %+v, want HttpOnly, SameSite=Strict, Path=/admin", ck)
	}
	if resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("the token URL's response may leak it in a Referer")
	}

	get := func(cookie *http.Cookie) (int, string) {
		req, _ := http.NewRequest("GET", ts.URL+"/admin", nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, page := get(ck)
	if code != 200 {
		t.Fatalf("GET /admin with the session: %d", code)
	}
	for _, want := range []string{`id="documents" data-value="7"`, `id="success_rate" data-value="0.75"`, "Test &lt;Site&gt;",
		"http://example.test/&lt;gone&gt;", "<svg", `name="csrf"`} {
		if !strings.Contains(page, want) {
			t.Errorf("admin page lacks %s", want)
		}
	}
	if strings.Contains(page, "<x>") || strings.Contains(page, "<gone>") {
		t.Error("admin page does not escape text")
	}
	if regexp.MustCompile(`(?i)(src|href)="https?://`).MatchString(page) {
		t.Error("admin page loads an external asset")
	}

	forged := *ck
	forged.Value = strings.Replace(ck.Value, ".", "0.", 1)
	if code, _ := get(&forged); code != http.StatusUnauthorized {
		t.Errorf("forged session: %d, want 401", code)
	}

	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)[1]
	post := func(cookie *http.Cookie, form url.Values, hdr map[string]string) *http.Response {
		req, _ := http.NewRequest("POST", ts.URL+"/admin/reindex", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := post(nil, url.Values{"csrf": {csrf}}, nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("reindex without session: %d, want 401", r.StatusCode)
	}
	if r := post(ck, url.Values{}, nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("reindex without CSRF token: %d, want 403", r.StatusCode)
	}
	if r := post(ck, url.Values{"csrf": {strings.Repeat("0", len(csrf))}}, nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("reindex with a wrong CSRF token: %d, want 403", r.StatusCode)
	}
	if r := post(ck, url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}); r.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site reindex: %d, want 403", r.StatusCode)
	}
	if b.reindexed.Load() != 0 {
		t.Fatal("a refused request reindexed")
	}
	r := post(ck, url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "same-origin"})
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/admin?reindex=started" || b.reindexed.Load() != 1 {
		t.Errorf("reindex: %d to %s, reindexed %d times", r.StatusCode, r.Header.Get("Location"), b.reindexed.Load())
	}
	b.running = true
	r = post(nil, nil, map[string]string{"Authorization": "Bearer " + testToken})
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/admin?reindex=running" {
		t.Errorf("reindex while running: %d to %s", r.StatusCode, r.Header.Get("Location"))
	}
}

func TestRoutes_RequireToken(t *testing.T) {
	ts := newTestServer(t, &fakeBackend{})
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/tools"}, {"POST", "/v1/tools/search_site"}, {"GET", "/v1/status"}, {"POST", "/mcp"}, {"GET", "/mcp"},
	} {
		for _, auth := range []string{"", "Bearer wrong", "Basic " + testToken, "Bearer " + testToken + "x"} {
			req, _ := http.NewRequest(r.method, ts.URL+r.path, strings.NewReader(`{}`))
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "token") {
				t.Errorf("%s %s with %q: %d %s, want a bare 401", r.method, r.path, auth, resp.StatusCode, body)
			}
		}
	}
}

func TestTools_Schemas(t *testing.T) {
	want := []string{"search_site", "get_document", "get_recent", "search_in_document", "fetch_live_url", "verify_quote"}
	seen := map[string]bool{}
	for _, tool := range tool.Tools {
		f := tool.Function
		seen[f.Name] = true
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(f.Parameters, &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s: parameters are not a JSON object schema: %v", f.Name, err)
		}
		for _, part := range []string{"WHEN TO USE", "STRATEGY", "EXAMPLES"} {
			if !strings.Contains(f.Description, part) {
				t.Errorf("%s: description lacks %s", f.Name, part)
			}
		}
		// Every example call is valid JSON using only declared arguments.
		n := 0
		for _, line := range strings.Split(f.Description, "\n") {
			ex, ok := strings.CutPrefix(line, "- {")
			if !ok {
				continue
			}
			n++
			var args map[string]any
			if err := json.Unmarshal([]byte("{"+ex), &args); err != nil {
				t.Errorf("%s: example %s is not JSON: %v", f.Name, ex, err)
			}
			for k := range args {
				if _, ok := schema.Properties[k]; !ok {
					t.Errorf("%s: example uses undeclared argument %q", f.Name, k)
				}
			}
		}
		if n < 2 || n > 3 {
			t.Errorf("%s: %d examples, want 2 or 3", f.Name, n)
		}
	}
	for _, n := range want {
		if !seen[n] {
			t.Errorf("tool %s missing", n)
		}
	}
}

// tlog routes server logs to the test's log.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestAdmin_Provider: the admin page says which LLM the chat uses, where
// its key comes from and the key masked, or where to set one.
func TestAdmin_Provider(t *testing.T) {
	page := func(ps *chat.ProviderStatus) string { return authGet(t, &fakeBackend{provider: ps}, "/admin") }
	html := page(&chat.ProviderStatus{Configured: true, Kind: "openai", Label: "OpenAI", Model: "gpt-4o-mini",
		BaseURL: "http://127.0.0.1:9/v1", Source: "connectors", KeyFrom: "option connectors_ai_openai_api_key", Key: "••••WXYZ"})
	for _, want := range []string{`id="provider" data-configured="true"`, `data-kind="openai" style="font-size:14px">OpenAI</b>`, `>gpt-4o-mini</b>`,
		`>http://127.0.0.1:9/v1</b>`, `id="provider_key" style="font-size:14px;overflow-wrap:anywhere">••••WXYZ</b>`,
		`data-source="connectors">Key from option connectors_ai_openai_api_key, in WordPress&#39;s Settings → Connectors.</p>`} {
		if !strings.Contains(html, want) {
			t.Errorf("admin page lacks %s", want)
		}
	}
	html = page(&chat.ProviderStatus{Hint: "no LLM provider is configured: save an API key under Settings → Connectors <here>"})
	if !strings.Contains(html, `id="provider" data-configured="false"`) ||
		!strings.Contains(html, `<p id="provider_hint">no LLM provider is configured: save an API key under Settings → Connectors &lt;here&gt;</p>`) {
		t.Errorf("admin page without a provider:\n%s", html)
	}
	if strings.Contains(page(nil), `id="provider"`) {
		t.Error("a provider section without a provider status")
	}
}
