package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

// TestKeepSnapshot: after a commit removed the search index's snapshot,
// the keeper writes it again at the first tick that finds the index
// unchanged since the one before, and not while commits keep coming.
func TestKeepSnapshot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, filepath.Join(dir, "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ix := search.New(db)
	defer ix.Close()
	path := filepath.Join(dir, snapshotFile)
	ix.SetSnapshot(path, "test-build")
	page := func(n int) *store.Document {
		text := "Snapshots keep a restart from analyzing every stored chunk again."
		return &store.Document{URL: "http://x.test/p/" + string(rune('a'+n)) + "/", Title: "Page", PostType: "page",
			Lang: "en", Body: text, Text: text, ContentHash: string(rune('a' + n)),
			Chunks: []store.Chunk{{Text: text, End: len(text), Type: "prose", ContentHash: string(rune('a' + n))}}}
	}
	if _, err := db.PutDocument(ctx, page(0)); err != nil {
		t.Fatal(err)
	}
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.WriteSnapshot(); err != nil {
		t.Fatal(err)
	}
	onDisk := func() bool {
		_, err := os.Stat(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return err == nil
	}
	commit := func(n int) {
		t.Helper()
		if _, err := db.PutDocument(ctx, page(n)); err != nil {
			t.Fatal(err)
		}
		if onDisk() {
			t.Fatal("the snapshot outlived a commit past it: the test shows nothing")
		}
	}
	commit(1)

	k := &snapshotKeeper{ix: ix, log: slog.New(slog.NewTextHandler(io.Discard, nil)), last: -1}
	k.tick()
	commit(2) // between two ticks: the next one finds the index changed
	k.tick()
	if onDisk() {
		t.Fatal("written at a tick that followed a commit")
	}
	k.tick() // the first quiet tick
	if !onDisk() {
		t.Fatal("no snapshot after a tick without commits")
	}
	ix2 := search.New(db)
	defer ix2.Close()
	ix2.SetSnapshot(path, "test-build")
	if err := ix2.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if !ix2.FromSnapshot() || ix2.Stats().Chunks != 3 {
		t.Fatalf("from the snapshot %v, %d chunks; want the snapshot's 3", ix2.FromSnapshot(), ix2.Stats().Chunks)
	}
}
