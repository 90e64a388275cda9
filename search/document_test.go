package search

import (
	"context"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/askwp/askwpd/store"
)

// guide is a page of three sections, each about one thing.
func guide() *store.Document {
	parts := []string{
		"Install the plugin from the Plugins screen, then activate it.",
		"Caching: turn on page caching under Settings, and clear the cache after a theme change.",
		"Backups run nightly. Restore a backup from the Tools menu; a backup holds the database and uploads.",
	}
	d := &store.Document{URL: "https://site.test/docs/getting-started/", Title: "Getting started", PostType: "page",
		Lang: "en", ContentHash: "g", Categories: []string{"Docs"}}
	var body strings.Builder
	for i, p := range parts {
		start := len([]rune(body.String()))
		body.WriteString(p)
		d.Chunks = append(d.Chunks, store.Chunk{Ord: i, Start: start, End: start + len([]rune(p)), Text: p, Type: "prose",
			HeadingPath: []string{"Getting started", []string{"Install", "Caching", "Backups"}[i]}})
		body.WriteString("\n\n")
	}
	d.Body, d.Text = body.String(), body.String()
	return d
}

func TestSearchDocument(t *testing.T) {
	ctx := context.Background()
	db := openTB(t)
	g := guide()
	other := &store.Document{URL: "https://site.test/backup-plugins/", Title: "Backup plugins", PostType: "post", Lang: "en",
		Body: "Backup restore backup restore.", Text: "Backup restore backup restore.", ContentHash: "o",
		Chunks: []store.Chunk{{Text: "Backup restore backup restore.", End: 30, Type: "prose"}}}
	docs := []*store.Document{g, other}
	for _, p := range []string{"contact", "about", "shop", "blog", "faq", "team"} {
		body := "The " + p + " page of the site."
		docs = append(docs, &store.Document{URL: "https://site.test/" + p + "/", Title: p, PostType: "page", Lang: "en",
			Body: body, Text: body, ContentHash: p, Chunks: []store.Chunk{{Text: body, End: len(body), Type: "prose"}}})
	}
	for _, d := range docs {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	ix := newIndex(t, db)
	ps, terms, err := ix.SearchDocument(ctx, g.ID, "restore a backup", "en", 5)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(terms, []string{"restor", "backup"}) || len(ps) != 1 || ps[0].Ord != 2 {
		t.Fatalf("SearchDocument = %+v, terms %v; want the Backups section", ps, terms)
	}
	p := ps[0]
	if string([]rune(g.Body)[p.Start:p.End]) != p.Text || p.Score <= 0 || !slices.Equal(p.MatchedTerms, []string{"restor", "backup"}) ||
		!strings.Contains(p.Snippet, "**Backups**") || !slices.Equal(p.HeadingPath, []string{"Getting started", "Backups"}) {
		t.Errorf("passage %+v", p)
	}
	// The heading counts: "caching" is in the Caching section's heading
	// and text, "cache" in its text only; the Install section has neither.
	ps, _, _ = ix.SearchDocument(ctx, g.ID, "cache settings theme", "en", 5)
	if len(ps) != 1 || ps[0].Ord != 1 {
		t.Errorf("cache settings: %+v", ps)
	}
	// Ties keep the document's order; limit cuts.
	ps, _, _ = ix.SearchDocument(ctx, g.ID, "getting started", "en", 2)
	if len(ps) != 2 || ps[0].Ord != 0 || ps[1].Ord != 1 {
		t.Errorf("heading words in every section: %+v, want sections 0 and 1", ps)
	}
	if ps, terms, err := ix.SearchDocument(ctx, g.ID, "the of and", "en", 5); err != nil || len(ps) != 0 || len(terms) != 0 {
		t.Errorf("stopwords: %+v, %v, %v", ps, terms, err)
	}
	if ps, _, _ := ix.SearchDocument(ctx, other.ID, "install plugin screen", "en", 5); len(ps) != 0 {
		t.Errorf("another document's words: %+v", ps)
	}
}

// TestSearch_QuotedPhrase: a quoted phrase keeps the pages that hold it
// word for word, ranked as usual; one found nowhere is searched as its
// words.
func TestSearch_QuotedPhrase(t *testing.T) {
	ctx := context.Background()
	ix := openSite(t)
	res, err := ix.Search(ctx, Query{Text: `"quick links"`, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if got := urls(res.Hits); !slices.Equal(got, []string{"/quick-links/"}) {
		t.Errorf(`"quick links": %v`, got)
	}
	// Both words are on the layout page, apart: not the phrase.
	res, _ = ix.Search(ctx, Query{Text: `"panel group"`, Limit: 20})
	if got := urls(res.Hits); len(got) == 0 || got[0] != "/layout/" {
		t.Errorf(`"panel group", found nowhere as a phrase: %v, want the words' page`, got)
	}
	res, _ = ix.Search(ctx, Query{Text: `"group related items" screen`, Limit: 20})
	if got := urls(res.Hits); !slices.Equal(got, []string{"/layout/"}) {
		t.Errorf(`"group related items" screen: %v`, got)
	}
	// A phrase in a title counts; so do filters with it.
	res, _ = ix.Search(ctx, Query{Text: `"release notes"`, Limit: 20, Sort: "date"})
	if got := urls(res.Hits); !slices.Equal(got, []string{"/release-2026/", "/release-2025/"}) {
		t.Errorf(`"release notes" by date: %v`, got)
	}
	res, _ = ix.Search(ctx, Query{Text: `"login handler"`, Limit: 20, Passages: true, Filters: Filters{ChunkType: "prose"}})
	if len(res.Hits) != 1 || res.Hits[0].ChunkType != "prose" {
		t.Errorf(`"login handler" in prose: %+v`, res.Hits)
	}
}

func TestSearch_FiltersOnCode(t *testing.T) {
	ctx := context.Background()
	db := openTB(t)
	prose := &store.Document{URL: "http://x.test/p/", Title: "Handler guide", PostType: "post", ContentHash: "p",
		Body: "The login handler explained in prose, login handler login handler."}
	code := &store.Document{URL: "http://x.test/c/", Title: "Code", PostType: "post", ContentHash: "c", Body: "func login handler() {}"}
	for _, d := range []*store.Document{prose, code} {
		d.Text = d.Body
		d.Chunks = []store.Chunk{{Text: d.Body, End: len(d.Body), Type: "prose"}}
	}
	code.Chunks[0].Type, code.Chunks[0].CodeLang = "code", "go"
	for _, d := range []*store.Document{prose, code} {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	sr, err := newIndex(t, db).Search(ctx, Query{Text: "login handler", Filters: Filters{ChunkType: "code", CodeLang: "go"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.Hits) != 1 || sr.Hits[0].URL != code.URL {
		t.Fatalf("filtered search = %+v", sr.Hits)
	}
}

func TestVocabulary_Correct(t *testing.T) {
	v := &vocabulary{byKey: map[vocabKey][]vocabTerm{}, docCount: map[string]int{}}
	for _, w := range []string{"workspace", "workspac", "widget", "notes", "panel", "café"} {
		v.add(w, 3)
	}
	for in, want := range map[string]string{"wrkspace": "workspace", "widgte": "widget", "ntoes": "notes", "notse": "notes", "cafés": "café"} {
		if got, ok := v.correct(in); !ok || got != want {
			t.Errorf("correct(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if got, ok := v.correct("calendar"); ok {
		t.Errorf("correct(calendar) = %q", got)
	}
}

// The runes two words' sets do not share never number more than the
// edits between them, which correct relies on to pass over most of the
// vocabulary; random words over a few letters, some of them outside
// ASCII and some 64 apart (one bit), are a few edits apart or many.
func TestRuneSet_Bound(t *testing.T) {
	letters := []rune("abcdeáéŁ") // á is a's bit
	rng := rand.New(rand.NewPCG(9, 10))
	word := func() []rune {
		w := make([]rune, 2+rng.IntN(9))
		for i := range w {
			w[i] = letters[rng.IntN(len(letters))]
		}
		return w
	}
	close := 0
	for range 20000 {
		a, b := word(), word()
		if rng.IntN(2) == 0 {
			// b is a few edits from a.
			b = slices.Clone(a)
			for range 1 + rng.IntN(3) {
				i := rng.IntN(len(b))
				switch rng.IntN(3) {
				case 0:
					b[i] = letters[rng.IntN(len(letters))]
				case 1:
					b = slices.Insert(b, i, letters[rng.IntN(len(letters))])
				default:
					if len(b) > 1 {
						b = slices.Delete(b, i, i+1)
					}
				}
			}
		}
		d := osaDistance(a, b, 100)
		sa, sb := runeSet(string(a)), runeSet(string(b))
		if lb := max(bits.OnesCount64(sa&^sb), bits.OnesCount64(sb&^sa)); lb > d {
			t.Fatalf("%q, %q: %d edits apart, but their rune sets differ by %d", string(a), string(b), d, lb)
		}
		if d <= 2 {
			close++
		}
	}
	if close < 5000 {
		t.Fatalf("only %d pairs within 2 edits", close)
	}
}

// BenchmarkVocabulary_Correct times one typo lookup over a vocabulary the
// size of a 50k-chunk site's (150k terms).
func BenchmarkVocabulary_Correct(b *testing.B) {
	v := &vocabulary{byKey: map[vocabKey][]vocabTerm{}, docCount: map[string]int{}}
	letters := "abcdefghijklmnopqrstuvwxyz"
	seed := uint32(1)
	next := func() int { seed = seed*1664525 + 1013904223; return int(seed >> 8) }
	for i := 0; i < 150000; i++ {
		n := 3 + next()%10
		w := make([]byte, n)
		for j := range w {
			w[j] = letters[next()%26]
		}
		v.add(string(w), 1+next()%50)
	}
	v.add("workspace", 10)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got, ok := v.correct("wrkspace"); !ok || got != "workspace" {
			b.Fatalf("correct = %q, %v", got, ok)
		}
	}
}
