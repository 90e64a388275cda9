package search

import (
	"math"
	"slices"

	"github.com/askwp/askwpd/search/index"
)

// maxRerankPostings bounds the bytes of postings fromPostings walks for one
// query. Walking them costs about a nanosecond a byte, analyzing the text
// of the reranked chunks a few hundred microseconds: past this (common
// words on a very large site) the text is the cheaper way.
const maxRerankPostings = 256 << 10

// fromPostings fills the reranked chunks' counts from the index, which
// holds them already: each query term's frequency in the title, keywords,
// body and exact columns of each chunk, the column lengths, and, through
// the vocabulary's terms under each variant prefix, the variant counts.
// That is what analyzing each chunk's text found, without stemming its
// words, but for the body's length: the index's counts every term, where
// an analysis for the query's initials left out the joined compounds it
// had no use for (a difference SciFact and wpdocs did not notice). Only
// proximity needs to know where the query's words are, and
// LocateIndexTerms looks for those alone, reading a text no further than
// their last occurrence.
//
// A chunk gets nil, and is analyzed, when the index cannot stand for its
// text: its slot moved or died since the candidate query, its text was
// not read, a count reached the postings' cap of 255, or, when variants
// count, it was added after the vocabulary was built (it may hold a word
// the vocabulary lacks).
func (ix *Index) fromPostings(r *reranker, cs []*candidate) []*rdoc {
	docs := make([]*rdoc, len(cs))
	var v *vocabulary
	if len(r.variants.idf) > 0 {
		if v = r.variants.vocab; v == nil || v.prefixLen != r.variants.n {
			return docs
		}
	}
	m := ix.mem
	m.RLock()
	reads, prefixes, ok := r.postingReads(m, v)
	if !ok {
		m.RUnlock()
		return docs
	}
	slots := r.postingDocs(m, v, cs, docs)
	capped := make([]bool, len(cs))
	var hits []slotHit
	for _, ro := range reads {
		hits = inSlots(ro.mt, slots, hits[:0])
		for _, h := range hits {
			d, tf := docs[h.i], h.tf
			capped[h.i] = capped[h.i] || isCapped(tf)
			if ro.idx >= 0 {
				d.title[ro.idx], d.kw[ro.idx], d.body[ro.idx] = float64(tf[0]), float64(tf[1]), float64(tf[2])
			}
			if ro.exact && tf[3] != 0 {
				d.exact[ro.term] = float64(tf[3])
			}
		}
	}
	// A prefix's terms' counts are summed by chunk, as analyze counts the
	// words under the prefix.
	sums := make([][3]float64, len(cs))
	for _, pr := range prefixes {
		clear(sums)
		for _, mt := range pr.terms {
			hits = inSlots(mt, slots, hits[:0])
			for _, h := range hits {
				capped[h.i] = capped[h.i] || isCapped(h.tf)
				for c := range sums[h.i] {
					sums[h.i][c] += float64(h.tf[c])
				}
			}
		}
		for _, at := range slots {
			if sums[at.i] == ([3]float64{}) {
				continue
			}
			d, n := docs[at.i], sums[at.i]
			if d.variant == nil {
				d.variant = map[string]*[3]float64{}
			}
			d.variant[pr.prefix] = &n
		}
	}
	m.RUnlock()
	for i := range docs {
		if capped[i] {
			docs[i] = nil
		}
	}
	ix.locateTerms(r, docs)
	return docs
}

// postingRead is a term whose postings fromPostings reads, with what it
// counts for: the place of a query term in reranker.order, the surface
// of one for the exact column.
type postingRead struct {
	term  string
	mt    *index.Term
	idx   int // in r.order, or -1
	exact bool
}

// prefixRead is a variant prefix with its terms' postings.
type prefixRead struct {
	prefix string
	terms  []*index.Term
}

