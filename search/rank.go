package search

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/askwp/askwpd/search/index"
)

// Ranking holds the tunable parameters of Search.
type Ranking struct {
	// BM25 column weights (k1 = 1.2, b = 0.75, one length per chunk).
	TitleWeight, KeywordWeight, BodyWeight, ExactWeight float64
	// ExactMaxTerms: the exact column is matched only for queries of at
	// most this many terms.
	ExactMaxTerms int
	// Candidates is how many chunks the candidate query returns, at least
	// 3 × Limit × PerDoc. 100 ranked SciFact's top 10 exactly as 300 did,
	// for a fifth less CPU per query (bench/search latency).
	Candidates int
	// SecondChunk is the share of a document's second-best chunk added to
	// its best.
	SecondChunk float64
	// TitlePhraseBonus multiplies the score of a document whose title
	// holds the query's terms in order by 1+TitlePhraseBonus.
	TitlePhraseBonus float64
	// ThinPenalty and ArchivePenalty multiply thin pages and archive pages
	// (category, tag, author, search, feed URLs).
	ThinPenalty, ArchivePenalty float64
	// Freshness, for queries that ask for recent content: exponential
	// decay decay^(max(0, age-offset)/scale), weighted FreshTemporal:
	// score × (1 - w + w × decay).
	FreshOffset, FreshScale time.Duration
	FreshDecay              float64
	FreshTemporal           float64
	// Rerank: the best RerankDepth chunks are rescored with BM25F (K1,
	// BTitle for the title, BBody for keywords and body) plus Proximity ×
	// the IDF of query-term pairs within ProximityWindow.
	RerankDepth int
	// RerankMinTerms: shorter queries skip the rerank (proximity needs
	// several words; most site queries are 1–3 words and stay fast).
	RerankMinTerms  int
	K1, BTitle      float64
	BBody           float64
	Proximity       float64
	ProximityWindow int
	// MaxPostings bounds the candidate query's work, which grows with the
	// sum of the terms' chunk counts. Above it, the most common terms are
	// left out of the candidate query (never the rarest), and the rerank
	// scores every term on the candidates. 0 turns it off.
	MaxPostings int
	// AllTermsMax: queries of 2..AllTermsMax terms first look for chunks
	// with every term, and fall back to any term when too few match.
	AllTermsMax int
	// Variants: in the rerank, a query term a chunk lacks is matched by
	// the chunk's words that share its first VariantPrefix letters (of
	// the stems), at VariantWeight, with the IDF of all the index's words
	// with that prefix. Snowball stemmers keep derivations apart
	// ("partner" and "partnership", "install" and "installation"); a
	// shared prefix joins them in any language. 0 turns it off.
	VariantPrefix int
	VariantWeight float64
	// DocWeight weights the score of the whole page (docBM25), added to
	// its best chunks'; URLWeight and AnchorWeight are the weights, in
	// that score, of its URL path's words and of the words around the
	// links to it (anchors.go), beside TitleWeight.
	DocWeight, URLWeight, AnchorWeight float64
	// AssocWeight weights, in the whole-page score, how strongly the
	// site's other pages tie the page's name (its title's and URL path's
	// words) to the query words it lacks (associate).
	AssocWeight float64
	// IntroBoost multiplies the score of a chunk that is its page's
	// introduction, the text before the page's first heading, by
	// 1+IntroBoost (introBoost).
	IntroBoost float64
	// Confidence thresholds (decide.go).
	MinCoverage   float64 // share of query IDF the top document must match
	MinGap        float64 // relative gap to the second document
	MinMatched    int     // matched terms (an exact title phrase counts 2)
	TypoMaxPerQry int
}

// DefaultRanking is the tuned default; bench/search shows how it was tuned.
func DefaultRanking() Ranking {
	return Ranking{
		TitleWeight: 2, KeywordWeight: 1.5, BodyWeight: 1, ExactWeight: 0.5, ExactMaxTerms: 3,
		Candidates:       100,
		SecondChunk:      0.2,
		TitlePhraseBonus: 0.25,
		ThinPenalty:      0.7, ArchivePenalty: 0.6,
		FreshOffset: 7 * 24 * time.Hour, FreshScale: 14 * 24 * time.Hour, FreshDecay: 0.25,
		FreshTemporal: 0.5,
		MinCoverage:   0.6, MinGap: 0.1, MinMatched: 2,
		TypoMaxPerQry: 4, AllTermsMax: 4, MaxPostings: 3000,
		RerankDepth: 30, RerankMinTerms: 4, K1: 1.2, BTitle: 0.75, BBody: 0.75, Proximity: 0.3, ProximityWindow: 4,
		VariantPrefix: 5, VariantWeight: 0.7,
		DocWeight: 0.4, URLWeight: 1, AnchorWeight: 2, AssocWeight: 4,
		IntroBoost: 0.25,
	}
}

