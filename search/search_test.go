package search

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/store"
)

// siteDocs is a small documentation site for the acceptance tests: pages a
// visitor asks about by name, near-duplicates, an archive, code.
func siteDocs() []*store.Document {
	day := func(d int) time.Time { return time.Date(2026, 1, d, 9, 0, 0, 0, time.UTC) }
	doc := func(url, title, body string, pub time.Time, tags ...string) *store.Document {
		d := &store.Document{
			URL: "http://x.test" + url, Title: title, PostType: "page", Body: body, Text: body, Lang: "en-US",
			Published: pub, ContentHash: "h-" + url, Tags: tags,
			Chunks: []store.Chunk{{Ord: 0, Start: 0, End: len([]rune(body)), Text: body, Type: "prose", ContentHash: "c-" + url}},
		}
		return d
	}
	docs := []*store.Document{
		doc("/workspace/", "Workspace", "The workspace is where your notes, panels and widgets live. Open a workspace from the sidebar to start.", day(2)),
		doc("/widgets/", "Widgets", "Widgets are small tools you add to a workspace: a clock, a to-do list, a weather card.", day(3)),
		doc("/quick-links/", "Quick links", "Quick links keep your favourite pages one click away. Add quick links from the star menu.", day(4)),
		doc("/notes/", "Notes", "Notes hold text and checklists. Every note belongs to one workspace.", day(5)),
		doc("/home-dashboard/", "Home", "Home, the dashboard: the first screen after you sign in, with recent activity.", day(6)),
		doc("/home-site/", "Home", "Home, the website: our public homepage, with news about the product.", day(6)),
		doc("/layout/", "Layout tips", "Arrange the screen the way you like it. Drag items to reorder them, and use a panel to group related items together on one side.", day(7)),
		doc("/category/news/", "News archive", "All posts about widgets, workspace and notes, newest first.", day(8)),
		doc("/release-2025/", "Release notes", "What changed in the widgets and notes this release.", time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)),
		doc("/release-2026/", "Release notes", "What changed in the widgets and notes this release.", day(20)),
	}
	code := &store.Document{
		URL: "http://x.test/dev/login/", Title: "Login handler", PostType: "page", Lang: "en",
		Published: day(9), ContentHash: "h-code",
	}
	prose := "The login handler checks the password and starts a session. The login handler is the heart of sign-in: login handler, login handler."
	goCode := "func loginHandler(w http.ResponseWriter, r *http.Request) {\n\tsession.Start(w, r)\n}"
	pyCode := "def login_handler(request):\n    return start_session(request)"
	code.Body = prose + "\n\n" + goCode + "\n\n" + pyCode
	code.Text = code.Body
	off := func(s string) int { return len([]rune(code.Body[:strings.Index(code.Body, s)])) }
	code.Chunks = []store.Chunk{
		{Ord: 0, Start: 0, End: len([]rune(prose)), Text: prose, Type: "prose", HeadingPath: []string{"Login"}},
		{Ord: 1, Start: off(goCode), End: off(goCode) + len([]rune(goCode)), Text: goCode, Type: "code", CodeLang: "go", HeadingPath: []string{"Login", "Go"}},
		{Ord: 2, Start: off(pyCode), End: off(pyCode) + len([]rune(pyCode)), Text: pyCode, Type: "code", CodeLang: "python", HeadingPath: []string{"Login", "Python"}},
	}
	return append(docs, code)
}

