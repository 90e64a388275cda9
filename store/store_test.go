package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
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