// postingReads lists the postings the query's counts are read from; ok is
// false when they are more than maxRerankPostings bytes. Call with m's
// read lock held.
func (r *reranker) postingReads(m *index.Index, v *vocabulary) (reads []postingRead, prefixes []prefixRead, ok bool) {
	reads = make([]postingRead, 0, 2*len(r.order))
	seen := map[string]int{} // the query's terms and surfaces in reads
	readOf := func(t string) *postingRead {
		i, ok := seen[t]
		if !ok {
			i = len(reads)
			seen[t] = i
			reads = append(reads, postingRead{term: t, idx: -1})
		}
		return &reads[i]
	}
	for i, t := range r.order {
		readOf(t).idx = i
	}
	if r.useExact {
		for t := range r.weights {
			if s := r.surface[t]; s != "" {
				readOf(s).exact = true
			}
		}
	}
	total := 0
	for i := range reads {
		if mt := m.Term(reads[i].term); mt != nil {
			reads[i].mt = mt
			total += mt.Bytes()
		}
	}
	// With the slots renumbered since the vocabulary was built, no chunk
	// is read (postingDocs), nor are the prefixes' terms.
	if v != nil && v.renumbered == m.Renumbered() {
		for p := range r.variants.idf {
			pr := prefixRead{prefix: p}
			for _, t := range v.prefixTerms(p) {
				if mt := m.Term(t); mt != nil {
					pr.terms = append(pr.terms, mt)
					total += mt.Bytes()
				}
			}
			prefixes = append(prefixes, pr)
		}
	}
	return reads, prefixes, total <= maxRerankPostings
}

// slotAt is a reranked chunk's slot and its place in the candidates.
type slotAt struct {
	slot uint32
	i    int
}

// postingDocs makes the rdoc of each candidate the index can stand for,
// in docs, and returns their slots in order. Call with m's read lock held.
func (r *reranker) postingDocs(m *index.Index, v *vocabulary, cs []*candidate, docs []*rdoc) []slotAt {
	var slots []slotAt
	// One allocation for the chunks' rdocs, one for their columns.
	nq := len(r.order)
	rdocs := make([]rdoc, len(cs))
	cols := make([]float64, 3*nq*len(cs))
	for i, c := range cs {
		s := c.slot
		if !c.loaded || int(s) >= m.NumSlots() {
			continue
		}
		if sl := m.Slot(s); sl.Dead || sl.ChunkID != c.chunkID || sl.Doc != c.doc {
			continue
		}
		if v != nil && (int(s) >= v.slots || v.renumbered != m.Renumbered()) {
			continue
		}
		sl := m.Slot(s)
		col := cols[3*nq*i : 3*nq*(i+1) : 3*nq*(i+1)]
		d := &rdocs[i]
		*d = rdoc{c: c, title: col[:nq:nq], kw: col[nq : 2*nq : 2*nq], body: col[2*nq:]}
		d.nt = 1 - r.rk.BTitle + r.rk.BTitle*float64(c.doc.TitleSize)/max(r.fs.AvgTitle, 1)
		d.nk = 1 - r.rk.BBody + r.rk.BBody*float64(sl.ColSize[0])/max(r.fs.AvgKeywords, 1)
		d.nb = 1 - r.rk.BBody + r.rk.BBody*float64(sl.ColSize[1])/max(r.fs.AvgBody, 1)
		if r.useExact {
			d.exact = map[string]float64{}
		}
		docs[i] = d
		slots = append(slots, slotAt{s, i})
	}
	slices.SortFunc(slots, func(a, b slotAt) int { return int(a.slot) - int(b.slot) })
	return slots
}

// slotHit is a posting of a reranked chunk: the chunk's place in the
// candidates, and the term's frequencies.
type slotHit struct {
	i  int
	tf [4]uint8
}

// inSlots appends to hits the postings of mt at slots (in slot order, as
// the postings are).
func inSlots(mt *index.Term, slots []slotAt, hits []slotHit) []slotHit {
	if mt == nil {
		return hits
	}
	j := 0
	it := mt.Postings()
	for ps := it.Next(); len(ps) > 0 && j < len(slots); ps = it.Next() {
		for k := range ps {
			for j < len(slots) && slots[j].slot < ps[k].Slot {
				j++
			}
			if j < len(slots) && slots[j].slot == ps[k].Slot {
				hits = append(hits, slotHit{slots[j].i, ps[k].TF})
			}
		}
	}
	return hits
}

// isCapped reports a count at the postings' cap, which may stand for more.
func isCapped(tf [4]uint8) bool {
	return tf[0] == math.MaxUint8 || tf[1] == math.MaxUint8 || tf[2] == math.MaxUint8 || tf[3] == math.MaxUint8
}

