package store

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
)

// fieldStats are the index's average column lengths, for BM25F.
type fieldStats struct {
	gen                            int64
	n                              int
	avgTitle, avgKeywords, avgBody float64
}

func (db *DB) fieldStats(ctx context.Context, mem *memIndex) (fieldStats, error) {
	st := db.search()
	if mem != nil {
		return mem.fieldStats(), nil
	}
	gen := indexGen.Load()
	st.mu.Lock()
	fs := st.fields
	st.mu.Unlock()
	if fs.n > 0 && fs.gen == gen {
		return fs, nil
	}
	n, err := db.chunkCount(ctx, nil)
	if err != nil {
		return fs, err
	}
	rows, err := db.read.QueryContext(ctx, `SELECT col, sum(cnt) FROM chunks_vocab_col GROUP BY col`)
	if err != nil {
		return fs, err
	}
	defer rows.Close()
	fs = fieldStats{gen: gen, n: max(n, 1)}
	for rows.Next() {
		var col string
		var cnt float64
		if err := rows.Scan(&col, &cnt); err != nil {
			return fs, err
		}
		switch col {
		case "title":
			fs.avgTitle = cnt / float64(fs.n)
		case "keywords":
			fs.avgKeywords = cnt / float64(fs.n)
		case "body":
			fs.avgBody = cnt / float64(fs.n)
		}
	}
	if err := rows.Err(); err != nil {
		return fs, err
	}
	st.mu.Lock()
	st.fields = fs
	st.mu.Unlock()
	return fs, nil
}

