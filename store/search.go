package store

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Filters narrow a search. They are strict WHERE clauses: a filtered search
// never returns a hit that does not match, however well it scores.
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

// SearchQuery is one search_site call.
type SearchQuery struct {
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
	// Hybrid, when set, fuses a vector search in (search_hybrid.go).
	Hybrid *HybridQuery
}

// Passage is a verbatim slice of a document's Body.
type Passage struct {
	Text  string `json:"text"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// Hit is one piece of evidence, in the shape of seed 001's RetrievalResult.
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

// SearchResult is the ranked evidence for a query.
type SearchResult struct {
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
	// BM25 column weights (FTS5's bm25(), k1 = 1.2, b = 0.75, per chunk).
	TitleWeight, KeywordWeight, BodyWeight, ExactWeight float64
	// ExactMaxTerms: the exact column is matched only for queries of at
	// most this many terms.
	ExactMaxTerms int
	// Bigrams adds each pair of adjacent query terms as a phrase.
	Bigrams bool
	// Candidates is how many chunks the full-text query returns, at
	// least 3 × Limit × PerDoc. Each one is joined to its document and
	// read out; 100 ranked SciFact's top 10 exactly as 300 did, at about
	// a fifth less CPU per query (bench/search latency).
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
	// Freshness: exponential decay decay^(max(0, age-offset)/scale). Its
	// weight is FreshTemporal for queries that ask for recent content,
	// FreshDefault otherwise: score × (1 - w + w × decay).
	FreshOffset, FreshScale time.Duration
	FreshDecay              float64
	FreshTemporal           float64
	FreshDefault            float64
	// Pseudo-relevance feedback (RM3) inside the rerank: the top
	// FeedbackDocs chunks give FeedbackTerms expansion terms, mixed into
	// the query with weight FeedbackLambda.
	FeedbackDocs, FeedbackTerms int
	FeedbackLambda              float64
	// Confidence thresholds (see confidence.go).
	// Rerank: the best RerankDepth chunks are rescored in Go with BM25F
	// (K1, BTitle for the title, BBody for keywords and body) plus
	// Proximity × the IDF of query-term pairs within ProximityWindow.
	RerankDepth int
	// RerankMinTerms: shorter queries skip the rerank (proximity needs
	// several words; most site queries are 1–3 words and stay fast).
	RerankMinTerms  int
	K1, BTitle      float64
	BBody           float64
	Proximity       float64
	ProximityWindow int
	// QLMix fuses the rerank with a Dirichlet query-likelihood ranking
	// (smoothing QLMu) by reciprocal rank; 0 turns it off.
	QLMix, QLMu float64
	// MaxPostings bounds the full-text query's work: bm25() is computed
	// for every chunk that matches any term, and that cost grows with the
	// sum of the terms' chunk counts. Above it, the most common terms are
	// left out of the candidate query (never the rarest), and the rerank
	// scores every term on the candidates. 0 turns it off.
	MaxPostings int
	// AllTermsMax: queries of 2..AllTermsMax terms first look for chunks
	// with every term, and fall back to any term when too few match.
	AllTermsMax int
	// Coord multiplies a chunk's score by the share of the query's IDF it
	// matches, raised to Coord (Lucene's coordination factor, softened).
	Coord float64
	// Variants: in the rerank, a query term a chunk lacks is matched by
	// the chunk's words that share its first VariantPrefix letters (of
	// the stems), at VariantWeight, with the IDF of all the index's words
	// with that prefix. Snowball stemmers keep derivations apart
	// ("partner" and "partnership", "inflammation" and "inflammatory");
	// a shared prefix joins them in any language. 0 turns it off.
	VariantPrefix int
	VariantWeight float64
	MinCoverage   float64 // share of query IDF the top document must match
	MinGap        float64 // relative gap to the second document
	MinMatched    int     // matched terms (an exact title phrase counts 2)
	TypoMaxPerQry int
}

// DefaultRanking is the tuned default; bench/search shows how it was tuned.
func DefaultRanking() Ranking {
	return Ranking{
		TitleWeight: 2, KeywordWeight: 1.5, BodyWeight: 1, ExactWeight: 0.5, ExactMaxTerms: 3,
		Bigrams:          false,
		Candidates:       100,
		SecondChunk:      0.2,
		TitlePhraseBonus: 0.25,
		ThinPenalty:      0.7, ArchivePenalty: 0.6,
		FreshOffset: 7 * 24 * time.Hour, FreshScale: 14 * 24 * time.Hour, FreshDecay: 0.25,
		FreshTemporal: 0.5, FreshDefault: 0,
		MinCoverage: 0.6, MinGap: 0.1, MinMatched: 2,
		TypoMaxPerQry: 4, AllTermsMax: 4, MaxPostings: 3000,
		RerankDepth: 30, RerankMinTerms: 4, K1: 1.2, BTitle: 0.75, BBody: 0.75, Proximity: 0.3, ProximityWindow: 4, QLMu: 1000,
		VariantPrefix: 5, VariantWeight: 0.7,
	}
}

// candidate is a chunk the full-text query returned, with its document.
type candidate struct {
	chunkID, docID                 int64
	score                          float64
	chunkType, codeLang            string
	url, title, lang, postType     string
	cats, tags                     string
	published, modified            time.Time
	thin                           bool
	start, end                     int
	text, headingPath, contentHash string
	// variantOf lists the query terms the chunk matched only through
	// variants (Ranking.VariantPrefix).
	variantOf []string
}

// docHit is a document with its ranked chunks.
type docHit struct {
	docID   int64
	score   float64
	chunks  []*candidate
	explain []string
}

// Search ranks chunks with BM25 over the analyzed index and groups them by
// document. It never fails on the query text: an empty, stopword-only or
// unmatchable query returns action "no_match". Errors are store failures.
func (db *DB) Search(ctx context.Context, q SearchQuery) (*SearchResult, error) {
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
	if err := db.ensureIndexOnce(ctx); err != nil {
		return nil, err
	}
	lang := q.Lang
	if lang == "" {
		lang = q.Filters.Lang
	}
	syn, rk := db.search().config()
	pq := parseQuery(q.Text, lang, syn)
	res := &SearchResult{Hits: []Hit{}, Action: "no_match", Temporal: pq.Temporal}
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

	pq.mem = db.currentMem(ctx)
	if m := db.search().mem; pq.mem != nil {
		m.memSearches.Add(1)
	} else {
		m.ftsSearches.Add(1)
	}
	df, err := db.queryStats(ctx, pq)
	if err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	if !q.NoTypos {
		if err := db.correctTypos(ctx, pq, df, rk, res); err != nil {
			return nil, fmt.Errorf("store: search: %w", err)
		}
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

	docs, err := db.rank(ctx, pq, q, rk, df)
	if err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	if len(pq.Intents) >= 2 && q.Sort != "date" {
		docs, err = db.mergeIntents(ctx, pq, q, rk, docs)
		if err != nil {
			return nil, fmt.Errorf("store: search: %w", err)
		}
	}
	if len(docs) > q.Limit {
		docs = docs[:q.Limit]
	}
	if err := db.loadTexts(ctx, docs, q.PerDoc); err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	for _, d := range docs {
		for i, c := range d.chunks {
			if i >= q.PerDoc {
				break
			}
			res.Hits = append(res.Hits, makeHit(d, c, pq, len(res.Hits) < evidenceHits))
		}
	}
	db.decide(ctx, pq, rk, df, docs, res)
	return res, nil
}

// queryStats looks up the chunk frequency of every term and surface.
func (db *DB) queryStats(ctx context.Context, pq *parsedQuery) (map[string]int, error) {
	var keys []string
	for _, t := range pq.Terms {
		keys = append(keys, t.Term)
		if t.Surface != t.Term {
			keys = append(keys, t.Surface)
		}
	}
	return db.termDocs(ctx, pq.mem, keys)
}

// correctTypos replaces query words found nowhere in the index by the
// closest vocabulary term.
func (db *DB) correctTypos(ctx context.Context, pq *parsedQuery, df map[string]int, rk Ranking, res *SearchResult) error {
	var vocab *vocabulary
	fixed := 0
	for i := range pq.Terms {
		t := &pq.Terms[i]
		if t.Code || df[t.Term] > 0 || df[t.Surface] > 0 || len([]rune(t.Surface)) < 4 || fixed >= rk.TypoMaxPerQry {
			continue
		}
		if vocab == nil {
			v, err := db.vocabulary(ctx)
			if err != nil {
				return err
			}
			vocab = v
		}
		c, ok := vocab.correct(t.Surface)
		if !ok {
			continue
		}
		fixed++
		toks := AnalyzeTokens(c, pq.Lang.code)
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
	return nil
}

// rank runs the full-text query, with feedback when configured, and groups
// the chunks into ranked documents.
func (db *DB) rank(ctx context.Context, pq *parsedQuery, q SearchQuery, rk Ranking, df map[string]int) ([]*docHit, error) {
	k := max(rk.Candidates, q.Limit*q.PerDoc*3)
	var cands []*candidate
	if n := pq.liveTerms(); n >= 2 && n <= rk.AllTermsMax {
		// Short queries first ask for pages with every word: far fewer
		// rows to score than the OR of common words. When that finds
		// enough documents they are the answer; when not, the OR runs.
		pq.requireAll = true
		all, err := db.candidates(ctx, pq, q, rk, k)
		pq.requireAll = false
		if err != nil {
			return nil, err
		}
		if countDocs(all) >= q.Limit {
			cands = all
		}
	}
	if cands == nil {
		restore := pq.cutCommon(df, rk.MaxPostings)
		var err error
		cands, err = db.candidates(ctx, pq, q, rk, k)
		restore()
		if err != nil {
			return nil, err
		}
	}
	if q.Sort != "date" && (pq.liveTerms() >= rk.RerankMinTerms || pq.cutTerms || db.unseenHaveVariants(ctx, pq, rk)) {
		if err := db.rerank(ctx, pq, rk, df, cands); err != nil {
			return nil, err
		}
	}
	cands, err := db.fuseVectors(ctx, cands, q, rk)
	if err != nil {
		return nil, err
	}
	return groupDocs(cands, pq, q, rk, db.Now()), nil
}

// cutCommon leaves the most common terms out of the full-text query while
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
		seen[c.docID] = true
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
func (db *DB) candidates(ctx context.Context, pq *parsedQuery, q SearchQuery, rk Ranking, k int) ([]*candidate, error) {
	// Known terms matter for short, navigational queries ("home",
	// "notes"); in long questions the exact column only double-counts
	// titles, which measured worse.
	exact := rk.ExactWeight > 0 && pq.liveTerms() <= rk.ExactMaxTerms
	if pq.mem != nil {
		if ps, groups, ok := pq.memPhrases(rk.Bigrams, exact); ok {
			return pq.mem.candidates(ps, groups, q, rk, k), nil
		}
	}
	expr := pq.matchExpr(rk.Bigrams, exact)
	if expr == "" {
		return nil, nil
	}
	bm25 := fmt.Sprintf(`bm25(chunks_fts, %g, %g, %g, %g)`, rk.TitleWeight, rk.KeywordWeight, rk.BodyWeight, rk.ExactWeight)
	const cols = `c.id, c.doc_id, c.type, c.code_lang, d.url, d.title, d.lang, d.post_type,
			d.categories, d.tags, d.published, d.modified, d.thin`
	var (
		query string
		args  []any
	)
	if q.Filters.empty() && q.Sort != "date" {
		// Rank inside FTS5 first, then join only the winners.
		query = `SELECT ` + cols + `, f.score
		FROM (SELECT rowid, ` + bm25 + ` AS score FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score LIMIT ?) f
		JOIN chunks c ON c.id = f.rowid
		JOIN documents d ON d.id = c.doc_id
		ORDER BY f.score`
		args = []any{expr, k}
	} else {
		where, fargs := q.Filters.sql([]string{`chunks_fts MATCH ?`}, []any{expr})
		order := `score`
		if q.Sort == "date" {
			order = `d.published DESC, score`
		}
		query = `SELECT ` + cols + `, ` + bm25 + ` AS score
		FROM chunks_fts
		JOIN chunks c ON c.id = chunks_fts.rowid
		JOIN documents d ON d.id = c.doc_id
		WHERE ` + strings.Join(where, " AND ") + `
		ORDER BY ` + order + ` LIMIT ?`
		args = append(fargs, k)
	}
	rows, err := db.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*candidate
	for rows.Next() {
		c := &candidate{}
		var pub, mod string
		var thin int
		if err := rows.Scan(&c.chunkID, &c.docID, &c.chunkType, &c.codeLang, &c.url, &c.title, &c.lang, &c.postType,
			&c.cats, &c.tags, &pub, &mod, &thin, &c.score); err != nil {
			return nil, err
		}
		c.score = -c.score // bm25() is lower-is-better
		c.published, c.modified = parseTime(pub), parseTime(mod)
		c.thin = thin != 0
		out = append(out, c)
	}
	return out, rows.Err()
}

// groupDocs folds chunks into documents and applies the document-level
// factors: second chunk, title phrase, thin and archive pages, freshness.
func groupDocs(cands []*candidate, pq *parsedQuery, q SearchQuery, rk Ranking, now time.Time) []*docHit {
	byDoc := map[int64]*docHit{}
	var docs []*docHit
	for _, c := range cands {
		d := byDoc[c.docID]
		if d == nil {
			d = &docHit{docID: c.docID}
			byDoc[c.docID] = d
			docs = append(docs, d)
		}
		d.chunks = append(d.chunks, c)
	}
	for _, d := range docs {
		sort.SliceStable(d.chunks, func(i, j int) bool { return d.chunks[i].score > d.chunks[j].score })
		first := d.chunks[0]
		d.score = first.score
		if len(d.chunks) > 1 {
			d.score += rk.SecondChunk * d.chunks[1].score
		}
		d.explain = append(d.explain, fmt.Sprintf("bm25 %.2f", first.score))
		if len(first.variantOf) > 0 {
			d.explain = append(d.explain, "variants of "+strings.Join(first.variantOf, ", "))
		}
		if first.thin && rk.ThinPenalty > 0 {
			d.score *= rk.ThinPenalty
			d.explain = append(d.explain, "thin page")
		}
		if isArchive(first.url, first.postType) && rk.ArchivePenalty > 0 {
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
			if first := d.chunks[0]; containsSeq(Analyze(first.title, first.lang), pq.Seq) {
				d.score *= 1 + rk.TitlePhraseBonus
				d.explain = append(d.explain, "exact phrase in title")
			}
		}
	}
	if q.Sort == "date" {
		sort.SliceStable(docs, func(i, j int) bool {
			return docs[i].chunks[0].published.After(docs[j].chunks[0].published)
		})
	} else {
		sort.SliceStable(docs, func(i, j int) bool { return docs[i].score > docs[j].score })
	}
	return docs
}

const titlePhraseDocs = 50

// freshness is the date factor of a document.
func freshness(c *candidate, pq *parsedQuery, rk Ranking, now time.Time) float64 {
	w := rk.FreshDefault
	if pq.Temporal {
		w = rk.FreshTemporal
	}
	if w <= 0 {
		return 1
	}
	date := c.published
	if date.IsZero() {
		date = c.modified
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
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	if u.Query().Has("s") || u.Query().Has("cat") || u.Query().Has("tag") || u.Query().Has("author") || u.Query().Has("feed") {
		return true
	}
	return archivePath.MatchString(u.Path)
}

// loadTexts fetches the text of the chunks that become hits.
func (db *DB) loadTexts(ctx context.Context, docs []*docHit, perDoc int) error {
	byID := map[int64]*candidate{}
	var args []any
	for _, d := range docs {
		for i, c := range d.chunks {
			if i >= perDoc {
				break
			}
			if c.text == "" {
				byID[c.chunkID] = c
				args = append(args, c.chunkID)
			}
		}
	}
	for len(args) > 0 {
		batch := args[:min(len(args), 500)]
		args = args[len(batch):]
		ph := strings.TrimSuffix(strings.Repeat("?,", len(batch)), ",")
		rows, err := db.read.QueryContext(ctx,
			`SELECT id, start, end, text, heading_path, content_hash FROM chunks WHERE id IN (`+ph+`)`, batch...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var start, end int
			var text, hp, hash string
			if err := rows.Scan(&id, &start, &end, &text, &hp, &hash); err != nil {
				rows.Close()
				return err
			}
			if c := byID[id]; c != nil {
				c.start, c.end, c.text, c.headingPath, c.contentHash = start, end, text, hp, hash
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// evidenceHits is how many hits get matched terms and a highlighted
// snippet; later ones (deep result lists, evaluation runs) get the
// passage's opening words.
const evidenceHits = 20

func makeHit(d *docHit, c *candidate, pq *parsedQuery, withEvidence bool) Hit {
	h := Hit{
		DocID: c.docID, URL: c.url, Title: c.title, Type: c.postType,
		Published: c.published, Modified: c.modified, Score: round3(d.score),
		Passage:     Passage{Text: c.text, Start: c.start, End: c.end},
		HeadingPath: parseList(c.headingPath), ChunkID: c.chunkID, ChunkType: c.chunkType,
		CodeLang: c.codeLang, ContentHash: c.contentHash, Thin: c.thin, Source: "keyword",
		Start: c.start, End: c.end, MatchExplain: d.explain,
	}
	if h.HeadingPath == nil {
		h.HeadingPath = []string{}
	}
	if c != d.chunks[0] {
		h.Score = round3(c.score)
	}
	terms := make([]string, 0, len(pq.Terms))
	for _, t := range pq.Terms {
		if t.Weight > 0 && t.Source != "feedback" {
			terms = append(terms, t.Term)
		}
	}
	if !withEvidence {
		h.MatchedTerms = []string{}
		_, h.Snippet = evidence(nil, "", c.text, c.lang, 240)
		return h
	}
	meta := c.title + "\n" + strings.Join(h.HeadingPath, " ") + "\n" + strings.Join(parseList(c.cats), " ") + " " +
		strings.Join(parseList(c.tags), " ")
	h.MatchedTerms, h.Snippet = evidence(terms, meta, c.text, c.lang, 240)
	return h
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func (f Filters) sql(where []string, args []any) ([]string, []any) {
	if len(f.PostType) > 0 {
		ph := strings.TrimSuffix(strings.Repeat("?,", len(f.PostType)), ",")
		where = append(where, `d.post_type IN (`+ph+`)`)
		for _, t := range f.PostType {
			args = append(args, t)
		}
	}
	if f.ChunkType != "" {
		where = append(where, `c.type = ?`)
		args = append(args, f.ChunkType)
	}
	if f.CodeLang != "" {
		where = append(where, `c.code_lang = ?`)
		args = append(args, strings.ToLower(f.CodeLang))
	}
	if f.Lang != "" {
		where = append(where, `(d.lang = ? OR d.lang LIKE ? || '-%')`)
		args = append(args, f.Lang, f.Lang)
	}
	if f.Category != "" {
		where = append(where, `EXISTS (SELECT 1 FROM json_each(d.categories) WHERE lower(value) = lower(?))`)
		args = append(args, f.Category)
	}
	if f.Tag != "" {
		where = append(where, `EXISTS (SELECT 1 FROM json_each(d.tags) WHERE lower(value) = lower(?))`)
		args = append(args, f.Tag)
	}
	if !f.After.IsZero() {
		where = append(where, `d.published >= ?`)
		args = append(args, fmtTime(f.After))
	}
	if !f.Before.IsZero() {
		where = append(where, `d.published != '' AND d.published < ?`)
		args = append(args, fmtTime(f.Before))
	}
	return where, args
}

// matched returns the terms that occur in text, analyzed in lang.
func matched(terms []string, text, lang string) []string {
	m, _ := evidence(terms, text, "", lang, 0)
	return m
}

// evidence returns the terms found in meta or text, in query order, and a
// snippet of about n bytes of text around the first match, matched words
// wrapped in ** so a reader sees why the passage matched. One pass over
// the words serves both.
func evidence(terms []string, meta, text, lang string, n int) ([]string, string) {
	want := make(map[string]bool, len(terms))
	for _, t := range terms {
		want[t] = true
	}
	l := languageOf(lang)
	initials, fast := initialsOf(terms), l.suffixOnly()
	have := map[string]bool{}
	note := func(raw string) bool {
		hit := false
		scanTokens(raw, func(w string) {
			t, ok := l.tokenFor(w, initials, fast)
			if !ok || t.Term == "" {
				return
			}
			for _, x := range append([]string{t.Term, t.Surface}, t.Parts...) {
				if want[x] {
					have[x] = true
					hit = true
				}
			}
		})
		return hit
	}
	note(meta)
	words := strings.Fields(text)
	hits := make([]bool, len(words))
	first := -1
	for i, w := range words {
		if len(want) > 0 && note(w) {
			hits[i] = true
			if first < 0 {
				first = i
			}
		}
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
	for i := start; i < len(words) && b.Len() < n; i++ {
		if i > start {
			b.WriteByte(' ')
		}
		if hits[i] {
			b.WriteString("**" + words[i] + "**")
		} else {
			b.WriteString(words[i])
		}
		if i == len(words)-1 {
			return out, b.String()
		}
	}
	if len(words) > 0 {
		b.WriteString("…")
	}
	return out, b.String()
}