func openTB(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "askwpd.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// newIndex is New(db), closed at the end of the test.
func newIndex(tb testing.TB, db *store.DB) *Index {
	ix := New(db)
	tb.Cleanup(ix.Close)
	return ix
}

// openSite is the index of a store holding siteDocs, with synonyms, on
// 25 January 2026.
func openSite(t testing.TB) *Index {
	t.Helper()
	db := openTB(t)
	ctx := context.Background()
	for _, d := range siteDocs() {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	syn, err := analysis.ParseSynonyms(strings.NewReader("# test\nshortcuts => quick links\nhomepage, home page => home\n"))
	if err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	ix.SetSynonyms(syn)
	db.Now = func() time.Time { return time.Date(2026, 1, 25, 0, 0, 0, 0, time.UTC) }
	return ix
}

func TestSearch_Acceptance(t *testing.T) {
	ix := openSite(t)
	ctx := context.Background()
	tests := []struct {
		query      string
		wantAction string
		wantTop    []string // URL paths expected first, in order
	}{
		{"explain workspace", "answer", []string{"/workspace/"}},
		{"wrkspace", "answer", []string{"/workspace/"}},
		{"shortcuts", "answer", []string{"/quick-links/"}},
		{"workspace and widgets", "answer", []string{"/workspace/", "/widgets/"}},
		{"home", "ambiguous", nil},
		{"explain calendar", "no_match", nil},
		{"tell me about panels", "clarify", nil},
		{"how do I do it", "no_match", nil},
		{"the thing", "no_match", nil},
		{"wp_enqueue_script", "no_match", nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			res, err := ix.Search(ctx, Query{Text: tt.query})
			if err != nil {
				t.Fatal(err)
			}
			if res.Action != tt.wantAction {
				t.Errorf("Action=%s (%s, confidence %.2f), want %s; hits %v", res.Action, res.Reason, res.Confidence, tt.wantAction, urls(res.Hits))
			}
			for i, want := range tt.wantTop {
				if i >= len(res.Hits) || !strings.HasSuffix(res.Hits[i].URL, want) {
					t.Errorf("hits=%v, want %v first", urls(res.Hits), tt.wantTop)
					break
				}
			}
		})
	}
}

func urls(hs []Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, strings.TrimPrefix(h.URL, "http://x.test"))
	}
	return out
}

