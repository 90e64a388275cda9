package search

import (
	"context"
	"math"
	"sort"
	"strings"

	"github.com/askwp/askwpd/analysis"

	"github.com/askwp/askwpd/search/index"
)

// rerank rescores the best RerankDepth chunks with BM25F (per-field length
// normalization, tunable k1 and b) plus a proximity bonus for query terms
// that occur near each other, then sorts them again. The candidate query's
// BM25 has fixed k1 and b and one length over all columns; this is where
// the parameters that matter can be tuned, on a few chunks' text.
func (ix *Index) rerank(ctx context.Context, pq *parsedQuery, rk Ranking, df map[string]int, cands []*candidate) error {
	depth := min(rk.RerankDepth, len(cands))
	if depth == 0 {
		return nil
	}
	top := cands[:depth]
	if err := ix.loadTexts(ctx, top); err != nil {
		return err
	}
	r := ix.newReranker(pq, rk, df)
	// Most chunks' counts come from the index's postings, and only the
	// words proximity needs are looked for in their text; the others
	// (rerankcols.go says which) are analyzed whole, as they all were.
	docs := ix.fromPostings(r, top)
	for i, c := range top {
		if docs[i] == nil {
			docs[i] = r.analyze(c)
		}
		c.score = r.score(docs[i])
	}
	sort.SliceStable(docs, func(i, j int) bool { return docs[i].c.score > docs[j].c.score })
	for i, d := range docs {
		top[i] = d.c
		// Which query words the chunk matched only through a variant, for
		// match_explain.
		for t := range joined(r.weights, r.unseen) {
			if i := r.index[t]; d.title[i]+d.kw[i]+d.body[i] == 0 && d.variant[r.variants.prefix[t]] != nil {
				d.c.variantOf = append(d.c.variantOf, t)
			}
		}
		sort.Strings(d.c.variantOf)
	}
	// Candidates below the rerank depth keep their order, under the
	// reranked ones.
	floor := top[len(top)-1].score
	for i, c := range cands[depth:] {
		c.score = floor * math.Pow(0.999, float64(i+1))
	}
	return nil
}

// reranker holds what scoring a query's chunks needs.
type reranker struct {
	an      *analysis.Analyzer
	pq      *parsedQuery
	rk      Ranking
	fs      index.FieldStats
	weights map[string]float64 // query term → weight
	idf     map[string]float64
	unseen  map[string]float64 // query words found nowhere, scored by variants only
	// order lists weights' terms, then unseen's, in query order: a score
	// summed in map order differed in its last bits from run to run, and
	// near-ties swapped places.
	order    []string
	index    map[string]int    // term → its place in order
	surface  map[string]string // query term → its surface, for the exact column
	useExact bool
	surfaces map[string]bool // the surfaces of the scored terms, for the exact column
	initials *analysis.Initials
	variants variantSet
	titles   map[*index.Doc]*titleCols
	buf      []string // a chunk's body terms, reused chunk after chunk
	// near maps the query's words in sequence that have an IDF to their
	// place in order, for proximity: a pair with an unweighted word adds
	// nothing.
	near map[string]int
	// pairs is proximity's set of the pairs counted in a chunk.
	pairs []uint64
}

func (ix *Index) newReranker(pq *parsedQuery, rk Ranking, df map[string]int) *reranker {
	r := &reranker{an: ix.an, pq: pq, rk: rk, fs: ix.mem.FieldStats(), weights: map[string]float64{}, idf: map[string]float64{},
		unseen: map[string]float64{}, surface: map[string]string{}, surfaces: map[string]bool{}, titles: map[*index.Doc]*titleCols{},
		index: map[string]int{}}
	var missing []string
	for _, t := range pq.Terms {
		if t.Weight <= 0 {
			continue
		}
		if _, ok := r.weights[t.Term]; !ok {
			r.index[t.Term] = len(r.order)
			r.order = append(r.order, t.Term)
		}
		r.weights[t.Term] += float64(t.Weight)
		r.surface[t.Term] = t.Surface
		r.surfaces[t.Surface] = true
		if _, ok := df[t.Term]; !ok {
			missing = append(missing, t.Term)
		}
	}
	for k, v := range ix.mem.TermDocs(missing) {
		df[k] = v
	}
	for t := range r.weights {
		d := float64(df[t])
		r.idf[t] = math.Log(1 + (float64(r.fs.N)-d+0.5)/(d+0.5))
	}
	// A query word found nowhere on the site has weight 0, but the site
	// may hold its variants ("partner" where pages say "partnership").
	for _, t := range pq.unseenWords() {
		if _, ok := r.weights[t]; !ok && r.unseen[t] == 0 {
			r.unseen[t] = 1
			r.index[t] = len(r.order)
			r.order = append(r.order, t)
		}
	}
	r.variants = ix.variantPrefixes(pq, r.weights, r.unseen, r.fs.N, rk)
	// Known terms matched exactly, as in the candidate query.
	r.useExact = rk.ExactWeight > 0 && pq.liveTerms() <= rk.ExactMaxTerms
	// Only the query's terms are scored: a chunk body's other words need
	// no stemming. A variant shares its term's first letter, so it is
	// stemmed too.
	var qterms []string
	for t := range r.weights {
		qterms = append(qterms, t)
	}
	r.initials = analysis.InitialsOf(qterms, pq.Seq)
	if rk.Proximity > 0 && len(pq.Seq) > 1 {
		r.near = map[string]int{}
		for _, t := range pq.Seq {
			if _, ok := r.weights[t]; ok {
				r.near[t] = r.index[t]
			}
		}
	}
	return r
}

