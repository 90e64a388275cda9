package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

// randomSite writes n generated documents to db: Zipf-distributed words,
// mixed-case tags and categories, code and prose chunks, several post
// types, languages and dates (some missing).
func randomSite(t *testing.T, db *DB, rng *rand.Rand, from, n int) []*Document {
	t.Helper()
	words := make([]string, 400)
	for i := range words {
		words[i] = fmt.Sprintf("%s%s", []string{"wid", "pan", "note", "lay", "cach", "quer", "ind", "rout"}[i%8],
			strings.Repeat("e", 1+i/8%4)+fmt.Sprint(i/32))
		if i%5 == 0 {
			words[i] = strings.TrimRight(words[i], "0123456789") + "s" // letters only, stemmable
		}
	}
	zipf := rand.NewZipf(rng, 1.2, 3, uint64(len(words)-1))
	text := func(n int) string {
		var b []string
		for i := 0; i < n; i++ {
			b = append(b, words[zipf.Uint64()])
		}
		return strings.Join(b, " ")
	}
	var docs []*Document
	for i := from; i < from+n; i++ {
		d := &Document{
			URL: fmt.Sprintf("http://x.test/p/%d/", i), Title: text(1 + rng.IntN(4)),
			PostType:    []string{"post", "page", "product"}[rng.IntN(3)],
			Lang:        []string{"en", "en-US", "de", "EN-gb"}[rng.IntN(4)],
			Categories:  []string{[]string{"News", "Guides", "Ünïcode"}[rng.IntN(3)]},
			Tags:        []string{text(1), strings.ToUpper(text(1))},
			ContentHash: fmt.Sprint("h", i, rng.IntN(1000)),
			Thin:        rng.IntN(10) == 0,
		}
		if rng.IntN(5) > 0 {
			d.Published = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(900)) * 24 * time.Hour)
		}
		var body strings.Builder
		for c := 0; c < 1+rng.IntN(4); c++ {
			ch := Chunk{Ord: c, Type: "prose", Text: text(5 + rng.IntN(60)), HeadingPath: []string{text(2)}}
			if rng.IntN(4) == 0 {
				ch.Type, ch.CodeLang = "code", []string{"go", "php", "python"}[rng.IntN(3)]
				ch.Text = "func " + words[rng.IntN(len(words))] + "_x() { return " + text(3) + " }"
			}
			ch.Start = len([]rune(body.String()))
			ch.End = ch.Start + len([]rune(ch.Text))
			body.WriteString(ch.Text + "\n\n")
			d.Chunks = append(d.Chunks, ch)
		}
		d.Body, d.Text = body.String(), body.String()
		docs = append(docs, d)
	}
	return docs
}

