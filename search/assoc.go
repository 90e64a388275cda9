package search

import (
	"math/bits"
	"slices"
	"sort"
	"sync"
)

const (
	// assocDocs is how many of the best pages associate scores: it
	// reorders the top of a list, and its cost grows with their names.
	// 20, 30 and 50 scored alike on both corpora; 10 lost SciFact's gain.
	assocDocs = 20
	// assocMaxPostings: a word in more chunks names no page in
	// particular, and reading its postings costs the most. Of 100, 300,
	// 500, 1000 and no limit, 300 and 500 scored best on both corpora.
	assocMaxPostings = 300
	// assocMinChunks is the fewest chunks a tie is counted from: one
	// shared chunk is as likely chance as meaning.
	assocMinChunks = 2
	// assocMaxTerms bounds the query terms associate follows (a bit
	// each in a chunk's mask).
	assocMaxTerms = 16
)

// assocBuf holds, by slot, which query terms a chunk holds and which of
// the scored pages (numbered from 1) it belongs to. Slices over every
// slot are read where maps were (a lookup per posting of every name word
// was most of associate's time); they are pooled, and only the entries
// set are cleared after a search.
type assocBuf struct {
	has     []uint16
	page    []uint8
	touched []uint32
}

var assocBufs = sync.Pool{New: func() any { return &assocBuf{} }}

// associate adds to the best pages' whole-page scores how strongly the
// rest of the site ties the page's name to the query words the page
// itself lacks. A visitor names a thing by what it does ("two color
// image filter"), the page by its name ("Duotone Picker"), and the
// site's other pages, where both are said, join the two. The page's name
// is its title's and URL path's words; the tie of a query term q to a
// name word t is how much likelier q is in the other pages' chunks that
// hold t than in any chunk, P(q | t) − P(q), counted from the postings.
// A page scores, per query term it lacks, its best name word's tie
// times the term's page IDF, weighted AssocWeight. A page that holds
// the term is scored for it by the rest of docBM25. The caller holds
// m's read lock.
func (ix *Index) associate(pq *parsedQuery, rk Ranking, docs []*docHit, idfs map[string]float64, out map[int64]float64) {
	m := ix.mem
	capped := func(mt *memTerm) bool {
		return mt == nil || (rk.MaxPostings > 0 && int(mt.n) > rk.MaxPostings)
	}
	var qs []string
	var base [assocMaxTerms]float64
	for _, t := range pq.Terms {
		if mt := m.terms[t.Term]; t.Weight > 0 && idfs[t.Term] > 0 && !capped(mt) && len(qs) < assocMaxTerms {
			base[len(qs)] = float64(m.counts(mt).stem) / float64(max(m.live, 1))
			qs = append(qs, t.Term)
		}
	}
	if len(qs) == 0 {
		return
	}
	buf := assocBufs.Get().(*assocBuf)
	defer assocBufs.Put(buf)
	if len(buf.has) < len(m.slots) {
		buf.has, buf.page = make([]uint16, len(m.slots)), make([]uint8, len(m.slots))
	}
	defer func() {
		for _, s := range buf.touched {
			buf.has[s], buf.page[s] = 0, 0
		}
		buf.touched = buf.touched[:0]
	}()
	for b, q := range qs {
		for p := m.terms[q].iter(); p.next(); {
			if p.tf[0]|p.tf[1]|p.tf[2] != 0 {
				buf.has[p.slot] |= 1 << b
				buf.touched = append(buf.touched, p.slot)
			}
		}
	}

	// The best pages so far: their chunks' scores and the rest of the
	// whole-page score, as groupDocs will add them.
	order := make([]int, len(docs))
	prelim := make([]float64, len(docs))
	for i, d := range docs {
		order[i] = i
		prelim[i] = d.chunks[0].score + rk.DocWeight*out[d.docID]
		if len(d.chunks) > 1 {
			prelim[i] += rk.SecondChunk * d.chunks[1].score
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return prelim[order[a]] > prelim[order[b]] })
	order = order[:min(assocDocs, len(order))]

	inQuery := make(map[string]bool, len(pq.Terms))
	for _, t := range pq.Terms {
		inQuery[t.Term] = true
	}
	// The query terms each page holds, and the name words of those that
	// lack one: the others have no use for them.
	full := uint16(1)<<len(qs) - 1
	held := make([]uint16, len(order))
	names := make([][]string, len(order))
	var words []string
	seen := map[string]bool{}
	var lacked uint16 // the terms some scored page lacks: only their ties count
	for k, i := range order {
		doc := docs[i].chunks[0].doc
		for _, s := range m.docSlots[doc.ID] {
			held[k] |= buf.has[s]
			buf.page[s] = uint8(k + 1)
			buf.touched = append(buf.touched, s)
		}
		if held[k] == full {
			continue
		}
		lacked |= full &^ held[k]
		// The title is analyzed here, for the few pages that need it,
		// rather than kept for every page searched.
		for _, t := range append(ix.an.IndexTerms(doc.Title, doc.Lang, nil), ix.urlOf(doc).terms...) {
			if mt := m.terms[t]; mt == nil || mt.n > assocMaxPostings || inQuery[t] || slices.Contains(names[k], t) {
				continue
			}
			names[k] = append(names[k], t)
			if !seen[t] {
				seen[t] = true
				words = append(words, t)
			}
		}
	}
	if len(words) == 0 {
		return
	}
	// Each name word's postings are read once: its counts over the site,
	// and its chunks within each scored page, which the page's own ties
	// leave out. (A page lacks the terms it is scored for, so its own
	// chunks add nothing to their counts, only to the word's.)
	type counts struct {
		n   int
		co  [assocMaxTerms]int
		own [assocDocs + 1]int // by page number
	}
	total := make(map[string]*counts, len(words))
	for _, t := range words {
		c := &counts{}
		total[t] = c
		for p := m.terms[t].iter(); p.next(); {
			if (m.dead > 0 && m.lens[p.slot] == deadLen) || p.tf[0]|p.tf[1]|p.tf[2] == 0 {
				continue
			}
			c.n++
			for x := buf.has[p.slot] & lacked; x != 0; x &= x - 1 {
				c.co[bits.TrailingZeros16(x)]++
			}
			c.own[buf.page[p.slot]]++
		}
	}

	for k, i := range order {
		if held[k] == full {
			continue
		}
		var best [assocMaxTerms]float64
		for _, t := range names[k] {
			c := total[t]
			n := c.n - c.own[k+1]
			for b := range qs {
				if c.co[b] >= assocMinChunks {
					best[b] = max(best[b], float64(c.co[b])/float64(n)-base[b])
				}
			}
		}
		s := 0.0
		for b, q := range qs {
			if held[k]&(1<<b) == 0 && best[b] > 0 {
				s += idfs[q] * best[b]
			}
		}
		if s > 0 {
			out[docs[i].docID] += rk.AssocWeight * s
		}
	}
}