// rank finds the candidates, reranks them when the query is worth it,
// fuses in the vector search, and groups the chunks into ranked
// documents.
func (ix *Index) rank(ctx context.Context, pq *parsedQuery, q Query, rk Ranking, df map[string]int) ([]*docHit, error) {
	k := max(rk.Candidates, q.Limit*q.PerDoc*3)
	var cands []*candidate
	if n := pq.liveTerms(); n >= 2 && n <= rk.AllTermsMax {
		// Short queries first ask for pages with every word: far fewer
		// chunks to score than the OR of common words. When that finds
		// enough documents they are the answer; when not, the OR runs.
		pq.requireAll = true
		all := ix.candidates(pq, q, rk, k)
		pq.requireAll = false
		if countDocs(all) >= q.Limit {
			cands = all
		}
	}
	if cands == nil {
		restore := pq.cutCommon(df, rk.MaxPostings)
		cands = ix.candidates(pq, q, rk, k)
		restore()
	}
	if q.Sort != "date" && (pq.liveTerms() >= rk.RerankMinTerms || pq.cutTerms || ix.unseenHaveVariants(pq, rk)) {
		if err := ix.rerank(ctx, pq, rk, df, cands); err != nil {
			return nil, err
		}
	}
	if q.Sort != "date" {
		ix.introBoost(cands, rk)
	}
	cands, err := ix.fuseVectors(ctx, cands, q, rk)
	if err != nil {
		return nil, err
	}
	return groupDocs(ix.mem, cands, pq, q, rk, ix.db.Now(), ix.docBM25), nil
}

// introBoost raises the score of the chunks that introduce their pages:
// the text before the first heading of a page that has headings. Where
// an author divides a page into sections, its first words say what the
// whole page is about; a page that answers the query there is about it,
// one that answers it in a later section may only touch on it. A page
// without headings has no introduction apart from the rest (its first
// chunk ends where the chunker cut it): raising the first chunk of every
// page instead cost SciFact's abstracts 0.0007 of nDCG@10.
func (ix *Index) introBoost(cands []*candidate, rk Ranking) {
	if rk.IntroBoost <= 0 || len(cands) == 0 {
		return
	}
	m := ix.mem
	m.RLock()
	defer m.RUnlock()
	for _, c := range cands {
		// Most chunks of a page with headings are under one: they are
		// passed over without looking up their page's slots.
		if int(c.slot) >= m.NumSlots() {
			continue
		}
		if sl := m.Slot(c.slot); sl.ChunkID != c.chunkID || sl.Headed {
			continue
		}
		if ss := m.DocSlots(c.doc.ID); len(ss) > 1 && ss[0] == c.slot && m.Introduces(ss) {
			c.score *= 1 + rk.IntroBoost
			c.intro = true
		}
	}
}

// cutCommon leaves the most common terms out of the candidate query while
// the sum of the live terms' chunk counts exceeds max, keeping at least the
// rarest term. It returns a func that puts them back.
func (pq *parsedQuery) cutCommon(df map[string]int, max int) (restore func()) {
	if max <= 0 {
		return func() {}
	}
	var live []int
	total := 0
	for i, t := range pq.Terms {
		if t.Weight > 0 {
			live = append(live, i)
			total += df[t.Term]
		}
	}
	if total <= max || len(live) < 2 {
		return func() {}
	}
	sort.Slice(live, func(a, b int) bool { return df[pq.Terms[live[a]].Term] > df[pq.Terms[live[b]].Term] })
	saved := map[int]int{}
	for _, i := range live[:len(live)-1] {
		if total <= max {
			break
		}
		total -= df[pq.Terms[i].Term]
		saved[i] = pq.Terms[i].Weight
		pq.Terms[i].Weight = 0
	}
	pq.cutTerms = true
	return func() {
		for i, w := range saved {
			pq.Terms[i].Weight = w
		}
	}
}

func countDocs(cs []*candidate) int {
	seen := map[int64]bool{}
	for _, c := range cs {
		seen[c.doc.ID] = true
	}
	return len(seen)
}

func (pq *parsedQuery) liveTerms() int {
	n := 0
	for _, t := range pq.Terms {
		if t.Weight > 0 && t.Source != "synonym" {
			n++
		}
	}
	return n
}

