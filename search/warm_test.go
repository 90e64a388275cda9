package search

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/store"
)

// warmSite stores six pages of two chunks each, page i modified on day
// i of January 2026: page 5 is the newest.
func warmSite(t *testing.T) *store.DB {
	t.Helper()
	db := openTB(t)
	ctx := context.Background()
	for i := range 6 {
		a := fmt.Sprintf("Page %d tells how the kettle number %d whistles when its water boils.", i, i)
		b := fmt.Sprintf("Its second part says the teapot number %d keeps the tea warm for an hour.", i)
		body := a + "\n\n" + b
		day := time.Date(2026, 1, 1+i, 0, 0, 0, 0, time.UTC)
		d := &store.Document{URL: fmt.Sprintf("http://x.test/p%d/", i), Title: fmt.Sprintf("Page %d", i), PostType: "post",
			Body: body, Text: body, Lang: "en", Published: day, Modified: day, ContentHash: fmt.Sprintf("h%d", i),
			Chunks: []store.Chunk{
				{Ord: 0, Start: 0, End: len(a), Text: a, Type: "prose", ContentHash: fmt.Sprintf("a%d", i)},
				{Ord: 1, Start: len(a) + 2, End: len(body), Text: b, Type: "prose", ContentHash: fmt.Sprintf("b%d", i)}}}
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// Warm leaves every chunk's text and term list in memory, and a search
// answers from them as a cold index answers from the store.
func TestWarm(t *testing.T) {
	db := warmSite(t)
	ctx := context.Background()
	ix := newIndex(t, db)
	w, err := ix.Warm(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w.Texts != 12 || w.Lists != 12 || w.Full || w.Bytes <= 0 {
		t.Fatalf("warmed %+v, want all 12 chunks' texts and lists", w)
	}
	if ix.vocab == nil {
		t.Fatal("the vocabulary was not read")
	}
	for id := range ix.mem.Texts.Held() {
		if e := ix.mem.Texts.Get(id); e == nil || !e.Listed() {
			t.Fatalf("chunk %d has no term list", id)
		}
	}
	if texts, lists := ix.mem.Texts.Size(); texts+lists < w.Bytes {
		t.Fatalf("the caches hold %d + %d bytes, the warm counted %d", texts, lists, w.Bytes)
	}

	cold := newIndex(t, db)
	for _, q := range []string{"kettle whistles", "teapot number 3 warm", "water boils page 5"} {
		a, err := ix.Search(ctx, Query{Text: q, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		b, err := cold.Search(ctx, Query{Text: q, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if len(a.Hits) == 0 || string(ja) != string(jb) {
			t.Fatalf("%q: warmed index answered\n%s\ncold one\n%s", q, ja, jb)
		}
	}
	if n := len(ix.mem.Texts.Held()); n != 12 {
		t.Fatalf("the searches changed the warmed cache: %d entries", n)
	}

	// Warmed again, after a pass: only what the cache lacks is read, a
	// changed page's chunks.
	if again, err := ix.Warm(ctx, 0); err != nil || again != (Warmed{}) {
		t.Fatalf("warmed again with nothing changed: %+v, %v", again, err)
	}
	const text = "Page 2 now says the kettle is gone."
	if _, err := db.PutDocument(ctx, &store.Document{URL: "http://x.test/p2/", Title: "Page 2", PostType: "post", Body: text,
		Text: text, Lang: "en", ContentHash: "h2b", Modified: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC),
		Chunks: []store.Chunk{{Ord: 0, Start: 0, End: len(text), Text: text, Type: "prose", ContentHash: "a2b"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Search(ctx, Query{Text: "teapot hour"}); err != nil { // the index follows the commit; page 2 holds neither word
		t.Fatal(err)
	}
	if again, err := ix.Warm(ctx, 0); err != nil || again.Texts != 1 || again.Lists != 1 {
		t.Fatalf("warmed after a page changed: %+v, %v; want its one chunk", again, err)
	}
}

// warmThird warms an index of db with a third of the bytes a whole warm
// takes: two pages' worth, about.
func warmThird(t *testing.T, db *store.DB) (*Index, Warmed) {
	t.Helper()
	all, err := newIndex(t, db).Warm(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	w, err := ix.Warm(context.Background(), all.Bytes/3)
	if err != nil {
		t.Fatal(err)
	}
	if !w.Full || w.Texts == 0 || w.Texts >= 12 {
		t.Fatalf("warmed %+v with a third of %d bytes", w, all.Bytes)
	}
	return ix, w
}

// Past maxBytes, Warm stops: the newest pages are the ones warmed.
func TestWarm_NewestFirst(t *testing.T) {
	ix, w := warmThird(t, warmSite(t))
	// Each chunk's text names its page's number.
	chunks := map[int]int{} // page → its chunks warmed
	for id := range ix.mem.Texts.Held() {
		e := ix.mem.Texts.Get(id)
		var n int
		if _, err := fmt.Sscanf(e.Text[strings.Index(e.Text, "number"):], "number %d", &n); err != nil {
			t.Fatalf("%q: %v", e.Text, err)
		}
		chunks[n]++
	}
	// Pages 5, 4, ... whole, then at most a part of the next one.
	for p, left := 5, w.Texts; left > 0; p-- {
		want := min(2, left)
		if chunks[p] != want {
			t.Fatalf("warmed %d texts, by page %v: want the newest pages first", w.Texts, chunks)
		}
		left -= want
	}
}

// TestWarm_Reload: a reload, after another process wrote the store, reads
// the chunks the cache held again, as the store now has them, and no
// others.
func TestWarm_Reload(t *testing.T) {
	db := warmSite(t)
	ctx := context.Background()
	ix, _ := warmThird(t, db)
	before := ix.mem.Texts.Held()

	other, err := store.Open(ctx, db.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	const text = "Page 5 now says the kettle was sold."
	if _, err := other.PutDocument(ctx, &store.Document{URL: "http://x.test/p5/", Title: "Page 5", PostType: "post", Body: text,
		Text: text, Lang: "en", ContentHash: "h5b", Modified: time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC),
		Chunks: []store.Chunk{{Ord: 0, Start: 0, End: len(text), Text: text, Type: "prose", ContentHash: "a5b"}}}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Load(ctx); err != nil { // a second load is a reload
		t.Fatal(err)
	}

	live, err := db.ChunksByID(ctx, slices.Collect(maps.Keys(before)))
	if err != nil {
		t.Fatal(err)
	}
	if len(live) == 0 || len(live) == len(before) {
		t.Fatalf("%d of the %d chunks held are still stored; want the write to have removed some", len(live), len(before))
	}
	after := ix.mem.Texts.Held()
	if len(after) != len(live) {
		t.Fatalf("the cache holds %d chunks after the reload; want the %d of the %d it held before that are still stored",
			len(after), len(live), len(before))
	}
	for id, ch := range live {
		e := ix.mem.Texts.Get(id)
		if e == nil {
			t.Fatalf("chunk %d, held before the reload, was not read again", id)
		}
		if e.Text != ch.Text {
			t.Fatalf("chunk %d holds %q; the store has %q", id, e.Text, ch.Text)
		}
		if !e.Listed() {
			t.Fatalf("chunk %d has no term list after the reload", id)
		}
	}
	if got := ix.Stats().Reread; got != int64(len(live)) {
		t.Fatalf("Stats().Reread = %d; want the %d texts read again", got, len(live))
	}
}
