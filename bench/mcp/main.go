// Command mcp measures askwpd's MCP resources on a large site, without
// WordPress: resources/read of random pages (p50, p95, p99) and a
// resources/list walk through every page, cursor after cursor, each over
// the real HTTP API with the SDK's client, for each revision asked for.
//
// It makes a store of -pages pages in a temporary dir (made-up pages of
// about -words words each, chunked as the crawler chunks), serves it with
// api.New over a loopback listener, connects the go-sdk client with the
// bearer token, and reads -reads random pages one after another, then
// lists every page.
//
//	go run ./bench/mcp -pages 10000 -reads 2000
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

const site = "https://bench.example"

func main() {
	pages := flag.Int("pages", 10000, "pages in the store")
	words := flag.Int("words", 600, "words per page, about")
	reads := flag.Int("reads", 2000, "resources/read calls, each of a random page")
	revs := flag.String("revisions", "2025-11-25,2026-07-28", "protocol revisions to measure, comma-separated")
	flag.Parse()
	if err := run(*pages, *words, *reads, strings.Split(*revs, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "bench/mcp:", err)
		os.Exit(2)
	}
}

func run(pages, words, reads int, revs []string) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "askwpd-bench-mcp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(ctx, filepath.Join(dir, "askwpd.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	t0 := time.Now()
	if err := fill(ctx, st, pages, words); err != nil {
		return err
	}
	fmt.Printf("store: %d pages of ~%d words in %v\n", pages, words, time.Since(t0).Round(time.Millisecond))

	srv, token, err := serve(st)
	if err != nil {
		return err
	}
	defer srv.Close()
	for _, rev := range revs {
		if err := measure(ctx, "http://"+srv.Addr, token, rev, pages, reads); err != nil {
			return fmt.Errorf("%s: %w", rev, err)
		}
	}
	return nil
}

// fill stores the made-up pages, 500 to a transaction.
func fill(ctx context.Context, st *store.DB, pages, words int) error {
	r := rand.New(rand.NewPCG(1, 2))
	vocab := strings.Fields("lighthouse keeper lamp wick lens tower reef harbour pilot storm tide ship logbook oil " +
		"gallery beacon fog horn signal rock coast cliff gull rope ladder brass mirror watch night dawn dusk")
	var batch []*store.Document
	for i := 0; i < pages; i++ {
		var b strings.Builder
		fmt.Fprintf(&b, "# Keeper's page %d\n\n", i)
		for w := 0; w < words; w++ {
			b.WriteString(vocab[r.IntN(len(vocab))])
			switch {
			case w%120 == 119:
				fmt.Fprintf(&b, ".\n\n## Watch %d\n\n", w/120)
			case w%15 == 14:
				b.WriteString(". ")
			default:
				b.WriteByte(' ')
			}
		}
		body := b.String()
		d := &store.Document{URL: fmt.Sprintf("%s/keepers/%06d/", site, i), Title: fmt.Sprintf("Keeper's page %d", i), PostType: "page",
			Body: body, Text: body, ContentHash: fmt.Sprint(i), FetchedAt: time.Now(),
			Published: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour),
			Modified:  time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour)}
		d.Chunks = crawl.StoreChunks(extract.ChunkMarkdown(body, extract.ChunkOptions{}))
		batch = append(batch, d)
		if len(batch) == 500 || i == pages-1 {
			if err := st.PutDocuments(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

// backend is the tools over the store, as the daemon offers them.
type backend struct{ *tool.Service }

func (backend) Status(context.Context) (*api.Status, error) { return &api.Status{}, nil }

func serve(st *store.DB) (*http.Server, string, error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := crawl.Site{URL: site}
	var err error
	if s.Origin, err = crawl.ParseOrigin(site); err != nil {
		return nil, "", err
	}
	cr := crawl.New(s, crawl.Options{Concurrency: 1, RatePerSec: 1, Timeout: time.Second, MaxBytes: 1 << 20}, st, nil, log)
	tools := &tool.Service{Log: log, Store: st, Search: search.New(st), Crawler: cr}
	const token = "bench-token-0123456789abcdef0123456789"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	hs := &http.Server{Addr: ln.Addr().String(), Handler: api.New(backend{tools}, api.Options{Token: token, Log: log, Pages: st}).Handler()}
	go hs.Serve(ln)
	return hs, token, nil
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

func measure(ctx context.Context, base, token, rev string, pages, reads int) error {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench-mcp", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer(token)}},
		&mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		return err
	}
	defer sess.Close()

	r := rand.New(rand.NewPCG(3, 4))
	lat := make([]time.Duration, 0, reads)
	var bytes int
	for i := 0; i < reads; i++ {
		uri := api.PageURI(fmt.Sprintf("%s/keepers/%06d/", site, r.IntN(pages)))
		t := time.Now()
		res, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return fmt.Errorf("read %s: %w", uri, err)
		}
		lat = append(lat, time.Since(t))
		bytes += len(res.Contents[0].Text)
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))].Round(time.Microsecond) }
	fmt.Printf("%s resources/read: %d reads of %d B on average: p50 %v p95 %v p99 %v max %v\n",
		rev, reads, bytes/reads, q(0.50), q(0.95), q(0.99), lat[len(lat)-1].Round(time.Microsecond))

	var answers []time.Duration
	seen, cursor := 0, ""
	t := time.Now()
	for {
		ta := time.Now()
		res, err := sess.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		answers = append(answers, time.Since(ta))
		seen += len(res.Resources)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	total := time.Since(t)
	if seen != pages {
		return fmt.Errorf("list: %d pages listed, want %d", seen, pages)
	}
	sort.Slice(answers, func(a, b int) bool { return answers[a] < answers[b] })
	fmt.Printf("%s resources/list: %d pages in %d answers, %v in all; an answer p50 %v max %v\n",
		rev, seen, len(answers), total.Round(time.Millisecond), answers[len(answers)/2].Round(time.Microsecond),
		answers[len(answers)-1].Round(time.Microsecond))
	return nil
}
