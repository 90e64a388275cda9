package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/askwp/askwpd/freshness"
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

// TestFreshness_SnapshotQuiet: on the bubble's clock, with the ticker
// the daemon runs, a snapshot a commit removed is written again one
// freshness.SnapshotQuiet after the last tick that saw a commit, and not
// before.
func TestFreshness_SnapshotQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
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
		put := func(n int) {
			t.Helper()
			text := "A quiet index is written to disk again after a while."
			doc := &store.Document{URL: fmt.Sprintf("http://x.test/q/%d/", n), Title: "Page", PostType: "page", Lang: "en",
				Body: text, Text: text, ContentHash: strconv.Itoa(n),
				Chunks: []store.Chunk{{Text: text, End: len(text), Type: "prose", ContentHash: strconv.Itoa(n)}}}
			if _, err := db.PutDocument(ctx, doc); err != nil {
				t.Fatal(err)
			}
		}
		put(0)
		if err := ix.Load(ctx); err != nil {
			t.Fatal(err)
		}
		put(1) // no snapshot matches the store now
		onDisk := func() bool {
			_, err := os.Stat(path)
			return err == nil
		}
		tick := time.NewTicker(freshness.SnapshotQuiet)
		defer tick.Stop()
		done := make(chan struct{})
		go func() {
			defer close(done)
			keepSnapshot(ctx, ix, tick.C, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		time.Sleep(freshness.SnapshotQuiet + time.Millisecond) // the first tick: nothing to compare with
		synctest.Wait()
		put(2)
		time.Sleep(freshness.SnapshotQuiet) // a tick after a commit
		synctest.Wait()
		if onDisk() {
			t.Fatal("written at a tick that followed a commit")
		}
		time.Sleep(freshness.SnapshotQuiet) // a quiet tick
		synctest.Wait()
		if !onDisk() {
			t.Fatalf("no snapshot %v after the last commit", 2*freshness.SnapshotQuiet)
		}
		cancel()
		<-done
	})
}