func TestSearch_Evidence(t *testing.T) {
	ix := openSite(t)
	res, err := ix.Search(context.Background(), Query{Text: "quick links star menu"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 {
		t.Fatal("no hits")
	}
	h := res.Hits[0]
	d, err := ix.db.FindDocument(context.Background(), h.URL, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := string([]rune(d.Body)[h.Start:h.End]); got != h.Passage.Text {
		t.Errorf("passage %q is not body[%d:%d] = %q", h.Passage.Text, h.Start, h.End, got)
	}
	if h.Source != "keyword" || h.ContentHash == "" || len(h.MatchedTerms) < 3 || !strings.Contains(h.Snippet, "**") {
		t.Errorf("evidence = %+v", h)
	}
}

func TestSearch_FiltersStrict(t *testing.T) {
	ix := openSite(t)
	ctx := context.Background()
	// Prose ranks higher for "login handler", yet the filter holds.
	all, err := ix.Search(ctx, Query{Text: "login handler", Passages: true, PerDoc: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Hits) == 0 || all.Hits[0].ChunkType != "prose" {
		t.Fatalf("unfiltered top = %+v, want the prose chunk first", all.Hits)
	}
	res, err := ix.Search(ctx, Query{Text: "login handler", Filters: Filters{ChunkType: "code", CodeLang: "Go"}, Passages: true, PerDoc: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 {
		t.Fatalf("Hits=%d, want 1 Go code chunk", len(res.Hits))
	}
	for _, h := range res.Hits {
		if h.ChunkType != "code" || h.CodeLang != "go" {
			t.Errorf("hit %s/%s passes the filter", h.ChunkType, h.CodeLang)
		}
	}
	// Date and tag filters.
	res, err = ix.Search(ctx, Query{Text: "release notes widgets", Filters: Filters{After: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Hits {
		if h.Published.Before(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("hit %s published %s passes After", h.URL, h.Published)
		}
	}
	if st := ix.Stats(); !st.Ready || st.Memory == 0 || st.Loads != 1 {
		t.Fatalf("stats after lazy load and searches: %+v", st)
	}
}

func TestSearch_Ranking(t *testing.T) {
	ix := openSite(t)
	ctx := context.Background()
	t.Run("Freshness", func(t *testing.T) {
		res, _ := ix.Search(ctx, Query{Text: "latest release notes"})
		if len(res.Hits) < 2 || !strings.HasSuffix(res.Hits[0].URL, "/release-2026/") {
			t.Errorf("hits=%v, want the 2026 release first", urls(res.Hits))
		}
		res, _ = ix.Search(ctx, Query{Text: "release notes 2025"})
		if len(res.Hits) < 2 || !strings.HasSuffix(res.Hits[0].URL, "/release-2025/") {
			t.Errorf("hits=%v, want the 2025 release first", urls(res.Hits))
		}
	})
	t.Run("ArchivePenalty", func(t *testing.T) {
		res, _ := ix.Search(ctx, Query{Text: "widgets workspace notes", Limit: 20})
		for i, h := range res.Hits {
			if strings.Contains(h.URL, "/category/") && i == 0 {
				t.Errorf("archive page ranks first: %v", urls(res.Hits))
			}
		}
	})
	t.Run("SortDate", func(t *testing.T) {
		res, _ := ix.Search(ctx, Query{Text: "widgets", Sort: "date", Limit: 20})
		for i := 1; i < len(res.Hits); i++ {
			if res.Hits[i].Published.After(res.Hits[i-1].Published) {
				t.Fatalf("not newest first: %v", urls(res.Hits))
			}
		}
	})
	t.Run("Identifier", func(t *testing.T) {
		res, _ := ix.Search(ctx, Query{Text: "loginHandler", Filters: Filters{ChunkType: "code"}, Passages: true})
		if len(res.Hits) == 0 || res.Hits[0].CodeLang != "go" {
			t.Errorf("loginHandler: %+v", res.Hits)
		}
		res, _ = ix.Search(ctx, Query{Text: "login_handler", Filters: Filters{ChunkType: "code"}, Passages: true})
		if len(res.Hits) == 0 || res.Hits[0].CodeLang != "python" {
			t.Errorf("login_handler: %+v", res.Hits)
		}
	})
}

func TestSearch_OddQueries(t *testing.T) {
	ix := openSite(t)
	ctx := context.Background()
	for name, q := range map[string]string{
		"Long":        strings.Repeat("workspace widgets notes ", 500),
		"Stopwords":   "the and of to is it",
		"Punctuation": "?!.,;:-()[]{}\"'`~@#$%^&*",
		"Script":      "ᚠᛇᚻ᛫ᛒᛦᚦ ꦲꦏ꧀ꦱꦫ",
		"CJK":         "ワークスペース",
		"Empty":       "",
		"FTSSyntax":   `NEAR("a" "b") AND title:* ^x`,
	} {
		t.Run(name, func(t *testing.T) {
			res, err := ix.Search(ctx, Query{Text: q})
			if err != nil {
				t.Fatal(err)
			}
			if res == nil || res.Action == "" || res.Hits == nil {
				t.Fatalf("result = %+v", res)
			}
		})
	}
}

// TestDB_SearchCutsCommonTerms: with MaxPostings below a common word's
// chunk count, the candidate query leaves that word out, and the rerank
// still scores it, so a page with both words ranks above pages with only
// the rare one, and pages with only the common word are not needed.
func TestSearch_CutsCommonTerms(t *testing.T) {
	db := openTB(t)
	ctx := context.Background()
	var docs []*store.Document
	add := func(url, title, body string) {
		docs = append(docs, &store.Document{URL: "http://x.test" + url, Title: title, PostType: "post", Body: body, Text: body,
			Lang: "en", ContentHash: url,
			Chunks: []store.Chunk{{Text: body, End: len([]rune(body)), Type: "prose", ContentHash: url}}})
	}
	for i := 0; i < 20; i++ {
		add(fmt.Sprintf("/common-%d/", i), fmt.Sprintf("Diary %d", i), "A garden diary entry about the weather and the path.")
	}
	for i := 0; i < 20; i++ {
		add(fmt.Sprintf("/other-%d/", i), fmt.Sprintf("Recipe %d", i), "A recipe with onions, salt and a long simmer.")
	}
	add("/rare-only/", "Compost heap", "How to turn a compost heap in spring.")
	add("/both/", "Compost garden", "Compost feeds the garden in spring.")
	add("/rare-again/", "Compost bins", "Compost bins compared in spring.")
	if err := db.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	rk := DefaultRanking()
	rk.AllTermsMax = 0 // straight to the OR query, where the cut applies
	for _, maxPost := range []int{0, 10} {
		rk.MaxPostings = maxPost
		ix.SetRanking(rk)
		res, err := ix.Search(ctx, Query{Text: "garden compost", Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 || !strings.HasSuffix(res.Hits[0].URL, "/both/") {
			t.Errorf("MaxPostings=%d: hits %v, want /both/ first", maxPost, urls(res.Hits))
		}
		if maxPost > 0 {
			for _, h := range res.Hits {
				if strings.Contains(h.URL, "/common-") {
					t.Errorf("MaxPostings=%d: %s matched only the left-out common word", maxPost, h.URL)
				}
			}
		}
	}
}

// TestDB_SearchVariants: a page that says "partnership" answers a question
// about a "partner", which Porter2 stems apart and no page holds, over a
// page that holds the question's other words more often. Without variants
// the order flips, so the test measures the feature, not the fixture. A
// German pair checks the prefix with another language's stems.
func TestSearch_Variants(t *testing.T) {
	db := openTB(t)
	ctx := context.Background()
	var docs []*store.Document
	add := func(url, lang, title, body string) {
		docs = append(docs, &store.Document{URL: "http://x.test" + url, Title: title, PostType: "post", Body: body, Text: body,
			Lang: lang, ContentHash: url,
			Chunks: []store.Chunk{{Text: body, End: len([]rune(body)), Type: "prose", ContentHash: url}}})
	}
	add("/partnership/", "en", "Stable partnership", "A stable partnership helped the patients.")
	add("/visits/", "en", "Visiting hours", "Patients and their families visit patients.")
	add("/zahlen/", "de", "Mitgliedschaft", "Die Mitgliedschaft kostet zwölf Euro.")
	add("/verein/", "de", "Der Verein im Ort", "Der Verein trifft sich jeden Monat.")
	// The rerank, where variants count, runs for queries of at least four
	// words found on the site: the filler holds "improve", "health",
	// "outcomes", "ganzen" and "Jahr".
	for i := 0; i < 30; i++ {
		add(fmt.Sprintf("/garden-%d/", i), "en", fmt.Sprintf("Garden diary %d", i), "How to improve the health outcomes for roses.")
		add(fmt.Sprintf("/garten-%d/", i), "de", fmt.Sprintf("Gartentagebuch %d", i), "Im ganzen Jahr blühen die Rosen.")
	}
	add("/chor/", "de", "Der Chor", "Jedes Mitglied singt.")
	if err := db.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	cases := []struct{ q, lang, variant, other string }{
		// "partner" is on no page.
		{"does having a partner improve health outcomes for patients", "", "/partnership/", "/visits/"},
		// A short query is reranked for an unseen word's variants.
		{"partner patients", "", "/partnership/", "/visits/"},
		// "Mitglied" is on a page of its own, so it is a live term.
		{"was kostet ein Mitglied im Verein im ganzen Jahr", "de", "/zahlen/", "/verein/"},
	}
	for _, variants := range []bool{true, false} {
		rk := DefaultRanking()
		// The whole-page score would count /verein/'s URL and title again;
		// this test is about variants alone.
		rk.DocWeight = 0
		if !variants {
			rk.VariantPrefix = 0
		}
		ix.SetRanking(rk)
		for _, c := range cases {
			res, err := ix.Search(ctx, Query{Text: c.q, Filters: Filters{Lang: c.lang}, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			rank := map[string]int{}
			for i, h := range res.Hits {
				u := strings.TrimPrefix(h.URL, "http://x.test")
				rank[u] = i + 1
				explained := strings.Contains(strings.Join(h.MatchExplain, "; "), "variants of ")
				if explained != (variants && u == c.variant) {
					t.Errorf("variants=%v %q: %s explains %q", variants, c.q, u, h.MatchExplain)
				}
			}
			rv, ro := rank[c.variant], rank[c.other]
			if rv == 0 || ro == 0 {
				t.Fatalf("variants=%v %q: hits %v, want both %s and %s", variants, c.q, urls(res.Hits), c.variant, c.other)
			}
			if variants != (rv < ro) {
				t.Errorf("variants=%v %q: %s ranks %d, %s ranks %d", variants, c.q, c.variant, rv, c.other, ro)
			}
		}
	}
}

// TestDB_VariantsSkipLiterals: identifiers and numbers get no variants;
// words do.
func TestSearch_VariantsSkipLiterals(t *testing.T) {
	ix := openSite(t)
	if err := ix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	pq := parseQuery("wp_enqueue_script loginHandler 102400 v1.2.3 widgets partner", "en", nil)
	weights := map[string]float64{}
	for _, qt := range pq.Terms {
		weights[qt.Term] = 1
	}
	vs := ix.variantPrefixes(pq, weights, nil, 100, DefaultRanking())
	var got []string
	for term := range vs.prefix {
		got = append(got, term)
	}
	sort.Strings(got)
	if want := []string{"partner", "widget"}; !slices.Equal(got, want) {
		t.Errorf("terms with variants %v, want %v (from %+v)", got, want, pq.Terms)
	}
}

// The snippet highlights the words the matches came from, analyzed in
// one pass over the passage, and starts a few words before the first.
func TestEvidence(t *testing.T) {
	an := analysis.NewAnalyzer()
	text := "Blocks are the units of content in the editor, and each one has a type. To register a type, call " +
		"register_block_type() from PHP with the path to the folder of its block.json file; registering twice logs a notice."
	terms := analysis.Analyze("register json", "en")
	matched, snippet := evidence(an, terms, nil, "How to register blocks", text, "en", 240, nil)
	if want := []string{"regist", "json"}; !slices.Equal(matched, want) {
		t.Errorf("matched = %q, want %q", matched, want)
	}
	want := "…editor, and each one has a type. To **register** a type, call **register_block_type()** from PHP with the path " +
		"to the folder of its **block.json** file; **registering** twice logs a notice."
	if snippet != want {
		t.Errorf("snippet = %q\nwant      %q", snippet, want)
	}
}

// A hit's matched terms include the query's words its page holds only in
// its title (an identifier's parts too), categories, tags or the
// passage's headings, none of them in the passage itself.
func TestSearch_EvidenceFromMeta(t *testing.T) {
	db := openTB(t)
	ctx := context.Background()
	body := "Open the settings screen and pick one of the options it lists."
	d := &store.Document{
		URL: "http://x.test/guide/", Title: "The registerBlockType guide", PostType: "post", Body: body, Text: body,
		Lang: "en", ContentHash: "h", Categories: []string{"Tutorials"}, Tags: []string{"gutenberg"},
		Chunks: []store.Chunk{{Ord: 0, Start: 0, End: len(body), Text: body, Type: "prose", HeadingPath: []string{"Sidebar panels"}}},
	}
	if _, err := db.PutDocument(ctx, d); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	// Searched twice: the second hit reads the page's words kept by the first.
	for range 2 {
		res, err := ix.Search(ctx, Query{Text: "block tutorials gutenberg sidebar settings"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 {
			t.Fatal("no hits")
		}
		got := res.Hits[0].MatchedTerms
		for _, w := range []string{"block", "tutori", "gutenberg", "sidebar", "set"} {
			if !slices.Contains(got, w) {
				t.Errorf("matched terms %q lack %q", got, w)
			}
		}
	}
}
