package store

import (
	"context"
	"math"
	"sort"
)

// feedback expands the query with terms from the best chunks (pseudo-
// relevance feedback, RM3-style): each candidate term is weighted by its
// share of each feedback chunk, the chunk's share of the feedback scores,
// and its IDF. It reports whether terms were added.
func (db *DB) feedback(ctx context.Context, pq *parsedQuery, rk Ranking, cands []*candidate) (bool, error) {
	var top []*docHit
	seen := map[int64]bool{}
	for _, c := range cands {
		if seen[c.docID] {
			continue
		}
		seen[c.docID] = true
		top = append(top, &docHit{docID: c.docID, score: c.score, chunks: []*candidate{c}})
		if len(top) == rk.FeedbackDocs {
			break
		}
	}
	if err := db.loadTexts(ctx, top, 1); err != nil {
		return false, err
	}
	inQuery := map[string]bool{}
	for _, t := range pq.Terms {
		inQuery[t.Term] = true
	}
	var total float64
	for _, d := range top {
		total += d.score
	}
	weight := map[string]float64{}
	for _, d := range top {
		c := d.chunks[0]
		terms := Analyze(c.text, c.lang)
		if len(terms) == 0 || total <= 0 {
			continue
		}
		dw := d.score / total / float64(len(terms))
		for _, t := range terms {
			if !inQuery[t] && len([]rune(t)) > 2 && !isDigits(t) {
				weight[t] += dw
			}
		}
	}
	if len(weight) == 0 {
		return false, nil
	}
	keys := make([]string, 0, len(weight))
	for t := range weight {
		keys = append(keys, t)
	}
	df, err := db.termDocs(ctx, keys)
	if err != nil {
		return false, err
	}
	n, err := db.chunkCount(ctx)
	if err != nil {
		return false, err
	}
	type tw struct {
		t string
		w float64
	}
	var ranked []tw
	for t, w := range weight {
		if df[t] < 2 {
			continue
		}
		ranked = append(ranked, tw{t, w * math.Log(1+float64(n)/float64(df[t]))})
	}
	sort.Slice(ranked, func(i, j int) bool {
		if ranked[i].w != ranked[j].w {
			return ranked[i].w > ranked[j].w
		}
		return ranked[i].t < ranked[j].t
	})
	if len(ranked) > rk.FeedbackTerms {
		ranked = ranked[:rk.FeedbackTerms]
	}
	if len(ranked) == 0 {
		return false, nil
	}
	for i := range pq.Terms {
		if pq.Terms[i].Weight > 0 {
			pq.Terms[i].Weight = max(1, rk.FeedbackOrigWeight)
		}
	}
	for _, r := range ranked {
		pq.Terms = append(pq.Terms, queryTerm{Term: r.t, Surface: r.t, Source: "feedback", Weight: 1})
	}
	return true, nil
}
