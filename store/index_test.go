package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// recorder is an IndexObserver that keeps what it was told.
type recorder struct {
	mu      sync.Mutex
	commits []IndexCommit
}

func (r *recorder) IndexCommitted(c IndexCommit) {
	r.mu.Lock()
	r.commits = append(r.commits, c)
	r.mu.Unlock()
}

// TestObserve: commits reach observers in index_writes order, each with
// its operations in order, even from writers racing each other, and
// ReadIndex plus the later commits add up to the stored chunks.
func TestObserve(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if _, err := db.PutDocument(ctx, testDoc("https://site.test/about/", "About us", "We build themes.")); err != nil {
		t.Fatal(err)
	}
	chunks := map[int64]int64{} // chunk → doc, from ReadIndex and the commits
	gen, err := db.ReadIndex(ctx, func(c *IndexChunk) error {
		if c.Doc.URL != "https://site.test/about/" || c.Doc.Title != "About us" || c.Text != "We build themes." {
			t.Errorf("ReadIndex chunk %+v, doc %+v", c, c.Doc)
		}
		chunks[c.ID] = c.Doc.ID
		return nil
	})
	if err != nil || gen != 1 {
		t.Fatalf("ReadIndex gen %d, %v", gen, err)
	}

	rec := &recorder{}
	cancel := db.Observe(rec)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 10 {
				url := fmt.Sprintf("https://site.test/w%d/post-%d/", w, i%4)
				d := testDoc(url, "Post", fmt.Sprintf("Edit %d of a post about block themes.", i))
				if _, err := db.PutDocument(ctx, d); err != nil {
					t.Error(err)
				}
				if i%5 == 4 {
					if _, err := db.DeleteDocument(ctx, url); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	cancel()
	if _, err := db.PutDocument(ctx, testDoc("https://site.test/late/", "Late", "After the observer left.")); err != nil {
		t.Fatal(err)
	}

	for i, c := range rec.commits {
		if c.Gen != gen+int64(i)+1 {
			t.Fatalf("commit %d has gen %d, want %d", i, c.Gen, gen+int64(i)+1)
		}
		for _, op := range c.Ops {
			if op.Add == nil {
				for id, doc := range chunks {
					if doc == op.Delete {
						delete(chunks, id)
					}
				}
				continue
			}
			chunks[op.Add.ID] = op.Add.Doc.ID
		}
	}
	if n, err := db.IndexWrites(ctx); err != nil || n != gen+int64(len(rec.commits))+1 {
		t.Fatalf("IndexWrites = %d, %v; observed %d commits after %d, then one unobserved", n, err, len(rec.commits), gen)
	}
	stored := map[int64]int64{}
	if _, err := db.ReadIndex(ctx, func(c *IndexChunk) error { stored[c.ID] = c.Doc.ID; return nil }); err != nil {
		t.Fatal(err)
	}
	delete(stored, maxKey(stored)) // the unobserved late page
	if fmt.Sprint(stored) != fmt.Sprint(chunks) {
		t.Errorf("followed commits hold %v, store %v", chunks, stored)
	}
	if db.Delivering() {
		t.Error("Delivering with no write in progress")
	}
}

func maxKey(m map[int64]int64) int64 {
	var k int64
	for id := range m {
		k = max(k, id)
	}
	return k
}

func TestChunksByID(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	d := testDoc("https://site.test/contact/", "Contact", "Write to us any time.")
	if _, err := db.PutDocument(ctx, d); err != nil {
		t.Fatal(err)
	}
	got, err := db.ChunksByID(ctx, []int64{d.Chunks[0].ID, 999})
	if err != nil || len(got) != 1 || got[d.Chunks[0].ID].Text != d.Body || got[d.Chunks[0].ID].DocID != d.ID {
		t.Fatalf("ChunksByID = %+v, %v", got, err)
	}
	if got, err := db.ChunksByID(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("ChunksByID(nil) = %+v, %v", got, err)
	}
}
