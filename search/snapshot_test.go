package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/askwp/askwpd/store"
)

// snapQueries runs the same candidate queries on ix and returns each
// query's chunks and scores, with the fields of their documents.
func snapQueries(t *testing.T, ix *Index) []string {
	t.Helper()
	words := []string{"themee0", "pluginee", "blocks", "widgeee1", "cacheeee", "querees", "routee3", "menueeee2", "themes",
		"function", "return", "news"}
	filters := []Filters{{}, {ChunkType: "code", CodeLang: "php"}, {PostType: []string{"page"}}, {Lang: "en"},
		{Category: "guides"}, {Tag: strings.ToUpper(words[2])}}
	rk := DefaultRanking()
	rng := rand.New(rand.NewPCG(3, 4))
	var out []string
	for i := 0; i < 120; i++ {
		var qw []string
		for j := 0; j <= rng.IntN(3); j++ {
			qw = append(qw, words[rng.IntN(len(words))])
		}
		q := Query{Text: strings.Join(qw, " "), Filters: filters[rng.IntN(len(filters))]}
		pq := parseQuery(q.Text, "en", nil)
		ps, groups := pq.memPhrases(true)
		for _, c := range ix.mem.candidates(ps, groups, q, rk, 1000, nil) {
			d := c.doc
			out = append(out, fmt.Sprintf("%s|%d|%.12g|%s|%s|%d|%s|%s|%s|%s|%v|%v|%s|%s|%v", q.Text, c.chunkID, c.score,
				c.chunkType, c.codeLang, d.ID, d.URL, d.Title, d.Lang, d.PostType, d.Categories, d.Tags,
				d.Published, d.Modified, d.Thin))
		}
	}
	return out
}

