package search

import (
	"math/bits"
	"slices"
	"sort"
	"sync"

	"github.com/askwp/askwpd/search/index"
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
	wordAt map[*index.Term]int
}

// slotBufs pools the buffers: made anew at each search, BenchmarkWholePage
// took 2.5 times as long and allocated 20 times the bytes.
var slotBufs = sync.Pool{New: func() any { return &slotBuf{} }}

// newSlotBuf takes a buffer covering m's slots; the caller holds m's read
// lock, and calls release.
func newSlotBuf(m *index.Index) *slotBuf {
	buf := slotBufs.Get().(*slotBuf)
	if n := m.NumSlots(); len(buf.has) < n {
		buf.doc, buf.has, buf.page = make([]uint16, n), make([]uint16, n), make([]uint8, n)
	}
	return buf
}

// release clears what was set and returns the buffer to the pool. Past a
// sixteenth of the slots set, a clear of the whole costs fewer
// instructions than one slot at a time, and the memory it writes is not
// much more than was touched (with it dropped, and the page counts no
// longer kept, BenchmarkWholePage took 32 % longer on chat questions;
// the page counts alone were within noise, and are not kept).
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
func (aq *assocQuery) term(m *index.Index, t string, mt *index.Term) uint16 {
	if len(aq.qs) == assocMaxTerms {
		return 0
	}
	stem, _ := m.Counts(mt)
	aq.base[len(aq.qs)] = float64(stem) / float64(max(m.Live(), 1))
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
	if len(aq.qs) == 0 {
		return
	}
	a := &assocPass{m: ix.mem, aq: aq, order: bestPages(rk, docs, out)}
	a.findNames(pq, docs)
	if len(a.words) == 0 {
		return
	}
	a.count()
	for k, i := range a.order {
		if a.held[k] == a.full {
			continue
		}
		if s := a.score(k, idfs); s > 0 {
			out[i] += rk.AssocWeight * s
		}
	}
}

// bestPages returns the places in docs of the best assocDocs pages so
// far: their chunks' scores and the rest of the whole-page score, as
// groupDocs will add them.
func bestPages(rk Ranking, docs []*docHit, out []float64) []int {
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
	return order[:min(assocDocs, len(order))]
}

// assocPass is associate's work on one query, under the index's read
// lock.
type assocPass struct {
	m     *index.Index
	aq    *assocQuery
	order []int // the scored pages' places in docs
	full  uint16
	// held are the query terms each scored page holds; names the name
	// words of those that lack one (the others have no use for them).
	held  []uint16
	names [][]pageWord
	// words are the name words, each once; counted says, by word, that
	// its chunks in each scored page are counted.
	words   []*index.Term
	counted []bool
	lacked  uint16 // the terms some scored page lacks: only their ties count
	total   []assocCounts
}

// findNames finds the name words of the scored pages that lack a query term.
func (a *assocPass) findNames(pq *parsedQuery, docs []*docHit) {
	m, buf := a.m, a.aq.buf
	inQuery := make([]*index.Term, 0, len(pq.Terms))
	for _, t := range pq.Terms {
		if mt := m.Term(t.Term); mt != nil {
			inQuery = append(inQuery, mt)
		}
	}
	a.full = uint16(1)<<len(a.aq.qs) - 1
	a.held, a.names = make([]uint16, len(a.order)), make([][]pageWord, len(a.order))
	if buf.wordAt == nil {
		buf.wordAt = map[*index.Term]int{}
	}
	for k, i := range a.order {
		doc := docs[i].chunks[0].doc
		own := 0 // the page's chunks, each of which holds its title's words
		ss := m.DocSlots(doc.ID)
		for _, s := range ss {
			a.held[k] |= buf.has[s]
			buf.page[s] = uint8(k + 1)
			buf.touched = append(buf.touched, s)
			if m.Slot(s).Doc == doc {
				own++
			}
		}
		if a.held[k] == a.full {
			continue
		}
		a.lacked |= a.full &^ a.held[k]
		for _, nw := range m.DocTerms(doc).Names {
			if nw.Term.Chunks() > assocMaxPostings || slices.Contains(inQuery, nw.Term) {
				continue
			}
			// The page lacks the terms it is scored for, so a tie is
			// counted in the word's other chunks: a word of its title
			// in fewer than assocMinChunks besides the page's own has
			// none, and its postings need not be read.
			if nw.Title && nw.Term.Chunks()-own < assocMinChunks {
				continue
			}
			a.names[k] = append(a.names[k], a.word(nw, own, len(ss)))
		}
	}
}

// word returns name word nw of a page with own of its n chunks still its
// own, numbering the word at its first page: pages share words, and each
// word's postings are read once.
func (a *assocPass) word(nw index.Name, own, n int) pageWord {
	wordAt := a.aq.buf.wordAt
	w, ok := wordAt[nw.Term]
	if !ok {
		w = len(a.words)
		a.words = append(a.words, nw.Term)
		a.counted = append(a.counted, false)
		wordAt[nw.Term] = w
	}
	// A word of the title is in each of the page's chunks, unless some
	// were replaced since the page was found.
	pw := pageWord{w, own}
	if !nw.Title || own != n {
		pw.own, a.counted[w] = -1, true
	}
	return pw
}

// count reads each name word's postings once, in the stemmed columns:
// its counts over the site, and, where a page's title does not say them,
// its chunks within each scored page, which the page's own ties leave
// out. (A page lacks the terms it is scored for, so its own chunks add
// nothing to their counts, only to the word's.)
func (a *assocPass) count() {
	m, buf := a.m, a.aq.buf
	a.total = slices.Grow(buf.counts[:0], len(a.words))[:len(a.words)]
	clear(a.total)
	buf.counts = a.total
	dead := m.HasDead()
	for w, mt := range a.words {
		c, perPage := &a.total[w], a.counted[w]
		it := mt.Postings()
		for ps := it.Next(); len(ps) > 0; ps = it.Next() {
			for _, p := range ps {
				if p.Mask&index.Stemmed == 0 {
					continue // in the exact column alone
				}
				if _, live := m.Len(p.Slot); dead && !live {
					continue
				}
				c.n++
				for x := buf.has[p.Slot] & a.lacked; x != 0; x &= x - 1 {
					c.co[bits.TrailingZeros16(x)]++
				}
				if perPage {
					c.own[buf.page[p.Slot]]++
				}
			}
		}
	}
}

// score is the k-th scored page's association score: per query term it
// lacks, its best name word's tie times the term's IDF.
func (a *assocPass) score(k int, idfs map[string]float64) float64 {
	qs, base := a.aq.qs, &a.aq.base
	var best [assocMaxTerms]float64
	for _, pw := range a.names[k] {
		c := &a.total[pw.w]
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
		if a.held[k]&(1<<b) == 0 && best[b] > 0 {
			s += idfs[q] * best[b]
		}
	}
	return s
}
