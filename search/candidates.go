package search

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/askwp/askwpd/search/index"
)

// memPhrase is one scored clause of a query: a term in the stemmed
// columns or in the exact column.
type memPhrase struct {
	term  string
	exact bool
	group int // for an AND query: the phrases of a group are OR-ed
}

// memPhrases turns the query into its scored clauses: each live term in
// the stemmed columns (repeated by its weight), and its surface form in
// the exact column when exact is set. For an AND query, groups numbers
// the terms a chunk must all match (a synonym joins its word's group).
func (pq *parsedQuery) memPhrases(exact bool) (ps []memPhrase, groups int) {
	if pq.requireAll {
		idx := map[string]int{}
		for _, t := range pq.Terms {
			if t.Weight <= 0 {
				continue
			}
			g, seen := idx[t.group()]
			if !seen {
				if len(idx) == 32 {
					// A mask of 32 bits: more groups cannot all be required.
					return nil, 0
				}
				g = len(idx)
				idx[t.group()] = g
			}
			ps = append(ps, memPhrase{term: t.Term, group: g})
		}
		return ps, len(idx)
	}
	for _, t := range pq.Terms {
		if t.Weight <= 0 {
			continue
		}
		for i := 0; i < t.Weight; i++ {
			ps = append(ps, memPhrase{term: t.Term})
		}
		if exact && t.Surface != "" {
			ps = append(ps, memPhrase{term: t.Surface, exact: true})
		}
	}
	return ps, 0
}

type memScratch struct {
	score   []float64
	mask    []uint32
	touched []uint32
	// hits are the touched chunks that pass, kept for the next pass:
	// made anew, BenchmarkCandidates allocated five times the bytes and
	// took 65-89 % longer (with binary.Uvarint in the decoder).
	hits []memHit
}

// clear zeroes what a pass set, for the next.
func (sc *memScratch) clear() {
	for _, s := range sc.touched {
		sc.score[s], sc.mask[s] = 0, 0
	}
	sc.touched = sc.touched[:0]
}

type memHit struct {
	slot  uint32
	score float64
}

// bm25 constants: the classic k1 and b, with one length over all columns.
const bm25K1, bm25B = 1.2, 0.75

// matchChunks scores the chunks matching ps with BM25 (k1 1.2, b 0.75,
// one length over all columns, each column's term frequency weighted),
// keeps those that pass the filters strictly (and, when allow is set,
// are in it), and returns the best k.
func (ix *Index) matchChunks(ps []memPhrase, groups int, q Query, rk Ranking, k int, allow map[uint32]bool) []*candidate {
	// A free scratch first, the lock second: a search waiting for
	// scratch space must not hold up a writer.
	sc := <-ix.scratch
	defer func() { ix.scratch <- sc }()
	m := ix.mem
	m.RLock()
	defer m.RUnlock()
	if m.Live() == 0 || len(ps) == 0 {
		return nil
	}
	if n := m.NumSlots(); len(sc.score) < n {
		sc.score = make([]float64, n+n/4)
		sc.mask = make([]uint32, len(sc.score))
	}
	defer sc.clear()
	var total int64
	for _, n := range m.ColTotal() {
		total += n
	}
	b := bm25Pass{m: m, sc: sc, nRow: float64(m.Live()), weights: [4]float64{rk.TitleWeight, rk.KeywordWeight, rk.BodyWeight, rk.ExactWeight}}
	b.avgdl = float64(total) / b.nRow
	for _, p := range ps {
		if t := m.Term(p.term); t != nil {
			b.score(t, p)
		}
	}
	hits := b.keep(groups, q, allow)
	hits = bestK(hits, k, hitOrder(m, q.Sort == "date"))
	out := make([]*candidate, len(hits))
	// One allocation for the candidates: a search makes a hundred.
	all := make([]candidate, len(hits))
	for i, h := range hits {
		sl := m.Slot(h.slot)
		all[i] = newCandidate(sl, m.Kind(sl), h.score)
		all[i].slot = h.slot
		out[i] = &all[i]
	}
	return out
}

// bm25Pass is one candidate pass over the index, under its read lock.
type bm25Pass struct {
	m           *index.Index
	sc          *memScratch
	nRow, avgdl float64
	weights     [4]float64
}

// score adds clause p's BM25 over term t's postings to the chunks' scores.
func (b *bm25Pass) score(t *index.Term, p memPhrase) {
	stem, exact := b.m.Counts(t)
	nHit := float64(stem)
	lo, hi, cols := 0, 3, uint8(index.Stemmed)
	if p.exact {
		nHit, lo, hi, cols = float64(exact), 3, 4, index.Exact
	}
	if nHit == 0 {
		return
	}
	idf := bm25IDF(b.nRow, nHit)
	bit := uint32(1) << uint(p.group)
	sc := b.sc
	it := t.Postings()
	for ps := it.Next(); len(ps) > 0; ps = it.Next() {
		for _, p := range ps {
			if p.Mask&cols == 0 {
				continue
			}
			size, live := b.m.Len(p.Slot)
			if !live {
				continue
			}
			var freq float64
			for c := lo; c < hi; c++ {
				freq += b.weights[c] * float64(p.TF[c])
			}
			if sc.mask[p.Slot] == 0 {
				sc.touched = append(sc.touched, p.Slot)
			}
			sc.mask[p.Slot] |= bit
			sc.score[p.Slot] += idf * (freq * (bm25K1 + 1)) / (freq + bm25K1*(1-bm25B+bm25B*float64(size)/b.avgdl))
		}
	}
}

