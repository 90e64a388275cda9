package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askwp/askwpd/internal/wptest"
)

func openTest(t *testing.T) *DB { return openTB(t) }

func openTB(tb testing.TB) *DB {
	tb.Helper()
	db, err := Open(context.Background(), filepath.Join(tb.TempDir(), "askwpd.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func testDoc(url, title, body string) *Document {
	return &Document{
		URL: url, Title: title, PostType: "post", Body: body, Text: body,
		Published: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), ContentHash: "h-" + body,
		Chunks: []Chunk{{Ord: 0, Start: 0, End: len([]rune(body)), Text: body, Type: "prose"}},
	}
}

func TestDB_PutDocument(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)

	d := testDoc("http://x.test/a/", "Migrating the garden shed", "How we moved the shed across the yard.")
	res, err := db.PutDocument(ctx, d)
	if err != nil || res.Unchanged || res.ID == 0 {
		t.Fatalf("PutDocument = %+v, %v", res, err)
	}
	res2, err := db.PutDocument(ctx, testDoc(d.URL, d.Title, d.Body))
	if err != nil || !res2.Unchanged || res2.ID != res.ID {
		t.Fatalf("second PutDocument = %+v, %v; want unchanged with the same id", res2, err)
	}

	// Changed content replaces the chunks.
	d2 := testDoc(d.URL, "Painting the fence", "A new coat of paint.")
	if _, err := db.PutDocument(ctx, d2); err != nil {
		t.Fatal(err)
	}
	got, err := db.FindDocument(ctx, d.URL, true)
	if err != nil || len(got.Chunks) != 1 || got.Chunks[0].Text != d2.Body || got.Title != d2.Title {
		t.Fatalf("FindDocument after a change = %+v, %v", got, err)
	}

	ok, err := db.DeleteDocument(ctx, d.URL)
	if err != nil || !ok {
		t.Fatalf("DeleteDocument = %v, %v", ok, err)
	}
	if _, err := db.FindDocument(ctx, d.URL, true); !errors.Is(err, ErrNotFound) {
		t.Errorf("FindDocument after delete: %v", err)
	}
	var left int
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM chunks`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d chunks outlived their document (%v)", left, err)
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestOpen_ConcurrentMigrations: processes opening the same new store at
// once (serve and index started together) all succeed.
func TestOpen_ConcurrentMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "askwpd.db")
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			db, err := Open(context.Background(), path)
			if err == nil {
				err = db.Close()
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestDB_RemovedTextLeavesTheFiles: a page that leaves the index leaves
// no byte of its text or of its chunks' vectors in askwpd.db, -wal or
// -shm, once the checkpoint that follows a removal has run, and none
// after Close either.
func TestDB_RemovedTextLeavesTheFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(ctx, filepath.Join(dir, "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ResetVectors(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	// Pages around the removed one, so that its rows share pages with
	// rows that stay.
	for i := range 40 {
		body := fmt.Sprintf("Public page %d about sheds, fences and garden paths. ", i) + strings.Repeat("Ordinary words. ", i*20)
		if _, err := db.PutDocument(ctx, testDoc(fmt.Sprintf("http://x.test/p%d/", i), fmt.Sprintf("Page %d", i), body)); err != nil {
			t.Fatal(err)
		}
	}
	const marker = "QXZPRIVATEMARKER7731"
	short := testDoc("http://x.test/private-short/", "Board minutes "+marker, "The "+marker+" board minutes.")
	long := testDoc("http://x.test/private-long/", "Salaries", strings.Repeat("Salary table "+marker+" row. ", 2000))
	long.PostID = 77
	for _, d := range []*Document{short, long} {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	in, err := db.PendingVectors(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// A vector whose bytes are found in a file only if it is still there.
	vec := make([]float32, 64)
	for i := range vec {
		vec[i] = 7731.25 + float32(i)
	}
	var vs []ChunkVector
	for _, v := range in {
		if v.ChunkID == short.Chunks[0].ID || v.ChunkID == long.Chunks[0].ID {
			vs = append(vs, ChunkVector{ChunkID: v.ChunkID, InputHash: v.Hash, Vector: vec})
		}
	}
	if n, err := db.PutVectors(ctx, "m", vs); err != nil || n != 2 {
		t.Fatalf("PutVectors = %d, %v", n, err)
	}
	needles := []string{marker, string(vectorBlob(vec)[:32])}
	if found := wptest.FilesHolding(t, dir, needles...); len(found) == 0 {
		t.Fatal("the marker is in no file before the removal: the scan sees nothing")
	}

	if ok, err := db.DeleteDocument(ctx, short.URL); err != nil || !ok {
		t.Fatalf("DeleteDocument = %v, %v", ok, err)
	}
	if ok, err := db.DeletePost(ctx, long.PostID); err != nil || !ok {
		t.Fatalf("DeletePost = %v, %v", ok, err)
	}
	var vectors int
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM chunk_vectors`).Scan(&vectors); err != nil || vectors != 0 {
		t.Fatalf("%d vectors outlived their chunks (%v)", vectors, err)
	}
	// The checkpoint a removal schedules, without any call to ask for it.
	var found []string
	for deadline := time.Now().Add(10 * checkpointDelay); ; time.Sleep(50 * time.Millisecond) {
		if found = wptest.FilesHolding(t, dir, needles...); len(found) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v after the removal, the removed page is still in %v", 10*checkpointDelay, found)
		}
	}
	// Writes after the removal reuse the zeroed pages, and bring nothing
	// back.
	if _, err := db.PutDocument(ctx, testDoc("http://x.test/after/", "After", strings.Repeat("Later words. ", 500))); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if found := wptest.FilesHolding(t, dir, needles...); len(found) > 0 {
		t.Errorf("after Close, the removed page is in %v", found)
	}
	// Still a sound database: the zeroing did not corrupt it.
	db2, err := Open(ctx, filepath.Join(dir, "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if err := db2.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestOpen_FilesPrivate: the database, its WAL and its shared memory are
// created readable by their owner alone even under a umask of 0, and a
// store an older version left world-readable is narrowed on open.
func TestOpen_FilesPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "askwpd.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetMeta(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if m := fi.Mode().Perm(); m != 0o600 {
				t.Errorf("%s: %s has mode %04o, want 0600", when, filepath.Base(p), m)
			}
		}
	}
	check("new store")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.SetMeta(ctx, "k", "w"); err != nil {
		t.Fatal(err)
	}
	check("store left 0644")
}
