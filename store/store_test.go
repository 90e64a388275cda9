package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func openTest(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
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

	sr, err := db.Search(ctx, SearchQuery{Text: "garden shed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.Hits) != 1 || sr.Hits[0].URL != d.URL || sr.Action != "answer" {
		t.Fatalf("Search = %+v", sr)
	}
	if got := sr.Hits[0].Passage; got.Text != d.Body || got.Start != 0 {
		t.Errorf("passage = %+v", got)
	}

	// Changed content replaces the chunks and their index rows.
	d2 := testDoc(d.URL, "Painting the fence", "A new coat of paint.")
	if _, err := db.PutDocument(ctx, d2); err != nil {
		t.Fatal(err)
	}
	if sr, _ := db.Search(ctx, SearchQuery{Text: "shed"}); len(sr.Hits) != 0 {
		t.Errorf("old content still found: %+v", sr.Hits)
	}
	if sr, _ := db.Search(ctx, SearchQuery{Text: "fence paint"}); len(sr.Hits) != 1 {
		t.Errorf("new content not found: %+v", sr)
	}

	ok, err := db.DeleteDocument(ctx, d.URL)
	if err != nil || !ok {
		t.Fatalf("DeleteDocument = %v, %v", ok, err)
	}
	if _, err := db.FindDocument(ctx, d.URL, true); !errors.Is(err, ErrNotFound) {
		t.Errorf("FindDocument after delete: %v", err)
	}
	if sr, _ := db.Search(ctx, SearchQuery{Text: "fence"}); len(sr.Hits) != 0 {
		t.Errorf("deleted content still found: %+v", sr.Hits)
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestDB_SearchFilters(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	prose := testDoc("http://x.test/p/", "Handler guide", "The login handler explained in prose, login handler login handler.")
	code := testDoc("http://x.test/c/", "Code", "func loginHandler() {}")
	code.Chunks[0].Type, code.Chunks[0].CodeLang = "code", "go"
	code.Body = "func login handler() {}"
	code.Chunks[0].Text = code.Body
	for _, d := range []*Document{prose, code} {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	sr, err := db.Search(ctx, SearchQuery{Text: "login handler", Filters: Filters{ChunkType: "code", CodeLang: "go"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.Hits) != 1 || sr.Hits[0].URL != code.URL {
		t.Fatalf("filtered search = %+v", sr.Hits)
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
