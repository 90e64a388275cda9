package search

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/askwp/askwpd/search/index"
)

// HybridQuery fuses a vector search into a keyword search. It is
// Query.Hybrid; nil means keyword only.
type HybridQuery struct {
	// Vector is the query's embedding, from the model the stored vectors
	// came from.
	Vector []float32
	// Alpha weighs the two rankings as Weaviate's hybrid search does: 0
	// is keyword only, 1 is vector only.
	Alpha float64
	// Fusion is "alpha" (default): min-max normalized scores mixed by
	// Alpha; or "rrf": reciprocal rank fusion, each list's 1/(60+rank)
	// weighted by 1-Alpha and Alpha.
	Fusion string

	// trace records, per chunk the fusion touched, where it came from;
	// searchHybrid copies it into the hits.
	trace map[int64]fusedFrom
}

// fusedFrom is a chunk's share in a fused ranking.
type fusedFrom struct {
	keyword, vector bool
	kw, sim         float64 // normalized keyword score, cosine similarity
}

// rrfK is reciprocal rank fusion's constant (Cormack et al., 2009).
const rrfK = 60

// searchHybrid is search that also marks each hit's Source ("keyword",
// "hybrid" when both rankings found the chunk, "embedding" when only the
// vector search did) and says so in MatchExplain.
func (ix *Index) searchHybrid(ctx context.Context, q Query) (*Result, error) {
	h := *q.Hybrid
	h.trace = map[int64]fusedFrom{}
	q.Hybrid = &h
	res, err := ix.search(ctx, q)
	if err != nil {
		return nil, err
	}
	for i := range res.Hits {
		hit := &res.Hits[i]
		f, ok := h.trace[hit.ChunkID]
		if !ok || !f.vector {
			continue
		}
		hit.Source = "embedding"
		if f.keyword {
			hit.Source = "hybrid"
		}
		// MatchExplain is shared by a document's hits; append to a copy.
		hit.MatchExplain = append(slices.Clip(hit.MatchExplain),
			fmt.Sprintf("%s: vector similarity %.2f, keyword %.2f, alpha %.2f", fusionName(h.Fusion), f.sim, f.kw, h.Alpha))
	}
	return res, nil
}

func fusionName(f string) string {
	if f == "rrf" {
		return "rrf"
	}
	return "hybrid"
}

// fuseVectors adds the chunks nearest to the query vector to the keyword
// candidates and rescores the union. The vector search runs under the
// same strict filters. Date-sorted searches stay keyword only: every
// vector search returns its k nearest, related or not, and a date order
// would show the unrelated ones as readily as the rest.
func (ix *Index) fuseVectors(ctx context.Context, cands []*candidate, q Query, rk Ranking) ([]*candidate, error) {
	h := q.Hybrid
	if h == nil || len(h.Vector) == 0 || h.Alpha <= 0 || q.Sort == "date" {
		return cands, nil
	}
	k := max(rk.Candidates, q.Limit*q.PerDoc*3)
	vcs, sims, err := ix.vectorCandidates(ctx, h.Vector, q.Filters, k)
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	if len(vcs) == 0 {
		return cands, nil
	}
	alpha := min(h.Alpha, 1)

	byID := make(map[int64]*candidate, len(cands)+len(vcs))
	kwRank := make(map[int64]int, len(cands))
	kwOrder := slices.Clone(cands)
	sort.SliceStable(kwOrder, func(i, j int) bool { return kwOrder[i].score > kwOrder[j].score })
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, c := range kwOrder {
		byID[c.chunkID] = c
		kwRank[c.chunkID] = i + 1
		lo, hi = min(lo, c.score), max(hi, c.score)
	}
	kwNorm := func(c *candidate) float64 { return minMax(c.score, lo, hi) }
	vlo, vhi := math.Inf(1), math.Inf(-1)
	for _, s := range sims {
		vlo, vhi = min(vlo, s), max(vhi, s)
	}
	vecRank := make(map[int64]int, len(vcs))
	vecNorm := make(map[int64]float64, len(vcs))
	out := cands
	for i, vc := range vcs {
		vecRank[vc.chunkID] = i + 1
		vecNorm[vc.chunkID] = minMax(sims[i], vlo, vhi)
		if _, ok := byID[vc.chunkID]; !ok {
			byID[vc.chunkID] = vc
			out = append(out, vc)
		}
	}
	simOf := make(map[int64]float64, len(vcs))
	for i, vc := range vcs {
		simOf[vc.chunkID] = sims[i]
	}
	for _, c := range out {
		kr, inKw := kwRank[c.chunkID]
		vr, inVec := vecRank[c.chunkID]
		f := fusedFrom{keyword: inKw, vector: inVec, sim: simOf[c.chunkID]}
		if inKw {
			f.kw = kwNorm(c)
		}
		if h.Fusion == "rrf" {
			s := 0.0
			if inKw {
				s += (1 - alpha) / float64(rrfK+kr)
			}
			if inVec {
				s += alpha / float64(rrfK+vr)
			}
			c.score = s
		} else {
			c.score = (1-alpha)*f.kw + alpha*vecNorm[c.chunkID]
		}
		if h.trace != nil {
			h.trace[c.chunkID] = f
		}
	}
	return out, nil
}

// minMax maps x from [lo, hi] to [0, 1]; a list of equal scores is all 1.
func minMax(x, lo, hi float64) float64 {
	if hi <= lo {
		return 1
	}
	return (x - lo) / (hi - lo)
}

// vectorCandidates returns the k chunks nearest to vec that pass the
// filters, nearest first, with their cosine similarity. The store ranks
// the vectors; the filters are the index's, on the chunks it holds.
func (ix *Index) vectorCandidates(ctx context.Context, vec []float32, f Filters, k int) ([]*candidate, []float64, error) {
	m := ix.mem
	slotOf := func(id int64) (*index.Slot, index.Kind, bool) {
		m.RLock()
		defer m.RUnlock()
		s, ok := m.SlotOfChunk(id)
		if !ok {
			return nil, index.Kind{}, false
		}
		sl := *m.Slot(s)
		return &sl, m.Kind(&sl), true
	}
	var keep func(int64) bool
	if !f.empty() {
		keep = func(id int64) bool {
			sl, k, ok := slotOf(id)
			return ok && f.match(sl.Doc, k)
		}
	}
	near, err := ix.db.NearestChunks(ctx, vec, k, keep)
	if err != nil {
		return nil, nil, err
	}
	var (
		out  []*candidate
		sims []float64
	)
	for _, n := range near {
		// A chunk the index does not hold (written a moment ago by another
		// process) waits for the reload that brings its document in.
		if sl, k, ok := slotOf(n.ChunkID); ok {
			c := newCandidate(sl, k, 0)
			out = append(out, &c)
			sims = append(sims, n.Similarity)
		}
	}
	return out, sims, nil
}
