package search

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/askwp/askwpd/analysis"
)

// DocPassage is a chunk of one document that matched a query.
type DocPassage struct {
	ChunkID      int64    `json:"chunk_id"`
	Ord          int      `json:"ord"`
	Start        int      `json:"start"`
	End          int      `json:"end"`
	Text         string   `json:"text"`
	HeadingPath  []string `json:"heading_path"`
	Type         string   `json:"type"`
	CodeLang     string   `json:"code_lang,omitempty"`
	Score        float64  `json:"score"`
	MatchedTerms []string `json:"matched_terms"`
	Snippet      string   `json:"snippet"`
}

// SearchDocument ranks the chunks of one document for a query, best first
// (in document order on ties), with BM25 over each chunk's own words and
// headings: the title, categories and tags are the same for every chunk
// of a document, so they cannot tell them apart. Term frequencies in the
// site's chunks give the IDF. It returns the analyzed query terms too; no
// passages and no error means no query word occurs in the document.
func (ix *Index) SearchDocument(ctx context.Context, docID int64, text, lang string, limit int) ([]DocPassage, []string, error) {
	if limit <= 0 {
		limit = 5
	}
	var terms []string
	seen := map[string]bool{}
	for _, t := range analysis.AnalyzeTokens(text, lang) {
		if seen[t.Term] || len(terms) >= maxQueryTerms {
			continue
		}
		seen[t.Term] = true
		terms = append(terms, t.Term)
	}
	if len(terms) == 0 {
		return nil, terms, nil
	}
	if err := ix.ready(ctx); err != nil {
		return nil, terms, err
	}
	ix.catchUp(ctx)
	scored := ix.scoreDocument(docID, terms)
	if len(scored) > limit {
		scored = scored[:limit]
	}
	ids := make([]int64, len(scored))
	for i, s := range scored {
		ids[i] = s.chunkID
	}
	chunks, err := ix.db.ChunksByID(ctx, ids)
	if err != nil {
		return nil, terms, fmt.Errorf("search: search document %d: %w", docID, err)
	}
	var out []DocPassage
	for _, s := range scored {
		c := chunks[s.chunkID]
		if c == nil {
			continue // deleted since
		}
		p := DocPassage{ChunkID: c.ID, Ord: c.Ord, Start: c.Start, End: c.End, Text: c.Text, HeadingPath: c.HeadingPath,
			Type: c.Type, CodeLang: c.CodeLang, Score: round3(s.score)}
		if p.HeadingPath == nil {
			p.HeadingPath = []string{}
		}
		p.MatchedTerms, p.Snippet = evidence(ix.an, terms, nil, strings.Join(p.HeadingPath, " "), p.Text, lang, 240, nil)
		out = append(out, p)
	}
	return out, terms, nil
}

type chunkScore struct {
	chunkID int64
	score   float64
}

// scoreDocument is BM25 (the candidate query's k1, b and lengths) over
// the keywords and body columns of one document's chunks. A term's IDF
// counts the site's chunks holding it in those columns.
func (ix *Index) scoreDocument(docID int64, terms []string) []chunkScore {
	m := ix.mem
	m.RLock()
	defer m.RUnlock()
	slots := m.DocSlots(docID)
	if len(slots) == 0 || m.Live() == 0 {
		return nil
	}
	in := make(map[uint32]int, len(slots)) // slot → its position in the document
	for i, s := range slots {
		in[s] = i
	}
	var total int64
	for _, n := range m.ColTotal() {
		total += n
	}
	avgdl := float64(total) / float64(m.Live())
	score := make([]float64, len(slots))
	hit := make([]bool, len(slots))
	for _, term := range terms {
		t := m.Term(term)
		if t == nil {
			continue
		}
		nHit := 0
		type match struct {
			pos  int
			freq float64
		}
		var here []match
		it := t.Postings()
		for ps := it.Next(); len(ps) > 0; ps = it.Next() {
			for _, p := range ps {
				if _, live := m.Len(p.Slot); p.Mask&6 == 0 || !live {
					continue
				}
				nHit++
				if pos, ok := in[p.Slot]; ok {
					here = append(here, match{pos, float64(p.TF[1]) + float64(p.TF[2])})
				}
			}
		}
		if len(here) == 0 {
			continue
		}
		idf := bm25IDF(float64(m.Live()), float64(nHit))
		for _, h := range here {
			size := float64(m.Slot(slots[h.pos]).Size)
			score[h.pos] += idf * (h.freq * (bm25K1 + 1)) / (h.freq + bm25K1*(1-bm25B+bm25B*size/avgdl))
			hit[h.pos] = true
		}
	}
	var out []chunkScore
	for i, s := range slots {
		if hit[i] {
			out = append(out, chunkScore{m.Slot(s).ChunkID, score[i]})
		}
	}
	// A document's slots are in its chunks' order, so a stable sort keeps
	// that order on ties.
	sort.SliceStable(out, func(i, j int) bool { return out[i].score > out[j].score })
	return out
}
