package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// bareSite is a site without WordPress: a real store holding pages made
// up here, its search index and the real tools over them, behind the real
// HTTP API. The MCP tests that are about the protocol (revisions,
// resources, bad input) run on it, so they run without a WordPress; the
// ones about WordPress's own pages run on the test site (mcp_test.go,
// cmd/askwpd).
type bareSite struct {
	URL   string // the made-up site's address
	Store *store.DB
	Tools *tool.Service
	Srv   *httptest.Server
	Token string
	// Calls and Reads count what reached the tools and the page store.
	Calls, Reads *atomic.Int64
}

const bareToken = "bare-token-0123456789abcdef0123456789"

type bareOptions struct {
	pages     int
	maxResult int
}

func newBareSite(t *testing.T, o bareOptions) *bareSite {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := &bareSite{URL: "http://127.0.0.1:9", Store: st, Token: bareToken, Calls: new(atomic.Int64), Reads: new(atomic.Int64)}
	for i := 0; i < o.pages; i++ {
		if _, err := st.PutDocument(ctx, barePage(s.URL, i, "")); err != nil {
			t.Fatal(err)
		}
	}
	site := crawl.Site{URL: s.URL}
	if site.Origin, err = crawl.ParseOrigin(site.URL); err != nil {
		t.Fatal(err)
	}
	cr := crawl.New(site, crawl.Options{Concurrency: 1, RatePerSec: 1, Timeout: time.Second, MaxBytes: 1 << 20}, st, nil, log)
	ix := search.New(st)
	t.Cleanup(ix.Close)
	s.Tools = &tool.Service{Log: log, Store: st, Search: ix, Crawler: cr}
	b := &countingBackend{tools: s.Tools, n: s.Calls}
	pages := &countingPages{DB: st, n: s.Reads}
	s.Srv = httptest.NewServer(api.New(b, api.Options{Token: s.Token, Log: log, Pages: pages, MCPMaxResult: o.maxResult}).Handler())
	t.Cleanup(s.Srv.Close)
	return s
}

// barePage is the i-th made-up page; extra is added to its body.
func barePage(site string, i int, extra string) *store.Document {
	body := fmt.Sprintf("# Page %d\n\nThe lighthouse keeper number %d trims the lamp wick every evening at dusk.\n\n"+
		"## Logbook\n\nEntry %d records the weather, the ships that passed and the oil burnt.%s\n", i, i, i, extra)
	d := &store.Document{URL: fmt.Sprintf("%s/page-%05d/", site, i), Title: fmt.Sprintf("Lighthouse page %d", i),
		PostType: "page", Body: body, Text: body, ContentHash: fmt.Sprintf("h%d-%x", i, len(extra)),
		Published: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute),
		Modified:  time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(len(extra)) * time.Second),
		FetchedAt: time.Now(), Description: fmt.Sprintf("Keeper %d's page", i)}
	d.Chunks = crawl.StoreChunks(extract.ChunkMarkdown(body, extract.ChunkOptions{}))
	return d
}

// countingBackend is the tools as the daemon offers them to the API,
// counting the calls.
type countingBackend struct {
	tools *tool.Service
	n     *atomic.Int64
}

func (b *countingBackend) Call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	b.n.Add(1)
	return b.tools.Call(ctx, name, args)
}

func (b *countingBackend) Status(context.Context) (*api.Status, error) { return &api.Status{}, nil }

// countingPages is the store, counting the queries of its pages.
type countingPages struct {
	*store.DB
	n *atomic.Int64
}

func (p *countingPages) ListPages(ctx context.Context, after string, limit int) ([]store.PageRef, error) {
	p.n.Add(1)
	return p.DB.ListPages(ctx, after, limit)
}

func (p *countingPages) ReadPage(ctx context.Context, url string, maxChars int) (*store.Page, error) {
	p.n.Add(1)
	return p.DB.ReadPage(ctx, url, maxChars)
}

// outputSchemas are the tools' result schemas, resolved for validation
// (JSON Schema 2020-12), by MCP name.
func outputSchemas(t *testing.T) map[string]*jsonschema.Resolved {
	t.Helper()
	m := map[string]*jsonschema.Resolved{}
	for _, tl := range tool.Tools {
		var s jsonschema.Schema
		if err := json.Unmarshal(tl.OutputSchema, &s); err != nil {
			t.Fatalf("%s: output schema: %v", tl.Function.Name, err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: output schema: %v", tl.Function.Name, err)
		}
		m[api.MCPPrefix+tl.Function.Name] = rs
	}
	return m
}

// checkOutput validates a tool's structuredContent against its schema.
func checkOutput(t *testing.T, schemas map[string]*jsonschema.Resolved, name string, structured any) {
	t.Helper()
	b, err := json.Marshal(structured)
	if err != nil {
		t.Fatal(err)
	}
	var instance any
	if err := json.Unmarshal(b, &instance); err != nil {
		t.Fatal(err)
	}
	if err := schemas[name].Validate(instance); err != nil {
		t.Errorf("%s: structuredContent does not validate against its output schema: %v\n%.400s", name, err, b)
	}
}
