package search

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/askwp/askwpd/store"
)

// TestVariantPostings: a variant prefix's merged postings are its terms'
// own postings summed by chunk, over the chunks the vocabulary covers,
// with the chunks where a count reached the cap marked; and what the
// vocabulary keeps of them stays so after chunks holding the same words
// are added to the index.
func TestVariantPostings(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	db := openTB(t)
	index := newIndex(t, db)
	ctx := context.Background()
	put := func(from, to int) {
		var docs []*store.Document
		for i := from; i < to; i++ {
			text := wpText(rng, 20+rng.IntN(150))
			if i == 3 {
				text = strings.Repeat("installing ", 300) // past the postings' cap of 255
			}
			docs = append(docs, &store.Document{URL: fmt.Sprintf("http://x.test/p/%d/", i), Title: wpText(rng, 4),
				PostType: "post", Lang: "en", ContentHash: fmt.Sprint(i), Body: text, Text: text,
				Chunks: []store.Chunk{{Text: text, Type: "prose", ContentHash: fmt.Sprint(i)}}})
		}
		if err := db.PutDocuments(ctx, docs); err != nil {
			t.Fatal(err)
		}
		if _, err := index.Search(ctx, Query{Text: "plugin"}); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 60)
	v := index.vocabulary()
	if v.prefixLen == 0 || len(v.sorted) == 0 {
		t.Fatalf("vocabulary without variant prefixes: %d runes, %d terms", v.prefixLen, len(v.sorted))
	}
	var prefixes []string
	for _, term := range v.sorted {
		if p, _ := runePrefix(term, v.prefixLen); len(prefixes) == 0 || prefixes[len(prefixes)-1] != p {
			prefixes = append(prefixes, p)
		}
	}

	type sums struct {
		tf     [3]uint64
		capped bool
	}
	// reference reads each term's postings, as the rerank did before the
	// merge; all also counts the chunks added since the vocabulary.
	reference := func(m *memIndex, p string, all bool) map[uint32]sums {
		out := map[uint32]sums{}
		for _, term := range v.prefixTerms(p) {
			mt := m.terms[term]
			if mt == nil {
				continue
			}
			for it := mt.iter(); it.next(); {
				if !all && int(it.slot) >= v.slots {
					continue
				}
				s := out[it.slot]
				for c := range 3 {
					s.tf[c] += uint64(it.tf[c])
				}
				for _, n := range it.tf {
					s.capped = s.capped || n == math.MaxUint8
				}
				out[it.slot] = s
			}
		}
		for slot, s := range out {
			if s.tf == [3]uint64{} && !s.capped {
				delete(out, slot)
			}
		}
		return out
	}
	merged := func(vp *variantPostings) map[uint32]sums {
		out := map[uint32]sums{}
		for it := vp.iter(); it.next(); {
			out[it.slot] = sums{it.tf, it.capped}
		}
		return out
	}
	capped := false
	check := func(when string, prefixes []string) (grown int) {
		m := index.mem
		m.mu.RLock()
		defer m.mu.RUnlock()
		if v.renumbered != m.renumbered {
			t.Fatalf("%s: the slots were renumbered", when)
		}
		for _, p := range prefixes {
			got, want := merged(v.variantPostings(m, p)), reference(m, p, false)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: prefix %q: merged %v, its terms' postings %v", when, p, got, want)
			}
			if len(reference(m, p, true)) > len(want) {
				grown++
			}
			for _, s := range got {
				capped = capped || s.capped
			}
		}
		return grown
	}
	// Half the prefixes are merged before chunks are added, and kept;
	// the others after, when their terms have postings the vocabulary's
	// chunks do not cover.
	half := len(prefixes) / 2
	check("merged", prefixes[:half])
	if len(v.variants) != half {
		t.Errorf("%d prefixes kept of %d", len(v.variants), half)
	}
	put(60, 120)
	if grown := check("kept, after chunks were added", prefixes[:half]); grown == 0 {
		t.Error("the added chunks hold none of the kept prefixes' terms")
	}
	if grown := check("merged after chunks were added", prefixes[half:]); grown == 0 {
		t.Error("the added chunks hold none of the other prefixes' terms")
	}
	if !capped {
		t.Error("no chunk marked capped")
	}
}

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
