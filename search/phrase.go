package search

import (
	"context"
	"strings"

	"github.com/askwp/askwpd/analysis"

	"github.com/askwp/askwpd/search/index"
)

// maxPhraseChunks bounds the chunks read to check a quoted phrase. A
// phrase whose words are all in more chunks than this is common enough
// that requiring it narrows little; it is then searched as its words.
const maxPhraseChunks = 3000

// matchPhrases restricts the query to the chunks holding its quoted
// phrases, word for word. The index knows which chunks hold all of a
// phrase's words but not where; their stored text tells. A phrase found
// nowhere is searched as its words alone, as is the set of phrases when
// no chunk holds them all.
func (ix *Index) matchPhrases(ctx context.Context, pq *parsedQuery) error {
	var allow map[uint32]bool
	for _, ph := range pq.Phrases {
		slots := ix.holdingAll(ph, maxPhraseChunks)
		if len(slots) == 0 {
			continue
		}
		found, err := ix.verifyPhrase(ctx, ph, slots)
		if err != nil {
			return err
		}
		if len(found) == 0 {
			continue
		}
		if allow == nil {
			allow = found
			continue
		}
		for s := range allow {
			if !found[s] {
				delete(allow, s)
			}
		}
	}
	if len(allow) > 0 {
		pq.allow = allow
	}
	return nil
}

// holdingAll returns the live slots holding every term in the stemmed
// columns, with their chunks, or nil when there are more than max.
func (ix *Index) holdingAll(terms []string, max int) map[uint32]*candidate {
	m := ix.mem
	m.RLock()
	defer m.RUnlock()
	var have map[uint32]int
	for i, term := range terms {
		t := m.Term(term)
		if t == nil {
			return nil
		}
		next := map[uint32]int{}
		it := t.Postings()
		for ps := it.Next(); len(ps) > 0; ps = it.Next() {
			for _, p := range ps {
				if _, live := m.Len(p.Slot); p.Mask&index.Stemmed == 0 || !live {
					continue
				}
				if i == 0 || have[p.Slot] == i {
					next[p.Slot] = i + 1
				}
			}
		}
		have = next
		if len(have) == 0 {
			return nil
		}
	}
	if len(have) > max {
		return nil
	}
	out := make(map[uint32]*candidate, len(have))
	for s := range have {
		sl := m.Slot(s)
		c := newCandidate(sl, m.Kind(sl), 0)
		c.slot = s
		out[s] = &c
	}
	return out
}

// verifyPhrase returns the slots whose title, keywords or text hold the
// phrase's terms in a row.
func (ix *Index) verifyPhrase(ctx context.Context, ph []string, slots map[uint32]*candidate) (map[uint32]bool, error) {
	cs := make([]*candidate, 0, len(slots))
	for _, c := range slots {
		cs = append(cs, c)
	}
	if err := ix.loadTexts(ctx, cs); err != nil {
		return nil, err
	}
	want := analysis.InitialsOf(ph)
	found := map[uint32]bool{}
	for s, c := range slots {
		doc := c.doc
		fields := []string{doc.Title,
			strings.Join(doc.Categories, " ") + " " + strings.Join(doc.Tags, " ") + " " + strings.Join(c.headingPath, " "),
			c.text}
		for _, f := range fields {
			if c.loaded && containsSeq(ix.an.IndexTerms(f, doc.Lang, want), ph) {
				found[s] = true
				break
			}
		}
	}
	return found, nil
}
