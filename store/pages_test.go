package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestListPages_Keyset pages through every document in URL order, each
// once, whatever the page size, and a removed page leaves the listing.
func TestListPages_Keyset(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	const n = 23
	for i := 0; i < n; i++ {
		d := testDoc(fmt.Sprintf("https://example.test/p%02d/", i), fmt.Sprintf("Page %d", i), "Body of page.")
		d.Description = "About page " + fmt.Sprint(i)
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, size := range []int{1, 5, 23, 100} {
		var got []string
		after := ""
		for calls := 0; ; calls++ {
			if calls > n+1 {
				t.Fatalf("size %d: listing does not end", size)
			}
			ps, err := db.ListPages(ctx, after, size)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				got = append(got, p.URL)
				if p.Title == "" || !strings.HasPrefix(p.Description, "About page") || p.Published.IsZero() || p.ID == 0 {
					t.Errorf("size %d: %+v lacks its fields", size, p)
				}
			}
			if len(ps) < size {
				break
			}
			after = ps[len(ps)-1].URL
		}
		if len(got) != n {
			t.Fatalf("size %d: listed %d pages, want %d: %v", size, len(got), n, got)
		}
		for i, u := range got {
			if want := fmt.Sprintf("https://example.test/p%02d/", i); u != want {
				t.Fatalf("size %d: page %d is %s, want %s", size, i, u, want)
			}
		}
	}
	if _, err := db.DeleteDocument(ctx, "https://example.test/p03/"); err != nil {
		t.Fatal(err)
	}
	ps, err := db.ListPages(ctx, "https://example.test/p02/", 1)
	if err != nil || len(ps) != 1 || ps[0].URL != "https://example.test/p04/" {
		t.Fatalf("after removing p03, the page after p02 = %+v (%v)", ps, err)
	}
}

// TestReadPage_Cap: a page within the cap comes with its Markdown, one
// over it with its length alone, and a page not stored is ErrNotFound.
func TestReadPage_Cap(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	body := "Ünïcödé counts as characters: " + strings.Repeat("é", 20)
	d := testDoc("https://example.test/a/", "A page", body)
	if _, err := db.PutDocument(ctx, d); err != nil {
		t.Fatal(err)
	}
	chars := len([]rune(body))
	p, err := db.ReadPage(ctx, d.URL, chars)
	if err != nil || p.Body != body || p.Chars != chars || p.Title != "A page" || p.URL != d.URL {
		t.Fatalf("ReadPage at the cap = %+v, %v", p, err)
	}
	p, err = db.ReadPage(ctx, d.URL, chars-1)
	if err != nil || p.Body != "" || p.Chars != chars {
		t.Fatalf("ReadPage over the cap = %+v, %v; want its length and no body", p, err)
	}
	if _, err := db.ReadPage(ctx, "https://example.test/missing/", 100); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadPage of a missing page: %v", err)
	}
}

// TestListPages_Plan: the listing walks the URL index from the cursor,
// neither scanning the table nor sorting it.
func TestListPages_Plan(t *testing.T) {
	db := openTest(t)
	p := queryPlan(t, db, listPagesQuery, "https://example.test/", 100)
	if !strings.Contains(p, "SEARCH documents USING INDEX sqlite_autoindex_documents_1 (url>?)") || strings.Contains(p, "TEMP B-TREE") {
		t.Errorf("plan: %s\nwant a range search of the url index, without a sort", p)
	}
	p = queryPlan(t, db, readPageQuery, 100, "https://example.test/")
	if !strings.Contains(p, "SEARCH documents USING INDEX sqlite_autoindex_documents_1 (url=?)") {
		t.Errorf("plan: %s\nwant a lookup by url", p)
	}
}
