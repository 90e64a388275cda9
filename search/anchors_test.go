package search

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/askwp/askwpd/internal/testsite"
	"github.com/askwp/askwpd/store"
)

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
		d := testsite.Page("/docs/tutorials/list-of-pages/", "Building a list of pages", body)
		d.ContentHash = fmt.Sprint(link)
		return d
	}
	docs := []*store.Document{
		testsite.Page("/docs/components/progress-bar/", "ProgressBar", "An indicator of progress."),
		testsite.Page("/docs/components/spinner/", "Spinner", "An indicator that the request a visitor made is still underway on the server."),
		tutorial(true),
	}
	for i := 0; i < 20; i++ {
		docs = append(docs, testsite.Page(fmt.Sprintf("/docs/misc/page-%d/", i), fmt.Sprintf("Page %d", i), "Blocks and themes and plugins."))
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
	ix2.mem.RLock()
	var n int32
	links := ix2.mem.Links()
	links.Counts("load", links.TargetIDs([]string{"http://x.test/docs/components/spinner"}), func(_ int, c int32) { n = c })
	ix2.mem.RUnlock()
	if n != 1 {
		t.Errorf("after a load, %d occurrences of %q around links to the Spinner page, want 1", n, "load")
	}
}