func TestSnapshot(t *testing.T) {
	ctx := context.Background()
	db := openTB(t)
	path := filepath.Join(t.TempDir(), "search-index.snap")
	rng := rand.New(rand.NewPCG(5, 6))
	if err := db.PutDocuments(ctx, randomSite(rng, 0, 120)); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	ix.mem.compactMin = 1 << 30 // keep the dead slots: the snapshot must leave them out
	ix.SetSnapshot(path, "build-1")
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if ix.FromSnapshot() {
		t.Fatal("loaded from a snapshot that does not exist")
	}
	// Titles are common words here; the URL is the deleted page's own.
	gone := "http://x.test/p/31/"
	for i := 30; i < 50; i++ {
		if _, err := db.DeleteDocument(ctx, fmt.Sprintf("http://x.test/p/%d/", i)); err != nil {
			t.Fatal(err)
		}
	}
	if ix.mem.dead == 0 {
		t.Fatal("no dead slots: the test exercises too little")
	}
	want := snapQueries(t, ix)
	if len(want) < 100 {
		t.Fatalf("%d results: the test exercises too little", len(want))
	}
	if err := ix.WriteSnapshot(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(gone)) {
		t.Fatalf("the snapshot holds the deleted page %s", gone)
	}

	t.Run("OK", func(t *testing.T) {
		ix2 := loadSnapshotted(t, db, path)
		if !ix2.FromSnapshot() {
			t.Fatal("not loaded from the snapshot")
		}
		if got := snapQueries(t, ix2); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("answers from the snapshot differ from the store's: %d lines, want %d", len(got), len(want))
		}
		// Which chunks are under a heading (introBoost) is read back.
		headed := map[int64]bool{}
		for _, sl := range ix.mem.slots {
			if !sl.dead {
				headed[sl.chunkID] = sl.headed
			}
		}
		for _, sl := range ix2.mem.slots {
			if h, ok := headed[sl.chunkID]; !ok || h != sl.headed {
				t.Fatalf("chunk %d: headed %v from the snapshot, %v (known %v) before", sl.chunkID, sl.headed, h, ok)
			}
		}
		o := newOracle(t, db)
		if ix2.mem.live != len(o.chunks) {
			t.Fatalf("%d chunks from the snapshot, store %d", ix2.mem.live, len(o.chunks))
		}
		// It follows commits from there, and the snapshot, stale, goes.
		before := ix2.Stats().Chunks
		if _, err := db.PutDocument(ctx, randomSite(rng, 500, 1)[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the snapshot outlived a commit past it: %v", err)
		}
		if after := ix2.Stats().Chunks; after <= before {
			t.Fatalf("the commit did not reach the index: %d chunks, %d before", after, before)
		}
		if err := ix2.WriteSnapshot(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("StoreMovedOn", func(t *testing.T) {
		// No index follows this write: the snapshot is behind the store.
		ix.Close()
		if _, err := db.PutDocument(ctx, randomSite(rng, 600, 1)[0]); err != nil {
			t.Fatal(err)
		}
		ix3 := loadSnapshotted(t, db, path)
		if ix3.FromSnapshot() {
			t.Fatal("a snapshot behind the store was read")
		}
		if err := ix3.WriteSnapshot(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("OtherBuild", func(t *testing.T) {
		ix4 := newIndex(t, db)
		ix4.SetSnapshot(path, "build-2")
		if err := ix4.Load(ctx); err != nil {
			t.Fatal(err)
		}
		if ix4.FromSnapshot() {
			t.Fatal("another build's snapshot was read")
		}
	})

	t.Run("Damaged", func(t *testing.T) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []int{len(b) / 2, len(b) - 2, len(b) - 9} {
			c := bytes.Clone(b)
			c[at] ^= 0x5a
			for _, damaged := range [][]byte{c, b[:at]} {
				if err := os.WriteFile(path, damaged, 0o600); err != nil {
					t.Fatal(err)
				}
				ix5 := New(db)
				ix5.SetSnapshot(path, "build-1")
				if err := ix5.Load(ctx); err != nil {
					t.Fatal(err)
				}
				if ix5.FromSnapshot() {
					t.Fatalf("a damaged snapshot (byte %d of %d) was read", at, len(b))
				}
				if n := len(newOracle(t, db).chunks); ix5.mem.live != n {
					t.Fatalf("%d chunks after a damaged snapshot, store %d", ix5.mem.live, n)
				}
				ix5.Close()
			}
		}
	})
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
	var term memTerm
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
	it := term.iter()
	for ps := it.next(); len(ps) > 0; ps = it.next() {
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
			if p.slot != want[i].slot || p.tf != want[i].tf || p.mask != mask {
				t.Fatalf("posting %d: slot %d tf %v mask %04b, want slot %d tf %v mask %04b", i, p.slot, p.tf, p.mask,
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
	if err := db.PutDocuments(ctx, randomSite(rng, 0, 60)); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	ix.mem.compactMin = 8
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	m := ix.mem
	check := func(when string) {
		t.Helper()
		o := newOracle(t, db)
		m.mu.RLock()
		defer m.mu.RUnlock()
		stored := map[int64]bool{}
		for _, oc := range o.chunks {
			stored[oc.c.ID] = true
			s, ok := m.slotOfChunk(oc.c.ID)
			if !ok || m.slots[s].chunkID != oc.c.ID || m.slots[s].dead {
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
	if err := db.PutDocuments(ctx, randomSite(rng, 0, 40)); err != nil { // replacements
		t.Fatal(err)
	}
	for i := 40; i < 60; i++ {
		if _, err := db.DeleteDocument(ctx, fmt.Sprintf("http://x.test/p/%d/", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PutDocuments(ctx, randomSite(rng, 100, 20)); err != nil {
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
	if err := db.PutDocuments(ctx, linkedSite(rng, 50)); err != nil {
		t.Fatal(err)
	}
	ix := loadSnapshotted(t, db, path)
	// A page written again drops some links: the snapshot must not hold
	// their words, nor number their pages.
	for _, d := range linkedSite(rng, 10) {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	want := anchorDump(ix.anchors)
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
	if got := anchorDump(ix2.anchors); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%d link counts from the snapshot, %d in the index that wrote it", len(got), len(want))
	}
	if len(ix2.anchors.targets) > len(ix.anchors.targets) {
		t.Errorf("%d linked pages numbered after the snapshot, %d before", len(ix2.anchors.targets), len(ix.anchors.targets))
	}
	// It follows commits from there.
	for _, d := range linkedSite(rng, 20) {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := anchorDump(ix2.anchors), freshAnchors(t, db); strings.Join(got, "\n") != strings.Join(want, "\n") {
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
	if got, want := anchorDump(ix3.anchors), freshAnchors(t, db); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%d link counts after a load from the store, want %d", len(got), len(want))
	}
}

// loadSnapshotted loads a new index of db with its snapshot at path, as
// build "build-1".
func loadSnapshotted(t *testing.T, db *store.DB, path string) *Index {
	t.Helper()
	ix := newIndex(t, db)
	ix.SetSnapshot(path, "build-1")
	if err := ix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ix
}
