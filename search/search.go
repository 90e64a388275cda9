package search

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/askwp/askwpd/analysis"
)

// Synonyms is a site's synonym rules (analysis.ParseSynonyms).
type Synonyms = analysis.Synonyms

// LoadSynonyms reads a Solr-style synonyms file.
func LoadSynonyms(path string) (*Synonyms, error) { return analysis.LoadSynonyms(path) }

// Filters narrow a search. They are strict: a filtered search never
// returns a hit that does not match, however well it scores.
type Filters struct {
	PostType  []string  `json:"type,omitempty"`
	ChunkType string    `json:"chunk_type,omitempty"`
	CodeLang  string    `json:"language,omitempty"`
	Lang      string    `json:"lang,omitempty"`
	Category  string    `json:"category,omitempty"`
	Tag       string    `json:"tag,omitempty"`
	After     time.Time `json:"after,omitempty"`
	Before    time.Time `json:"before,omitempty"`
}

func (f Filters) empty() bool {
	return len(f.PostType) == 0 && f.ChunkType == "" && f.CodeLang == "" && f.Lang == "" &&
		f.Category == "" && f.Tag == "" && f.After.IsZero() && f.Before.IsZero()
}

// Query is one search_site call.
type Query struct {
	Text    string
	Filters Filters
	// Sort is "relevance" (default) or "date".
	Sort  string
	Limit int
	// Passages returns up to PerDoc passages per document instead of one
	// card per document.
	Passages bool
	PerDoc   int
	// Lang is the language the query is written in; "" means the
	// filter's language, else the site default (English).
	Lang string
	// NoTypos turns typo correction off.
	NoTypos bool
	// Hybrid, when set, fuses a vector search in (hybrid.go).
	Hybrid *HybridQuery
}

