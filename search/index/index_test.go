package index

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/internal/testsite"
	"github.com/askwp/askwpd/store"
)

func TestChunkLinks(t *testing.T) {
	doc := &store.IndexDoc{ID: 1, URL: "https://docs.test/tutorials/list-of-pages/", Lang: "en"}
	text := "Instead of a custom loading indicator, we used the [Spinner](https://docs.test/components/spinner/#usage) component.\n" +
		"![Screenshot](https://docs.test/wp-content/uploads/list.png) and [the source](https://github.com/example/repo) " +
		"and [this page](https://docs.test/tutorials/list-of-pages/) and [notices](../notices/)."
	links := chunkLinks(analysis.NewAnalyzer(), &store.IndexChunk{ID: 1, Doc: doc, Text: text})
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

// anchorDump lists every count a's links give, as "term key count".
func anchorDump(m *Index) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	a := m.links
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
	ix := New(db, analysis.NewAnalyzer())
	defer ix.Close()
	if err := ix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return anchorDump(ix)
}

// TestAnchors_CommitsDuringLoad: the links are read by the postings'
// load, and commits racing a reload leave them as a fresh load of the
// store finds them, at the postings' count.
func TestAnchors_CommitsDuringLoad(t *testing.T) {
	ctx := context.Background()
	db := openTB(t)
	rng := rand.New(rand.NewPCG(11, 12))
	if err := db.PutDocuments(ctx, testsite.Linked(rng, 60)); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, db)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if len(anchorDump(ix)) < 100 {
		t.Fatalf("%d link counts after a load: the test exercises too little", len(anchorDump(ix)))
	}
	again := testsite.Linked(rng, 60)
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
		if got := anchorDump(ix); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("round %d: %d link counts followed, a fresh load finds %d", round, len(got), len(want))
		}
	}
}

// TestPostings_RoundTrip packs postings of every shape and reads them
// back: distances of one to billions, each column alone or with others,
// counts up to 255, and the commonest, once in the body.
func TestPostings_RoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	type posting struct {
		slot uint32
		tf   [4]uint8
	}
	var want []posting
	var term Term
	slot := uint32(0)
	for i := 0; i < 20000; i++ {
		if i > 0 {
			slot += []uint32{1, 1 + rng.Uint32N(100), 1 + rng.Uint32N(1<<20), 1 + rng.Uint32N(1<<28)}[rng.IntN(4)]
		}
		var tf [4]uint8
		switch rng.IntN(3) {
		case 0:
			tf = onceInBody
		case 1:
			tf[rng.IntN(4)] = uint8(1 + rng.IntN(255))
		default:
			for tf == ([4]uint8{}) {
				for c := range tf {
					if rng.IntN(2) == 0 {
						tf[c] = uint8(1 + rng.IntN([]int{3, 20, 255}[rng.IntN(3)]))
					}
				}
			}
		}
		term.add(slot, tf)
		want = append(want, posting{slot, tf})
		if slot > 1<<31 {
			break
		}
	}
	i := 0
	it := term.Postings()
	for ps := it.Next(); len(ps) > 0; ps = it.Next() {
		for _, p := range ps {
			if i >= len(want) {
				t.Fatalf("more postings read than written (%d)", len(want))
			}
			var mask uint8
			for c, x := range want[i].tf {
				if x != 0 {
					mask |= 1 << c
				}
			}
			if p.Slot != want[i].slot || p.TF != want[i].tf || p.Mask != mask {
				t.Fatalf("posting %d: slot %d tf %v mask %04b, want slot %d tf %v mask %04b", i, p.Slot, p.TF, p.Mask,
					want[i].slot, want[i].tf, mask)
			}
			i++
		}
	}
	if i != len(want) || term.last != want[len(want)-1].slot || int(term.n) != len(want) {
		t.Fatalf("read %d postings (last %d, counted %d), wrote %d", i, term.last, term.n, len(want))
	}
	stem, exact := 0, 0
	for _, p := range want {
		if p.tf[0]|p.tf[1]|p.tf[2] != 0 {
			stem++
		}
		if p.tf[3] != 0 {
			exact++
		}
	}
	if int(term.stem) != stem || int(term.exact) != exact {
		t.Fatalf("counted %d stemmed and %d exact postings, want %d and %d", term.stem, term.exact, stem, exact)
	}
}

