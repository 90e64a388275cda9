package search

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/search/index"
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
	// Docs, when not nil, are the only documents (by id) a search may
	// return: the product pages a price or stock filter selected.
	Docs map[int64]bool `json:"-"`
}

func (f Filters) empty() bool {
	return len(f.PostType) == 0 && f.ChunkType == "" && f.CodeLang == "" && f.Lang == "" &&
		f.Category == "" && f.Tag == "" && f.After.IsZero() && f.Before.IsZero() && f.Docs == nil
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
	Lang         string    `json:"lang,omitempty"`
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

// candidate is a chunk a search considers, with its document.
type candidate struct {
	chunkID             int64
	slot                uint32 // where the chunk was when found; the rerank checks it is still there
	intro               bool   // it is its page's introduction, and its score was raised for it (introBoost)
	doc                 *index.Doc
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
	cached *index.CachedText
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
	q = q.withDefaults()
	if err := ix.ready(ctx); err != nil {
		return nil, err
	}
	ix.catchUp(ctx)
	ix.searches.Add(1)
	syn, rk := ix.config()
	pq, df, res := ix.prepare(q, syn, rk)
	if res.Reason != "" {
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
			res.Hits = append(res.Hits, ix.makeHit(d, c, pq, len(res.Hits) < evidenceHits))
		}
	}
	ix.decide(pq, rk, df, docs, res)
	return res, nil
}

// withDefaults is q with its limits set.
func (q Query) withDefaults() Query {
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
	return q
}

// prepare parses q, looks its terms up, corrects its typos and leaves out
// the terms found nowhere. The result it starts has a Reason when there
// is nothing to search for.
func (ix *Index) prepare(q Query, syn *Synonyms, rk Ranking) (*parsedQuery, map[string]int, *Result) {
	lang := q.Lang
	if lang == "" {
		lang = q.Filters.Lang
	}
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
		return pq, nil, res
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
	}
	return pq, df, res
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
	return ix.mem.TermDocs(keys)
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

// loadTexts sets the text of the chunks that have none yet, from the
// cache or the store.
func (ix *Index) loadTexts(ctx context.Context, cs []*candidate) error {
	var need []*candidate
	for _, c := range cs {
		if !c.loaded {
			need = append(need, c)
		}
	}
	if len(need) == 0 {
		return nil
	}
	ids := make([]int64, len(need))
	for i, c := range need {
		ids[i] = c.chunkID
	}
	entries, epoch := ix.mem.Texts.Fill(ids)
	var missing []int64
	for i, c := range need {
		if e := entries[i]; e != nil {
			c.loaded, c.cached = true, e
			c.start, c.end, c.text, c.headingPath, c.contentHash = e.Start, e.End, e.Text, e.HeadingPath, e.ContentHash
		} else {
			missing = append(missing, c.chunkID)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	chunks, err := ix.db.ChunksByID(ctx, missing)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if ch := chunks[c.chunkID]; ch != nil && !c.loaded {
			c.loaded = true
			c.start, c.end, c.text, c.headingPath, c.contentHash = ch.Start, ch.End, ch.Text, ch.HeadingPath, ch.ContentHash
		}
	}
	ix.mem.Texts.Add(epoch, chunks)
	return nil
}

// evidenceHits is how many hits get matched terms and a highlighted
// snippet; later ones (deep result lists, evaluation runs) get the
// passage's opening words.
const evidenceHits = 20

func (ix *Index) makeHit(d *docHit, c *candidate, pq *parsedQuery, withEvidence bool) Hit {
	an := ix.an
	doc := c.doc
	h := Hit{
		DocID: doc.ID, URL: doc.URL, Title: doc.Title, Type: doc.PostType, Lang: doc.Lang,
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
	h.MatchedTerms, h.Snippet = evidence(an, terms, ix.mem.Words(doc).Meta, strings.Join(h.HeadingPath, " "), c.text, doc.Lang, 240, c.matches)
	return h
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