// Passage is a verbatim slice of a document's Body.
type Passage struct {
	Text  string `json:"text"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// Hit is one piece of evidence: a passage with the page it comes from and
// why it matched.
type Hit struct {
	DocID        int64     `json:"doc_id"`
	URL          string    `json:"url"`
	Title        string    `json:"title"`
	Type         string    `json:"type"`
	Published    time.Time `json:"published"`
	Modified     time.Time `json:"modified"`
	Score        float64   `json:"score"`
	Snippet      string    `json:"snippet"`
	Passage      Passage   `json:"passage"`
	HeadingPath  []string  `json:"heading_path"`
	MatchedTerms []string  `json:"matched_terms"`
	ChunkID      int64     `json:"chunk_id"`
	ChunkType    string    `json:"chunk_type"`
	CodeLang     string    `json:"code_lang,omitempty"`
	ContentHash  string    `json:"content_hash"`
	Thin         bool      `json:"thin"`
	// Source is "keyword", "hybrid" or "embedding".
	Source string `json:"source"`
	// MatchExplain says, in short phrases, why the hit ranks where it does.
	MatchExplain []string `json:"match_explain,omitempty"`
	// Start and End repeat Passage's offsets at the top level.
	Start int `json:"start"`
	End   int `json:"end"`
}

// Result is the ranked evidence for a query.
type Result struct {
	Hits  []Hit    `json:"hits"`
	Terms []string `json:"terms"`
	// Action is "answer", "clarify" (weak match), "ambiguous" (two strong
	// contenders) or "no_match".
	Action string `json:"action"`
	// Confidence is 0..1: the share of the query's weight (IDF) the top
	// document matches, capped at 0.5 when it fails the title/keyword guard.
	Confidence float64 `json:"confidence"`
	// Reason explains Action in a few words.
	Reason string `json:"reason,omitempty"`
	// Corrections maps query words to the index terms typo tolerance chose.
	Corrections map[string]string `json:"corrections,omitempty"`
	// Intents lists the parts of a multi-intent query ("X and Y").
	Intents []string `json:"intents,omitempty"`
	// Temporal is true when the query asks for recent content.
	Temporal bool `json:"temporal,omitempty"`
}

// Ranking holds the tunable parameters of Search.
type Ranking struct {
	// BM25 column weights (k1 = 1.2, b = 0.75, one length per chunk).
	TitleWeight, KeywordWeight, BodyWeight, ExactWeight float64
	// ExactMaxTerms: the exact column is matched only for queries of at
	// most this many terms.
	ExactMaxTerms int
	// Candidates is how many chunks the candidate query returns, at least
	// 3 × Limit × PerDoc. 100 ranked SciFact's top 10 exactly as 300 did,
	// for a fifth less CPU per query (bench/search latency).
	Candidates int
	// SecondChunk is the share of a document's second-best chunk added to
	// its best.
	SecondChunk float64
	// TitlePhraseBonus multiplies the score of a document whose title
	// holds the query's terms in order by 1+TitlePhraseBonus.
	TitlePhraseBonus float64
	// ThinPenalty and ArchivePenalty multiply thin pages and archive pages
	// (category, tag, author, search, feed URLs).
	ThinPenalty, ArchivePenalty float64
	// Freshness, for queries that ask for recent content: exponential
	// decay decay^(max(0, age-offset)/scale), weighted FreshTemporal:
	// score × (1 - w + w × decay).
	FreshOffset, FreshScale time.Duration
	FreshDecay              float64
	FreshTemporal           float64
	// Rerank: the best RerankDepth chunks are rescored with BM25F (K1,
	// BTitle for the title, BBody for keywords and body) plus Proximity ×
	// the IDF of query-term pairs within ProximityWindow.
	RerankDepth int
	// RerankMinTerms: shorter queries skip the rerank (proximity needs
	// several words; most site queries are 1–3 words and stay fast).
	RerankMinTerms  int
	K1, BTitle      float64
	BBody           float64
	Proximity       float64
	ProximityWindow int
	// MaxPostings bounds the candidate query's work, which grows with the
	// sum of the terms' chunk counts. Above it, the most common terms are
	// left out of the candidate query (never the rarest), and the rerank
	// scores every term on the candidates. 0 turns it off.
	MaxPostings int
	// AllTermsMax: queries of 2..AllTermsMax terms first look for chunks
	// with every term, and fall back to any term when too few match.
	AllTermsMax int
	// Variants: in the rerank, a query term a chunk lacks is matched by
	// the chunk's words that share its first VariantPrefix letters (of
	// the stems), at VariantWeight, with the IDF of all the index's words
	// with that prefix. Snowball stemmers keep derivations apart
	// ("partner" and "partnership", "install" and "installation"); a
	// shared prefix joins them in any language. 0 turns it off.
	VariantPrefix int
	VariantWeight float64
	// DocWeight weights the score of the whole page (docBM25), added to
	// its best chunks'; URLWeight and AnchorWeight are the weights, in
	// that score, of its URL path's words and of the words around the
	// links to it (anchors.go), beside TitleWeight.
	DocWeight, URLWeight, AnchorWeight float64
	// AssocWeight weights, in the whole-page score, how strongly the
	// site's other pages tie the page's name (its title's and URL path's
	// words) to the query words it lacks (associate).
	AssocWeight float64
	// IntroBoost multiplies the score of a chunk that is its page's
	// introduction, the text before the page's first heading, by
	// 1+IntroBoost (introBoost).
	IntroBoost float64
	// Confidence thresholds (decide.go).
	MinCoverage   float64 // share of query IDF the top document must match
	MinGap        float64 // relative gap to the second document
	MinMatched    int     // matched terms (an exact title phrase counts 2)
	TypoMaxPerQry int
}

// DefaultRanking is the tuned default; bench/search shows how it was tuned.
func DefaultRanking() Ranking {
	return Ranking{
		TitleWeight: 2, KeywordWeight: 1.5, BodyWeight: 1, ExactWeight: 0.5, ExactMaxTerms: 3,
		Candidates:       100,
		SecondChunk:      0.2,
		TitlePhraseBonus: 0.25,
		ThinPenalty:      0.7, ArchivePenalty: 0.6,
		FreshOffset: 7 * 24 * time.Hour, FreshScale: 14 * 24 * time.Hour, FreshDecay: 0.25,
		FreshTemporal: 0.5,
		MinCoverage:   0.6, MinGap: 0.1, MinMatched: 2,
		TypoMaxPerQry: 4, AllTermsMax: 4, MaxPostings: 3000,
		RerankDepth: 30, RerankMinTerms: 4, K1: 1.2, BTitle: 0.75, BBody: 0.75, Proximity: 0.3, ProximityWindow: 4,
		VariantPrefix: 5, VariantWeight: 0.7,
		DocWeight: 0.4, URLWeight: 1, AnchorWeight: 2, AssocWeight: 4,
		IntroBoost: 0.25,
	}
}

// candidate is a chunk a search considers, with its document.
type candidate struct {
	chunkID             int64
	slot                uint32 // where the chunk was when found; the rerank checks it is still there
	intro               bool   // it is its page's introduction, and its score was raised for it (introBoost)
	doc                 *memDoc
	score               float64
	chunkType, codeLang string
	// The chunk's stored text, read (loadTexts) only for the chunks that
	// are reranked or shown.
	loaded            bool
	start, end        int
	text, contentHash string
	headingPath       []string
	// variantOf lists the query terms the chunk matched only through
	// variants (Ranking.VariantPrefix).
	variantOf []string
	// matches is what the rerank found of the query's terms in the text,
	// for its evidence.
	matches *textMatches
	// cached is the cache's entry the text came from, if it did.
	cached *cachedText
}

// textMatches are the words of a chunk's text that match query terms, as
// the rerank found them: the terms known holds are matched by those words
// and no others, and the known terms the body lacks (absent) by none.
type textMatches struct {
	known map[string]bool
	at    []textMatch // in text order
	// body and index are the rerank's counts of the query's terms in the
	// chunk's body, and each term's place in them.
	body  []float64
	index map[string]int
}

// absent reports a known term the body does not hold.
func (tm *textMatches) absent(t string) bool {
	return tm != nil && tm.known[t] && tm.body[tm.index[t]] == 0
}

// textMatch is a word of a text matching a term, by its byte offset.
type textMatch struct {
	term string
	at   int
}

// docHit is a document with its ranked chunks.
type docHit struct {
	docID  int64
	score  float64
	chunks []*candidate
	// bm25 is the best chunk's score, match_explain's first phrase: it is
	// formatted only for the documents shown.
	bm25    float64
	explain []string
	// page is the whole page's score (docBM25), formatted like bm25.
	page float64
}

// Search ranks the site's chunks for q with BM25 and groups them by
// document, fusing q.Hybrid's vector search in when set. It never fails
// on the query text: an empty, stopword-only or unmatchable query returns
// action "no_match". Errors are store failures, or ctx ending while the
// index loads.
func (ix *Index) Search(ctx context.Context, q Query) (*Result, error) {
	if q.Hybrid == nil {
		return ix.search(ctx, q)
	}
	return ix.searchHybrid(ctx, q)
}

func (ix *Index) search(ctx context.Context, q Query) (*Result, error) {
	if q.Limit <= 0 {
		q.Limit = 10
	}
	if q.Limit > 1000 {
		q.Limit = 1000
	}
	if q.PerDoc <= 0 {
		q.PerDoc = 1
		if q.Passages {
			q.PerDoc = 3
		}
	}
	if err := ix.ready(ctx); err != nil {
		return nil, err
	}
	ix.catchUp(ctx)
	ix.searches.Add(1)
	lang := q.Lang
	if lang == "" {
		lang = q.Filters.Lang
	}
	syn, rk := ix.config()
	pq := parseQuery(q.Text, lang, syn)
	res := &Result{Hits: []Hit{}, Action: "no_match", Temporal: pq.Temporal}
	for _, t := range pq.Terms {
		res.Terms = append(res.Terms, t.Term)
	}
	for _, in := range pq.Intents {
		res.Intents = append(res.Intents, strings.Join(in, " "))
	}
	// A query vector can still find pages the words can't.
	vector := q.Hybrid != nil && len(q.Hybrid.Vector) > 0 && q.Hybrid.Alpha > 0
	if len(pq.Terms) == 0 && !vector {
		res.Reason = "no searchable words in the query"
		return res, nil
	}

	df := ix.queryStats(pq)
	if !q.NoTypos {
		ix.correctTypos(pq, df, rk, res)
	}
	live := 0
	for i := range pq.Terms {
		if df[pq.Terms[i].Term] == 0 && df[pq.Terms[i].Surface] == 0 {
			pq.Terms[i].Weight = 0
		} else {
			live++
		}
	}
	if live == 0 && !vector {
		res.Reason = "no query word occurs on the site"
		return res, nil
	}
	if len(pq.Phrases) > 0 {
		if err := ix.matchPhrases(ctx, pq); err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
	}

	docs, err := ix.rank(ctx, pq, q, rk, df)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if len(pq.Intents) >= 2 && q.Sort != "date" {
		docs = ix.mergeIntents(pq, q, rk, docs)
	}
	if len(docs) > q.Limit {
		docs = docs[:q.Limit]
	}
	if err := ix.loadTexts(ctx, shown(docs, q.PerDoc)); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	for _, d := range docs {
		for i, c := range d.chunks {
			if i >= q.PerDoc {
				break
			}
			res.Hits = append(res.Hits, makeHit(ix.an, d, c, pq, len(res.Hits) < evidenceHits))
		}
	}
	ix.decide(pq, rk, df, docs, res)
	return res, nil
}

// shown lists the chunks that become hits: each document's best perDoc.
func shown(docs []*docHit, perDoc int) []*candidate {
	var out []*candidate
	for _, d := range docs {
		out = append(out, d.chunks[:min(len(d.chunks), perDoc)]...)
	}
	return out
}

// queryStats looks up the chunk frequency of every term and surface.
func (ix *Index) queryStats(pq *parsedQuery) map[string]int {
	var keys []string
	for _, t := range pq.Terms {
		keys = append(keys, t.Term)
		if t.Surface != t.Term {
			keys = append(keys, t.Surface)
		}
	}
	return ix.mem.termDocs(keys)
}

// correctTypos replaces query words found nowhere in the index by the
// closest vocabulary term.
func (ix *Index) correctTypos(pq *parsedQuery, df map[string]int, rk Ranking, res *Result) {
	var vocab *vocabulary
	fixed := 0
	for i := range pq.Terms {
		t := &pq.Terms[i]
		if t.Code || df[t.Term] > 0 || df[t.Surface] > 0 || len([]rune(t.Surface)) < 4 || fixed >= rk.TypoMaxPerQry {
			continue
		}
		if vocab == nil {
			vocab = ix.vocabulary()
		}
		c, ok := vocab.correct(t.Surface)
		if !ok {
			continue
		}
		fixed++
		toks := analysis.AnalyzeTokens(c, pq.Lang)
		if len(toks) != 1 {
			continue
		}
		newT := toks[0]
		// The vocabulary holds stems and surfaces alike; a corrected stem
		// analyzes to itself.
		if vocab.docCount[newT.Term] == 0 {
			newT.Term = c
		}
		old := t.Term
		t.Term, t.Surface, t.Source, t.From = newT.Term, c, "typo", t.Surface
		df[t.Term] = max(df[t.Term], vocab.docCount[t.Term])
		df[c] = max(df[c], vocab.docCount[c])
		for j := range pq.Seq {
			if pq.Seq[j] == old {
				pq.Seq[j] = t.Term
			}
		}
		if res.Corrections == nil {
			res.Corrections = map[string]string{}
		}
		res.Corrections[t.From] = c
	}
}

// rank finds the candidates, reranks them when the query is worth it,
// fuses in the vector search, and groups the chunks into ranked
// documents.
func (ix *Index) rank(ctx context.Context, pq *parsedQuery, q Query, rk Ranking, df map[string]int) ([]*docHit, error) {
	k := max(rk.Candidates, q.Limit*q.PerDoc*3)
	var cands []*candidate
	if n := pq.liveTerms(); n >= 2 && n <= rk.AllTermsMax {
		// Short queries first ask for pages with every word: far fewer
		// chunks to score than the OR of common words. When that finds
		// enough documents they are the answer; when not, the OR runs.
		pq.requireAll = true
		all := ix.candidates(pq, q, rk, k)
		pq.requireAll = false
		if countDocs(all) >= q.Limit {
			cands = all
		}
	}
	if cands == nil {
		restore := pq.cutCommon(df, rk.MaxPostings)
		cands = ix.candidates(pq, q, rk, k)
		restore()
	}
	if q.Sort != "date" && (pq.liveTerms() >= rk.RerankMinTerms || pq.cutTerms || ix.unseenHaveVariants(pq, rk)) {
		if err := ix.rerank(ctx, pq, rk, df, cands); err != nil {
			return nil, err
		}
	}
	if q.Sort != "date" {
		ix.introBoost(cands, rk)
	}
	cands, err := ix.fuseVectors(ctx, cands, q, rk)
	if err != nil {
		return nil, err
	}
	return groupDocs(ix.an, cands, pq, q, rk, ix.db.Now(), ix.docBM25), nil
}

// introBoost raises the score of the chunks that introduce their pages:
// the text before the first heading of a page that has headings. Where
// an author divides a page into sections, its first words say what the
// whole page is about; a page that answers the query there is about it,
// one that answers it in a later section may only touch on it. A page
// without headings has no introduction apart from the rest (its first
// chunk ends where the chunker cut it): raising the first chunk of every
// page instead cost SciFact's abstracts 0.0007 (bench/search README).
func (ix *Index) introBoost(cands []*candidate, rk Ranking) {
	if rk.IntroBoost <= 0 || len(cands) == 0 {
		return
	}
	m := ix.mem
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, c := range cands {
		// Most chunks of a page with headings are under one: they are
		// passed over without looking up their page's slots.
		if int(c.slot) >= len(m.slots) || m.slots[c.slot].chunkID != c.chunkID || m.slots[c.slot].headed {
			continue
		}
		if ss := m.docSlots[c.doc.ID]; len(ss) > 1 && ss[0] == c.slot && m.introduces(ss) {
			c.score *= 1 + rk.IntroBoost
			c.intro = true
		}
	}
}

// cutCommon leaves the most common terms out of the candidate query while
// the sum of the live terms' chunk counts exceeds max, keeping at least the
// rarest term. It returns a func that puts them back.
func (pq *parsedQuery) cutCommon(df map[string]int, max int) (restore func()) {
	if max <= 0 {
		return func() {}
	}
	var live []int
	total := 0
	for i, t := range pq.Terms {
		if t.Weight > 0 {
			live = append(live, i)
			total += df[t.Term]
		}
	}
	if total <= max || len(live) < 2 {
		return func() {}
	}
	sort.Slice(live, func(a, b int) bool { return df[pq.Terms[live[a]].Term] > df[pq.Terms[live[b]].Term] })
	saved := map[int]int{}
	for _, i := range live[:len(live)-1] {
		if total <= max {
			break
		}
		total -= df[pq.Terms[i].Term]
		saved[i] = pq.Terms[i].Weight
		pq.Terms[i].Weight = 0
	}
	pq.cutTerms = true
	return func() {
		for i, w := range saved {
			pq.Terms[i].Weight = w
		}
	}
}

func countDocs(cs []*candidate) int {
	seen := map[int64]bool{}
	for _, c := range cs {
		seen[c.doc.ID] = true
	}
	return len(seen)
}

func (pq *parsedQuery) liveTerms() int {
	n := 0
	for _, t := range pq.Terms {
		if t.Weight > 0 && t.Source != "synonym" {
			n++
		}
	}
	return n
}

// candidates returns the best k chunks for the query, honouring the
// filters strictly, best first (or newest first when sorting by date).
func (ix *Index) candidates(pq *parsedQuery, q Query, rk Ranking, k int) []*candidate {
	// Known terms matter for short, navigational queries ("home",
	// "notes"); in long questions the exact column only double-counts
	// titles, which measured worse.
	exact := rk.ExactWeight > 0 && pq.liveTerms() <= rk.ExactMaxTerms
	ps, groups := pq.memPhrases(exact)
	return ix.mem.candidates(ps, groups, q, rk, k, pq.allow)
}

// groupDocs folds chunks into documents and applies the document-level
// factors: second chunk, title phrase, thin and archive pages, freshness.
func groupDocs(an *analysis.Analyzer, cands []*candidate, pq *parsedQuery, q Query, rk Ranking, now time.Time,
	whole func(*parsedQuery, Ranking, []*docHit) []float64) []*docHit {
	byDoc := make(map[int64]*docHit, len(cands))
	docs := make([]*docHit, 0, len(cands))
	all := make([]docHit, 0, len(cands)) // one allocation for the pages
	for _, c := range cands {
		d := byDoc[c.doc.ID]
		if d == nil {
			all = append(all, docHit{docID: c.doc.ID})
			d = &all[len(all)-1]
			byDoc[c.doc.ID] = d
			docs = append(docs, d)
		}
		d.chunks = append(d.chunks, c)
	}
	for _, d := range docs {
		sort.SliceStable(d.chunks, func(i, j int) bool { return d.chunks[i].score > d.chunks[j].score })
	}
	var pages []float64
	if q.Sort != "date" && whole != nil {
		pages = whole(pq, rk, docs)
	}
	for i, d := range docs {
		first := d.chunks[0]
		d.score = first.score
		if len(d.chunks) > 1 {
			d.score += rk.SecondChunk * d.chunks[1].score
		}
		if i < len(pages) && pages[i] > 0 {
			d.page = pages[i]
			d.score += rk.DocWeight * pages[i]
		}
		d.bm25 = first.score
		if first.intro {
			d.explain = append(d.explain, "in the page's introduction")
		}
		if len(first.variantOf) > 0 {
			d.explain = append(d.explain, "variants of "+strings.Join(first.variantOf, ", "))
		}
		if first.doc.Thin && rk.ThinPenalty > 0 {
			d.score *= rk.ThinPenalty
			d.explain = append(d.explain, "thin page")
		}
		if first.doc.archive && rk.ArchivePenalty > 0 {
			d.score *= rk.ArchivePenalty
			d.explain = append(d.explain, "archive page")
		}
		if f := freshness(first, pq, rk, now); f != 1 {
			d.score *= f
			d.explain = append(d.explain, fmt.Sprintf("freshness ×%.2f", f))
		}
	}
	if len(pq.Seq) > 0 && len(pq.Seq) <= 6 && rk.TitlePhraseBonus > 0 {
		// The title phrase bonus can only lift documents near the top;
		// looking at the first titlePhraseDocs saves analyzing the rest.
		sort.SliceStable(docs, func(i, j int) bool { return docs[i].score > docs[j].score })
		for i, d := range docs {
			if i >= titlePhraseDocs {
				break
			}
			if containsSeq(d.chunks[0].doc.analyzedTitle(an), pq.Seq) {
				d.score *= 1 + rk.TitlePhraseBonus
				d.explain = append(d.explain, "exact phrase in title")
			}
		}
	}
	if q.Sort == "date" {
		sort.SliceStable(docs, func(i, j int) bool {
			return docs[i].chunks[0].doc.Published.After(docs[j].chunks[0].doc.Published)
		})
	} else {
		sort.SliceStable(docs, func(i, j int) bool { return docs[i].score > docs[j].score })
	}
	return docs
}

const titlePhraseDocs = 50

// analyzedTitle returns the page's title analyzed, worked out at the
// page's first search: the title phrase bonus reads the best fifty
// pages' titles at every search, and the confidence the shown pages'.
// Analyzing them again was a fortieth of a SciFact claim's CPU, more
// when the stems a title needs have left the processor's caches.
func (d *memDoc) analyzedTitle(an *analysis.Analyzer) []string {
	if t := d.title.Load(); t != nil {
		return *t
	}
	t := an.Analyze(d.Title, d.Lang)
	d.title.Store(&t)
	return t
}

// metaWords returns the words a hit's evidence matches the query's terms
// against in the page's title, categories and tags, each once: every
// token's term, surface and parts. They are worked out at the page's
// first hit: a hit's evidence analyzed them again for each of the ten
// hits of every search, a fortieth of a SciFact claim's CPU.
func (d *memDoc) metaWords(an *analysis.Analyzer) []string {
	if w := d.meta.Load(); w != nil {
		return *w
	}
	var w []string
	add := func(x string) {
		if x != "" && !slices.Contains(w, x) {
			w = append(w, x)
		}
	}
	// The fields are joined by spaces, which no token spans, as a hit's
	// meta joined them.
	an.EachAt(d.Title+"\n"+strings.Join(d.Categories, " ")+" "+strings.Join(d.Tags, " "), d.Lang, nil, func(t analysis.Token, _ int) {
		tokenWords(t, add)
	})
	w = slices.Clip(w)
	d.meta.Store(&w)
	return w
}

// freshness is the date factor of a document.
func freshness(c *candidate, pq *parsedQuery, rk Ranking, now time.Time) float64 {
	if !pq.Temporal || rk.FreshTemporal <= 0 {
		return 1
	}
	w := rk.FreshTemporal
	date := c.doc.Published
	if date.IsZero() {
		date = c.doc.Modified
	}
	if date.IsZero() {
		return 1 - w/2
	}
	if pq.Year != 0 {
		// A named year asks for that year, not for the newest.
		if date.Year() == pq.Year {
			return 1
		}
		return 1 - w
	}
	age := now.Sub(date) - rk.FreshOffset
	f := 1.0
	if age > 0 && rk.FreshScale > 0 {
		f = math.Pow(rk.FreshDecay, float64(age)/float64(rk.FreshScale))
	}
	return 1 - w + w*f
}

var archivePath = regexp.MustCompile(`/(category|tag|author|search|feed|page/\d+)(/|$)`)

// isArchive reports listing pages: WordPress category, tag, author,
// search, feed and paginated URLs.
func isArchive(rawURL, postType string) bool {
	switch postType {
	case "category", "tag", "post_tag", "author", "archive", "search", "feed", "taxonomy":
		return true
	}
	// Most URLs name none of it: no need to parse them.
	if !mayBeArchive(rawURL) {
		return false
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	if u.RawQuery != "" {
		if q := u.Query(); q.Has("s") || q.Has("cat") || q.Has("tag") || q.Has("author") || q.Has("feed") {
			return true
		}
	}
	return archivePath.MatchString(u.Path)
}

// mayBeArchive is whether rawURL has a query or an escape, or a path
// segment that starts like an archive's, in one pass: it runs on every
// page the index loads, and most WordPress permalinks need no parse.
func mayBeArchive(rawURL string) bool {
	for i := 0; i < len(rawURL); i++ {
		switch rawURL[i] {
		case '?', '%':
			return true
		case '/':
			rest := rawURL[i+1:]
			for _, p := range [...]string{"category", "tag", "author", "search", "feed", "page/"} {
				if strings.HasPrefix(rest, p) {
					return true
				}
			}
		}
	}
	return false
}

// loadTexts sets the text of the chunks that have none yet, from the
// cache or the store.
func (ix *Index) loadTexts(ctx context.Context, cs []*candidate) error {
	ids, epoch := ix.texts.fill(cs)
	if len(ids) == 0 {
		return nil
	}
	chunks, err := ix.db.ChunksByID(ctx, ids)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if ch := chunks[c.chunkID]; ch != nil && !c.loaded {
			c.loaded = true
			c.start, c.end, c.text, c.headingPath, c.contentHash = ch.Start, ch.End, ch.Text, ch.HeadingPath, ch.ContentHash
		}
	}
	ix.texts.add(epoch, chunks)
	return nil
}

// evidenceHits is how many hits get matched terms and a highlighted
// snippet; later ones (deep result lists, evaluation runs) get the
// passage's opening words.
const evidenceHits = 20

func makeHit(an *analysis.Analyzer, d *docHit, c *candidate, pq *parsedQuery, withEvidence bool) Hit {
	doc := c.doc
	h := Hit{
		DocID: doc.ID, URL: doc.URL, Title: doc.Title, Type: doc.PostType,
		Published: doc.Published, Modified: doc.Modified, Score: round3(d.score),
		Passage:     Passage{Text: c.text, Start: c.start, End: c.end},
		HeadingPath: c.headingPath, ChunkID: c.chunkID, ChunkType: c.chunkType,
		CodeLang: c.codeLang, ContentHash: c.contentHash, Thin: doc.Thin, Source: "keyword",
		Start: c.start, End: c.end, MatchExplain: append([]string{fmt.Sprintf("bm25 %.2f", d.bm25)}, d.explain...),
	}
	if d.page > 0 {
		h.MatchExplain = append(h.MatchExplain[:1:1], append([]string{fmt.Sprintf("whole page %.2f", d.page)}, d.explain...)...)
	}
	if h.HeadingPath == nil {
		h.HeadingPath = []string{}
	}
	if c != d.chunks[0] {
		h.Score = round3(c.score)
	}
	terms := make([]string, 0, len(pq.Terms))
	for _, t := range pq.Terms {
		if t.Weight > 0 {
			terms = append(terms, t.Term)
		}
	}
	if !withEvidence {
		h.MatchedTerms = []string{}
		_, h.Snippet = evidence(an, nil, nil, "", c.text, doc.Lang, 240, nil)
		return h
	}
	h.MatchedTerms, h.Snippet = evidence(an, terms, doc.metaWords(an), strings.Join(h.HeadingPath, " "), c.text, doc.Lang, 240, c.matches)
	return h
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// matched returns the terms that occur in text, analyzed in lang.
func matched(an *analysis.Analyzer, terms []string, text, lang string) []string {
	m, _ := evidence(an, terms, nil, text, "", lang, 0, nil)
	return m
}

// tokenWords calls f with each word by which t matches a query term: its
// parts, its term and its surface (none for a token without a term). A
// hit's evidence and the page words it keeps (memDoc.metaWords) both
// match by these.
func tokenWords(t analysis.Token, f func(string)) {
	if t.Term == "" {
		return
	}
	for _, x := range t.Parts {
		f(x)
	}
	f(t.Term)
	f(t.Surface)
}

// evidence returns the terms found in metaWords (analyzed already, as
// memDoc.metaWords), meta or text, in query order, and a
// snippet of about n bytes of text around the first match, matched words
// wrapped in ** so a reader sees why the passage matched. One pass over
// the words serves both. tm, when set, is what the rerank found of the
// terms in text: the text is analyzed again only for the terms it does
// not know (a stem such as "increas", which a word may also match by its
// surface), and not for the ones it knows are absent.
func evidence(an *analysis.Analyzer, terms, metaWords []string, meta, text, lang string, n int, tm *textMatches) ([]string, string) {
	want := make(map[string]bool, len(terms))
	for _, t := range terms {
		want[t] = true
	}
	initials := analysis.InitialsOf(terms)
	have := map[string]bool{}
	var known map[string]bool
	if tm != nil {
		known = tm.known
	}
	// pending counts, by initial, the terms the text may hold and no word
	// matched yet; it is set up after the meta.
	var pending map[rune]int
	done := false // some initial's terms were all found since the last look
	found := func(x string) {
		if have[x] {
			return
		}
		have[x] = true
		if pending != nil && !tm.absent(x) {
			r, _ := utf8.DecodeRuneInString(x)
			if pending[r]--; pending[r] == 0 {
				done = true
			}
		}
	}
	wanted := func(t analysis.Token) bool {
		hit := false
		tokenWords(t, func(x string) {
			if want[x] {
				found(x)
				hit = true
			}
		})
		return hit
	}
	for _, x := range metaWords {
		if want[x] {
			found(x)
		}
	}
	an.EachAt(meta, lang, initials, func(t analysis.Token, _ int) { wanted(t) })
	// In the text, an initial is looked for while a word may still match
	// one of its terms: not for absent terms, nor, past the words a snippet
	// can show (n/2 at most, from 8 before the first match), for terms
	// found already.
	initials, pending = &analysis.Initials{}, map[rune]int{}
	look := false
	// With the rerank's places, what the text can add is a word whose
	// surface is a term that is not its own word's (a stem such as
	// "increas"): where the text's words are ASCII, such a word is the
	// term spelt out as a whole word (analysis.MayHoldSurface), which
	// most are not: "increas" is in "increase", not a word of its own.
	// The scan for them was a twentieth of a search, and a tenth on
	// wpdocs' questions. The surfaces are read at the first term that
	// needs them: most terms are known.
	var surfaces *[]byte
	toRead := tm != nil
	for _, t := range terms {
		if known[t] || t == "" { // the absent terms are known ones
			continue
		}
		if toRead {
			toRead = false
			buf := lowerBufs.Get().(*[]byte)
			var ok bool
			if *buf, ok = analysis.AppendSurfaces((*buf)[:0], text); ok {
				surfaces = buf
				defer lowerBufs.Put(buf)
			} else {
				lowerBufs.Put(buf)
			}
		}
		if surfaces != nil && !analysis.MayHoldSurface(*surfaces, t) {
			continue
		}
		r, _ := utf8.DecodeRuneInString(t)
		initials.Add(t)
		look = true
		if !have[t] {
			pending[r]++
		}
	}
	// The text is analyzed in one pass; a token's offset says which of
	// its space-separated words to highlight (no token spans a space).
	// The words are split only as far as a snippet can show: past n/2
	// words after the first match (at least 2 bytes a word in it), a match
	// counts only among the terms found.
	// The spans are pooled: sized for a whole passage, they were a tenth
	// of a search's allocated bytes.
	sp := spanBufs.Get().(*[]span)
	ws := &words{text: text, spans: (*sp)[:0]}
	defer func() {
		*sp = ws.spans[:0]
		spanBufs.Put(sp)
	}()
	hits := make([]bool, 0, 64)
	hit := func(w int) {
		if w >= len(hits) {
			hits = append(hits, make([]bool, w+1-len(hits))...)
		}
		hits[w] = true
	}
	first := -1
	if tm != nil {
		w := 0
		for _, m := range tm.at {
			if !want[m.term] {
				continue
			}
			have[m.term] = true
			if n <= 0 || first >= 0 && w > first+n/2 {
				continue
			}
			for ws.has(w+1) && int(ws.spans[w+1].start) <= m.at {
				w++
			}
			hit(w)
			if first < 0 {
				first = w
			}
		}
	}
	if look {
		w := 0
		past := n <= 0
		done = true
		an.EachAt(text, lang, initials, func(t analysis.Token, at int) {
			if !past {
				for ws.has(w+1) && int(ws.spans[w+1].start) <= at {
					w++
				}
				if first >= 0 && w > first+n/2 {
					past = true
				}
			}
			if wanted(t) && !past {
				hit(w)
				if first < 0 || w < first {
					first = w
				}
			}
			if past && done {
				done = false
				for r, k := range pending {
					if k == 0 {
						initials.Remove(r)
						delete(pending, r)
					}
				}
			}
		})
	}
	out := []string{}
	for _, t := range terms {
		if have[t] {
			out = append(out, t)
		}
	}
	if n <= 0 {
		return out, ""
	}
	start := 0
	if first > 8 {
		start = first - 8
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	for i := start; ws.has(i) && b.Len() < n; i++ {
		if i > start {
			b.WriteByte(' ')
		}
		if i < len(hits) && hits[i] {
			b.WriteString("**" + ws.spans[i].of(text) + "**")
		} else {
			b.WriteString(ws.spans[i].of(text))
		}
		if !ws.has(i + 1) {
			return out, b.String()
		}
	}
	if ws.has(0) {
		b.WriteString("…")
	}
	return out, b.String()
}

var spanBufs = sync.Pool{New: func() any { return new([]span) }}

// lowerBufs hold a passage's surfaces (analysis.AppendSurfaces), for
// evidence.
var lowerBufs = sync.Pool{New: func() any { return new([]byte) }}

// asciiSpace is unicode.IsSpace for the ASCII bytes (false for the
// others, which words.has decodes).
var asciiSpace = [256]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// words splits a text into its space-separated words (strings.Fields,
// with each one's byte offsets), as far as a caller asks: a shown
// passage's snippet needs the words up to its matches and a few dozen
// after, and splitting every word of every hit's text was a twentieth of
// a search.
type words struct {
	text  string
	spans []span
	next  int // where splitting goes on
}

// has reports whether the text has an i-th word (from 0), splitting it
// as far as that.
func (ws *words) has(i int) bool {
	s := ws.text
	for len(ws.spans) <= i {
		// The spaces before the next word, then the word; ASCII without
		// a call, a byte at a time: this runs over every shown passage.
		j := ws.next
		for j < len(s) {
			if c := s[j]; c < utf8.RuneSelf {
				if !asciiSpace[c] {
					break
				}
				j++
			} else if r, size := utf8.DecodeRuneInString(s[j:]); unicode.IsSpace(r) {
				j += size
			} else {
				break
			}
		}
		if j == len(s) {
			ws.next = j
			break
		}
		start := j
		for j < len(s) {
			if c := s[j]; c < utf8.RuneSelf {
				if asciiSpace[c] {
					break
				}
				j++
			} else if r, size := utf8.DecodeRuneInString(s[j:]); !unicode.IsSpace(r) {
				j += size
			} else {
				break
			}
		}
		ws.spans = append(ws.spans, span{int32(start), int32(j)})
		ws.next = j
	}
	return i < len(ws.spans)
}

// span is a word of a text, by its byte offsets: a third of a string and
// an int, for every word of every shown passage.
type span struct{ start, end int32 }

func (w span) of(text string) string { return text[w.start:w.end] }