// TestMemIndex_ChunkSlot checks the chunk id → slot map, made at the first
// lookup, through adds, replacements, deletes and compactions after it.
func TestMemIndex_ChunkSlot(t *testing.T) {
	ctx := context.Background()
	db := openTB(t)
	rng := rand.New(rand.NewPCG(11, 12))
	if err := db.PutDocuments(ctx, testsite.Random(rng, 0, 60)); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, db)
	ix.compactMin = 8
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	m := ix
	check := func(when string) {
		t.Helper()
		o := newOracle(t, db)
		m.mu.RLock()
		defer m.mu.RUnlock()
		stored := map[int64]bool{}
		for _, oc := range o.chunks {
			stored[oc.c.ID] = true
			s, ok := m.SlotOfChunk(oc.c.ID)
			if !ok || m.slots[s].ChunkID != oc.c.ID || m.slots[s].Dead {
				t.Fatalf("%s: chunk %d is stored but its slot is %d (found %v)", when, oc.c.ID, s, ok)
			}
		}
		if len(m.chunkSlot) != len(stored) {
			t.Fatalf("%s: %d chunks mapped, %d stored", when, len(m.chunkSlot), len(stored))
		}
		if want := slotLens(m.slots); !slices.Equal(m.lens, want) {
			t.Fatalf("%s: the slot lengths scoring reads are not the slots'", when)
		}
	}
	check("first lookup")
	if err := db.PutDocuments(ctx, testsite.Random(rng, 0, 40)); err != nil { // replacements
		t.Fatal(err)
	}
	for i := 40; i < 60; i++ {
		if _, err := db.DeleteDocument(ctx, fmt.Sprintf("http://x.test/p/%d/", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PutDocuments(ctx, testsite.Random(rng, 100, 20)); err != nil {
		t.Fatal(err)
	}
	check("after replacements, deletes and adds")
}

// TestSnapshot_Links: the links between pages are in the snapshot, read
// back as the store's load finds them, and followed from there; a
// snapshot of the format before them is not read.
func TestSnapshot_Links(t *testing.T) {
	ctx := context.Background()
	db := openTB(t)
	path := filepath.Join(t.TempDir(), "search-index.snap")
	rng := rand.New(rand.NewPCG(13, 14))
	if err := db.PutDocuments(ctx, testsite.Linked(rng, 50)); err != nil {
		t.Fatal(err)
	}
	ix := loadSnapshotted(t, db, path)
	// A page written again drops some links: the snapshot must not hold
	// their words, nor number their pages.
	for _, d := range testsite.Linked(rng, 10) {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	want := anchorDump(ix)
	if len(want) < 100 {
		t.Fatalf("%d link counts: the test exercises too little", len(want))
	}
	if err := ix.WriteSnapshot(); err != nil {
		t.Fatal(err)
	}

	ix2 := loadSnapshotted(t, db, path)
	if !ix2.FromSnapshot() {
		t.Fatal("not loaded from the snapshot")
	}
	if got := anchorDump(ix2); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%d link counts from the snapshot, %d in the index that wrote it", len(got), len(want))
	}
	if len(ix2.links.targets) > len(ix.links.targets) {
		t.Errorf("%d linked pages numbered after the snapshot, %d before", len(ix2.links.targets), len(ix.links.targets))
	}
	// It follows commits from there.
	for _, d := range testsite.Linked(rng, 20) {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := anchorDump(ix2), freshAnchors(t, db); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after commits, %d link counts followed from the snapshot, a fresh load finds %d", len(got), len(want))
	}

	// The same snapshot as format 3 wrote it: read as another layout.
	if err := ix2.WriteSnapshot(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := bytes.Replace(raw, []byte("snapshot 4\n"), []byte("snapshot 3\n"), 1)
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	ix3 := loadSnapshotted(t, db, path)
	if ix3.FromSnapshot() {
		t.Fatal("a snapshot of the format before links was read")
	}
	if got, want := anchorDump(ix3), freshAnchors(t, db); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%d link counts after a load from the store, want %d", len(got), len(want))
	}
}

// TestMemIndex_GapMeansMissed: a commit whose count skips numbers came
// after another process's: it is applied, and the index asks for a
// reload.
func TestMemIndex_GapMeansMissed(t *testing.T) {
	m := newIndex(nil)
	m.enabled, m.ready = true, true
	doc := &store.IndexDoc{ID: 1, URL: "https://site.test/a/", Lang: "en", PostType: "post"}
	add := func(gen, id int64, body string) store.IndexCommit {
		return store.IndexCommit{Gen: gen, Ops: []store.IndexOp{{Add: &store.IndexChunk{ID: id, Doc: doc, Type: "prose", Text: body}}}}
	}
	m.IndexCommitted(add(1, 1, "alpha"))
	if m.missed || m.gen != 1 || m.live != 1 {
		t.Fatalf("after commit 1: missed %v, gen %d, %d chunks", m.missed, m.gen, m.live)
	}
	m.IndexCommitted(add(1, 9, "repeated")) // in the index already
	if m.live != 1 {
		t.Fatalf("a repeated commit was applied again")
	}
	m.IndexCommitted(add(3, 2, "beta"))
	if !m.missed || m.gen != 3 || m.live != 2 {
		t.Fatalf("after commit 3: missed %v, gen %d, %d chunks", m.missed, m.gen, m.live)
	}
	if got := m.TermDocs([]string{"alpha", "beta"}); got["alpha"] != 1 || got["beta"] != 1 {
		t.Fatalf("term counts %v", got)
	}
}

// TestIndex_StatsBesideACommit: while a commit waits for a search to
// let it in, Stats answers at once, with the state read before, and
// reads the state anew once the commit is done.
func TestIndex_StatsBesideACommit(t *testing.T) {
	db := openTB(t)
	if err := db.PutDocuments(context.Background(), testsite.Random(rand.New(rand.NewPCG(1, 2)), 0, 20)); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, db)
	if err := ix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := ix.Stats()
	m := ix
	m.mu.RLock() // a search under way
	committed := make(chan struct{})
	go func() {
		m.mu.Lock() // a commit, waiting for it
		m.live++
		m.mu.Unlock()
		close(committed)
	}()
	// The commit is waiting once a reader can no longer get in.
	for m.mu.TryRLock() {
		m.mu.RUnlock()
		runtime.Gosched()
	}
	answered := make(chan Stats)
	go func() { answered <- ix.Stats() }()
	select {
	case st := <-answered:
		if st.Chunks != before.Chunks || !st.Ready {
			t.Errorf("stats beside the commit: %+v, want the state before it, %+v", st, before)
		}
	case <-time.After(5 * time.Second):
		t.Error("Stats waited for the commit")
	}
	m.mu.RUnlock()
	<-committed
	if st := ix.Stats(); st.Chunks != before.Chunks+1 {
		t.Errorf("stats after the commit: %d chunks, want %d", st.Chunks, before.Chunks+1)
	}
}