// keep returns the scored chunks that match all groups (of an AND
// query), allow and the filters.
func (b *bm25Pass) keep(groups int, q Query, allow map[uint32]bool) []memHit {
	need := uint32(1)<<uint(groups) - 1
	if groups == 0 {
		need = 1
	}
	sc := b.sc
	hits := sc.hits[:0]
	for _, s := range sc.touched {
		if groups > 0 && sc.mask[s] != need {
			continue
		}
		if allow != nil && !allow[s] {
			continue
		}
		if sl := b.m.Slot(s); !q.Filters.empty() && !q.Filters.match(sl.Doc, b.m.Kind(sl)) {
			continue
		}
		hits = append(hits, memHit{s, sc.score[s]})
	}
	if cap(hits) <= 1<<16 {
		// A query of common words only may touch most of a big site's
		// chunks: that slice is not kept.
		sc.hits = hits[:0]
	}
	return hits
}

// hitOrder orders hits best first, or newest first by date. Call with
// m's read lock held.
func hitOrder(m *index.Index, byDate bool) func(a, b memHit) bool {
	return func(a, b memHit) bool {
		sa, sb := m.Slot(a.slot), m.Slot(b.slot)
		if byDate {
			if pa, pb := sa.Doc.Published, sb.Doc.Published; !pa.Equal(pb) {
				return pa.After(pb)
			}
		}
		if a.score != b.score {
			return a.score > b.score
		}
		// Ties go by URL, which every cluster node shares, where chunk
		// ids are each store's own; a page's chunks are stored in order,
		// so within a page the ids order them the same on every node.
		if sa.Doc != sb.Doc && sa.Doc.URL != sb.Doc.URL {
			return sa.Doc.URL < sb.Doc.URL
		}
		return sa.ChunkID < sb.ChunkID
	}
}

// bm25IDF is the inverse document frequency of a term held by nHit of n
// chunks, floored just above 0 so a term in most chunks still counts.
func bm25IDF(n, nHit float64) float64 {
	idf := math.Log((n - nHit + 0.5) / (nHit + 0.5))
	if idf <= 0 {
		idf = 1e-6
	}
	return idf
}

func newCandidate(sl *index.Slot, k index.Kind, score float64) candidate {
	return candidate{chunkID: sl.ChunkID, doc: sl.Doc, score: score, chunkType: k.Type, codeLang: k.CodeLang}
}

// bestK returns the k best of hs, best first. A common word matches tens
// of thousands of chunks; a heap of k keeps the selection O(n log k).
func bestK(hs []memHit, k int, better func(a, b memHit) bool) []memHit {
	if len(hs) > k && k > 0 {
		// A heap with the worst of the best k at its root.
		h := hs[:k]
		worse := func(i, j int) bool { return better(h[j], h[i]) }
		down := func(i int) {
			for {
				w, l, r := i, 2*i+1, 2*i+2
				if l < len(h) && worse(l, w) {
					w = l
				}
				if r < len(h) && worse(r, w) {
					w = r
				}
				if w == i {
					return
				}
				h[i], h[w] = h[w], h[i]
				i = w
			}
		}
		for i := len(h)/2 - 1; i >= 0; i-- {
			down(i)
		}
		for _, x := range hs[k:] {
			if better(x, h[0]) {
				h[0] = x
				down(0)
			}
		}
		hs = h
	} else if k <= 0 {
		return nil
	}
	sort.Slice(hs, func(i, j int) bool { return better(hs[i], hs[j]) })
	return hs
}

// match reports whether a chunk of document d, of kind k, passes the
// filters.
func (f Filters) match(d *index.Doc, k index.Kind) bool {
	if f.Docs != nil && !f.Docs[d.ID] {
		return false
	}
	if len(f.PostType) > 0 && !containsString(f.PostType, d.PostType) {
		return false
	}
	if f.ChunkType != "" && k.Type != f.ChunkType {
		return false
	}
	if f.CodeLang != "" && k.CodeLang != strings.ToLower(f.CodeLang) {
		return false
	}
	// A language filter matches its regional variants: "en" is "en-GB".
	if f.Lang != "" && d.Lang != f.Lang &&
		!(len(d.Lang) > len(f.Lang) && d.Lang[len(f.Lang)] == '-' && strings.EqualFold(d.Lang[:len(f.Lang)], f.Lang)) {
		return false
	}
	// Category and tag names match whatever their case: "news" is "News",
	// "ünïcode" is "ÜNÏCODE".
	if f.Category != "" && !containsString(d.CatSet, strings.ToLower(f.Category)) {
		return false
	}
	if f.Tag != "" && !containsString(d.TagSet, strings.ToLower(f.Tag)) {
		return false
	}
	// Dates compare to the second, as stored; an undated page is neither
	// after nor before anything.
	if !f.After.IsZero() && (d.Published.IsZero() || d.Published.Before(f.After.Truncate(time.Second))) {
		return false
	}
	if !f.Before.IsZero() && (d.Published.IsZero() || !d.Published.Before(f.Before.Truncate(time.Second))) {
		return false
	}
	return true
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
