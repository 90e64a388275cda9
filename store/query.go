package store

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Query parsing limits: a 10k-character query is answered, from its start.
const (
	maxQueryBytes = 2048
	maxQueryTerms = 32
)

// queryTerm is one term a search looks for.
type queryTerm struct {
	Term    string // the index term (stemmed)
	Surface string // the folded word, matched against known terms unstemmed
	Code    bool
	// Source is "query", "synonym", "typo" or "feedback".
	Source string
	// From is the query word a synonym or typo correction came from.
	From string
	// Weight repeats the term in the full-text query (FTS5 has no term
	// weights; bm25() sums over phrases, so a repeated phrase counts again).
	Weight int
}

// parsedQuery is a query after analysis.
type parsedQuery struct {
	Text     string
	Lang     *language
	Terms    []queryTerm
	Seq      []string   // the query's own terms in order, for phrase matching
	Phrases  [][]string // quoted phrases, analyzed
	Temporal bool       // asks for recent content
	Year     int        // a year named in the query, or 0
	Intents  [][]string // the parts of a multi-intent query ("X and Y")
	// requireAll makes the full-text query an AND of the terms: the fast
	// first pass of a short query.
	requireAll bool
	// cutTerms is set when common terms were left out of the full-text
	// query (cutCommon): the rerank must then score them.
	cutTerms bool
	// mem is the in-memory index when it is current, else nil.
	mem *memIndex
}

var temporalWords = map[string]bool{
	"latest": true, "newest": true, "new": true, "recent": true, "recently": true, "today": true,
	"yesterday": true, "current": true, "currently": true, "upcoming": true, "now": true,
}

var temporalPhrases = []string{"this week", "this month", "this year", "last week", "last month", "right now"}