// candidates returns the best k chunks for the query, honouring the
// filters strictly, best first (or newest first when sorting by date).
func (ix *Index) candidates(pq *parsedQuery, q Query, rk Ranking, k int) []*candidate {
	// Known terms matter for short, navigational queries ("home",
	// "notes"); in long questions the exact column only double-counts
	// titles, which measured worse.
	exact := rk.ExactWeight > 0 && pq.liveTerms() <= rk.ExactMaxTerms
	ps, groups := pq.memPhrases(exact)
	return ix.matchChunks(ps, groups, q, rk, k, pq.allow)
}

// groupDocs folds chunks into documents and applies the document-level
// factors: second chunk, title phrase, thin and archive pages, freshness.
func groupDocs(mem *index.Index, cands []*candidate, pq *parsedQuery, q Query, rk Ranking, now time.Time,
	whole func(*parsedQuery, Ranking, []*docHit) []float64) []*docHit {
	byDoc := make(map[int64]*docHit, len(cands))
	docs := make([]*docHit, 0, len(cands))
	all := make([]docHit, 0, len(cands)) // one allocation for the pages
	for _, c := range cands {
		d := byDoc[c.doc.ID]
		if d == nil {
			all = append(all, docHit{docID: c.doc.ID})
			d = &all[len(all)-1]
			byDoc[c.doc.ID] = d
			docs = append(docs, d)
		}
		d.chunks = append(d.chunks, c)
	}
	for _, d := range docs {
		sort.SliceStable(d.chunks, func(i, j int) bool { return d.chunks[i].score > d.chunks[j].score })
	}
	var pages []float64
	if q.Sort != "date" && whole != nil {
		pages = whole(pq, rk, docs)
	}
	for i, d := range docs {
		first := d.chunks[0]
		d.score = first.score
		if len(d.chunks) > 1 {
			d.score += rk.SecondChunk * d.chunks[1].score
		}
		if i < len(pages) && pages[i] > 0 {
			d.page = pages[i]
			d.score += rk.DocWeight * pages[i]
		}
		d.bm25 = first.score
		if first.intro {
			d.explain = append(d.explain, "in the page's introduction")
		}
		if len(first.variantOf) > 0 {
			d.explain = append(d.explain, "variants of "+strings.Join(first.variantOf, ", "))
		}
		if first.doc.Thin && rk.ThinPenalty > 0 {
			d.score *= rk.ThinPenalty
			d.explain = append(d.explain, "thin page")
		}
		if first.doc.Archive && rk.ArchivePenalty > 0 {
			d.score *= rk.ArchivePenalty
			d.explain = append(d.explain, "archive page")
		}
		if f := freshness(first, pq, rk, now); f != 1 {
			d.score *= f
			d.explain = append(d.explain, fmt.Sprintf("freshness ×%.2f", f))
		}
	}
	if len(pq.Seq) > 0 && len(pq.Seq) <= 6 && rk.TitlePhraseBonus > 0 {
		// The title phrase bonus can only lift documents near the top;
		// looking at the first titlePhraseDocs saves analyzing the rest.
		sort.SliceStable(docs, func(i, j int) bool { return docs[i].score > docs[j].score })
		for i, d := range docs {
			if i >= titlePhraseDocs {
				break
			}
			if containsSeq(mem.Words(d.chunks[0].doc).Title, pq.Seq) {
				d.score *= 1 + rk.TitlePhraseBonus
				d.explain = append(d.explain, "exact phrase in title")
			}
		}
	}
	if q.Sort == "date" {
		sort.SliceStable(docs, func(i, j int) bool {
			return docs[i].chunks[0].doc.Published.After(docs[j].chunks[0].doc.Published)
		})
	} else {
		sort.SliceStable(docs, func(i, j int) bool { return docs[i].score > docs[j].score })
	}
	return docs
}

const titlePhraseDocs = 50

// freshness is the date factor of a document.
func freshness(c *candidate, pq *parsedQuery, rk Ranking, now time.Time) float64 {
	if !pq.Temporal || rk.FreshTemporal <= 0 {
		return 1
	}
	w := rk.FreshTemporal
	date := c.doc.Published
	if date.IsZero() {
		date = c.doc.Modified
	}
	if date.IsZero() {
		return 1 - w/2
	}
	if pq.Year != 0 {
		// A named year asks for that year, not for the newest.
		if date.Year() == pq.Year {
			return 1
		}
		return 1 - w
	}
	age := now.Sub(date) - rk.FreshOffset
	f := 1.0
	if age > 0 && rk.FreshScale > 0 {
		f = math.Pow(rk.FreshDecay, float64(age)/float64(rk.FreshScale))
	}
	return 1 - w + w*f
}
