package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askwp/askwpd/internal/testsite"
	"github.com/askwp/askwpd/search/index"
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
		for _, c := range ix.matchChunks(ps, groups, q, rk, 1000, nil) {
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
	if err := db.PutDocuments(ctx, testsite.Random(rng, 0, 120)); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	ix.mem.SetCompactMin(1 << 30) // keep the dead slots: the snapshot must leave them out
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
	if ix.mem.Shape().Dead == 0 {
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
		for _, sl := range slotsOf(ix) {
			if !sl.Dead {
				headed[sl.ChunkID] = sl.Headed
			}
		}
		for _, sl := range slotsOf(ix2) {
			if h, ok := headed[sl.ChunkID]; !ok || h != sl.Headed {
				t.Fatalf("chunk %d: headed %v from the snapshot, %v (known %v) before", sl.ChunkID, sl.Headed, h, ok)
			}
		}
		o := newOracle(t, db)
		if live := ix2.mem.Shape().Live; live != len(o.chunks) {
			t.Fatalf("%d chunks from the snapshot, store %d", live, len(o.chunks))
		}
		// It follows commits from there, and the snapshot, stale, goes.
		before := ix2.Stats().Chunks
		if _, err := db.PutDocument(ctx, testsite.Random(rng, 500, 1)[0]); err != nil {
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
		if _, err := db.PutDocument(ctx, testsite.Random(rng, 600, 1)[0]); err != nil {
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
				if n, live := len(newOracle(t, db).chunks), ix5.mem.Shape().Live; live != n {
					t.Fatalf("%d chunks after a damaged snapshot, store %d", live, n)
				}
				ix5.Close()
			}
		}
	})
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

// slotsOf copies the index's slots.
func slotsOf(ix *Index) []index.Slot {
	m := ix.mem
	m.RLock()
	defer m.RUnlock()
	out := make([]index.Slot, m.NumSlots())
	for i := range out {
		out[i] = *m.Slot(uint32(i))
	}
	return out
}