// parseQuery analyzes a query in lang. It never fails: a query with no
// usable words yields no terms.
func parseQuery(text, lang string, syn *Synonyms) *parsedQuery {
	if len(text) > maxQueryBytes {
		cut := maxQueryBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	pq := &parsedQuery{Text: text, Lang: languageOf(lang)}
	words := tokenize(text)
	padded := " " + strings.Join(words, " ") + " "
	for _, w := range words {
		if temporalWords[w] {
			pq.Temporal = true
		}
		if len(w) == 4 && isDigits(w) {
			if y, _ := strconv.Atoi(w); y >= 1990 && y <= 2100 {
				pq.Year = y
				pq.Temporal = true
			}
		}
	}
	for _, p := range temporalPhrases {
		if strings.Contains(padded, " "+p+" ") {
			pq.Temporal = true
		}
	}

	// Quoted phrases.
	for rest := text; ; {
		i := strings.IndexAny(rest, "\"“”")
		if i < 0 {
			break
		}
		_, sz := utf8.DecodeRuneInString(rest[i:])
		rest = rest[i+sz:]
		j := strings.IndexAny(rest, "\"“”")
		if j < 0 {
			break
		}
		var ph []string
		for _, t := range AnalyzeTokens(rest[:j], lang) {
			ph = append(ph, t.Term)
		}
		if len(ph) > 1 {
			pq.Phrases = append(pq.Phrases, ph)
		}
		_, sz = utf8.DecodeRuneInString(rest[j:])
		rest = rest[j+sz:]
	}

	seen := map[string]int{}
	add := func(t queryTerm) {
		if t.Term == "" || len(pq.Terms) >= maxQueryTerms {
			return
		}
		if i, ok := seen[t.Term]; ok {
			if t.Source == "query" && pq.Terms[i].Source != "query" {
				pq.Terms[i].Source, pq.Terms[i].From = "query", ""
			}
			return
		}
		seen[t.Term] = len(pq.Terms)
		t.Weight = 1
		pq.Terms = append(pq.Terms, t)
	}

	analyzed := syn.rewritePhrases(text)
	for _, tok := range AnalyzeTokens(analyzed, lang) {
		if fillerWords[tok.Surface] {
			continue
		}
		if syn != nil {
			if to, ok := syn.wordRewrite[tok.Surface]; ok {
				for _, w := range to {
					for _, t := range AnalyzeTokens(w, lang) {
						add(queryTerm{Term: t.Term, Surface: t.Surface, Code: t.Code, Source: "synonym", From: tok.Surface})
						pq.Seq = append(pq.Seq, t.Term)
					}
				}
				continue
			}
		}
		add(queryTerm{Term: tok.Term, Surface: tok.Surface, Code: tok.Code, Source: "query"})
		pq.Seq = append(pq.Seq, tok.Term)
		if hasDigit(tok.Surface) {
			// "IL6" also finds "IL-6", the way the index splits both.
			for _, p := range tok.Parts {
				add(queryTerm{Term: p, Surface: p, Source: "synonym", From: tok.Surface})
			}
		}
		if syn != nil {
			for _, w := range syn.equivalents[tok.Surface] {
				for _, t := range AnalyzeTokens(w, lang) {
					add(queryTerm{Term: t.Term, Surface: t.Surface, Code: t.Code, Source: "synonym", From: tok.Surface})
				}
			}
		}
	}
	pq.Intents = splitIntents(text, lang)
	return pq
}

// splitIntents splits a short query that joins two or more subjects ("X
// and Y", "X, Y", "X & Y", "X vs Y") into their analyzed terms. Long
// queries are sentences, not lists, and are not split.
func splitIntents(text, lang string) [][]string {
	norm := " " + strings.ToLower(text) + " "
	for _, sep := range []string{" and ", " & ", ",", " vs ", " vs. ", " versus ", " or "} {
		norm = strings.ReplaceAll(norm, sep, "\x00")
	}
	parts := strings.Split(norm, "\x00")
	if len(parts) < 2 {
		return nil
	}
	var out [][]string
	total := 0
	for _, p := range parts {
		var ts []string
		for _, t := range AnalyzeTokens(p, lang) {
			if !fillerWords[t.Surface] {
				ts = append(ts, t.Term)
			}
		}
		if len(ts) == 0 {
			continue
		}
		if len(ts) > 3 {
			return nil
		}
		total += len(ts)
		out = append(out, ts)
	}
	if len(out) < 2 || total > 6 {
		return nil
	}
	return out
}

// ftsString quotes a term as an FTS5 string.
func ftsString(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// matchExpr builds the FTS5 MATCH expression: every term (stem) in the
// stemmed columns, its surface form in the exact column, and, when
// bigrams is set, each pair of adjacent query terms as a phrase, which
// bm25() then scores as one more term: a proximity bonus.
func (pq *parsedQuery) matchExpr(bigrams, exact bool) string {
	if pq.requireAll {
		return pq.allExpr()
	}
	var parts []string
	for _, t := range pq.Terms {
		if t.Weight <= 0 {
			continue
		}
		q := `{title keywords body}: ` + ftsString(t.Term)
		for i := 0; i < t.Weight; i++ {
			parts = append(parts, q)
		}
		if exact && t.Surface != "" && t.Source != "feedback" {
			parts = append(parts, `exact: `+ftsString(t.Surface))
		}
	}
	if bigrams {
		for i := 0; i+1 < len(pq.Seq) && i < 16; i++ {
			if pq.Seq[i] != pq.Seq[i+1] {
				parts = append(parts, `{title keywords body}: `+ftsString(pq.Seq[i]+" "+pq.Seq[i+1]))
			}
		}
	}
	for _, ph := range pq.Phrases {
		parts = append(parts, ftsString(strings.Join(ph, " ")))
	}
	return strings.Join(parts, " OR ")
}

// group is the term's group in an AND of the terms: its own, or, for a
// synonym, the query word it stands for.
func (t queryTerm) group() string {
	if t.Source == "synonym" && t.From != "" {
		return "\x00" + t.From
	}
	return t.Term
}

// allExpr requires every live query term (or one of its synonyms, or its
// exact surface form) to match.
func (pq *parsedQuery) allExpr() string {
	groups := map[string][]string{}
	var order []string
	for _, t := range pq.Terms {
		if t.Weight <= 0 {
			continue
		}
		key := t.group()
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], `{title keywords body}: `+ftsString(t.Term))
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, "("+strings.Join(groups[k], " OR ")+")")
	}
	return strings.Join(parts, " AND ")
}

// containsSeq reports whether seq occurs contiguously in terms.
func containsSeq(terms, seq []string) bool {
	if len(seq) == 0 || len(seq) > len(terms) {
		return false
	}
outer:
	for i := 0; i+len(seq) <= len(terms); i++ {
		for j := range seq {
			if terms[i+j] != seq[j] {
				continue outer
			}
		}
		return true
	}
	return false
}
