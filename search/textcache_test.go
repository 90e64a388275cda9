package search

import (
	"context"
	"fmt"
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
	if ix.texts.byID[id1] == nil {
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

// A search that read the store while a commit was delivered does not
// cache what it read: it may be the text the commit replaced.
func TestTextCache_Epoch(t *testing.T) {
	tc := newTextCache(1<<20, 1<<20)
	c := &candidate{chunkID: 7}
	missing, epoch := tc.fill([]*candidate{c})
	if len(missing) != 1 || missing[0] != 7 {
		t.Fatalf("missing = %v", missing)
	}
	tc.IndexCommitted(store.IndexCommit{Gen: 1, Ops: []store.IndexOp{{Add: &store.IndexChunk{ID: 7, Doc: &store.IndexDoc{ID: 1}}}}})
	tc.add(epoch, map[int64]*store.Chunk{7: {ID: 7, DocID: 1, Text: "old"}})
	if missing, _ := tc.fill([]*candidate{c}); len(missing) != 1 {
		t.Fatal("a text read across a commit was cached")
	}
	_, epoch = tc.fill([]*candidate{c})
	tc.add(epoch, map[int64]*store.Chunk{7: {ID: 7, DocID: 1, Text: "new"}})
	if missing, _ := tc.fill([]*candidate{c}); len(missing) != 0 || c.text != "new" {
		t.Fatalf("missing %v, text %q", missing, c.text)
	}
	tc.IndexCommitted(store.IndexCommit{Gen: 2, Ops: []store.IndexOp{{Delete: 1}}})
	if len(tc.byID) != 0 || len(tc.byDoc) != 0 || tc.size != 0 {
		t.Fatalf("after the page's deletion: %d entries, %d pages, %d bytes", len(tc.byID), len(tc.byDoc), tc.size)
	}
}

func TestTextCache_Bounded(t *testing.T) {
	const max = 20_000
	tc := newTextCache(max, 0)
	text := fmt.Sprintf("%0500d", 0)
	for round := range 20 {
		chunks := map[int64]*store.Chunk{}
		for i := range 10 {
			id := int64(round*10 + i)
			chunks[id] = &store.Chunk{ID: id, DocID: id / 3, Text: text, HeadingPath: []string{"A", "B"}}
		}
		_, epoch := tc.fill(nil)
		tc.add(epoch, chunks)
		if tc.size > max {
			t.Fatalf("round %d: %d bytes kept, over %d", round, tc.size, max)
		}
	}
	// The size and the per-page lists agree with the entries.
	size, listed := 0, 0
	for id, e := range tc.byID {
		size += e.cost()
		if e.docID != id/3 {
			t.Fatalf("chunk %d under page %d", id, e.docID)
		}
	}
	for _, ids := range tc.byDoc {
		listed += len(ids)
	}
	if size != tc.size || listed != len(tc.byID) || len(tc.byID) == 0 {
		t.Fatalf("size %d, counted %d; %d entries, %d listed", tc.size, size, len(tc.byID), listed)
	}
}
