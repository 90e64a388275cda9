package search

import (
	"math"
	"slices"

	"github.com/askwp/askwpd/search/index"
)

// docBM25 scores the candidate documents as wholes, with BM25F over a
// page's title (once), its headings and body (summed over its chunks) and
// the words of its URL path, and IDFs counted in documents. A chunk is a
// section; a visitor's words are often spread over a page's sections, and
// a word all over one page is rare on the site even when it is in many of
// that page's chunks. It reads the query terms' postings, as the candidate
// query does. The scores are in docs' order.
func (ix *Index) docBM25(pq *parsedQuery, rk Ranking, docs []*docHit) []float64 {
	if rk.DocWeight <= 0 || len(docs) == 0 {
		return nil
	}
	var terms []string
	for _, t := range pq.Terms {
		if t.Weight > 0 {
			terms = append(terms, t.Term)
		}
	}
	if len(terms) == 0 {
		return nil
	}
	m := ix.mem
	m.RLock()
	defer m.RUnlock()
	if m.NumDocs() == 0 {
		return nil
	}
	pg := &pageScore{m: m, rk: rk, docs: docs, nDocs: float64(m.NumDocs()), out: make([]float64, len(docs)),
		tf: make([][5]float64, len(docs)), idfs: make(map[string]float64, len(pq.Terms))}
	pg.words = make([]*index.DocWords, len(docs))
	for i, d := range docs {
		pg.words[i] = m.Words(d.chunks[0].doc)
	}
	if rk.AnchorWeight > 0 {
		keys := make([]string, len(docs))
		for i, w := range pg.words {
			keys[i] = w.Key
		}
		pg.targets = m.Links().TargetIDs(keys)
	}
	if rk.URLWeight > 0 {
		pg.urlTF = urlCounts(m, terms, docs)
	}
	pg.norms()
	// Each candidate document's chunks are marked with its place in docs
	// (from 1): a posting's document is looked up in the mark.
	pg.buf = newSlotBuf(m)
	defer pg.buf.release()
	// (docs are the candidate chunks' pages, a few hundred at most.)
	for i, d := range docs[:min(len(docs), math.MaxUint16)] {
		for _, s := range m.DocSlots(d.docID) {
			pg.buf.doc[s] = uint16(i + 1)
			pg.buf.touched = append(pg.buf.touched, s)
		}
	}
	if rk.AssocWeight > 0 {
		pg.aq = &assocQuery{buf: pg.buf}
	}
	for _, t := range pq.Terms {
		mt := m.Term(t.Term)
		// Terms in more chunks than MaxPostings weigh little and cost the
		// most; the candidate query leaves them out for the same reason.
		if t.Weight <= 0 || mt == nil || (rk.MaxPostings > 0 && mt.Chunks() > rk.MaxPostings) {
			continue
		}
		pg.term(t, mt)
	}
	if pg.aq != nil {
		ix.associate(pg.aq, pq, rk, docs, pg.idfs, pg.out)
	}
	return pg.out
}

// pageScore is docBM25's work on one query, under the index's read lock.
type pageScore struct {
	m       *index.Index
	rk      Ranking
	docs    []*docHit
	words   []*index.DocWords
	nDocs   float64
	targets []int32                   // the docs' numbers in the links (index.Links.TargetIDs)
	urlTF   map[*index.Term][]float64 // how often each query term is among each doc's URL words
	ns      []pageNorm
	buf     *slotBuf
	aq      *assocQuery
	tf      [][5]float64 // a term's frequencies in each doc: title, keywords, body, URL, links
	idfs    map[string]float64
	out     []float64
}

// pageNorm is a page's BM25F length normalizations.
type pageNorm struct{ title, body float64 }

