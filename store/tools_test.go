package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestDB_ToolHelpers(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	a := testDoc("https://site.test/a/", "Roasting guide", "Roast the beans until first crack.\n\nCool them quickly on a tray.")
	b := testDoc("https://site.test/b/", "Grinders", "Burr grinders keep their retention low.")
	for _, d := range []*Document{a, b} {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}

	if err := db.PutLinks(ctx, a.ID, []Link{{URL: b.URL, Text: "grinders"}, {URL: "https://site.test/c/", Text: "cupping"},
		{URL: "https://site.test/c/", Text: "cupping notes"}}); err != nil {
		t.Fatal(err)
	}
	cands, err := db.UnindexedLinks(ctx, []int64{a.ID, b.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 1 || cands[0].URL != "https://site.test/c/" || cands[0].Text != "cupping notes" {
		t.Errorf("UnindexedLinks = %+v, want the one link to a page not indexed, with its longest anchor", cands)
	}
	// Several documents' links come in the order the documents are asked
	// for, each one's in the order they were stored.
	if err := db.PutLinks(ctx, b.ID, []Link{{URL: "https://site.test/e/", Text: "espresso"}, {URL: "https://site.test/d/", Text: "descaling"}}); err != nil {
		t.Fatal(err)
	}
	cands, err = db.UnindexedLinks(ctx, []int64{b.ID, a.ID})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cands {
		got = append(got, fmt.Sprint(c.FromDocID == b.ID, " ", c.URL))
	}
	if want := []string{"true https://site.test/e/", "true https://site.test/d/", "false https://site.test/c/"}; !slices.Equal(got, want) {
		t.Errorf("UnindexedLinks(b, a) = %q, want %q", got, want)
	}
	if _, err := db.DeleteDocument(ctx, a.URL); err != nil {
		t.Fatal(err)
	}
	if cands, _ := db.UnindexedLinks(ctx, []int64{a.ID}); len(cands) != 0 {
		t.Errorf("links outlived their document: %+v", cands)
	}

	for i := 0; i < 5; i++ {
		s := StatsSample{At: time.Date(2026, 1, 1, i, 0, 0, 0, time.UTC), Documents: i}
		if err := db.AddStatsSample(ctx, s, 3); err != nil {
			t.Fatal(err)
		}
	}
	ss, err := db.StatsSamples(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 3 || ss[0].Documents != 2 || ss[2].Documents != 4 {
		t.Errorf("StatsSamples = %+v, want the newest 3, oldest first", ss)
	}
	ages, err := db.FetchAges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range ages {
		n += a.Documents
	}
	if n != 1 {
		t.Errorf("FetchAges counts %d documents, want 1: %+v", n, ages)
	}
	if db.Size() <= 0 {
		t.Error("Size is 0")
	}
}
