package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/store"
)

func TestAnchorIndex_ChunkLinks(t *testing.T) {
	a := newAnchorIndex(analysis.NewAnalyzer())
	doc := &store.IndexDoc{ID: 1, URL: "https://docs.test/tutorials/list-of-pages/", Lang: "en"}
	text := "Instead of a custom loading indicator, we used the [Spinner](https://docs.test/components/spinner/#usage) component.\n" +
		"![Screenshot](https://docs.test/wp-content/uploads/list.png) and [the source](https://github.com/example/repo) " +
		"and [this page](https://docs.test/tutorials/list-of-pages/) and [notices](../notices/)."
	links := a.chunkLinks(&store.IndexChunk{ID: 1, Doc: doc, Text: text})
	got := map[string][]string{}
	for _, l := range links {
		got[l.key] = l.terms
	}
	if len(got) != 2 {
		t.Fatalf("links to %v, want the Spinner page and the notices page only (no image, no other site, no self-link)", got)
	}
	spinner := got["https://docs.test/components/spinner"]
	for _, w := range []string{"load", "indic", "spinner", "compon"} {
		if !slices.Contains(spinner, w) {
			t.Errorf("terms around the Spinner link = %v, want %q", spinner, w)
		}
	}
	if _, ok := got["https://docs.test/tutorials/notices"]; !ok {
		t.Errorf("relative link not resolved against the page: %v", got)
	}
}

