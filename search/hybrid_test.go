package search

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/internal/fakeembed"
	"github.com/askwp/askwpd/store"
)

func garageDocs() []*store.Document {
	doc := func(path, typ, title, body string, cats ...string) *store.Document {
		return &store.Document{
			URL: "http://x.test" + path, Title: title, PostType: typ, Body: body, Text: body, Lang: "en",
			Published: time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC), ContentHash: "h-" + path, Categories: cats,
			Chunks: []store.Chunk{{Ord: 0, Start: 0, End: len([]rune(body)), Text: body, Type: "prose", HeadingPath: []string{title}, ContentHash: "c-" + path}},
		}
	}
	return []*store.Document{
		doc("/engine-care/", "post", "Looking after your automobile",
			"Regular maintenance keeps an automobile running: change the lubricant every spring and check the tyres.", "Garage"),
		doc("/checklist/", "page", "Automobile checklist", "Yearly upkeep for the automobile: lubricant, brakes and lights."),
		doc("/parking/", "page", "Parking at the office", "Park your car in bay three. Visitors leave the car at the gate."),
		doc("/bicycles/", "post", "Bicycle repair", "Fix a flat tyre on your bicycle with a patch kit."),
		doc("/hours/", "page", "Opening hours", "We are open from nine to five, Monday to Friday."),
	}
}

// openVectors is a store holding garageDocs, every chunk embedded.
func openVectors(t *testing.T) *Index {
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
	return newIndex(t, db)
}

func embedAll(t *testing.T, db *store.DB, model string) int {
	t.Helper()
	ctx := context.Background()
	pend, err := db.PendingVectors(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var vs []store.ChunkVector
	for _, p := range pend {
		vs = append(vs, store.ChunkVector{ChunkID: p.ChunkID, InputHash: p.Hash, Vector: fakeembed.Vector(p.Input)})
	}
	n, err := db.PutVectors(ctx, model, vs)
	if err != nil {
		t.Fatal(err)
	}
	return n
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
	ix := openVectors(t)
	const q = "car oil servicing"

	kw, err := ix.Search(ctx, Query{Text: q})
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
		res, err := ix.Search(ctx, Query{Text: q, Hybrid: hybrid(q, 0.5, fusion)})
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
	res, err := ix.Search(ctx, Query{Text: q, Hybrid: hybrid(q, 1, "alpha")})
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
	ix := openVectors(t)
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
			res, err := ix.Search(ctx, Query{Text: q, Filters: tc.f, Hybrid: hybrid(q, alpha, "alpha")})
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
	res, err := ix.Search(ctx, Query{Text: q, Filters: Filters{Category: "Garage"}, Hybrid: hybrid(q, 0.5, "alpha")})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitPaths(res.Hits); len(got) != 1 || got[0] != "/engine-care/" {
		t.Fatalf("category Garage: %v, want [/engine-care/]", got)
	}
}

func TestSearchHybrid_AlphaZeroIsKeyword(t *testing.T) {
	ctx := context.Background()
	ix := openVectors(t)
	for _, q := range []string{"car oil servicing", "automobile lubricant", "bicycle tyre", "open office hours"} {
		kw, err := ix.Search(ctx, Query{Text: q})
		if err != nil {
			t.Fatal(err)
		}
		for _, fusion := range []string{"alpha", "rrf"} {
			h, err := ix.Search(ctx, Query{Text: q, Hybrid: hybrid(q, 0, fusion)})
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
	ix := openVectors(t)
	const q = "car oil servicing"
	kw, err := ix.Search(ctx, Query{Text: q})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string][]float32{
		"zero vector":     make([]float32, 64),
		"other dimension": {0.6, 0.8},
	} {
		res, err := ix.Search(ctx, Query{Text: q, Hybrid: &HybridQuery{Vector: v, Alpha: 0.5}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(hitPaths(res.Hits), hitPaths(kw.Hits)) {
			t.Fatalf("%s: %v, keyword %v", name, hitPaths(res.Hits), hitPaths(kw.Hits))
		}
	}
}

// TestSearchHybrid_NoKeywordMatch: a query none of whose words occur on the
// site still reaches the vector search.
func TestSearchHybrid_NoKeywordMatch(t *testing.T) {
	ctx := context.Background()
	ix := openVectors(t)
	const q = "vehicle oil servicing"
	kw, err := ix.Search(ctx, Query{Text: q})
	if err != nil {
		t.Fatal(err)
	}
	if len(kw.Hits) != 0 {
		t.Fatalf("keyword search finds %v: the query must use words the site lacks", hitPaths(kw.Hits))
	}
	res, err := ix.Search(ctx, Query{Text: q, Hybrid: hybrid(q, 0.5, "alpha")})
	if err != nil {
		t.Fatal(err)
	}
	got := hitPaths(res.Hits)
	if len(got) == 0 || res.Hits[0].Source != "embedding" {
		t.Fatalf("hybrid with no keyword match: %v, want vector hits", got)
	}
	t.Logf("hits %v, action %s", got, res.Action)
}