// rerank rescores the best RerankDepth chunks with BM25F (per-field length
// normalization, tunable k1 and b) plus a proximity bonus for query terms
// that occur next to each other, then sorts them again. FTS5's bm25() has
// fixed k1 and b and one length over all columns; this is where the
// parameters that matter can be tuned.
func (db *DB) rerank(ctx context.Context, pq *parsedQuery, rk Ranking, df map[string]int, cands []*candidate) error {
	depth := min(rk.RerankDepth, len(cands))
	if depth == 0 {
		return nil
	}
	top := cands[:depth]
	fs, err := db.fieldStats(ctx, pq.mem)
	if err != nil {
		return err
	}
	if err := db.loadCandidateTexts(ctx, top); err != nil {
		return err
	}
	weights := map[string]float64{}
	var missing []string
	for _, t := range pq.Terms {
		if t.Weight <= 0 {
			continue
		}
		weights[t.Term] += float64(t.Weight)
		if _, ok := df[t.Term]; !ok {
			missing = append(missing, t.Term)
		}
	}
	if len(missing) > 0 {
		more, err := db.termDocs(ctx, pq.mem, missing)
		if err != nil {
			return err
		}
		for k, v := range more {
			df[k] = v
		}
	}
	idf := map[string]float64{}
	for t := range weights {
		d := float64(df[t])
		idf[t] = math.Log(1 + (float64(fs.n)-d+0.5)/(d+0.5))
	}
	// A query word found nowhere on the site has weight 0, but the site
	// may hold its variants ("partner" where pages say "partnership").
	unseen := map[string]float64{}
	for _, t := range pq.unseenWords() {
		if _, ok := weights[t]; !ok {
			unseen[t] = 1
		}
	}
	variants, err := db.variantPrefixes(ctx, pq, weights, unseen, fs.n, rk)
	if err != nil {
		return err
	}
	type rdoc struct {
		c               *candidate
		title, kw, body map[string]float64
		exact           map[string]float64
		nt, nk, nb      float64
		bodyTerms       []string
		// variant counts the words of each column (title, keywords,
		// body) by the query prefix they start with.
		variant map[string]*[3]float64
	}
	docs2cands := func(ds []*rdoc, f func(*rdoc) (map[string]float64, int)) []qlDoc {
		out := make([]qlDoc, len(ds))
		for i, d := range ds {
			tf, n := f(d)
			for t, c := range d.title {
				tf[t] += c
			}
			out[i] = qlDoc{c: d.c, tf: tf, n: n}
		}
		return out
	}
	// Known terms matched exactly, as in the full-text query.
	useExact := rk.ExactWeight > 0 && pq.liveTerms() <= rk.ExactMaxTerms
	surface := map[string]string{}
	for _, t := range pq.Terms {
		if t.Weight > 0 && t.Source != "feedback" {
			surface[t.Term] = t.Surface
		}
	}
	count := func(terms []string) map[string]float64 {
		m := make(map[string]float64, len(terms))
		for _, t := range terms {
			m[t]++
		}
		return m
	}
	// Only the query's terms are scored; feedback needs every term.
	var initials termInitials
	if rk.FeedbackDocs == 0 || rk.FeedbackTerms == 0 || rk.FeedbackLambda == 0 {
		var qterms []string
		for t := range weights {
			qterms = append(qterms, t)
		}
		initials = initialsOf(qterms, pq.Seq)
	}
	docs := make([]*rdoc, len(top))
	for i, c := range top {
		title := analyzeIndexed(c.title, c.lang, nil)
		kw := analyzeIndexed(strings.Join(parseList(c.headingPath), " ")+" "+strings.Join(parseList(c.cats), " ")+" "+
			strings.Join(parseList(c.tags), " "), c.lang, nil)
		body := analyzeIndexed(c.text, c.lang, initials)
		var exact map[string]float64
		if useExact {
			exact = count(strings.Fields(exactTerms(c.title+" "+strings.Join(parseList(c.cats), " ")+" "+
				strings.Join(parseList(c.tags), " "), c.lang)))
		}
		docs[i] = &rdoc{
			c: c, title: count(title), kw: count(kw), body: count(body), bodyTerms: body, exact: exact,
			nt: 1 - rk.BTitle + rk.BTitle*float64(len(title))/max(fs.avgTitle, 1),
			nk: 1 - rk.BBody + rk.BBody*float64(len(kw))/max(fs.avgKeywords, 1),
			nb: 1 - rk.BBody + rk.BBody*float64(len(body))/max(fs.avgBody, 1),
		}
		if len(variants.idf) > 0 {
			docs[i].variant = variants.count(docs[i].title, docs[i].kw, docs[i].body)
		}
	}
	variant := func(d *rdoc, t string, w float64) float64 {
		n := d.variant[variants.prefix[t]]
		if n == nil {
			return 0
		}
		f := rk.TitleWeight*n[0]/d.nt + rk.KeywordWeight*n[1]/d.nk + rk.BodyWeight*n[2]/d.nb
		return rk.VariantWeight * w * variants.idf[variants.prefix[t]] * f * (rk.K1 + 1) / (f + rk.K1)
	}
	score := func(d *rdoc, weights map[string]float64) float64 {
		var s float64
		for t, w := range weights {
			f := rk.TitleWeight*d.title[t]/d.nt + rk.KeywordWeight*d.kw[t]/d.nk + rk.BodyWeight*d.body[t]/d.nb
			if d.exact != nil && surface[t] != "" {
				f += rk.ExactWeight * d.exact[surface[t]] / d.nt
			}
			if f > 0 {
				s += w * idf[t] * f * (rk.K1 + 1) / (f + rk.K1)
			} else {
				s += variant(d, t, w)
			}
		}
		for t, w := range unseen {
			s += variant(d, t, w)
		}
		if rk.Proximity > 0 && len(pq.Seq) > 1 {
			s += rk.Proximity * proximity(d.bodyTerms, pq.Seq, idf, rk.ProximityWindow)
		}
		if rk.Coord > 0 {
			var got, all float64
			for t, w := range weights {
				all += w * idf[t]
				if d.title[t]+d.kw[t]+d.body[t] > 0 {
					got += w * idf[t]
				}
			}
			if all > 0 {
				s *= math.Pow(got/all, rk.Coord)
			}
		}
		return s
	}
	rescore := func(weights map[string]float64) {
		for _, d := range docs {
			d.c.score = score(d, weights)
		}
		sort.SliceStable(docs, func(i, j int) bool { return docs[i].c.score > docs[j].c.score })
	}
	rescore(weights)
	if rk.QLMix > 0 {
		if err := db.fuseQL(ctx, weights, fs, rk, docs2cands(docs, func(d *rdoc) (map[string]float64, int) { return d.body, len(d.bodyTerms) + int(sum(d.title)) })); err != nil {
			return err
		}
		sort.SliceStable(docs, func(i, j int) bool { return docs[i].c.score > docs[j].c.score })
	}
	if rk.FeedbackDocs > 0 && rk.FeedbackTerms > 0 && rk.FeedbackLambda > 0 {
		expanded, err := db.rm3(ctx, weights, idf, fs.n, rk, func(yield func(score float64, body map[string]float64, n int) bool) {
			for i, d := range docs {
				if i >= rk.FeedbackDocs || !yield(d.c.score, d.body, len(d.bodyTerms)) {
					return
				}
			}
		})
		if err != nil {
			return err
		}
		if expanded != nil {
			rescore(expanded)
		}
	}
	for i, d := range docs {
		top[i] = d.c
		// Which query words the chunk matched only through a variant, for
		// match_explain.
		for t := range joined(weights, unseen) {
			if d.title[t]+d.kw[t]+d.body[t] == 0 && d.variant[variants.prefix[t]] != nil {
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

// variantSet holds the query terms' prefixes for Ranking.VariantPrefix.
type variantSet struct {
	n      int                // runes in a prefix
	prefix map[string]string  // query term → its prefix
	idf    map[string]float64 // prefix → IDF of the words that have it
}

// variantPrefixes finds the prefixes of the query terms long enough to
// have one, with each prefix's IDF from the vocabulary.
func (db *DB) variantPrefixes(ctx context.Context, pq *parsedQuery, weights, unseen map[string]float64, n int, rk Ranking) (variantSet, error) {
	var vs variantSet
	if rk.VariantPrefix <= 0 || rk.VariantWeight <= 0 {
		return vs, nil
	}
	v, err := db.vocabulary(ctx)
	if err != nil {
		return vs, err
	}
	vs.n, vs.prefix, vs.idf = rk.VariantPrefix, map[string]string{}, map[string]float64{}
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
	return vs, nil
}

// literal reports whether t is an identifier or a number, which have no
// variants: wp_enqueue_script is not wp_enqueue_style, nor 10240 10241.
func (t queryTerm) literal() bool {
	return t.Code || literalTerm(t.Term)
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
func (db *DB) unseenHaveVariants(ctx context.Context, pq *parsedQuery, rk Ranking) bool {
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
			var err error
			if v, err = db.vocabulary(ctx); err != nil {
				return false
			}
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

// count tallies a chunk's words, column by column, under the query
// prefixes they start with. Words equal to a query term are counted too,
// but a term the chunk holds never reads its variants.
func (vs variantSet) count(cols ...map[string]float64) map[string]*[3]float64 {
	var out map[string]*[3]float64
	for i, col := range cols {
		for u, c := range col {
			p, ok := runePrefix(u, vs.n)
			if !ok {
				continue
			}
			if _, want := vs.idf[p]; !want {
				continue
			}
			if out == nil {
				out = map[string]*[3]float64{}
			}
			if out[p] == nil {
				out[p] = new([3]float64)
			}
			out[p][i] += c
		}
	}
	return out
}

// rm3 mixes the query with a relevance model estimated from the feedback
// chunks: P(t|R) = Σ_d P(t|d) · score(d)/Σscore. The new weights are
// (1-λ)·q(t) + λ·P(t|R) over the query terms and the FeedbackTerms best
// others, scaled so the query's own terms still weigh about 1 each. idf
// is extended with the new terms.
func (db *DB) rm3(ctx context.Context, weights, idf map[string]float64, n int, rk Ranking,
	feedback func(func(float64, map[string]float64, int) bool)) (map[string]float64, error) {
	var total float64
	feedback(func(s float64, _ map[string]float64, _ int) bool { total += max(s, 0); return true })
	if total <= 0 {
		return nil, nil
	}
	rel := map[string]float64{}
	feedback(func(s float64, body map[string]float64, size int) bool {
		if size == 0 {
			return true
		}
		for t, c := range body {
			rel[t] += c / float64(size) * max(s, 0) / total
		}
		return true
	})
	type tw struct {
		t string
		w float64
	}
	var cand []tw
	for t, w := range rel {
		if _, inQuery := weights[t]; !inQuery && len([]rune(t)) > 2 && !isDigits(t) {
			cand = append(cand, tw{t, w})
		}
	}
	sort.Slice(cand, func(i, j int) bool {
		if cand[i].w != cand[j].w {
			return cand[i].w > cand[j].w
		}
		return cand[i].t < cand[j].t
	})
	if len(cand) > rk.FeedbackTerms {
		cand = cand[:rk.FeedbackTerms]
	}
	if len(cand) == 0 {
		return nil, nil
	}
	var qsum, rsum float64
	for t, w := range weights {
		qsum += w
		rsum += rel[t]
	}
	for _, c := range cand {
		rsum += c.w
	}
	lambda := rk.FeedbackLambda
	out := map[string]float64{}
	scale := qsum // keeps the query's own weights near 1
	for t, w := range weights {
		out[t] = scale * ((1-lambda)*w/qsum + lambda*rel[t]/rsum)
	}
	var keys []string
	for _, c := range cand {
		out[c.t] = scale * lambda * c.w / rsum
		keys = append(keys, c.t)
	}
	df, err := db.termDocs(ctx, nil, keys)
	if err != nil {
		return nil, err
	}
	for _, t := range keys {
		d := float64(df[t])
		idf[t] = math.Log(1 + (float64(n)-d+0.5)/(d+0.5))
	}
	return out, nil
}

// proximity scores pairs of distinct query terms that occur within window
// positions of each other, each pair counted once, weighted by the
// smaller IDF of the two.
func proximity(body, seq []string, idf map[string]float64, window int) float64 {
	if window <= 0 {
		window = 4
	}
	inQuery := map[string]bool{}
	for _, t := range seq {
		inQuery[t] = true
	}
	seen := map[[2]string]bool{}
	var s float64
	for i, a := range body {
		if !inQuery[a] {
			continue
		}
		for j := i + 1; j < len(body) && j <= i+window; j++ {
			b := body[j]
			if !inQuery[b] || b == a {
				continue
			}
			k := [2]string{min(a, b), max(a, b)}
			if seen[k] {
				continue
			}
			seen[k] = true
			s += min(idf[a], idf[b])
		}
	}
	return s
}

// loadCandidateTexts fills in chunk texts for candidates.
func (db *DB) loadCandidateTexts(ctx context.Context, cands []*candidate) error {
	docs := make([]*docHit, 0, len(cands))
	for _, c := range cands {
		docs = append(docs, &docHit{docID: c.docID, chunks: []*candidate{c}})
	}
	return db.loadTexts(ctx, docs, 1)
}

type qlDoc struct {
	c  *candidate
	tf map[string]float64
	n  int
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// fuseQL mixes the BM25 ranking with a Dirichlet-smoothed query-likelihood
// ranking of the same chunks by reciprocal rank: score = (1-m)/(60+r_bm25)
// + m/(60+r_ql). Two lexical models disagree on length and saturation, and
// their fusion is steadier than either.
func (db *DB) fuseQL(ctx context.Context, weights map[string]float64, fs fieldStats, rk Ranking, docs []qlDoc) error {
	var keys []string
	for t := range weights {
		keys = append(keys, t)
	}
	cf, err := db.termCounts(ctx, keys)
	if err != nil {
		return err
	}
	total := (fs.avgTitle + fs.avgBody + fs.avgKeywords) * float64(fs.n)
	if total <= 0 {
		return nil
	}
	mu := rk.QLMu
	ql := make([]float64, len(docs))
	for i, d := range docs {
		for t, w := range weights {
			p := (float64(cf[t]) + 0.5) / total
			ql[i] += w * math.Log((d.tf[t]+mu*p)/(float64(d.n)+mu))
		}
	}
	order := make([]int, len(docs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ql[order[a]] > ql[order[b]] })
	qlRank := make([]int, len(docs))
	for r, i := range order {
		qlRank[i] = r
	}
	// docs arrive sorted by BM25.
	for i, d := range docs {
		d.c.score = 100 * ((1-rk.QLMix)/float64(60+i) + rk.QLMix/float64(60+qlRank[i]))
	}
	return nil
}

// termCounts returns each term's number of occurrences in the index.
func (db *DB) termCounts(ctx context.Context, terms []string) (map[string]int, error) {
	return db.vocabCounts(ctx, "cnt", terms)
}

// vocabCounts reads one fts5vocab count column ("cnt": occurrences, "doc":
// rows containing the term) for the given terms.
func (db *DB) vocabCounts(ctx context.Context, column string, terms []string) (map[string]int, error) {
	out := map[string]int{}
	if len(terms) == 0 {
		return out, nil
	}
	if column != "cnt" && column != "doc" {
		return nil, fmt.Errorf("store: vocab column %q", column)
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(terms)), ",")
	args := make([]any, len(terms))
	for i, t := range terms {
		args[i] = t
	}
	rows, err := db.read.QueryContext(ctx, `SELECT term, `+column+` FROM chunks_vocab WHERE term IN (`+ph+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var n int
		if err := rows.Scan(&t, &n); err != nil {
			return nil, err
		}
		out[t] = n
	}
	return out, rows.Err()
}
