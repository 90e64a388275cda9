package store

import (
	"context"
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

func (db *DB) fieldStats(ctx context.Context) (fieldStats, error) {
	st := db.search()
	gen := indexGen.Load()
	st.mu.Lock()
	fs := st.fields
	st.mu.Unlock()
	if fs.n > 0 && fs.gen == gen {
		return fs, nil
	}
	n, err := db.chunkCount(ctx)
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
	fs, err := db.fieldStats(ctx)
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
		more, err := db.termDocs(ctx, missing)
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
	k1 := rk.K1
	for _, c := range top {
		title := Analyze(c.title, c.lang)
		kw := Analyze(strings.Join(parseList(c.headingPath), " ")+" "+strings.Join(parseList(c.cats), " ")+" "+
			strings.Join(parseList(c.tags), " "), c.lang)
		body := Analyze(c.text, c.lang)
		tf := func(terms []string) map[string]float64 {
			m := map[string]float64{}
			for _, t := range terms {
				if weights[t] > 0 {
					m[t]++
				}
			}
			return m
		}
		tt, tk, tb := tf(title), tf(kw), tf(body)
		nt := 1 - rk.BTitle + rk.BTitle*float64(len(title))/max(fs.avgTitle, 1)
		nk := 1 - rk.BBody + rk.BBody*float64(len(kw))/max(fs.avgKeywords, 1)
		nb := 1 - rk.BBody + rk.BBody*float64(len(body))/max(fs.avgBody, 1)
		var score float64
		for t, w := range weights {
			f := rk.TitleWeight*tt[t]/nt + rk.KeywordWeight*tk[t]/nk + rk.BodyWeight*tb[t]/nb
			if f > 0 {
				score += w * idf[t] * f * (k1 + 1) / (f + k1)
			}
		}
		if rk.Proximity > 0 && len(pq.Seq) > 1 {
			score += rk.Proximity * proximity(body, pq.Seq, idf, rk.ProximityWindow)
		}
		c.score = score
	}
	sort.SliceStable(top, func(i, j int) bool { return top[i].score > top[j].score })
	// Candidates below the rerank depth keep their order, under the
	// reranked ones.
	floor := top[len(top)-1].score
	for i, c := range cands[depth:] {
		c.score = floor * math.Pow(0.999, float64(i+1))
	}
	return nil
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