// locateTerms finds where the query's words are in the text of each
// chunk of docs, for proximity and for the evidence.
func (ix *Index) locateTerms(r *reranker, docs []*rdoc) {
	l := &locator{ix: ix, r: r, known: map[string]map[string]bool{}}
	for _, d := range docs {
		if d != nil {
			l.locate(d)
		}
	}
}

// locator is locateTerms' state, kept from one chunk to the next.
type locator struct {
	ix *Index
	r  *reranker
	// present are the query's weighted terms a chunk's body holds, count
	// how often, and nearOf each one's place in r.near's order, or -1.
	present []string
	count   []int
	nearOf  []int
	// The numbers of r.order's terms in the cache's term lists, and of the
	// present ones, for the chunks that have a list.
	orderIDs, presentIDs []uint32
	// known, by language: the weighted terms that are their own words'
	// terms, the same for every chunk.
	known map[string]map[string]bool
}

// locate finds the query's words in d's text. Its text is read only to
// find where they are, for proximity (the words in sequence among them)
// and for the evidence, should the chunk be shown.
func (l *locator) locate(d *rdoc) {
	ix, r, c := l.ix, l.r, d.c
	l.present, l.count, l.nearOf = l.present[:0], l.count[:0], l.nearOf[:0]
	found, near, pairs := 0, 0, -1
	for k, t := range r.order {
		if _, ok := r.weights[t]; ok && d.body[k] > 0 {
			l.present, l.count = append(l.present, t), append(l.count, int(d.body[k]))
			found += int(d.body[k])
			x, ok := r.near[t]
			if ok {
				near += int(d.body[k])
				pairs++
			} else {
				x = -1
			}
			l.nearOf = append(l.nearOf, x)
		}
	}
	list := ix.mem.Texts.Forward(ix.an, c.cached, c.chunkID, c.doc.Lang)
	if pairs <= 0 && (len(list) == 0 || found == 0) {
		// Proximity scores pairs of distinct words, and the body holds
		// one at most: its text is left alone, and analyzed for the
		// evidence only if the chunk is shown (a quarter of the chunks of
		// wpdocs' questions, a tenth of SciFact's). With a list of its
		// terms, finding them for the evidence costs next to nothing.
		return
	}
	tm := &textMatches{at: make([]textMatch, 0, found)}
	if pairs > 0 {
		d.near = make([]termAt, 0, near)
	}
	locate := func(i, pos, at int) {
		if k := l.nearOf[i]; k >= 0 && pairs > 0 {
			d.near = append(d.near, termAt{k, pos})
		}
		tm.at = append(tm.at, textMatch{l.present[i], at})
	}
	if len(list) > 0 {
		index.LocateIn(list, l.listIDs(d), l.count, locate)
	} else {
		ix.an.LocateIndexTerms(c.text, c.doc.Lang, r.initials, l.present, l.count, locate)
	}
	tm.known, tm.body, tm.index = l.ownTerms(c.doc.Lang), d.body, r.index
	c.matches = tm
}

// listIDs returns the numbers of the present terms in the cache's term
// lists. A term new to the lists is numbered when a list with it is
// made, so the numbers are looked up again while one is missing.
func (l *locator) listIDs(d *rdoc) []uint32 {
	r := l.r
	for fresh := l.orderIDs == nil; ; fresh = true {
		if fresh {
			l.orderIDs = l.ix.mem.Texts.IDs(r.order)
		}
		l.presentIDs = l.presentIDs[:0]
		for k, t := range r.order {
			if _, ok := r.weights[t]; ok && d.body[k] > 0 {
				l.presentIDs = append(l.presentIDs, l.orderIDs[k])
			}
		}
		if fresh || !slices.Contains(l.presentIDs, 0) {
			return l.presentIDs
		}
	}
}

// ownTerms returns the weighted terms that are their own words' terms in
// lang. Every word of a located text that matches a weighted term was
// found, as its term or one of its parts; the evidence also matches a
// word by its surface, which for such a term (most are) is the same.
func (l *locator) ownTerms(lang string) map[string]bool {
	kn, ok := l.known[lang]
	if !ok {
		for t := range l.r.weights {
			if l.ix.an.OwnTerm(t, lang) {
				if kn == nil {
					kn = map[string]bool{}
				}
				kn[t] = true
			}
		}
		l.known[lang] = kn
	}
	return kn
}
