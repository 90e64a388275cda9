package eval

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/embed"
	"github.com/askwp/askwpd/internal/fakeembed"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

// TestHybrid_Latency measures what fusion adds to a search, on SciFact
// (5,183 abstracts) from ../shared: `askwpd eval` keyword and hybrid, then
// the store's search with and without a precomputed query vector, so the
// endpoint's round trip is not counted. With the fake model its nDCG says
// nothing about quality. Set ASKWPD_BENCH_HYBRID=1 to run it (~2 min).
func TestHybrid_Latency(t *testing.T) {
	if os.Getenv("ASKWPD_BENCH_HYBRID") == "" {
		t.Skip("set ASKWPD_BENCH_HYBRID=1 to measure hybrid search latency on SciFact")
	}
	dir := wptest.RepoRoot() + "/../shared/evaldata/beir-scifact"
	if _, err := os.Stat(dir + "/corpus.jsonl"); err != nil {
		t.Skipf("SciFact is not in ../shared: %v", err)
	}
	ctx := context.Background()
	srv := fakeembed.NewServer(t)
	ec := srv.Config(srv.Model)
	ec.BatchSize, ec.Concurrency = 64, 2
	tmp := t.TempDir()
	opt := Options{Corpus: dir + "/corpus.jsonl", Queries: dir + "/queries.jsonl", Qrels: dir + "/qrels/train.tsv",
		Limit: 300, Depth: 10}
	for _, run := range []struct {
		name string
		ec   config.EmbeddingsConfig
	}{{"keyword", config.EmbeddingsConfig{}}, {"hybrid-alpha", ec}} {
		o := opt
		o.StateDir, o.Embeddings = tmp+"/"+run.name, run.ec
		os.MkdirAll(o.StateDir, 0o700)
		var out strings.Builder
		if _, err := Evaluate(ctx, o, &out); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("== askwpd eval, %s, model %s\n%s", run.name, srv.Model, out.String())
	}

	db, err := store.Open(ctx, tmp+"/hybrid-alpha/eval.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	qs, err := ReadQueries(opt.Queries)
	if err != nil {
		t.Fatal(err)
	}
	qs = qs[:min(len(qs), 300)]
	e := embed.NewClient(ec, nil)
	vecs := make([][]float32, len(qs))
	for i, q := range qs {
		if vecs[i], err = e.Query(ctx, q.Text); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := db.VectorStats(ctx)
	ix := search.New(db)
	defer ix.Close()
	for _, mode := range []string{"keyword", "alpha", "rrf"} {
		var lat []time.Duration
		for round := 0; round < 2; round++ {
			for i, q := range qs {
				sq := search.Query{Text: q.Text, Limit: 10}
				if mode != "keyword" {
					sq.Hybrid = &search.HybridQuery{Vector: vecs[i], Alpha: 0.5, Fusion: mode}
				}
				t0 := time.Now()
				if _, err := ix.Search(ctx, sq); err != nil {
					t.Fatal(err)
				}
				if round == 1 {
					lat = append(lat, time.Since(t0))
				}
			}
		}
		var sum time.Duration
		for _, l := range lat {
			sum += l
		}
		fmt.Printf("store search %-7s over %d chunks (%d vectors × %d dims), %d queries, limit 10: mean %s, p50 %s, p95 %s\n",
			mode, st.Chunks, st.Vectors, st.Dims, len(lat), fmtMS(sum/time.Duration(len(lat))), fmtMS(percentile(lat, 0.5)), fmtMS(percentile(lat, 0.95)))
	}
}
