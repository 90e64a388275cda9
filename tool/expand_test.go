package tool

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/store"
)

// A page's links that expansion could fetch are remembered until a commit
// removes a page: a removed page that links point to is a candidate again
// at once.
func TestScoreLinks_ForgetsOnCommit(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	origin, err := crawl.ParseOrigin("https://site.test")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	s := &Service{Log: log, Store: st, Crawler: crawl.New(crawl.Site{URL: "https://site.test", Origin: origin},
		crawl.Options{Timeout: time.Second, RatePerSec: 1, Concurrency: 1}, st, nil, log)}
	st.Observe(s)
	doc := func(u, title, body string) *store.Document {
		return &store.Document{URL: u, Title: title, PostType: "post", Body: body, Text: body, ContentHash: "h-" + body,
			Chunks: []store.Chunk{{End: len(body), Text: body, Type: "prose"}}}
	}
	a, b := doc("https://site.test/roasting/", "Roasting", "Roast until first crack."), doc("https://site.test/grinders/", "Grinders", "Burr grinders.")
	for _, d := range []*store.Document{a, b} {
		if _, err := st.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutLinks(ctx, a.ID, []store.Link{{URL: b.URL, Text: "burr grinders"}, {URL: "https://site.test/category/coffee/", Text: "grinders"}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"grinder": true}
	cands, err := s.scoreLinks(ctx, []int64{a.ID}, want, "en", map[string]bool{})
	if err != nil || len(cands) != 0 {
		t.Fatalf("with every target indexed or not fetchable: %+v, %v; want none", cands, err)
	}
	if known, unknown := s.links.get([]int64{a.ID}, time.Now()); len(unknown) != 0 || len(known[a.ID]) != 0 {
		t.Fatalf("the page was not remembered as linking to nothing new: %v %v", known, unknown)
	}
	if _, err := st.DeleteDocument(ctx, b.URL); err != nil {
		t.Fatal(err)
	}
	cands, err = s.scoreLinks(ctx, []int64{a.ID}, want, "en", map[string]bool{})
	if err != nil || len(cands) != 1 || cands[0].url != b.URL {
		t.Fatalf("after %s left the index: %+v, %v; want it as the one candidate", b.URL, cands, err)
	}
	// Indexed again: the commit adds a page and forgets nothing, and the
	// remembered link is passed over.
	b.ID = 0
	if _, err := st.PutDocument(ctx, b); err != nil {
		t.Fatal(err)
	}
	if known, _ := s.links.get([]int64{a.ID}, time.Now()); len(known[a.ID]) != 1 {
		t.Fatalf("the commit that added %s forgot %s's links: %v", b.URL, a.URL, known)
	}
	cands, err = s.scoreLinks(ctx, []int64{a.ID}, want, "en", map[string]bool{})
	if err != nil || len(cands) != 0 {
		t.Fatalf("after %s was indexed again: %+v, %v; want none", b.URL, cands, err)
	}
}
