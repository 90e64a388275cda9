package index

import (
	"fmt"
	"testing"

	"github.com/askwp/askwpd/store"
)

// A search that read the store while a commit was delivered does not
// cache what it read: it may be the text the commit replaced.
func TestTextCache_Epoch(t *testing.T) {
	tc := newTexts(1<<20, 1<<20)
	ids := []int64{7}
	got, epoch := tc.Fill(ids)
	if got[0] != nil {
		t.Fatalf("chunk 7 cached before it was read: %+v", got[0])
	}
	tc.IndexCommitted(store.IndexCommit{Gen: 1, Ops: []store.IndexOp{{Add: &store.IndexChunk{ID: 7, Doc: &store.IndexDoc{ID: 1}}}}})
	tc.Add(epoch, map[int64]*store.Chunk{7: {ID: 7, DocID: 1, Text: "old"}})
	if got, _ := tc.Fill(ids); got[0] != nil {
		t.Fatal("a text read across a commit was cached")
	}
	_, epoch = tc.Fill(ids)
	tc.Add(epoch, map[int64]*store.Chunk{7: {ID: 7, DocID: 1, Text: "new"}})
	if got, _ := tc.Fill(ids); got[0] == nil || got[0].Text != "new" {
		t.Fatalf("cached %+v, want the text \"new\"", got[0])
	}
	tc.IndexCommitted(store.IndexCommit{Gen: 2, Ops: []store.IndexOp{{Delete: 1}}})
	if len(tc.byID) != 0 || len(tc.byDoc) != 0 || tc.size != 0 {
		t.Fatalf("after the page's deletion: %d entries, %d pages, %d bytes", len(tc.byID), len(tc.byDoc), tc.size)
	}
}

func TestTextCache_Bounded(t *testing.T) {
	const max = 20_000
	tc := newTexts(max, 0)
	text := fmt.Sprintf("%0500d", 0)
	for round := range 20 {
		chunks := map[int64]*store.Chunk{}
		for i := range 10 {
			id := int64(round*10 + i)
			chunks[id] = &store.Chunk{ID: id, DocID: id / 3, Text: text, HeadingPath: []string{"A", "B"}}
		}
		_, epoch := tc.Fill(nil)
		tc.Add(epoch, chunks)
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