// TestMemIndex_MatchesFTS5 checks that the in-memory index returns the
// same candidates with the same scores as FTS5's bm25(), through
// additions, replacements, deletions and compaction, for OR and AND
// queries, with and without filters, by relevance and by date.
func TestMemIndex_MatchesFTS5(t *testing.T) {
	defer func(n int) { memCompactMin = n }(memCompactMin)
	memCompactMin = 16
	ctx := context.Background()
	db := openTB(t)
	rng := rand.New(rand.NewPCG(7, 9))
	if err := db.PutDocuments(ctx, randomSite(t, db, rng, 0, 150)); err != nil {
		t.Fatal(err)
	}
	if err := db.LoadSearchIndex(ctx); err != nil {
		t.Fatal(err)
	}
	// Changes after the load reach the index as commits.
	for _, d := range randomSite(t, db, rng, 150, 60) {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range randomSite(t, db, rng, 0, 40) { // replacements
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	// A batch may hold one page twice: the second replaces the first.
	twice := randomSite(t, db, rng, 40, 30)
	twice = append(twice, randomSite(t, db, rng, 40, 5)...)
	if err := db.PutDocuments(ctx, twice); err != nil {
		t.Fatal(err)
	}
	for i := 60; i < 90; i += 2 {
		if _, err := db.DeleteDocument(ctx, fmt.Sprintf("http://x.test/p/%d/", i)); err != nil {
			t.Fatal(err)
		}
	}
	m := db.currentMem(ctx)
	if m == nil {
		t.Fatal("in-memory index is not current after this process's own writes")
	}
	m.mu.RLock()
	live, dead, slots := m.live, m.dead, len(m.slots)
	m.mu.RUnlock()
	var chunks int
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM chunks`).Scan(&chunks); err != nil {
		t.Fatal(err)
	}
	if live != chunks || slots != live+dead {
		t.Fatalf("index holds %d live chunks (%d slots, %d dead), store %d", live, slots, dead, chunks)
	}
	if slots >= 2*chunks {
		t.Errorf("no compaction: %d slots for %d chunks", slots, chunks)
	}

	words := []string{"widee0", "panee", "notes", "layeee1", "cacheeee", "querees", "routee3", "indeeee2", "wides",
		"zzz", "func", "return", "news"}
	filters := []Filters{{}, {ChunkType: "code", CodeLang: "GO"}, {PostType: []string{"page", "product"}},
		{Lang: "en"}, {Category: "guides"}, {Category: "ÜNÏCODE"}, {Tag: strings.ToUpper(words[2])},
		{After: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}, {Before: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}}
	// FTS5 does not take deleted rows out of its row count and column
	// totals in a contentless_delete table, so its bm25() drifts as pages
	// change; the in-memory index keeps exact counts. Compare with FTS5
	// once its index is rebuilt from the same chunks (same chunk ids).
	type run struct {
		q      SearchQuery
		pq     *parsedQuery
		groups int
		got    []*candidate
	}
	syn, rk := db.search().config()
	var runs []run
	for i := 0; i < 400; i++ {
		var qw []string
		for j := 0; j <= rng.IntN(4); j++ {
			qw = append(qw, words[rng.IntN(len(words))])
		}
		q := SearchQuery{Text: strings.Join(qw, " "), Filters: filters[rng.IntN(len(filters))]}
		if rng.IntN(4) == 0 {
			q.Sort = "date"
		}
		pq := parseQuery(q.Text, "en", syn)
		pq.requireAll = rng.IntN(2) == 0
		exact := rk.ExactWeight > 0 && pq.liveTerms() <= rk.ExactMaxTerms
		ps, groups, ok := pq.memPhrases(false, exact)
		if !ok {
			continue
		}
		runs = append(runs, run{q, pq, groups, m.candidates(ps, groups, q, rk, 10000)})
	}
	if err := db.RebuildIndex(ctx); err != nil {
		t.Fatal(err)
	}
	nonEmpty := 0
	for _, r := range runs {
		want, err := db.candidates(ctx, r.pq, r.q, rk, 10000) // pq.mem is nil: FTS5
		if err != nil {
			t.Fatal(err)
		}
		if len(want) > 0 {
			nonEmpty++
		}
		if msg := sameCandidates(want, r.got, r.q.Sort == "date"); msg != "" {
			t.Fatalf("query %q (all=%v, filters %+v, sort %q): %s", r.q.Text, r.pq.requireAll, r.q.Filters, r.q.Sort, msg)
		}
	}
	if len(runs) < 300 || nonEmpty < len(runs)/2 {
		t.Fatalf("compared %d queries, %d with results: the test exercises too little", len(runs), nonEmpty)
	}
}

func sameCandidates(want, got []*candidate, byDate bool) string {
	if len(want) != len(got) {
		return fmt.Sprintf("FTS5 returned %d candidates, memory %d", len(want), len(got))
	}
	key := func(cs []*candidate) []*candidate {
		out := append([]*candidate(nil), cs...)
		sort.Slice(out, func(i, j int) bool { return out[i].chunkID < out[j].chunkID })
		return out
	}
	w, g := key(want), key(got)
	for i := range w {
		a, b := w[i], g[i]
		if a.chunkID != b.chunkID {
			return fmt.Sprintf("chunk sets differ at %d: %d vs %d", i, a.chunkID, b.chunkID)
		}
		if math.Abs(a.score-b.score) > 1e-9*math.Max(1, math.Abs(a.score)) {
			return fmt.Sprintf("chunk %d: bm25 %.12f in FTS5, %.12f in memory", a.chunkID, a.score, b.score)
		}
		if a.url != b.url || a.title != b.title || a.lang != b.lang || a.postType != b.postType || a.cats != b.cats ||
			a.tags != b.tags || !a.published.Equal(b.published) || !a.modified.Equal(b.modified) || a.thin != b.thin ||
			a.chunkType != b.chunkType || a.codeLang != b.codeLang || a.docID != b.docID {
			return fmt.Sprintf("chunk %d: fields differ: %+v vs %+v", a.chunkID, *a, *b)
		}
	}
	if byDate {
		for i := range want {
			if !want[i].published.Equal(got[i].published) {
				return fmt.Sprintf("date order differs at %d", i)
			}
		}
	}
	return ""
}

// TestMemIndex_SameResults runs the acceptance site's queries with the
// in-memory index and without, and wants identical results.
func TestMemIndex_SameResults(t *testing.T) {
	ctx := context.Background()
	db := openSite(t)
	queries := []string{"explain workspace", "wrkspace", "shortcuts", "workspace and widgets", "home",
		"explain calendar", "tell me about panels", "how do I do it", "login handler", "latest release notes",
		"notes widgets workspace layout panel", `"quick links"`, "release 2025"}
	run := func() []string {
		var out []string
		for _, q := range queries {
			for _, f := range []Filters{{}, {ChunkType: "code", CodeLang: "go"}} {
				res, err := db.Search(ctx, SearchQuery{Text: q, Filters: f, Passages: true})
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(res)
				out = append(out, string(b))
			}
		}
		return out
	}
	want := run()
	if err := db.LoadSearchIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if db.currentMem(ctx) == nil {
		t.Fatal("in-memory index not in use after LoadSearchIndex")
	}
	got := run()
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("query %q:\nFTS5   %s\nmemory %s", queries[i/2], want[i], got[i])
		}
	}
}

// TestMemIndex_OtherWriter: a write by another process (here another
// handle on the same file) is never missed. Searches fall back to FTS5 at
// once, and the index rebuilds itself.
func TestMemIndex_OtherWriter(t *testing.T) {
	ctx := context.Background()
	db := openSite(t)
	if err := db.LoadSearchIndex(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, db.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	body := "Zeppelins float over the harbour at dawn."
	if _, err := other.PutDocument(ctx, &Document{URL: "http://x.test/zeppelin/", Title: "Airships", Body: body, Text: body,
		Lang: "en", ContentHash: "z", Chunks: []Chunk{{Text: body, End: len(body), Type: "prose"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.DeleteDocument(ctx, "http://x.test/widgets/"); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		res, err := db.Search(ctx, SearchQuery{Text: "zeppelins harbour"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 || !strings.HasSuffix(res.Hits[0].URL, "/zeppelin/") {
			t.Fatalf("the other process's page is not found: %v", urls(res.Hits))
		}
		res, err = db.Search(ctx, SearchQuery{Text: "widgets clock weather"})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			if strings.HasSuffix(h.URL, "/widgets/") {
				t.Fatalf("a page the other process deleted is still found")
			}
		}
	}
	check()
	deadline := time.Now().Add(10 * time.Second)
	for db.currentMem(ctx) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the in-memory index did not rebuild after another process's write")
		}
		time.Sleep(20 * time.Millisecond)
	}
	check()
	// A rebuild of the full-text index (a new analyzer) is followed too.
	if err := db.RebuildIndex(ctx); err != nil {
		t.Fatal(err)
	}
	check()
}

// TestMemIndex_CommitsOutOfOrder: two writers' commits can reach the index
// in either order; it applies them in the store's order and stays current.
func TestMemIndex_CommitsOutOfOrder(t *testing.T) {
	m := newMemIndex()
	m.enabled, m.ready = true, true
	doc := func(id int64) *memDoc {
		return newMemDoc(id, fmt.Sprint("u", id), "", "en", "post", "[]", "[]", "", "", false)
	}
	add := func(gen, id int64, body string) memCommit {
		mc := tokenizeChunk(id, doc(id), "prose", "", ftsColumns{body: body})
		return memCommit{gen: gen, ops: []memOp{{add: &mc}}}
	}
	m.apply(add(2, 2, "beta"))
	if m.gen != 0 || m.live != 0 {
		t.Fatalf("commit 2 applied before commit 1: gen %d, %d chunks", m.gen, m.live)
	}
	m.apply(add(1, 1, "alpha"))
	m.apply(memCommit{gen: 3, ops: []memOp{{del: 1}}})
	if !m.ready || m.gen != 3 || m.live != 1 || len(m.early) != 0 {
		t.Fatalf("after commits 2, 1, 3: ready %v, gen %d, %d live chunks, %d held back", m.ready, m.gen, m.live, len(m.early))
	}
	if got := m.termDocs([]string{"alpha", "beta"}); got["alpha"] != 0 || got["beta"] != 1 {
		t.Fatalf("term counts %v, want beta only", got)
	}
	m.apply(add(2, 9, "stale")) // a count already applied changes nothing
	if m.live != 1 {
		t.Fatalf("a repeated commit was applied again")
	}
}

// TestMemIndex_Check: a copy that lost track of the store (simulated by
// dropping a chunk from memory only) is caught and reloaded.
func TestMemIndex_Check(t *testing.T) {
	ctx := context.Background()
	db := openSite(t)
	if err := db.LoadSearchIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, mem, stored, err := db.CheckSearchIndex(ctx); err != nil || !ok || mem != stored {
		t.Fatalf("fresh index: ok %v, %d in memory, %d stored, %v", ok, mem, stored, err)
	}
	m := db.search().mem
	m.mu.Lock()
	m.applyLocked(memCommit{gen: m.gen, ops: []memOp{{del: m.slots[0].doc.id}}})
	m.mu.Unlock()
	ok, mem, stored, err := db.CheckSearchIndex(ctx)
	if err != nil || ok || mem >= stored {
		t.Fatalf("after a lost chunk: ok %v, %d in memory, %d stored, %v", ok, mem, stored, err)
	}
	if ok, mem, stored, err := db.CheckSearchIndex(ctx); err != nil || !ok || mem != stored {
		t.Fatalf("after the reload: ok %v, %d in memory, %d stored, %v", ok, mem, stored, err)
	}
}

func TestBestK(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	better := func(a, b memHit) bool {
		if a.score != b.score {
			return a.score > b.score
		}
		return a.slot < b.slot
	}
	for _, n := range []int{0, 1, 5, 100, 1000} {
		for _, k := range []int{0, 1, 3, 100, 2000} {
			hs := make([]memHit, n)
			for i := range hs {
				hs[i] = memHit{uint32(i), float64(rng.IntN(50))}
			}
			want := append([]memHit(nil), hs...)
			sort.Slice(want, func(i, j int) bool { return better(want[i], want[j]) })
			want = want[:min(k, n)]
			got := bestK(hs, k, better)
			if len(got) != len(want) {
				t.Fatalf("n %d k %d: %d hits, want %d", n, k, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("n %d k %d: hit %d is %v, want %v", n, k, i, got[i], want[i])
				}
			}
		}
	}
}