// rdoc is a reranked chunk's analyzed text: the counts of the query's
// terms per column (in reranker.order), and the column lengths.
type rdoc struct {
	c               *candidate
	title, kw, body []float64
	exact           map[string]float64
	nt, nk, nb      float64 // BM25F length normalizations
	// near holds where in the body the query's words in sequence are, in
	// order, for proximity.
	near []termAt
	// variant counts the words of each column (title, keywords, body) by
	// the query prefix they start with.
	variant map[string]*[3]float64
}

// termAt is a term of reranker.order at a place in a chunk's body terms.
type termAt struct{ term, pos int }

// titleCols are a document's title and exact columns, shared by its
// reranked chunks.
type titleCols struct {
	title   []float64
	exact   map[string]float64
	n       int
	variant map[string]*[3]float64
}

// tally counts the query's words among terms, in reranker.order, and the
// words under each query prefix into (*variant)[prefix][col]. Scoring
// reads only those: a chunk has hundreds of other words, a query a few.
func (r *reranker) tally(terms []string, col int, variant *map[string]*[3]float64) []float64 {
	m := make([]float64, len(r.order))
	for _, t := range terms {
		if t == "" {
			continue
		}
		if i, ok := r.index[t]; ok {
			m[i]++
		}
		if len(r.variants.idf) == 0 {
			continue
		}
		p, ok := runePrefix(t, r.variants.n)
		if !ok {
			continue
		}
		if _, want := r.variants.idf[p]; !want {
			continue
		}
		if *variant == nil {
			*variant = map[string]*[3]float64{}
		}
		if (*variant)[p] == nil {
			(*variant)[p] = new([3]float64)
		}
		(*variant)[p][col]++
	}
	return m
}

// docCols analyzes a document's title and exact columns once per query:
// a page's chunks share them.
func (r *reranker) docCols(doc *index.Doc, known string) *titleCols {
	if tc := r.titles[doc]; tc != nil {
		return tc
	}
	// Titles are analyzed whole: their lengths count, and a skipped word's
	// hyphenated compound would not be counted in them.
	title := r.an.IndexTerms(doc.Title, doc.Lang, nil)
	tc := &titleCols{n: len(title)}
	tc.title = r.tally(title, 0, &tc.variant)
	if r.useExact {
		tc.exact = map[string]float64{}
		for _, s := range analysis.ExactTerms(doc.Title+" "+known, doc.Lang) {
			if r.surfaces[s] {
				tc.exact[s]++
			}
		}
	}
	r.titles[doc] = tc
	return tc
}

func (r *reranker) analyze(c *candidate) *rdoc {
	doc, rk := c.doc, r.rk
	known := strings.Join(doc.Categories, " ") + " " + strings.Join(doc.Tags, " ")
	tc := r.docCols(doc, known)
	// Keywords are analyzed whole, as titles are.
	kw := r.an.IndexTerms(strings.Join(c.headingPath, " ")+" "+known, doc.Lang, nil)
	body := r.an.AppendWordTerms(r.buf[:0], c.text, doc.Lang, r.initials)
	words := len(body)
	body = r.an.AppendJoinedTerms(body, c.text, doc.Lang, r.initials)
	d := &rdoc{
		c: c, title: tc.title, exact: tc.exact,
		nt: 1 - rk.BTitle + rk.BTitle*float64(tc.n)/max(r.fs.AvgTitle, 1),
		nk: 1 - rk.BBody + rk.BBody*float64(len(kw))/max(r.fs.AvgKeywords, 1),
		nb: 1 - rk.BBody + rk.BBody*float64(len(body))/max(r.fs.AvgBody, 1),
	}
	// The title's variant counts are the document's; the chunk adds its
	// own columns to a copy.
	for p, n := range tc.variant {
		if d.variant == nil {
			d.variant = map[string]*[3]float64{}
		}
		d.variant[p] = &[3]float64{n[0]}
	}
	d.kw = r.tally(kw, 1, &d.variant)
	d.body = r.tally(body, 2, &d.variant)
	// A joined compound's place in the list is past the words, not where
	// its words are: proximity reads the words alone.
	for i, t := range body[:words] {
		if k, ok := r.near[t]; ok {
			d.near = append(d.near, termAt{k, i})
		}
	}
	// The next chunk's terms reuse the slice.
	r.buf = body
	return d
}