// urlCounts counts how often each query term is among each document's
// URL words. Call with m's read lock held.
func urlCounts(m *index.Index, terms []string, docs []*docHit) map[*index.Term][]float64 {
	var qts []*index.Term
	for _, t := range terms {
		if mt := m.Term(t); mt != nil && !slices.Contains(qts, mt) {
			qts = append(qts, mt)
		}
	}
	urlTF := make(map[*index.Term][]float64, len(qts))
	for i, d := range docs {
		for _, u := range m.DocTerms(d.chunks[0].doc).URL {
			if !slices.Contains(qts, u) {
				continue
			}
			n := urlTF[u]
			if n == nil {
				n = make([]float64, len(docs))
				urlTF[u] = n
			}
			n[i]++
		}
	}
	return urlTF
}

// norms works out each document's length normalizations.
func (pg *pageScore) norms() {
	m, rk := pg.m, pg.rk
	colTotal := m.ColTotal()
	avgBody := float64(colTotal[1]+colTotal[2]) / pg.nDocs
	avgTitle := float64(colTotal[0]) / float64(max(m.Live(), 1))
	pg.ns = make([]pageNorm, len(pg.docs))
	for i, d := range pg.docs {
		var title, body float64
		for _, s := range m.DocSlots(d.docID) {
			sl := m.Slot(s)
			body += float64(sl.ColSize[0] + sl.ColSize[1])
			title = float64(sl.Doc.TitleSize)
		}
		pg.ns[i] = pageNorm{1 - rk.BTitle + rk.BTitle*title/max(avgTitle, 1), 1 - rk.BBody + rk.BBody*body/max(avgBody, 1)}
	}
}

// term adds query term t's share to the documents' scores, reading its
// postings once: for its frequencies in the documents, its page count
// (the IDF) and, for associate, the chunks that hold it.
func (pg *pageScore) term(t queryTerm, mt *index.Term) {
	m, tf, rk := pg.m, pg.tf, pg.rk
	var bit uint16
	if pg.aq != nil {
		bit = pg.aq.term(m, t.Term, mt)
	}
	clear(tf)
	df := 0
	var last *index.Doc
	dead := m.HasDead()
	it := mt.Postings()
	for ps := it.Next(); len(ps) > 0; ps = it.Next() {
		for _, p := range ps {
			if p.TF[0]|p.TF[1]|p.TF[2] == 0 {
				continue
			}
			if _, live := m.Len(p.Slot); dead && !live {
				continue
			}
			if bit != 0 {
				pg.aq.mark(p.Slot, bit)
			}
			// A document's chunks are added together, so its postings are
			// adjacent: counting changes of document counts documents.
			if d := m.Slot(p.Slot).Doc; d != last {
				df++
				last = d
			}
			if at := int(pg.buf.doc[p.Slot]) - 1; at >= 0 && at < len(tf) {
				tf[at][0] = max(tf[at][0], float64(p.TF[0]))
				tf[at][1] += float64(p.TF[1])
				tf[at][2] += float64(p.TF[2])
			}
		}
	}
	for i, n := range pg.urlTF[mt] {
		tf[i][3] = n
	}
	if pg.targets != nil {
		m.Links().Counts(t.Term, pg.targets, func(i int, n int32) { tf[i][4] = float64(n) })
	}
	idf := math.Log(1 + (pg.nDocs-float64(df)+0.5)/(float64(df)+0.5))
	pg.idfs[t.Term] = idf
	for i := range tf {
		f := &tf[i]
		if f[0] == 0 && f[1] == 0 && f[2] == 0 && f[3] == 0 && f[4] == 0 {
			continue
		}
		x := rk.TitleWeight*f[0]/pg.ns[i].title + (rk.KeywordWeight*f[1]+rk.BodyWeight*f[2])/pg.ns[i].body
		s := x * (rk.K1 + 1) / (x + rk.K1)
		// The URL is a field of its own, not saturated with the title it
		// usually repeats: a page named in its URL is the page about it.
		s += rk.URLWeight * f[3] * (rk.K1 + 1) / (f[3] + rk.K1)
		// So are the words around the links to the page.
		s += rk.AnchorWeight * f[4] * (rk.K1 + 1) / (f[4] + rk.K1)
		pg.out[i] += float64(t.Weight) * idf * s
	}
}
