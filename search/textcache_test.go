package search

import (
	"context"
	"testing"
	"time"

	"github.com/askwp/askwpd/store"
)

// The store gives a replaced page's chunk the id its old chunk had when
// that was the last one; a cached text under that id must not outlive the
// commit.
func TestTextCache_ReusedID(t *testing.T) {
	db := openTB(t)
	ctx := context.Background()
	page := func(url, body string) *store.Document {
		return &store.Document{URL: "http://x.test" + url, Title: "Page", PostType: "page", Body: body, Text: body, Lang: "en",
			Published: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), ContentHash: "h-" + body,
			Chunks: []store.Chunk{{Ord: 0, Start: 0, End: len(body), Text: body, Type: "prose", ContentHash: "c-" + body}}}
	}
	for _, d := range []*store.Document{page("/other/", "Nothing about that here."), page("/kettle/", "The kettle whistles when the water boils.")} {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	ix := newIndex(t, db)
	passage := func() (int64, string) {
		t.Helper()
		res, err := ix.Search(ctx, Query{Text: "kettle", Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 {
			t.Fatal("no hit for kettle")
		}
		return res.Hits[0].ChunkID, res.Hits[0].Passage.Text
	}
	id1, text1 := passage()
	if _, again := passage(); again != text1 {
		t.Fatalf("second search: %q, want %q", again, text1)
	}
	if ix.mem.Texts.Get(id1) == nil {
		t.Fatal("the shown chunk's text was not cached")
	}
	if _, err := db.PutDocument(ctx, page("/kettle/", "The kettle clicks off when the water boils.")); err != nil {
		t.Fatal(err)
	}
	id2, text2 := passage()
	if id2 != id1 {
		t.Fatalf("the store gave the new chunk id %d, not the old one's %d: the test no longer checks a reused id", id2, id1)
	}
	if text2 != "The kettle clicks off when the water boils." {
		t.Fatalf("after the page changed, the passage is %q", text2)
	}
}
