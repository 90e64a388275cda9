package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/internal/testsite"
	"github.com/askwp/askwpd/search/index"
	"github.com/askwp/askwpd/store"
)

// oracle is BM25 the slow, plain way: every stored chunk analyzed into
// its four columns, every query clause counted over all of them.
type oracle struct {
	chunks []oracleChunk
}

type oracleChunk struct {
	c    *store.IndexChunk
	cols [4]map[string]int // title, keywords, body, exact
	size int
}

func newOracle(tb testing.TB, db *store.DB) *oracle {
	o := &oracle{}
	if _, err := db.ReadIndex(context.Background(), func(c *store.IndexChunk) error {
		d := c.Doc
		known := strings.Join(d.Categories, " ") + " " + strings.Join(d.Tags, " ")
		terms := [4][]string{
			analysis.IndexTerms(d.Title, d.Lang, nil),
			analysis.IndexTerms(known+" "+strings.Join(c.HeadingPath, " "), d.Lang, nil),
			analysis.IndexTerms(c.Text, d.Lang, nil),
			analysis.ExactTerms(d.Title+" "+known, d.Lang),
		}
		oc := oracleChunk{c: c}
		for i, ts := range terms {
			oc.cols[i] = map[string]int{}
			for _, x := range ts {
				oc.cols[i][x]++
				oc.size++
			}
		}
		o.chunks = append(o.chunks, oc)
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return o
}

// keep is the filters written out plainly.
func (oc oracleChunk) keep(f Filters) bool {
	d := oc.c.Doc
	if len(f.PostType) > 0 && !strings.Contains(" "+strings.Join(f.PostType, " ")+" ", " "+d.PostType+" ") {
		return false
	}
	if f.ChunkType != "" && oc.c.Type != f.ChunkType {
		return false
	}
	if f.CodeLang != "" && !strings.EqualFold(oc.c.CodeLang, f.CodeLang) {
		return false
	}
	if f.Lang != "" && !strings.EqualFold(d.Lang, f.Lang) && !strings.HasPrefix(strings.ToLower(d.Lang), strings.ToLower(f.Lang)+"-") {
		return false
	}
	has := func(xs []string, x string) bool {
		for _, y := range xs {
			if strings.EqualFold(y, x) {
				return true
			}
		}
		return false
	}
	if f.Category != "" && !has(d.Categories, f.Category) || f.Tag != "" && !has(d.Tags, f.Tag) {
		return false
	}
	if !f.After.IsZero() && (d.Published.IsZero() || d.Published.Before(f.After)) {
		return false
	}
	if !f.Before.IsZero() && (d.Published.IsZero() || !d.Published.Before(f.Before)) {
		return false
	}
	return true
}

// scores returns chunk id → BM25 for the chunks that match the clauses
// (all groups of an AND query) and pass the filters.
func (o *oracle) scores(ps []memPhrase, groups int, f Filters, rk Ranking) map[int64]float64 {
	const k1, b = 1.2, 0.75
	weights := [4]float64{rk.TitleWeight, rk.KeywordWeight, rk.BodyWeight, rk.ExactWeight}
	n, total := float64(len(o.chunks)), 0.0
	for _, oc := range o.chunks {
		total += float64(oc.size)
	}
	avgdl := total / n
	cols := func(p memPhrase) []int {
		if p.exact {
			return []int{3}
		}
		return []int{0, 1, 2}
	}
	out := map[int64]float64{}
	matched := map[int64]map[int]bool{}
	for _, p := range ps {
		nHit := 0.0
		for _, oc := range o.chunks {
			for _, c := range cols(p) {
				if oc.cols[c][p.term] > 0 {
					nHit++
					break
				}
			}
		}
		if nHit == 0 {
			continue
		}
		idf := math.Max(math.Log((n-nHit+0.5)/(nHit+0.5)), 1e-6)
		for _, oc := range o.chunks {
			freq := 0.0
			for _, c := range cols(p) {
				freq += weights[c] * float64(oc.cols[c][p.term])
			}
			if freq == 0 {
				continue
			}
			out[oc.c.ID] += idf * freq * (k1 + 1) / (freq + k1*(1-b+b*float64(oc.size)/avgdl))
			if matched[oc.c.ID] == nil {
				matched[oc.c.ID] = map[int]bool{}
			}
			matched[oc.c.ID][p.group] = true
		}
	}
	for _, oc := range o.chunks {
		if _, ok := out[oc.c.ID]; ok && (!oc.keep(f) || groups > 0 && len(matched[oc.c.ID]) != groups) {
			delete(out, oc.c.ID)
		}
	}
	return out
}

// TestMemIndex_MatchesOracle checks that the index returns the chunks a
// brute-force BM25 finds, with the same scores, through additions,
// replacements, deletions and compaction, for OR and AND queries, with
// and without filters, by relevance and by date.
func TestMemIndex_MatchesOracle(t *testing.T) {
	ctx := context.Background()
	db := openTB(t)
	rng := rand.New(rand.NewPCG(7, 9))
	if err := db.PutDocuments(ctx, testsite.Random(rng, 0, 150)); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	ix.mem.SetCompactMin(16)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	// Changes after the load reach the index as commits.
	for _, d := range testsite.Random(rng, 150, 60) {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range testsite.Random(rng, 0, 40) { // replacements
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	// A batch may hold one page twice: the second replaces the first.
	twice := append(testsite.Random(rng, 40, 30), testsite.Random(rng, 40, 5)...)
	if err := db.PutDocuments(ctx, twice); err != nil {
		t.Fatal(err)
	}
	for i := 60; i < 90; i += 2 {
		if _, err := db.DeleteDocument(ctx, fmt.Sprintf("http://x.test/p/%d/", i)); err != nil {
			t.Fatal(err)
		}
	}
	o := newOracle(t, db)
	sh := ix.mem.Shape()
	live, dead, slots, gen := sh.Live, sh.Dead, sh.Slots, sh.Gen
	if stored, _ := db.IndexWrites(ctx); gen != stored {
		t.Fatalf("index at count %d, store at %d", gen, stored)
	}
	if live != len(o.chunks) || slots != live+dead {
		t.Fatalf("index holds %d live chunks (%d slots, %d dead), store %d", live, slots, dead, len(o.chunks))
	}
	if slots >= 2*len(o.chunks) {
		t.Errorf("no compaction: %d slots for %d chunks", slots, len(o.chunks))
	}
	// The dead are compacted away once they are a share of the live.
	if dead > 16 && dead*index.CompactShare > live {
		t.Errorf("%d dead slots kept beside %d live", dead, live)
	}

	words := []string{"themee0", "pluginee", "blocks", "widgeee1", "cacheeee", "querees", "routee3", "menueeee2", "themes",
		"zzz", "function", "return", "news"}
	filters := []Filters{{}, {ChunkType: "code", CodeLang: "PHP"}, {PostType: []string{"page", "product"}},
		{Lang: "en"}, {Category: "guides"}, {Category: "ÜNÏCODE"}, {Tag: strings.ToUpper(words[2])},
		{After: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}, {Before: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}}
	rk := DefaultRanking()
	nonEmpty := 0
	for i := 0; i < 300; i++ {
		var qw []string
		for j := 0; j <= rng.IntN(4); j++ {
			qw = append(qw, words[rng.IntN(len(words))])
		}
		q := Query{Text: strings.Join(qw, " "), Filters: filters[rng.IntN(len(filters))]}
		if rng.IntN(4) == 0 {
			q.Sort = "date"
		}
		pq := parseQuery(q.Text, "en", nil)
		pq.requireAll = rng.IntN(2) == 0
		ps, groups := pq.memPhrases(rk.ExactWeight > 0 && pq.liveTerms() <= rk.ExactMaxTerms)
		got := ix.matchChunks(ps, groups, q, rk, 100000, nil)
		want := o.scores(ps, groups, q.Filters, rk)
		if len(want) > 0 {
			nonEmpty++
		}
		if msg := sameScores(want, got); msg != "" {
			t.Fatalf("query %q (all=%v, filters %+v): %s", q.Text, pq.requireAll, q.Filters, msg)
		}
		if q.Sort == "date" {
			for i := 1; i < len(got); i++ {
				if got[i].doc.Published.After(got[i-1].doc.Published) {
					t.Fatalf("query %q by date: chunk %d is newer than the one before", q.Text, got[i].chunkID)
				}
			}
		} else {
			for i := 1; i < len(got); i++ {
				if got[i].score > got[i-1].score {
					t.Fatalf("query %q: not best first at %d", q.Text, i)
				}
			}
		}
	}
	if nonEmpty < 150 {
		t.Fatalf("%d queries with results: the test exercises too little", nonEmpty)
	}
}

func sameScores(want map[int64]float64, got []*candidate) string {
	if len(want) != len(got) {
		return fmt.Sprintf("oracle found %d chunks, index %d", len(want), len(got))
	}
	for _, c := range got {
		w, ok := want[c.chunkID]
		if !ok {
			return fmt.Sprintf("index found chunk %d, the oracle did not", c.chunkID)
		}
		if math.Abs(w-c.score) > 1e-9*math.Max(1, math.Abs(w)) {
			return fmt.Sprintf("chunk %d: BM25 %.12f by the oracle, %.12f by the index", c.chunkID, w, c.score)
		}
	}
	return ""
}

// TestMemIndex_OtherWriter: a write by another process (here another
// handle on the same file) is never lost: the index notices the store's
// count moved without it and reloads in the background.
func TestMemIndex_OtherWriter(t *testing.T) {
	ctx := context.Background()
	ix := openSite(t)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := store.Open(ctx, ix.db.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	body := "Our bakery opens at dawn with fresh sourdough."
	if _, err := other.PutDocument(ctx, &store.Document{URL: "http://x.test/bakery/", Title: "Bakery hours", Body: body, Text: body,
		Lang: "en", ContentHash: "z", Chunks: []store.Chunk{{Text: body, End: len(body), Type: "prose"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.DeleteDocument(ctx, "http://x.test/widgets/"); err != nil {
		t.Fatal(err)
	}
	current := func() bool {
		res, err := ix.Search(ctx, Query{Text: "sourdough bakery"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 || !strings.HasSuffix(res.Hits[0].URL, "/bakery/") {
			return false
		}
		res, err = ix.Search(ctx, Query{Text: "widgets clock weather"})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			if strings.HasSuffix(h.URL, "/widgets/") {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(10 * time.Second)
	for !current() {
		if time.Now().After(deadline) {
			t.Fatal("the index did not reload after another process's write")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := ix.Stats(); st.Loads != 2 {
		t.Errorf("stats %+v, want 2 loads", st)
	}
	// This process's next write is followed as usual, after the reload.
	body = "Croissants on Sundays only."
	if _, err := ix.db.PutDocument(ctx, &store.Document{URL: "http://x.test/croissants/", Title: "Croissants", Body: body, Text: body,
		Lang: "en", ContentHash: "c", Chunks: []store.Chunk{{Text: body, End: len(body), Type: "prose"}}}); err != nil {
		t.Fatal(err)
	}
	if res, err := ix.Search(ctx, Query{Text: "croissants sundays"}); err != nil || len(res.Hits) == 0 {
		t.Fatalf("own write not found: %+v, %v", res, err)
	}
}

// heldDelivery is an observer that holds one delivery of the store's
// commits, once armed, as a busy machine does when the observers wait
// for a core.
type heldDelivery struct {
	armed    atomic.Bool
	entered  chan struct{}
	released chan struct{}
	once     sync.Once
}

func newHeldDelivery() *heldDelivery {
	return &heldDelivery{entered: make(chan struct{}), released: make(chan struct{})}
}

func (h *heldDelivery) IndexCommitted(store.IndexCommit) {
	if h.armed.CompareAndSwap(true, false) {
		close(h.entered)
		<-h.released
	}
}

func (h *heldDelivery) release() { h.once.Do(func() { close(h.released) }) }

// heldThenOther writes a page with db, its delivery held by h, then one
// with other, and searches once: the store's count is then ahead of the
// index while this process's commit is on its way. The returned channel
// has the first write's outcome after h.release; a failing test releases
// it too.
func heldThenOther(t *testing.T, ix *Index, db, other *store.DB, h *heldDelivery) <-chan error {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(h.release)
	h.armed.Store(true)
	put := make(chan error, 1)
	go func() {
		_, err := db.PutDocument(ctx, onePage("bakery", "Our bakery opens at dawn with fresh sourdough."))
		put <- err
	}()
	<-h.entered
	if _, err := other.PutDocument(ctx, onePage("croissants", "Croissants on Sundays only.")); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Search(ctx, Query{Text: "sourdough bakery"}); err != nil {
		t.Fatal(err)
	}
	return put
}

// siteStores is a store holding siteDocs, and a second handle on its
// file, which writes as another process does.
func siteStores(t *testing.T) (db, other *store.DB) {
	t.Helper()
	ctx := context.Background()
	db = openTB(t)
	for _, d := range siteDocs() {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	other, err := store.Open(ctx, db.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return db, other
}

// onePage is a page of one chunk at http://x.test/slug/.
func onePage(slug, body string) *store.Document {
	return &store.Document{URL: "http://x.test/" + slug + "/", Title: slug, Body: body, Text: body,
		Lang: "en", ContentHash: slug, Chunks: []store.Chunk{{Text: body, End: len(body), Type: "prose"}}}
}

// TestMemIndex_SlowOwnCommit: a commit of this process that is slow to
// reach the index does not make a search reload the whole store: it is
// on its way. Another process's write committed meanwhile still is
// reloaded.
func TestMemIndex_SlowOwnCommit(t *testing.T) {
	ctx := context.Background()
	db, other := siteStores(t)
	// Registered before the index, so the index's delivery waits behind it.
	h := newHeldDelivery()
	defer db.Observe(h)()
	ix := newIndex(t, db)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	put := heldThenOther(t, ix, db, other, h)
	if ix.mem.Shape().LastReload != 0 {
		t.Fatal("a search reloaded the store while this process's commit was on its way")
	}
	h.release()
	if err := <-put; err != nil {
		t.Fatal(err)
	}
	found := func(q, slug string) bool {
		res, err := ix.Search(ctx, Query{Text: q})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Hits) > 0 && strings.HasSuffix(res.Hits[0].URL, "/"+slug+"/")
	}
	if !found("sourdough bakery", "bakery") {
		t.Fatal("this process's commit is not searchable once delivered")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !found("croissants sundays", "croissants") {
		if time.Now().After(deadline) {
			t.Fatal("the other process's write, committed while this process's was held, was never reloaded")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := ix.Stats(); st.Loads != 2 {
		t.Errorf("stats %+v, want 2 loads", st)
	}
}

// TestMemIndex_MissedWhileDelivering: once a delivery has shown that
// another process wrote (its count skipped), a search reloads even while
// this process's commits are on their way: a process that always has one
// on its way must still reload.
func TestMemIndex_MissedWhileDelivering(t *testing.T) {
	ctx := context.Background()
	db, other := siteStores(t)
	ix := newIndex(t, db)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	// Registered after the index: the index has the commit, and the
	// delivery is held after it.
	h := newHeldDelivery()
	defer db.Observe(h)()
	if _, err := other.PutDocument(ctx, onePage("bagels", "Bagels boiled before baking.")); err != nil {
		t.Fatal(err)
	}
	// The index sees the held commit's count skip the bagels page's.
	put := heldThenOther(t, ix, db, other, h)
	if ix.mem.Shape().LastReload == 0 {
		t.Error("no reload, though a delivery showed another process's write")
	}
	h.release()
	if err := <-put; err != nil {
		t.Fatal(err)
	}
}

// TestIndex_CloseFreesMemory opens and closes 50 stores, each with a
// loaded index of a few hundred chunks, and wants the heap back: an index
// is not kept alive by anything once closed.
func TestIndex_CloseFreesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 50 stores")
	}
	ctx := context.Background()
	docs := testsite.Random(rand.New(rand.NewPCG(1, 1)), 0, 120) // about 300 chunks
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	cycle := func(i int) uint64 {
		db, err := store.Open(ctx, fmt.Sprintf("%s/%d.db", t.TempDir(), i))
		if err != nil {
			t.Fatal(err)
		}
		if err := db.PutDocuments(ctx, docs); err != nil {
			t.Fatal(err)
		}
		ix := New(db)
		if err := ix.Load(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := ix.Search(ctx, Query{Text: "themes plugin"}); err != nil {
			t.Fatal(err)
		}
		h := heap()
		ix.Close()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return h
	}
	base := heap()
	loaded := cycle(0) - base // one store open with its index
	for i := 1; i < 50; i++ {
		cycle(i)
	}
	after := heap()
	t.Logf("heap: %d bytes at the start, %d more with one store and index open, %d after 50 closed", base, loaded, after)
	// 50 leaked indexes would hold 50 × loaded; allow a quarter of one for
	// the runtime's own caches.
	if grown := int64(after) - int64(base); grown > int64(loaded)/4+1<<20 {
		t.Errorf("heap grew by %d bytes over 50 stores; one open store with its index holds %d", grown, loaded)
	}
}

// TestIndex_Lifecycle: a search before any load loads the index and
// waits for it; a search whose context ends first fails with the
// context's error and leaves the load running; Close ends searching.
func TestIndex_Lifecycle(t *testing.T) {
	ctx := context.Background()
	ix := openSite(t)
	if st := ix.Stats(); st.Enabled || st.Ready {
		t.Fatalf("stats before any search: %+v", st)
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ix.Search(gone, Query{Text: "workspace"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("search with an ended context: %v", err)
	}
	res, err := ix.Search(ctx, Query{Text: "workspace"})
	if err != nil || len(res.Hits) == 0 {
		t.Fatalf("first search: %+v, %v", res, err)
	}
	if st := ix.Stats(); !st.Ready || st.Loads != 1 || st.Chunks != 13 {
		t.Fatalf("stats after the first search: %+v", st)
	}
	if err := ix.Load(ctx); err != nil { // a second load is a reload
		t.Fatal(err)
	}
	ix.Close()
	if _, err := ix.Search(ctx, Query{Text: "workspace"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("search after Close: %v", err)
	}
	if st := ix.Stats(); st.Ready || st.Chunks != 0 {
		t.Fatalf("stats after Close: %+v", st)
	}
	ix.Close() // twice is fine
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

// TestMemIndex_ConcurrentWriters: writers racing each other, and a
// reload in the middle of them, leave the index holding exactly the
// store's chunks, at the store's count, with nothing missed.
func TestMemIndex_ConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	db := openTB(t)
	ix := newIndex(t, db)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	pages := testsite.Random(rng, 0, 80)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(pages); i += 4 {
				if _, err := db.PutDocument(ctx, pages[i]); err != nil {
					t.Error(err)
				}
				if i%7 == 0 {
					if _, err := db.DeleteDocument(ctx, pages[i].URL); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Go(func() {
		if err := ix.Load(ctx); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	stored, err := db.IndexWrites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := newOracle(t, db)
	m := ix.mem
	sh := m.Shape()
	m.RLock()
	defer m.RUnlock()
	if sh.Gen != stored || sh.Missed || sh.Live != len(o.chunks) {
		t.Fatalf("index at count %d (missed %v) with %d chunks; store at %d with %d", sh.Gen, sh.Missed, sh.Live, stored, len(o.chunks))
	}
	for _, oc := range o.chunks {
		if _, ok := m.SlotOfChunk(oc.c.ID); !ok {
			t.Fatalf("chunk %d is stored but not indexed", oc.c.ID)
		}
	}
}
