package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/daemon"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/tool"
)

const e2eToken = "e2e-token-0123456789abcdef0123456789"

var (
	e2eOnce sync.Once
	e2eD    *daemon.Daemon
	e2eErr  error
)

// e2eDaemon is a daemon over the indexed test site, shared by this
// package's end-to-end tests, behind a real HTTP server.
func e2eDaemon(t *testing.T) (*daemon.Daemon, *httptest.Server) {
	t.Helper()
	site := wptest.Get(t)
	site.Lock(t)
	e2eOnce.Do(func() {
		cfg := config.Default()
		cfg.WPRoot = site.Root()
		dir, err := os.MkdirTemp("", "askwpd-api-test-")
		if err != nil {
			e2eErr = err
			return
		}
		cfg.StateDir, cfg.Listen = dir, "127.0.0.1:0"
		cfg.Crawl.RatePerSec, cfg.Schedule.Disabled = 200, true
		d, err := daemon.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			e2eErr = err
			return
		}
		if _, err := d.Index(context.Background(), daemon.IndexOptions{Full: true}); err != nil {
			e2eErr = err
			return
		}
		e2eD = d
	})
	if e2eErr != nil {
		t.Fatal(e2eErr)
	}
	ts := httptest.NewServer(api.New(e2eD, api.Options{Token: e2eToken, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Pages: e2eD.Store}).Handler())
	t.Cleanup(ts.Close)
	return e2eD, ts
}

// bearer adds the token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connectMCP(t *testing.T, ts *httptest.Server, token string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "askwpd-test", Version: "1"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}},
	}, nil)
}

func httpTool(t *testing.T, ts *httptest.Server, name string, args any) (int, any) {
	t.Helper()
	b, _ := json.Marshal(args)
	req, _ := http.NewRequest("POST", ts.URL+"/v1/tools/"+name, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: decode: %v", name, err)
	}
	return resp.StatusCode, out
}

// TestMCP_SameAsHTTP calls each tool over HTTP and over MCP, with the
// SDK's own client, and requires the same results, each valid against
// its tool's output schema.
func TestMCP_SameAsHTTP(t *testing.T) {
	d, ts := e2eDaemon(t)
	sess, err := connectMCP(t, ts, e2eToken)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ctx := context.Background()

	lt, err := sess.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, tool := range lt.Tools {
		got = append(got, tool.Name)
		if !strings.Contains(tool.Description, "EXAMPLES") {
			t.Errorf("%s: description without examples", tool.Name)
		}
	}
	for _, tool := range tool.Tools {
		want = append(want, api.MCPPrefix+tool.Function.Name)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MCP tools = %v, want %v", got, want)
	}

	site := d.Crawler.Site.URL
	schemas := outputSchemas(t)
	calls := []struct {
		name string
		args map[string]any
	}{
		{"search_site", map[string]any{"query": "espresso grinder retention"}},
		{"search_site", map[string]any{"query": "backup", "passages": true, "limit": 3}},
		{"get_recent", map[string]any{"type": "post", "limit": 3}},
		{"get_document", map[string]any{"id_or_url": site + "/workshops/"}},
		{"get_document", map[string]any{"id_or_url": site + "/pricing-faq/", "mode": "chunks", "max_chars": 600}},
		{"search_in_document", map[string]any{"id_or_url": site + "/pricing-faq/", "query": "price"}},
		{"verify_quote", map[string]any{"url": site + "/workshops/", "quote": "Coming soon."}},
		{"fetch_live_url", map[string]any{"url": "https://example.org/"}},
	}
	for _, c := range calls {
		code, viaHTTP := httpTool(t, ts, c.name, c.args)
		if code != 200 {
			t.Errorf("HTTP %s: %d %v", c.name, code, viaHTTP)
			continue
		}
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: api.MCPPrefix + c.name, Arguments: c.args})
		if err != nil {
			t.Fatalf("MCP %s: %v", c.name, err)
		}
		// search_site adds a resource link per page to its JSON.
		if res.IsError || len(res.Content) == 0 || (c.name != "search_site" && len(res.Content) != 1) {
			t.Fatalf("MCP %s: error result %+v", c.name, res.Content)
		}
		var viaText any
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &viaText); err != nil {
			t.Fatalf("MCP %s: text content is not JSON: %v", c.name, err)
		}
		checkOutput(t, schemas, api.MCPPrefix+c.name, res.StructuredContent)
		if !reflect.DeepEqual(viaHTTP, res.StructuredContent) || !reflect.DeepEqual(viaHTTP, viaText) {
			h, _ := json.Marshal(viaHTTP)
			m, _ := json.Marshal(res.StructuredContent)
			t.Errorf("%s %v: HTTP and MCP differ:\nHTTP %.300s\nMCP  %.300s", c.name, c.args, h, m)
		}
	}

	// The caller's mistakes are tool errors the model can read.
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: api.MCPPrefix + "search_site", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "query is required") {
		t.Errorf("search_site without query: %+v", res)
	}
	res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: api.MCPPrefix + "get_document", Arguments: map[string]any{"id_or_url": site + "/nope/"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "not_indexed") {
		t.Errorf("get_document of a missing page: %+v", res)
	}
	if _, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "askwp_no_such_tool", Arguments: map[string]any{}}); err == nil {
		t.Error("calling an unknown tool succeeded")
	}

	// No token, no MCP.
	if s, err := connectMCP(t, ts, ""); err == nil {
		s.Close()
		t.Error("MCP connected without the token")
	}
	if s, err := connectMCP(t, ts, "wrong"); err == nil {
		s.Close()
		t.Error("MCP connected with a wrong token")
	}
}

// TestMCP_Stdio serves the tools on a pipe, as askwpd mcp --stdio does.
func TestMCP_Stdio(t *testing.T) {
	d, _ := e2eDaemon(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- api.ServeMCP(ctx, d, api.MCPOptions{Log: d.Log, Pages: d.Store}, sr, sw) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "askwpd-test", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "askwp_get_recent", Arguments: map[string]any{"limit": 1}})
	if err != nil || res.IsError {
		t.Fatalf("get_recent over stdio: %v %+v", err, res)
	}
	var r tool.RecentResponse
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &r); err != nil || len(r.Results) != 1 || r.Results[0].URL == "" {
		t.Fatalf("get_recent over stdio = %s (%v)", b, err)
	}
	sess.Close()
	cancel()
	<-done
}
