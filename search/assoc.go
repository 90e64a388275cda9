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

// slotBuf holds, by slot, what the whole-page score of one search marks
// on the chunks: which of its documents a chunk belongs to (numbered from
// 1), for docBM25, and for associate which query terms a chunk holds and
// which of the scored pages it belongs to. Slices over every slot are
// read where maps were (a lookup per posting was most of associate's
// time, and per document of docBM25's); they are pooled, and only the
// entries set are cleared after a search.
type slotBuf struct {
	doc     []uint16
	has     []uint16
	page    []uint8
	touched []uint32
	// Scratch of associate's, kept with the buffer: the name words'
	// counts and their places.
	counts []assocCounts
	wordAt map[*memTerm]int
}

var slotBufs = sync.Pool{New: func() any { return &slotBuf{} }}

// newSlotBuf takes a buffer covering m's slots; the caller holds m's read
// lock, and calls release.
func newSlotBuf(m *memIndex) *slotBuf {
	buf := slotBufs.Get().(*slotBuf)
	if len(buf.has) < len(m.slots) {
		buf.doc, buf.has, buf.page = make([]uint16, len(m.slots)), make([]uint16, len(m.slots)), make([]uint8, len(m.slots))
	}
	return buf
}

// release clears what was set and returns the buffer to the pool. Past a
// sixteenth of the slots set, a clear of the whole costs fewer
// instructions than one slot at a time, and the memory it writes is not
// much more than was touched.
func (buf *slotBuf) release() {
	if len(buf.touched) > len(buf.has)/16 {
		clear(buf.doc)
		clear(buf.has)
		clear(buf.page)
	} else {
		for _, s := range buf.touched {
			buf.doc[s], buf.has[s], buf.page[s] = 0, 0, 0
		}
	}
	buf.touched = buf.touched[:0]
	clear(buf.wordAt)
	slotBufs.Put(buf)
}

// assocQuery is what associate knows of a query before it scores: the
// terms it follows, each with a bit, their share of the site's chunks,
// and which chunks hold each (buf.has). docBM25 fills it as it reads
// the terms' postings, which it reads anyway.
type assocQuery struct {
	qs   []string
	base [assocMaxTerms]float64
	buf  *slotBuf
}

// term adds a query term, with its postings, and returns its bit, or 0
// past assocMaxTerms or for a term too common to name anything.
func (aq *assocQuery) term(m *memIndex, t string, mt *memTerm) uint16 {
	if len(aq.qs) == assocMaxTerms {
		return 0
	}
	aq.base[len(aq.qs)] = float64(m.counts(mt).stem) / float64(max(m.live, 1))
	aq.qs = append(aq.qs, t)
	return 1 << (len(aq.qs) - 1)
}

// mark records that the chunk in slot holds the term of bit.
func (aq *assocQuery) mark(slot uint32, bit uint16) {
	aq.buf.has[slot] |= bit
	aq.buf.touched = append(aq.buf.touched, slot)
}

// pageWord is a name word of a scored page: its place in associate's
// words, and its chunks within the page when the page's title says them
// (-1: counted from the postings).
type pageWord struct {
	w, own int
}

