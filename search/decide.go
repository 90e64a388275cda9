package search

import (
	"math"
	"slices"
	"strings"

	"github.com/askwp/askwpd/analysis"

	"github.com/askwp/askwpd/search/index"
)

// decide sets the result's action and confidence, with thresholds on a
// scale that does not depend on the site's size:
//
//   - coverage: the share of the query's IDF weight the top document's best
//     passage (with title, headings, categories and tags) matches;
//   - matched terms: distinct query terms matched, an exact query phrase in
//     the title counting 2;
//   - the title/keyword guard: a query term in the title, headings,
//     categories or tags, or the query's words in order in the passage;
//   - gap: (top - second) / top over document scores.
//
// no_match when nothing matched or the top document matches under half of
// MinCoverage; clarify when it fails the matched-terms rule, the guard or
// MinCoverage; ambiguous when the second document also passes them all and
// the gap is under MinGap (unless the query is multi-intent, where both
// are the answer); answer otherwise.
func (ix *Index) decide(pq *parsedQuery, rk Ranking, df map[string]int, docs []*docHit, res *Result) {
	if len(docs) == 0 || len(res.Hits) == 0 {
		res.Action, res.Reason = "no_match", "nothing matched"
		return
	}
	j := judge{an: ix.an, mem: ix.mem, pq: pq, hits: res.Hits, n: max(ix.mem.FieldStats().N, 1), df: df}
	strong := func(a assessment) bool {
		return a.matched >= min(rk.MinMatched, len(pq.Terms)+1) && a.guard && a.coverage >= rk.MinCoverage
	}
	top := j.assess(docs[0])
	res.Confidence = round3(top.coverage)
	if !top.guard {
		res.Confidence = round3(min(top.coverage, 0.5))
	}
	switch {
	case top.coverage < rk.MinCoverage/2:
		res.Action, res.Reason = "no_match", "the best page matches only minor words of the query"
	case top.matched < min(rk.MinMatched, len(pq.Terms)+1):
		res.Action, res.Reason = "clarify", "too few query words matched"
	case !top.guard:
		res.Action, res.Reason = "clarify", "matched in body text only, not in a title, heading or tag"
	case top.coverage < rk.MinCoverage:
		res.Action, res.Reason = "clarify", "the best page matches under half of the query"
	default:
		res.Action, res.Reason = "answer", ""
		if len(pq.Intents) >= 2 {
			res.Reason = "multi-intent: one page per part"
			break
		}
		if len(docs) > 1 && docs[0].score > 0 {
			gap := (docs[0].score - docs[1].score) / docs[0].score
			if gap < rk.MinGap && strong(j.assess(docs[1])) {
				res.Action, res.Reason = "ambiguous", "two pages match about equally well"
			}
		}
	}
}

// judge assesses documents against one query.
type judge struct {
	an   *analysis.Analyzer
	mem  *index.Index
	pq   *parsedQuery
	hits []Hit
	n    int // chunks in the index
	df   map[string]int
}

type assessment struct {
	coverage float64
	matched  int
	guard    bool
}

func (j judge) idf(t string) float64 {
	d := float64(j.df[t])
	return math.Log(1 + (float64(j.n)-d+0.5)/(d+0.5))
}

// assess measures a document's best chunk.
func (j judge) assess(d *docHit) assessment {
	c, pq := d.chunks[0], j.pq
	doc := c.doc
	var matchedTerms []string
	if h := hitFor(j.hits, c.chunkID); h != nil {
		matchedTerms = h.MatchedTerms
	} else {
		matchedTerms = matched(j.an, termsOf(pq.Terms), doc.Title+"\n"+c.text, doc.Lang)
	}
	has := map[string]bool{}
	for _, t := range matchedTerms {
		has[t] = true
	}
	var got, all float64
	for _, t := range pq.Terms {
		w := j.idf(t.Term)
		all += w
		if has[t.Term] {
			got += w
		}
	}
	a := assessment{matched: len(matchedTerms)}
	if all > 0 {
		a.coverage = got / all
	}
	titleTerms := j.mem.Words(doc).Title
	if len(pq.Seq) > 0 && containsSeq(titleTerms, pq.Seq) {
		a.matched++
		a.guard = true
	}
	meta := map[string]bool{}
	for _, t := range titleTerms {
		meta[t] = true
	}
	for _, t := range j.an.Analyze(strings.Join(c.headingPath, " ")+" "+
		strings.Join(doc.Categories, " ")+" "+strings.Join(doc.Tags, " "), doc.Lang) {
		meta[t] = true
	}
	for _, t := range pq.Terms {
		if meta[t.Term] {
			a.guard = true
		}
	}
	// The query's words in order in the passage are the last way to the
	// guard and the dearest: the passage is analyzed again. A page that
	// has the guard already, or lacks a word of the query, is spared it.
	if !a.guard && len(pq.Seq) > 1 && mayHoldSeq(pq, has) &&
		containsSeq(j.an.AnalyzeFor(c.text, doc.Lang, analysis.InitialsOf(pq.Seq)), pq.Seq) {
		a.guard = true
	}
	return a
}

// mayHoldSeq reports whether a passage whose matched query terms are has
// may hold the query's words in order: not when it lacks one of them that
// was looked for (a word of Seq past maxQueryTerms never was, nor one
// weighed 0, which a hit's evidence leaves out).
func mayHoldSeq(pq *parsedQuery, has map[string]bool) bool {
	for _, t := range pq.Terms {
		if t.Weight > 0 && !has[t.Term] && slices.Contains(pq.Seq, t.Term) {
			return false
		}
	}
	return true
}

func hitFor(hits []Hit, chunkID int64) *Hit {
	for i := range hits {
		if hits[i].ChunkID == chunkID {
			return &hits[i]
		}
	}
	return nil
}

func termsOf(ts []queryTerm) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Term
	}
	return out
}

// mergeIntents makes sure each part of a multi-intent query ("workspace and
// widgets") has its best page at the top, in the order asked.
func (ix *Index) mergeIntents(pq *parsedQuery, q Query, rk Ranking, docs []*docHit) []*docHit {
	var lead []*docHit
	used := map[int64]bool{}
	for _, part := range pq.Intents {
		sub := &parsedQuery{Text: pq.Text, Lang: pq.Lang, Seq: part, allow: pq.allow}
		want := map[string]bool{}
		for _, t := range part {
			want[t] = true
		}
		for _, t := range pq.Terms {
			if want[t.Term] || (t.Source != "query" && want[stemOf(pq, t.From)]) {
				t.Weight = max(t.Weight, 1)
				if t.Source == "typo" || t.Weight > 0 {
					sub.Terms = append(sub.Terms, t)
				}
			}
		}
		if len(sub.Terms) == 0 {
			continue
		}
		cands := ix.candidates(sub, q, rk, 50)
		for _, d := range groupDocs(ix.mem, cands, sub, q, rk, ix.db.Now(), ix.docBM25) {
			if !used[d.docID] {
				used[d.docID] = true
				d.explain = append(d.explain, "best for: "+strings.Join(part, " "))
				lead = append(lead, d)
				break
			}
		}
	}
	if len(lead) < 2 {
		return docs
	}
	out := lead
	for _, d := range docs {
		if !used[d.docID] {
			out = append(out, d)
		}
	}
	return out
}

// stemOf returns the term a query word analyzed to.
func stemOf(pq *parsedQuery, word string) string {
	if word == "" {
		return ""
	}
	if toks := analysis.AnalyzeTokens(word, pq.Lang); len(toks) > 0 {
		return toks[0].Term
	}
	return word
}
