package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/fakeembed"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// openHybridDaemon opens a daemon on the test site with embeddings on.
func openHybridDaemon(t *testing.T, site *wptest.Site, stateDir string, ec config.EmbeddingsConfig, logs io.Writer) *Daemon {
	t.Helper()
	cfg := config.Default()
	cfg.WPRoot = site.Root()
	cfg.StateDir = stateDir
	cfg.Listen = "127.0.0.1:0"
	cfg.Crawl.RatePerSec = 200
	cfg.Schedule.Disabled = true
	cfg.Embeddings = ec
	d, err := Open(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestHybrid_RealWordPress indexes pages of the real test site with
// embeddings from an endpoint speaking the OpenAI wire format, and checks
// what hybrid search promises: every chunk embedded with its contextual
// header, raw text shown; a paraphrase keyword search misses found; strict
// filters; alpha 0 is keyword search; a failing endpoint means keyword
// results, a counted fallback and one log line, never an error; a new
// model means re-embedding.
func TestHybrid_RealWordPress(t *testing.T) {
	site := wptest.Get(t)
	site.Lock(t)
	ctx := context.Background()
	srv := fakeembed.NewServer(t)
	logs := &wptest.SyncBuffer{}
	stateDir := t.TempDir()
	d := openHybridDaemon(t, site, stateDir, srv.Config(srv.Model), logs)

	w := "zq" + strconv.FormatUint(rand.Uint64()%1e9, 36)
	pages := []struct{ typ, title, body string }{
		{"post", "Looking after your automobile " + w, "Regular maintenance keeps an automobile running: change the lubricant every spring and check the tyres."},
		{"page", "Automobile checklist " + w, "Yearly upkeep for the automobile: lubricant, brakes and lights."},
		{"page", "Parking at the office " + w, "Park your car in bay three. Visitors leave the car at the gate."},
		{"page", "Opening hours " + w, "We are open from nine to five, Monday to Friday."},
	}
	var urls []string
	for _, p := range pages {
		var pp phpPost
		out := site.PHP(t, fmt.Sprintf(`$id = wp_insert_post(array('post_type' => '%s', 'post_title' => '%s', 'post_content' => '<p>%s</p>', 'post_status' => 'publish'), true);
			if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); }
			echo json_encode(array('id' => $id, 'url' => get_permalink($id)));`, p.typ, p.title, p.body))
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &pp); err != nil {
			t.Fatalf("php: %v: %s", err, out)
		}
		t.Cleanup(func() { site.PHP(t, fmt.Sprintf(`wp_delete_post(%d, true);`, pp.ID)) })
		urls = append(urls, crawl.Canonical(pp.URL))
	}
	for _, u := range urls {
		page, err := d.Crawler.Fetcher.Get(ctx, u, crawl.Conditional{})
		if err != nil {
			t.Fatalf("fetch %s: %v", u, err)
		}
		if st, err := d.Crawler.IndexPage(ctx, page, nil); err != nil || st != "indexed" {
			t.Fatalf("index %s: %s %v", u, st, err)
		}
	}
	if _, err := d.Embed.EmbedPending(ctx); err != nil {
		t.Fatalf("EmbedPending: %v", err)
	}

	t.Run("every chunk embedded with its header", func(t *testing.T) {
		st, err := d.Store.VectorStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Vectors != st.Chunks || st.Chunks == 0 || st.Model != srv.Model {
			t.Fatalf("vector stats %+v, want a vector for every chunk, model %s", st, srv.Model)
		}
		sent := srv.Take(srv.Model)
		for _, u := range urls {
			doc, err := d.Store.FindDocument(ctx, u, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range doc.Chunks {
				want := store.EmbeddingInput(doc.Title, doc.URL, c.HeadingPath, doc.PostType, c.Type, c.CodeLang, c.Text)
				if !strings.HasPrefix(want, "Title: "+doc.Title+"\nURL: "+doc.URL+"\n") || !strings.HasSuffix(want, "\n---\n"+c.Text) {
					t.Fatalf("input for %s is not header + raw chunk: %q", u, want)
				}
				if !slices.Contains(sent, want) {
					t.Errorf("%s chunk %d was not embedded with its header; sent %q", u, c.Ord, sent)
				}
				if strings.Contains(c.Text, "Title: ") {
					t.Errorf("%s chunk %d stores the header in its text", u, c.Ord)
				}
			}
		}
	})

	const q = "car oil servicing"
	t.Run("hybrid finds the paraphrase keyword misses", func(t *testing.T) {
		kw, err := d.Search.Search(ctx, search.Query{Text: q, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		kwURLs := hitURLs(kw.Hits)
		if len(kwURLs) == 0 || slices.Contains(kwURLs, urls[0]) || slices.Contains(kwURLs, urls[1]) {
			t.Fatalf("keyword search must find the parking page only: %v", kwURLs)
		}
		raw, _ := json.Marshal(map[string]any{"query": q, "limit": 10})
		out, err := d.Call(ctx, "search_site", raw)
		if err != nil {
			t.Fatal(err)
		}
		resp := out.(*tool.SearchResponse)
		rank := map[string]int{}
		for i, e := range resp.Results {
			rank[e.URL] = i + 1
			t.Logf("%d %s %.3f %s %q", i+1, e.URL, e.Score, e.Source, e.Passage)
			if e.URL == urls[0] && e.Source != "embedding" {
				t.Errorf("%s source %q, want embedding", e.URL, e.Source)
			}
			if e.URL == urls[2] && e.Source != "hybrid" {
				t.Errorf("%s source %q, want hybrid (both rankings found it)", e.URL, e.Source)
			}
			if strings.Contains(e.Passage, "Title: ") || strings.Contains(e.Passage, "URL: ") {
				t.Errorf("%s shows the embedding header: %q", e.URL, e.Passage)
			}
		}
		if rank[urls[0]] == 0 || rank[urls[1]] == 0 {
			t.Fatalf("hybrid misses the automobile pages: %v", rank)
		}
		// The vector truly hits: the paraphrases rank above the unrelated page.
		if rank[urls[3]] != 0 && (rank[urls[0]] > rank[urls[3]] || rank[urls[1]] > rank[urls[3]]) {
			t.Errorf("unrelated %s ranks above the paraphrases: %v", urls[3], rank)
		}
	})

	t.Run("filters stay strict", func(t *testing.T) {
		for _, typ := range []string{"page", "post"} {
			res, err := hybridSearch(ctx, d, search.Query{Text: q, Filters: search.Filters{PostType: []string{typ}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Hits) == 0 {
				t.Fatalf("type %s: no hits", typ)
			}
			for _, h := range res.Hits {
				if h.Type != typ {
					t.Errorf("type %s: %s (%s) passed the filter", typ, h.URL, h.Type)
				}
			}
			if typ == "post" && !slices.Contains(hitURLs(res.Hits), urls[0]) {
				t.Errorf("type post: the automobile post is missing: %v", hitURLs(res.Hits))
			}
		}
	})

	t.Run("alpha 0 is keyword search", func(t *testing.T) {
		d.Embed.Alpha = 0
		defer func() { d.Embed.Alpha = 0.5 }()
		srv.Take(srv.Model)
		for _, text := range []string{q, "automobile lubricant", "parking gate"} {
			kw, err := d.Search.Search(ctx, search.Query{Text: text})
			if err != nil {
				t.Fatal(err)
			}
			hy, err := hybridSearch(ctx, d, search.Query{Text: text})
			if err != nil {
				t.Fatal(err)
			}
			if !sameHits(kw.Hits, hy.Hits) {
				t.Errorf("%q: alpha 0 %v, keyword %v", text, hitURLs(hy.Hits), hitURLs(kw.Hits))
			}
		}
		if n := len(srv.Take(srv.Model)); n != 0 {
			t.Errorf("alpha 0 still embedded %d queries", n)
		}
	})

	t.Run("a failing endpoint means keyword results", func(t *testing.T) {
		for i, mode := range []string{"500", "hangup", "slow", "down"} {
			reason := "error"
			if mode == "slow" {
				reason = "timeout"
			}
			if mode == "down" {
				srv.Close()
			} else {
				srv.SetMode(mode)
			}
			before := fallbacks(t, d, reason)
			// A new text each time: a cached vector would not ask the endpoint.
			text := fmt.Sprintf("car parking gate %d", i)
			kw, err := d.Search.Search(ctx, search.Query{Text: text})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			hy, err := hybridSearch(ctx, d, search.Query{Text: text})
			took := time.Since(start)
			if err != nil {
				t.Fatalf("%s: search failed: %v", mode, err)
			}
			if !sameHits(kw.Hits, hy.Hits) || len(kw.Hits) == 0 {
				t.Errorf("%s: %v, keyword %v", mode, hitURLs(hy.Hits), hitURLs(kw.Hits))
			}
			if after := fallbacks(t, d, reason); after != before+1 {
				t.Errorf("%s: fallback counter %s went %v → %v", mode, reason, before, after)
			}
			if took > d.Config.Embeddings.QueryTimeout.Duration+time.Second {
				t.Errorf("%s: search took %v, the query timeout is %v", mode, took, d.Config.Embeddings.QueryTimeout)
			}
			raw, _ := json.Marshal(map[string]any{"query": text + " tool"})
			if _, err := d.Call(ctx, "search_site", raw); err != nil {
				t.Errorf("%s: search_site failed: %v", mode, err)
			}
		}
		// Rate-limited: the four failures within seconds log one line.
		if n := strings.Count(logs.String(), "Query embedding failed"); n != 1 {
			t.Errorf("%d fallback warnings logged, want 1", n)
		}
		if srv.Key != "" && strings.Contains(logs.String(), srv.Key) {
			t.Error("the API key appears in the logs")
		}
	})

	t.Run("a new model re-embeds", func(t *testing.T) {
		model2 := srv.Model + "-v2"
		if os.Getenv("ASKWPD_TEST_EMBED_URL") != "" {
			if model2 = os.Getenv("ASKWPD_TEST_EMBED_MODEL2"); model2 == "" {
				t.Skip("set ASKWPD_TEST_EMBED_MODEL2 to test a model change on a real endpoint")
			}
		}
		srv2 := fakeembed.NewServer(t)
		d.Close()
		d2 := openHybridDaemon(t, site, stateDir, srv2.Config(model2), logs)
		st, err := d2.Store.VectorStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Model != model2 || st.Vectors != 0 {
			t.Fatalf("after a model change: %+v, want no vectors, model %s", st, model2)
		}
		if !strings.Contains(logs.String(), "Embedding model changed") {
			t.Error("the model change is not logged")
		}
		n, err := d2.Embed.EmbedPending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st, _ = d2.Store.VectorStats(ctx)
		if st.Vectors != st.Chunks || n != st.Chunks {
			t.Fatalf("re-embedded %d, stats %+v", n, st)
		}
		if sent := srv2.Take(model2); len(sent) < st.Chunks {
			t.Fatalf("the endpoint saw %d inputs for model %s, want %d", len(sent), model2, st.Chunks)
		}
		res, err := hybridSearch(ctx, d2, search.Query{Text: q})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(hitURLs(res.Hits), urls[0]) {
			t.Errorf("after re-embedding, hybrid misses the paraphrase: %v", hitURLs(res.Hits))
		}
	})
}

// fallbacks reads askwpd_embedding_fallbacks_total{reason} as /metrics
// serves it.
func fallbacks(t *testing.T, d *Daemon, reason string) float64 {
	t.Helper()
	mfs, err := d.obs().reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "askwpd_embedding_fallbacks_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func hitURLs(hs []search.Hit) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.URL)
	}
	return out
}

func sameHits(a, b []search.Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].URL != b[i].URL || a[i].ChunkID != b[i].ChunkID || a[i].Score != b[i].Score || b[i].Source != "keyword" {
			return false
		}
	}
	return true
}

// hybridSearch searches as search_site does: hybrid when embeddings are on.
func hybridSearch(ctx context.Context, d *Daemon, q search.Query) (*search.Result, error) {
	q.Hybrid = d.Embed.Query(ctx, q.Text)
	return d.Search.Search(ctx, q)
}