// score is the chunk's BM25F over the query's terms, a term it lacks
// scored by its variants, plus the proximity bonus.
func (r *reranker) score(d *rdoc) float64 {
	rk := r.rk
	var s float64
	for i, t := range r.order {
		w, ok := r.weights[t]
		if !ok {
			s += r.variant(d, t, r.unseen[t])
			continue
		}
		f := rk.TitleWeight*d.title[i]/d.nt + rk.KeywordWeight*d.kw[i]/d.nk + rk.BodyWeight*d.body[i]/d.nb
		if d.exact != nil && r.surface[t] != "" {
			f += rk.ExactWeight * d.exact[r.surface[t]] / d.nt
		}
		if f > 0 {
			s += w * r.idf[t] * f * (rk.K1 + 1) / (f + rk.K1)
		} else {
			s += r.variant(d, t, w)
		}
	}
	if r.near != nil {
		s += rk.Proximity * r.proximity(d.near)
	}
	return s
}

// variant scores query term t on the chunk's words that share its prefix.
func (r *reranker) variant(d *rdoc, t string, w float64) float64 {
	rk := r.rk
	n := d.variant[r.variants.prefix[t]]
	if n == nil {
		return 0
	}
	f := rk.TitleWeight*n[0]/d.nt + rk.KeywordWeight*n[1]/d.nk + rk.BodyWeight*n[2]/d.nb
	return rk.VariantWeight * w * r.variants.idf[r.variants.prefix[t]] * f * (rk.K1 + 1) / (f + rk.K1)
}

// variantSet holds the query terms' prefixes for Ranking.VariantPrefix.
type variantSet struct {
	n      int                // runes in a prefix
	prefix map[string]string  // query term → its prefix
	idf    map[string]float64 // prefix → IDF of the words that have it
	vocab  *vocabulary        // what the IDFs come from, and the words under each prefix
}

// variantPrefixes finds the prefixes of the query terms long enough to
// have one, with each prefix's IDF from the vocabulary.
func (ix *Index) variantPrefixes(pq *parsedQuery, weights, unseen map[string]float64, n int, rk Ranking) variantSet {
	var vs variantSet
	if rk.VariantPrefix <= 0 || rk.VariantWeight <= 0 {
		return vs
	}
	v := ix.vocabulary()
	vs.n, vs.prefix, vs.idf, vs.vocab = rk.VariantPrefix, map[string]string{}, map[string]float64{}, v
	for _, qt := range pq.Terms {
		t := qt.Term
		_, scored := weights[t]
		_, isUnseen := unseen[t]
		if qt.literal() || !scored && !isUnseen {
			continue
		}
		p, ok := runePrefix(t, rk.VariantPrefix)
		if !ok {
			continue
		}
		vs.prefix[t] = p
		if _, done := vs.idf[p]; !done {
			d := float64(min(v.prefixCount(p, rk.VariantPrefix), n))
			vs.idf[p] = math.Log(1 + (float64(n)-d+0.5)/(d+0.5))
		}
	}
	return vs
}

// literal reports whether t is an identifier or a number, which have no
// variants: wp_enqueue_script is not wp_enqueue_style, nor 10240 10241.
func (t queryTerm) literal() bool {
	return t.Code || analysis.Literal(t.Term)
}

// unseenWords are the query's own words found nowhere on the site
// (weight 0), identifiers and numbers aside.
func (pq *parsedQuery) unseenWords() []string {
	var out []string
	for _, t := range pq.Terms {
		if t.Weight == 0 && t.Source == "query" && !t.literal() {
			out = append(out, t.Term)
		}
	}
	return out
}

// unseenHaveVariants reports whether a query word found nowhere on the
// site has variants there: then a short query is reranked too, for them.
func (ix *Index) unseenHaveVariants(pq *parsedQuery, rk Ranking) bool {
	if rk.VariantPrefix <= 0 || rk.VariantWeight <= 0 {
		return false
	}
	var v *vocabulary
	for _, t := range pq.unseenWords() {
		p, ok := runePrefix(t, rk.VariantPrefix)
		if !ok {
			continue
		}
		if v == nil {
			v = ix.vocabulary()
		}
		if v.prefixCount(p, rk.VariantPrefix) > 0 {
			return true
		}
	}
	return false
}

// joined iterates over the keys of both maps.
func joined(a, b map[string]float64) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, m := range []map[string]float64{a, b} {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		}
	}
}

// proximity scores pairs of distinct query terms that occur within
// ProximityWindow positions of each other, each pair counted once,
// weighted by the smaller IDF of the two. near is in body order.
func (r *reranker) proximity(near []termAt) float64 {
	window := r.rk.ProximityWindow
	if window <= 0 {
		window = 4
	}
	// The pairs counted, a bit each, in a set the chunks share.
	n := len(r.order)
	if need := (n*n + 63) / 64; len(r.pairs) < need {
		r.pairs = make([]uint64, need)
	} else {
		clear(r.pairs[:need])
	}
	var s float64
	for i, a := range near {
		for _, b := range near[i+1:] {
			if b.pos > a.pos+window {
				break
			}
			if b.term == a.term {
				continue
			}
			k := min(a.term, b.term)*n + max(a.term, b.term)
			if r.pairs[k/64]&(1<<(k%64)) != 0 {
				continue
			}
			r.pairs[k/64] |= 1 << (k % 64)
			s += min(r.idf[r.order[a.term]], r.idf[r.order[b.term]])
		}
	}
	return s
}
