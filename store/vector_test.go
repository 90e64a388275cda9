package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/internal/fakeembed"
)

func garageDocs() []*Document {
	doc := func(path, typ, title, body string, cats ...string) *Document {
		return &Document{
			URL: "http://x.test" + path, Title: title, PostType: typ, Body: body, Text: body, Lang: "en",
			Published: time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC), ContentHash: "h-" + path, Categories: cats,
			Chunks: []Chunk{{Ord: 0, Start: 0, End: len([]rune(body)), Text: body, Type: "prose", HeadingPath: []string{title}, ContentHash: "c-" + path}},
		}
	}
	return []*Document{
		doc("/engine-care/", "post", "Looking after your automobile",
			"Regular maintenance keeps an automobile running: change the lubricant every spring and check the tyres.", "Garage"),
		doc("/checklist/", "page", "Automobile checklist", "Yearly upkeep for the automobile: lubricant, brakes and lights."),
		doc("/parking/", "page", "Parking at the office", "Park your car in bay three. Visitors leave the car at the gate."),
		doc("/bicycles/", "post", "Bicycle repair", "Fix a flat tyre on your bicycle with a patch kit."),
		doc("/hours/", "page", "Opening hours", "We are open from nine to five, Monday to Friday."),
	}
}

// openVectors is a store holding garageDocs, every chunk embedded.
func openVectors(t *testing.T) *DB {
	t.Helper()
	ctx := context.Background()
	db := openTB(t)
	for _, d := range garageDocs() {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ResetVectors(ctx, "concepts-64"); err != nil {
		t.Fatal(err)
	}
	embedAll(t, db, "concepts-64")
	return db
}

func embedAll(t *testing.T, db *DB, model string) int {
	t.Helper()
	ctx := context.Background()
	pend, err := db.PendingVectors(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var vs []ChunkVector
	for _, p := range pend {
		vs = append(vs, ChunkVector{ChunkID: p.ChunkID, InputHash: p.Hash, Vector: fakeembed.Vector(p.Input)})
	}
	n, err := db.PutVectors(ctx, model, vs)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestVectors_StoreLifecycle(t *testing.T) {
	ctx := context.Background()
	db := openTB(t)
	docs := garageDocs()
	for _, d := range docs {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ResetVectors(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	pend, err := db.PendingVectors(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(pend) != len(docs) {
		t.Fatalf("pending %d chunks, want %d", len(pend), len(docs))
	}
	// The input carries the page's context; the chunk's own text ends it.
	want := "Title: Looking after your automobile\nURL: http://x.test/engine-care/\nPath: Looking after your automobile\nType: post prose\n---\n" + docs[0].Chunks[0].Text
	if pend[0].Input != want || pend[0].Hash != InputHash(want) {
		t.Fatalf("input:\n%q\nwant:\n%q", pend[0].Input, want)
	}
	if n := embedAll(t, db, "m1"); n != len(docs) {
		t.Fatalf("stored %d vectors, want %d", n, len(docs))
	}
	st, err := db.VectorStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Model != "m1" || st.Vectors != len(docs) || st.Chunks != len(docs) || st.Dims != 64 {
		t.Fatalf("stats %+v", st)
	}

	// Vectors of another model are refused: a re-embed started meanwhile.
	if _, err := db.PutVectors(ctx, "m0", []ChunkVector{{ChunkID: pend[0].ChunkID, InputHash: pend[0].Hash, Vector: []float32{1}}}); !errors.Is(err, ErrVectorModel) {
		t.Fatalf("PutVectors with another model: %v, want ErrVectorModel", err)
	}
	// Vectors of another dimension are refused.
	if _, err := db.PutVectors(ctx, "m1", []ChunkVector{{ChunkID: pend[0].ChunkID, InputHash: pend[0].Hash, Vector: []float32{1, 2}}}); err == nil {
		t.Fatal("PutVectors accepted a 2-dimension vector into a 64-dimension store")
	}

	// A changed page gets new chunks: their vectors go, they are pending.
	changed := garageDocs()[0]
	changed.Body = "Maintenance of the automobile, rewritten."
	changed.Text, changed.ContentHash = changed.Body, "h-new"
	changed.Chunks[0].Text, changed.Chunks[0].End = changed.Body, len([]rune(changed.Body))
	if _, err := db.PutDocument(ctx, changed); err != nil {
		t.Fatal(err)
	}
	pend2, err := db.PendingVectors(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(pend2) != 1 || !strings.HasSuffix(pend2[0].Input, "rewritten.") {
		t.Fatalf("after an edit, pending %+v, want the one new chunk", pend2)
	}
	// A vector computed from the old input is not stored for the new
	// chunk, even if it got the old chunk's id.
	if n, err := db.PutVectors(ctx, "m1", []ChunkVector{{ChunkID: pend2[0].ChunkID, InputHash: pend[0].Hash, Vector: fakeembed.Vector(pend[0].Input)}}); err != nil || n != 0 {
		t.Fatalf("stale vector: stored %d, err %v; want 0, nil", n, err)
	}
	embedAll(t, db, "m1")

	// Deleting a page deletes its vectors.
	if ok, err := db.DeleteDocument(ctx, "http://x.test/parking/"); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if st, _ = db.VectorStats(ctx); st.Vectors != len(docs)-1 || st.Chunks != len(docs)-1 {
		t.Fatalf("after delete: %+v", st)
	}
	var orphans int
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM chunk_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("orphan vectors: %d, %v", orphans, err)
	}

	// A new model drops them all.
	n, err := db.ResetVectors(ctx, "m2")
	if err != nil || n != int64(len(docs)-1) {
		t.Fatalf("reset: dropped %d, %v", n, err)
	}
	if st, _ = db.VectorStats(ctx); st.Vectors != 0 || st.Model != "m2" {
		t.Fatalf("after reset: %+v", st)
	}
}

func hitPaths(hs []Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, strings.TrimPrefix(h.URL, "http://x.test"))
	}
	return out
}

func hybrid(text string, alpha float64, fusion string) *HybridQuery {
	return &HybridQuery{Vector: fakeembed.Vector(text), Alpha: alpha, Fusion: fusion}
}

func TestSearchHybrid_FindsParaphrase(t *testing.T) {
	ctx := context.Background()
	db := openVectors(t)
	const q = "car oil servicing"

	kw, err := db.Search(ctx, SearchQuery{Text: q})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(hitPaths(kw.Hits), "/engine-care/") || slices.Contains(hitPaths(kw.Hits), "/checklist/") {
		t.Fatalf("keyword search already finds the automobile pages: %v", hitPaths(kw.Hits))
	}
	if len(kw.Hits) == 0 {
		t.Fatal("keyword search finds nothing; the query needs a word on the site to reach ranking")
	}

	for _, fusion := range []string{"alpha", "rrf"} {
		res, err := db.SearchHybrid(ctx, SearchQuery{Text: q, Hybrid: hybrid(q, 0.5, fusion)})
		if err != nil {
			t.Fatal(err)
		}
		got := hitPaths(res.Hits)
		t.Logf("%s: %v", fusion, got)
		if !slices.Contains(got, "/engine-care/") || !slices.Contains(got, "/checklist/") {
			t.Fatalf("%s: hybrid misses the paraphrase: %v", fusion, got)
		}
		for _, h := range res.Hits {
			path := strings.TrimPrefix(h.URL, "http://x.test")
			wantSrc := "embedding"
			if slices.Contains(hitPaths(kw.Hits), path) {
				wantSrc = "hybrid"
			}
			if h.Source != wantSrc {
				t.Errorf("%s: %s source %q, want %q", fusion, path, h.Source, wantSrc)
			}
			// The passage is the raw chunk, never the embedded header.
			if strings.Contains(h.Passage.Text, "Title:") || strings.Contains(h.Snippet, "URL:") {
				t.Errorf("%s: %s shows the embedding header: %q", fusion, path, h.Passage.Text)
			}
		}
	}

	// Vector only: the two automobile pages lead.
	res, err := db.SearchHybrid(ctx, SearchQuery{Text: q, Hybrid: hybrid(q, 1, "alpha")})
	if err != nil {
		t.Fatal(err)
	}
	got := hitPaths(res.Hits)
	if len(got) < 2 || !slices.Contains(got[:2], "/engine-care/") || !slices.Contains(got[:2], "/checklist/") {
		t.Fatalf("alpha 1: %v, want the automobile pages first", got)
	}
}

func TestSearchHybrid_FiltersStayStrict(t *testing.T) {
	ctx := context.Background()
	db := openVectors(t)
	const q = "car oil servicing"
	for _, tc := range []struct {
		name string
		f    Filters
		ok   func(Hit) bool
	}{
		{"type page", Filters{PostType: []string{"page"}}, func(h Hit) bool { return h.Type == "page" }},
		{"type post", Filters{PostType: []string{"post"}}, func(h Hit) bool { return h.Type == "post" }},
		{"category", Filters{Category: "garage"}, func(h Hit) bool { return strings.HasSuffix(h.URL, "/engine-care/") }},
		{"after", Filters{After: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}, func(Hit) bool { return false }},
	} {
		for _, alpha := range []float64{0.5, 1} {
			res, err := db.SearchHybrid(ctx, SearchQuery{Text: q, Filters: tc.f, Hybrid: hybrid(q, alpha, "alpha")})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range res.Hits {
				if !tc.ok(h) {
					t.Errorf("%s, alpha %g: %s (%s) passed the filter", tc.name, alpha, h.URL, h.Type)
				}
			}
			t.Logf("%s, alpha %g: %v", tc.name, alpha, hitPaths(res.Hits))
		}
	}
	// The category filter still finds the paraphrase, through the vector.
	res, err := db.SearchHybrid(ctx, SearchQuery{Text: q, Filters: Filters{Category: "Garage"}, Hybrid: hybrid(q, 0.5, "alpha")})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitPaths(res.Hits); len(got) != 1 || got[0] != "/engine-care/" {
		t.Fatalf("category Garage: %v, want [/engine-care/]", got)
	}
}

func TestSearchHybrid_AlphaZeroIsKeyword(t *testing.T) {
	ctx := context.Background()
	db := openVectors(t)
	for _, q := range []string{"car oil servicing", "automobile lubricant", "bicycle tyre", "open office hours"} {
		kw, err := db.Search(ctx, SearchQuery{Text: q})
		if err != nil {
			t.Fatal(err)
		}
		for _, fusion := range []string{"alpha", "rrf"} {
			h, err := db.SearchHybrid(ctx, SearchQuery{Text: q, Hybrid: hybrid(q, 0, fusion)})
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Hits) != len(kw.Hits) {
				t.Fatalf("%q %s: %d hits, keyword %d", q, fusion, len(h.Hits), len(kw.Hits))
			}
			for i := range kw.Hits {
				a, b := kw.Hits[i], h.Hits[i]
				if a.URL != b.URL || a.Score != b.Score || b.Source != "keyword" {
					t.Fatalf("%q %s: hit %d is %s %.3f %s, keyword %s %.3f", q, fusion, i, b.URL, b.Score, b.Source, a.URL, a.Score)
				}
			}
		}
	}
}

func TestSearchHybrid_IgnoresUnusableVectors(t *testing.T) {
	ctx := context.Background()
	db := openVectors(t)
	const q = "car oil servicing"
	kw, err := db.Search(ctx, SearchQuery{Text: q})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string][]float32{
		"zero vector":     make([]float32, 64),
		"other dimension": {0.6, 0.8},
	} {
		res, err := db.SearchHybrid(ctx, SearchQuery{Text: q, Hybrid: &HybridQuery{Vector: v, Alpha: 0.5}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(hitPaths(res.Hits), hitPaths(kw.Hits)) {
			t.Fatalf("%s: %v, keyword %v", name, hitPaths(res.Hits), hitPaths(kw.Hits))
		}
	}
}

// BenchmarkVectorCandidates times the vector half of a hybrid search: the
// k = 100 nearest of n chunks, unfiltered and filtered by type, at
// real-model dimensions.
//
//	go test -run '^$' -bench VectorCandidates -benchtime 20x ./store/
func BenchmarkVectorCandidates(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{5000} {
		for _, dims := range []int{64, 768, 1536} {
			db := openTB(b)
			var docs []*Document
			for i := range n {
				body := "chunk " + strings.Repeat("word ", 50)
				typ := "post"
				if i%3 == 0 {
					typ = "page"
				}
				docs = append(docs, &Document{URL: "http://x.test/" + strconv.Itoa(i) + "/", Title: "Doc", PostType: typ, Body: body, Text: body,
					Chunks: []Chunk{{Text: body, End: len(body)}}})
			}
			if err := db.PutDocuments(ctx, docs); err != nil {
				b.Fatal(err)
			}
			if _, err := db.ResetVectors(ctx, "rand"); err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, uint64(dims)))
			randVec := func() []float32 {
				v := make([]float32, dims)
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				return v
			}
			pend, err := db.PendingVectors(ctx, 0, n)
			if err != nil {
				b.Fatal(err)
			}
			var vs []ChunkVector
			for _, p := range pend {
				vs = append(vs, ChunkVector{ChunkID: p.ChunkID, InputHash: p.Hash, Vector: randVec()})
			}
			if _, err := db.PutVectors(ctx, "rand", vs); err != nil {
				b.Fatal(err)
			}
			q := randVec()
			for _, f := range []struct {
				name string
				f    Filters
			}{{"all", Filters{}}, {"type=page", Filters{PostType: []string{"page"}}}} {
				b.Run(fmt.Sprintf("n=%d/dims=%d/%s", n, dims, f.name), func(b *testing.B) {
					for b.Loop() {
						cs, _, err := db.vectorCandidates(ctx, q, f.f, 100)
						if err != nil || len(cs) != 100 {
							b.Fatalf("%d candidates, %v", len(cs), err)
						}
					}
				})
			}
		}
	}
}

// TestSearchHybrid_NoKeywordMatch: a query none of whose words occur on the
// site still reaches the vector search.
func TestSearchHybrid_NoKeywordMatch(t *testing.T) {
	ctx := context.Background()
	db := openVectors(t)
	const q = "vehicle oil servicing"
	kw, err := db.Search(ctx, SearchQuery{Text: q})
	if err != nil {
		t.Fatal(err)
	}
	if len(kw.Hits) != 0 {
		t.Fatalf("keyword search finds %v: the query must use words the site lacks", hitPaths(kw.Hits))
	}
	res, err := db.SearchHybrid(ctx, SearchQuery{Text: q, Hybrid: hybrid(q, 0.5, "alpha")})
	if err != nil {
		t.Fatal(err)
	}
	got := hitPaths(res.Hits)
	if len(got) == 0 || res.Hits[0].Source != "embedding" {
		t.Fatalf("hybrid with no keyword match: %v, want vector hits", got)
	}
	t.Logf("hits %v, action %s", got, res.Action)
}