// assocCounts are a name word's chunks over the site, those that also
// hold each query term, and those of each scored page (by its number).
type assocCounts struct {
	n   int32
	co  [assocMaxTerms]int32
	own [assocDocs + 1]int32
}

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
func (ix *Index) associate(aq *assocQuery, pq *parsedQuery, rk Ranking, docs []*docHit, idfs map[string]float64, out []float64) {
	m := ix.mem
	qs, base, buf := aq.qs, &aq.base, aq.buf
	if len(qs) == 0 {
		return
	}

	// The best pages so far: their chunks' scores and the rest of the
	// whole-page score, as groupDocs will add them.
	order := make([]int, len(docs))
	prelim := make([]float64, len(docs))
	for i, d := range docs {
		order[i] = i
		prelim[i] = d.chunks[0].score + rk.DocWeight*out[i]
		if len(d.chunks) > 1 {
			prelim[i] += rk.SecondChunk * d.chunks[1].score
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return prelim[order[a]] > prelim[order[b]] })
	order = order[:min(assocDocs, len(order))]

	inQuery := make([]*memTerm, 0, len(pq.Terms))
	for _, t := range pq.Terms {
		if mt := m.terms[t.Term]; mt != nil {
			inQuery = append(inQuery, mt)
		}
	}
	// The query terms each page holds, and the name words of those that
	// lack one: the others have no use for them.
	full := uint16(1)<<len(qs) - 1
	held := make([]uint16, len(order))
	names := make([][]pageWord, len(order))
	var words []*memTerm
	var counted []bool // by word: its chunks in each scored page are counted
	if buf.wordAt == nil {
		buf.wordAt = map[*memTerm]int{}
	}
	wordAt := buf.wordAt
	var lacked uint16 // the terms some scored page lacks: only their ties count
	for k, i := range order {
		doc := docs[i].chunks[0].doc
		own := 0 // the page's chunks, each of which holds its title's words
		ss := m.docSlots[doc.ID]
		for _, s := range ss {
			held[k] |= buf.has[s]
			buf.page[s] = uint8(k + 1)
			buf.touched = append(buf.touched, s)
			if m.slots[s].doc == doc {
				own++
			}
		}
		if held[k] == full {
			continue
		}
		lacked |= full &^ held[k]
		for _, nw := range ix.namesOf(m, doc) {
			mt := nw.mt
			if mt.n > assocMaxPostings || slices.Contains(inQuery, mt) {
				continue
			}
			// The page lacks the terms it is scored for, so a tie is
			// counted in the word's other chunks: a word of its title
			// in fewer than assocMinChunks besides the page's own has
			// none, and its postings need not be read.
			if nw.title && int(mt.n)-own < assocMinChunks {
				continue
			}
			// Pages share words: each word's postings are read once.
			w, ok := wordAt[mt]
			if !ok {
				w = len(words)
				words = append(words, mt)
				counted = append(counted, false)
				wordAt[mt] = w
			}
			// A word of the title is in each of the page's chunks, unless
			// some were replaced since the page was found.
			pw := pageWord{w, own}
			if !nw.title || own != len(ss) {
				pw.own, counted[w] = -1, true
			}
			names[k] = append(names[k], pw)
		}
	}
	if len(words) == 0 {
		return
	}
	// Each name word's postings are read once, in the stemmed columns:
	// its counts over the site, and, where a page's title does not say
	// them, its chunks within each scored page, which the page's own ties
	// leave out. (A page lacks the terms it is scored for, so its own
	// chunks add nothing to their counts, only to the word's.) The
	// postings are decoded here, not into a list first: a search reads
	// thousands.
	total := slices.Grow(buf.counts[:0], len(words))[:len(words)]
	clear(total)
	buf.counts = total
	for w, mt := range words {
		c, perPage := &total[w], counted[w]
		it := mt.iter()
		for ps := it.next(); len(ps) > 0; ps = it.next() {
			for _, p := range ps {
				s := p.slot
				if p.mask&7 == 0 {
					continue // in the exact column alone
				}
				if m.dead > 0 && m.lens[s] == deadLen {
					continue
				}
				c.n++
				for x := buf.has[s] & lacked; x != 0; x &= x - 1 {
					c.co[bits.TrailingZeros16(x)]++
				}
				if perPage {
					c.own[buf.page[s]]++
				}
			}
		}
	}

	for k, i := range order {
		if held[k] == full {
			continue
		}
		var best [assocMaxTerms]float64
		for _, pw := range names[k] {
			c := &total[pw.w]
			n := c.n - c.own[k+1]
			if pw.own >= 0 {
				n = c.n - int32(pw.own)
			}
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
			out[i] += rk.AssocWeight * s
		}
	}
}

// docNames are a page's name words that are terms of the index, each
// once: its title's (in each of its chunks), then its URL path's.
// associate looked each word of twenty names up in the index at every
// search; they are resolved again only when the index's terms may have
// changed: a term is dropped only when slots are renumbered, and one
// added changes their count.
type docNames struct {
	renumbered uint64
	terms      int
	words      []nameWord
}

type nameWord struct {
	mt    *memTerm
	title bool
}

// namesOf returns doc's name words. The caller holds m's read lock.
func (ix *Index) namesOf(m *memIndex, doc *memDoc) []nameWord {
	if n := doc.names.Load(); n != nil && n.renumbered == m.renumbered && n.terms == len(m.terms) {
		return n.words
	}
	n := &docNames{renumbered: m.renumbered, terms: len(m.terms)}
	add := func(mt *memTerm, title bool) {
		// A permalink repeats its title's words.
		if mt != nil && !slices.ContainsFunc(n.words, func(w nameWord) bool { return w.mt == mt }) {
			n.words = append(n.words, nameWord{mt, title})
		}
	}
	for _, t := range ix.an.IndexTerms(doc.Title, doc.Lang, nil) {
		add(m.terms[t], true)
	}
	for _, mt := range ix.urlTerms(m, doc) {
		add(mt, false)
	}
	n.words = slices.Clip(n.words)
	doc.names.Store(n)
	return n.words
}