// TestSearch_Anchors: the words around a link to a page count for that
// page, and stop counting when the linking page drops the link.
func TestSearch_Anchors(t *testing.T) {
	db := openTB(t)
	ctx := context.Background()
	tutorial := func(link bool) *store.Document {
		body := "Instead of a custom loading indicator, we used the Spinner component."
		if link {
			body = "Instead of a custom loading indicator, we used the [Spinner](http://x.test/docs/components/spinner/) component."
		}
		d := pageDoc("/docs/tutorials/list-of-pages/", "Building a list of pages", body)
		d.ContentHash = fmt.Sprint(link)
		return d
	}
	docs := []*store.Document{
		pageDoc("/docs/components/progress-bar/", "ProgressBar", "An indicator of progress."),
		pageDoc("/docs/components/spinner/", "Spinner", "An indicator that the request a visitor made is still underway on the server."),
		tutorial(true),
	}
	for i := 0; i < 20; i++ {
		docs = append(docs, pageDoc(fmt.Sprintf("/docs/misc/page-%d/", i), fmt.Sprintf("Page %d", i), "Blocks and themes and plugins."))
	}
	if err := db.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	// rank returns the Spinner and ProgressBar pages' ranks for the query.
	rank := func(anchorWeight float64) (spinner, bar int) {
		t.Helper()
		rk := DefaultRanking()
		rk.AnchorWeight = anchorWeight
		ix.SetRanking(rk)
		res, err := ix.Search(ctx, Query{Text: "loading indicator", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range res.Hits {
			switch strings.TrimPrefix(h.URL, "http://x.test") {
			case "/docs/components/spinner/":
				spinner = i + 1
			case "/docs/components/progress-bar/":
				bar = i + 1
			}
		}
		if spinner == 0 || bar == 0 {
			t.Fatalf("AnchorWeight %v: hits %v, want both components", anchorWeight, urls(res.Hits))
		}
		return spinner, bar
	}
	if s, b := rank(0); s < b {
		t.Fatalf("without links' words, Spinner ranks %d above ProgressBar %d: the test shows nothing", s, b)
	}
	if s, b := rank(2); s > b {
		t.Errorf("with links' words, Spinner ranks %d, ProgressBar %d; want Spinner first", s, b)
	}
	// The tutorial drops its link: the index follows the commit.
	if _, err := db.PutDocument(ctx, tutorial(false)); err != nil {
		t.Fatal(err)
	}
	if s, b := rank(2); s < b {
		t.Errorf("after the link is gone, Spinner ranks %d above ProgressBar %d", s, b)
	}
	// And a fresh load reads the links back.
	if _, err := db.PutDocument(ctx, tutorial(true)); err != nil {
		t.Fatal(err)
	}
	ix2 := newIndex(t, db)
	if err := ix2.Load(ctx); err != nil {
		t.Fatal(err)
	}
	ix2.anchors.mu.RLock()
	var n int32
	ix2.anchors.counts("load", ix2.anchors.targetIDs([]string{"http://x.test/docs/components/spinner"}), func(_ int, c int32) { n = c })
	ix2.anchors.mu.RUnlock()
	if n != 1 {
		t.Errorf("after a load, %d occurrences of %q around links to the Spinner page, want 1", n, "load")
	}
}

// linkedSite is n pages of a site, each linking to a few others with
// words around the links, some in a second chunk. Each call draws new
// words and links, so a page written again changes its links.
func linkedSite(rng *rand.Rand, n int) []*store.Document {
	words := []string{"spinner", "loading", "indicator", "coupon", "checkout", "theme", "widget", "cache", "route", "menu"}
	say := func() string {
		var b []string
		for range 2 + rng.IntN(5) {
			b = append(b, words[rng.IntN(len(words))])
		}
		return strings.Join(b, " ")
	}
	var docs []*store.Document
	for i := range n {
		var sections []string
		for range 1 + rng.IntN(2) {
			var lines []string
			for range rng.IntN(3) {
				to := rng.IntN(n + 3) // now and then a page that is not there
				lines = append(lines, fmt.Sprintf("%s [%s](http://x.test/p/%d/#top) %s", say(), say(), to, say()))
			}
			sections = append(sections, strings.Join(append(lines, say()), "\n"))
		}
		d := pageDoc(fmt.Sprintf("/p/%d/", i), fmt.Sprintf("Page %d", i), sections...)
		d.ContentHash = fmt.Sprint(i, rng.Int())
		docs = append(docs, d)
	}
	return docs
}

// anchorDump lists every count a's links give, as "term key count".
func anchorDump(a *anchorIndex) []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	key := make([]string, len(a.targets))
	for k, id := range a.targets {
		key[id] = k
	}
	var out []string
	for term, m := range a.byTerm {
		for id, n := range m {
			out = append(out, fmt.Sprintf("%s %s %d", term, key[id], n))
		}
	}
	slices.Sort(out)
	return out
}

// freshAnchors is the links of a fresh load of db's store.
func freshAnchors(t *testing.T, db *store.DB) []string {
	t.Helper()
	ix := New(db)
	defer ix.Close()
	if err := ix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return anchorDump(ix.anchors)
}

// TestAnchors_CommitsDuringLoad: the links are read by the postings'
// load, and commits racing a reload leave them as a fresh load of the
// store finds them, at the postings' count.
func TestAnchors_CommitsDuringLoad(t *testing.T) {
	ctx := context.Background()
	db := openTB(t)
	rng := rand.New(rand.NewPCG(11, 12))
	if err := db.PutDocuments(ctx, linkedSite(rng, 60)); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if len(anchorDump(ix.anchors)) < 100 {
		t.Fatalf("%d link counts after a load: the test exercises too little", len(anchorDump(ix.anchors)))
	}
	again := linkedSite(rng, 60)
	for round := range 3 {
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Go(func() {
				for i := w; i < len(again); i += 3 {
					if _, err := db.PutDocument(ctx, again[i]); err != nil {
						t.Error(err)
					}
					if i%5 == round {
						if _, err := db.DeleteDocument(ctx, again[i].URL); err != nil {
							t.Error(err)
						}
					}
				}
			})
		}
		wg.Go(func() {
			if err := ix.Load(ctx); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		want := freshAnchors(t, db)
		if got := anchorDump(ix.anchors); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("round %d: %d link counts followed, a fresh load finds %d", round, len(got), len(want))
		}
		ix.anchors.mu.RLock()
		ix.mem.mu.RLock()
		ag, mg := ix.anchors.gen, ix.mem.gen
		ix.mem.mu.RUnlock()
		ix.anchors.mu.RUnlock()
		if ag != mg {
			t.Fatalf("round %d: links at count %d, postings at %d", round, ag, mg)
		}
	}
}
