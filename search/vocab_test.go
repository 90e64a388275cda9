package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/askwp/askwpd/store"
)

// TestVocabulary_FirstReadOnce: the searches that want the vocabulary
// while the first one is read wait for it, and all get that one.
func TestVocabulary_FirstReadOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	db := openTB(t)
	ix := newIndex(t, db)
	ctx := context.Background()
	var docs []*store.Document
	for i := range 300 {
		text := wpText(rng, 200)
		docs = append(docs, &store.Document{URL: fmt.Sprintf("http://x.test/p/%d/", i), Title: wpText(rng, 4),
			PostType: "post", Lang: "en", ContentHash: fmt.Sprint(i), Body: text, Text: text,
			Chunks: []store.Chunk{{Text: text, Type: "prose", ContentHash: fmt.Sprint(i)}}})
	}
	if err := db.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 16
	got := make([]*vocabulary, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[i] = ix.vocabulary()
		}()
	}
	close(start)
	wg.Wait()
	for i, v := range got {
		if v == nil || v != got[0] {
			t.Fatalf("search %d got vocabulary %p, search 0 %p: each read its own", i, v, got[0])
		}
	}
}
