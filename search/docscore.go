package search

import (
	"math"
	"net/url"
	"slices"
	"strings"
)

// docBM25 scores the candidate documents as wholes, with BM25F over a
// page's title (once), its headings and body (summed over its chunks) and
// the words of its URL path, and IDFs counted in documents. A chunk is a
// section; a visitor's words are often spread over a page's sections, and
// a word all over one page is rare on the site even when it is in many of
// that page's chunks. It reads the query terms' postings, as the candidate
// query does; what it keeps between searches is each term's page count
// (memIndex.pageCount) and each page's URL terms (urlTerms), both
// dropped as the index changes. The scores are in docs' order.
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
	var targets []int32
	if rk.AnchorWeight > 0 {
		keys := make([]string, len(docs))
		for i, d := range docs {
			keys[i] = ix.urlOf(d.chunks[0].doc).key
		}
		ix.anchors.mu.RLock()
		defer ix.anchors.mu.RUnlock()
		targets = ix.anchors.targetIDs(keys)
	}
	m := ix.mem
	m.mu.RLock()
	defer m.mu.RUnlock()
	nDocs := float64(len(m.docSlots))
	if nDocs == 0 {
		return nil
	}
	// How often each query term is among each document's URL words.
	var urlTF map[*memTerm][]float64
	if rk.URLWeight > 0 {
		var qts []*memTerm
		for _, t := range terms {
			if mt := m.terms[t]; mt != nil && !slices.Contains(qts, mt) {
				qts = append(qts, mt)
			}
		}
		urlTF = make(map[*memTerm][]float64, len(qts))
		for i, d := range docs {
			for _, u := range ix.urlTerms(m, d.chunks[0].doc) {
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
	}
	avgBody := float64(m.colTotal[1]+m.colTotal[2]) / nDocs
	avgTitle := float64(m.colTotal[0]) / float64(max(m.live, 1))
	type norms struct{ title, body float64 }
	ns := make([]norms, len(docs))
	for i, d := range docs {
		var title, body float64
		for _, s := range m.docSlots[d.docID] {
			sl := &m.slots[s]
			body += float64(sl.colSize[0] + sl.colSize[1])
			title = float64(sl.doc.titleSize)
		}
		ns[i] = norms{1 - rk.BTitle + rk.BTitle*title/max(avgTitle, 1), 1 - rk.BBody + rk.BBody*body/max(avgBody, 1)}
	}
	out := make([]float64, len(docs))
	tf := make([][5]float64, len(docs)) // title, keywords, body, URL, links
	idfs := make(map[string]float64, len(pq.Terms))
	// Each candidate document's chunks are marked with its place in docs
	// (from 1): a posting's document is looked up in the mark.
	buf := newSlotBuf(m)
	defer buf.release()
	// (docs are the candidate chunks' pages, a few hundred at most.)
	for i, d := range docs[:min(len(docs), math.MaxUint16)] {
		for _, s := range m.docSlots[d.docID] {
			buf.doc[s] = uint16(i + 1)
			buf.touched = append(buf.touched, s)
		}
	}
	var aq *assocQuery
	if rk.AssocWeight > 0 {
		aq = &assocQuery{buf: buf}
	}
	for _, t := range pq.Terms {
		mt := m.terms[t.Term]
		// Terms in more chunks than MaxPostings weigh little and cost the
		// most; the candidate query leaves them out for the same reason.
		if t.Weight <= 0 || mt == nil || (rk.MaxPostings > 0 && int(mt.n) > rk.MaxPostings) {
			continue
		}
		var bit uint16
		if aq != nil {
			bit = aq.term(m, t.Term, mt)
		}
		clear(tf)
		// The term's pages are counted once for as long as no slot dies
		// and none is added: the count reads each posting's slot, 32
		// bytes a slot apart where the rest reads 2 (and 4 when some are
		// dead), and waiting on memory for the slots was a tenth of the
		// whole-page score.
		df, counted := m.pageCount(mt)
		var last *memDoc
		it := mt.iter()
		for ps := it.next(); len(ps) > 0; ps = it.next() {
			for _, p := range ps {
				if p.tf[0]|p.tf[1]|p.tf[2] == 0 || m.dead > 0 && m.lens[p.slot] == deadLen {
					continue
				}
				if bit != 0 {
					aq.mark(p.slot, bit)
				}
				// A document's chunks are added together, so its postings are
				// adjacent: counting changes of document counts documents.
				if !counted {
					if d := m.slots[p.slot].doc; d != last {
						df++
						last = d
					}
				}
				if at := int(buf.doc[p.slot]) - 1; at >= 0 && at < len(docs) {
					tf[at][0] = max(tf[at][0], float64(p.tf[0]))
					tf[at][1] += float64(p.tf[1])
					tf[at][2] += float64(p.tf[2])
				}
			}
		}
		if !counted {
			m.setPageCount(mt, df)
		}
		for i, n := range urlTF[mt] {
			tf[i][3] = n
		}
		if targets != nil {
			ix.anchors.counts(t.Term, targets, func(i int, n int32) { tf[i][4] = float64(n) })
		}
		idf := math.Log(1 + (nDocs-float64(df)+0.5)/(float64(df)+0.5))
		idfs[t.Term] = idf
		for i := range tf {
			f := &tf[i]
			if f[0] == 0 && f[1] == 0 && f[2] == 0 && f[3] == 0 && f[4] == 0 {
				continue
			}
			x := rk.TitleWeight*f[0]/ns[i].title + (rk.KeywordWeight*f[1]+rk.BodyWeight*f[2])/ns[i].body
			s := x * (rk.K1 + 1) / (x + rk.K1)
			// The URL is a field of its own, not saturated with the title
			// it usually repeats: a page named in its URL is the page
			// about it.
			s += rk.URLWeight * f[3] * (rk.K1 + 1) / (f[3] + rk.K1)
			// So are the words around the links to the page.
			s += rk.AnchorWeight * f[4] * (rk.K1 + 1) / (f[4] + rk.K1)
			out[i] += float64(t.Weight) * idf * s
		}
	}
	if aq != nil {
		ix.associate(aq, pq, rk, docs, idfs, out)
	}
	return out
}

var slugSpaces = strings.NewReplacer("-", " ", "_", " ")

// docURL is a page's URL as the whole-page score reads it: the terms of
// its path, and the key links to it are counted under.
type docURL struct {
	terms []string
	key   string
}

// urlTermsAt are a page's URL path terms resolved to the index's: a
// pointer is compared where each word's string was read, a cache miss
// each for a dozen words of each of a few hundred candidate pages.
// Resolved, they stay so until slots are renumbered (the only time a
// term is dropped); a word that was no term is looked up again once the
// index has more terms.
type urlTermsAt struct {
	renumbered uint64
	terms      int // the index's terms when a word was missing; else -1
	mts        []*memTerm
}

// urlTerms returns the terms of doc's URL path that are index terms, as
// often as the path has them. The caller holds m's read lock.
func (ix *Index) urlTerms(m *memIndex, doc *memDoc) []*memTerm {
	if u := doc.urlTerms.Load(); u != nil && u.renumbered == m.renumbered && (u.terms < 0 || u.terms == len(m.terms)) {
		return u.mts
	}
	u := &urlTermsAt{renumbered: m.renumbered, terms: -1}
	for _, t := range ix.urlOf(doc).terms {
		if mt := m.terms[t]; mt != nil {
			u.mts = append(u.mts, mt)
		} else {
			u.terms = len(m.terms)
		}
	}
	doc.urlTerms.Store(u)
	return u.mts
}

// urlOf works out doc's docURL once: on a WordPress site every candidate
// page has a permalink to parse and analyze, which done at every search
// cost more than the rest of the whole-page score.
func (ix *Index) urlOf(doc *memDoc) *docURL {
	if u := doc.url.Load(); u != nil {
		return u
	}
	u := &docURL{terms: ix.an.IndexTerms(urlWords(doc.URL), doc.Lang, nil), key: anchorKey(doc.URL)}
	doc.url.Store(u)
	return u
}

// urlWords returns the words of a page's URL path: a WordPress permalink
// is made of its title's and its parents' slugs ("/docs/how-to/add-a-
// sidebar/"), which name the page the way its site's authors do.
// Numbers (dates, ids) and file extensions are left out.
func urlWords(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	var b strings.Builder
	for _, seg := range strings.Split(u.Path, "/") {
		if i := strings.LastIndexByte(seg, '.'); i > 0 {
			seg = seg[:i]
		}
		if seg == "" || strings.Trim(seg, "0123456789") == "" {
			continue
		}
		b.WriteString(slugSpaces.Replace(seg))
		b.WriteByte(' ')
	}
	return b.String()
}
