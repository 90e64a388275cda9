package search

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/askwp/askwpd/analysis"
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
	// Source is "query", "synonym" or "typo".
	Source string
	// From is the query word a synonym or typo correction came from.
	From string
	// Weight counts the term that many times in the BM25 sum; 0 leaves it
	// out (a word found nowhere, or a common word cut for speed).
	Weight int
}

// parsedQuery is a query after analysis.
type parsedQuery struct {
	Text     string
	Lang     string
	Terms    []queryTerm
	Seq      []string   // the query's own terms in order, for phrase matching
	Phrases  [][]string // quoted phrases, analyzed
	Temporal bool       // asks for recent content
	Year     int        // a year named in the query, or 0
	Intents  [][]string // the parts of a multi-intent query ("X and Y")
	// requireAll makes the candidate query an AND of the terms: the fast
	// first pass of a short query.
	requireAll bool
	// cutTerms is set when common terms were left out of the candidate
	// query (cutCommon): the rerank must then score them.
	cutTerms bool
	// allow, when set, holds the only slots a candidate may come from:
	// those holding the query's quoted phrases.
	allow map[uint32]bool
}

var temporalWords = map[string]bool{
	"latest": true, "newest": true, "new": true, "recent": true, "recently": true, "today": true,
	"yesterday": true, "current": true, "currently": true, "upcoming": true, "now": true,
}

var temporalPhrases = []string{"this week", "this month", "this year", "last week", "last month", "right now"}

// parseQuery analyzes a query in lang. It never fails: a query with no
// usable words yields no terms.
func parseQuery(text, lang string, syn *analysis.Synonyms) *parsedQuery {
	if len(text) > maxQueryBytes {
		cut := maxQueryBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	pq := &parsedQuery{Text: text, Lang: lang}
	pq.Temporal, pq.Year = temporal(text)
	pq.Phrases = quotedPhrases(text, lang)

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

	analyzed := syn.RewritePhrases(text)
	for _, tok := range analysis.AnalyzeTokens(analyzed, lang) {
		if analysis.IsFiller(tok.Surface) {
			continue
		}
		if to, ok := syn.Rewrite(tok.Surface); ok {
			for _, w := range to {
				for _, t := range analysis.AnalyzeTokens(w, lang) {
					add(queryTerm{Term: t.Term, Surface: t.Surface, Code: t.Code, Source: "synonym", From: tok.Surface})
					pq.Seq = append(pq.Seq, t.Term)
				}
			}
			continue
		}
		add(queryTerm{Term: tok.Term, Surface: tok.Surface, Code: tok.Code, Source: "query"})
		pq.Seq = append(pq.Seq, tok.Term)
		if hasDigit(tok.Surface) {
			// "php8" also finds "PHP-8", the way the index splits both.
			for _, p := range tok.Parts {
				add(queryTerm{Term: p, Surface: p, Source: "synonym", From: tok.Surface})
			}
		}
		for _, w := range syn.Equivalents(tok.Surface) {
			for _, t := range analysis.AnalyzeTokens(w, lang) {
				add(queryTerm{Term: t.Term, Surface: t.Surface, Code: t.Code, Source: "synonym", From: tok.Surface})
			}
		}
	}
	pq.Intents = splitIntents(text, lang)
	return pq
}

// temporal reports whether text asks for recent content, and the year
// it names, if any.
func temporal(text string) (recent bool, year int) {
	words := analysis.Words(text)
	padded := " " + strings.Join(words, " ") + " "
	for _, w := range words {
		if temporalWords[w] {
			recent = true
		}
		if len(w) == 4 && isDigits(w) {
			if y, _ := strconv.Atoi(w); y >= 1990 && y <= 2100 {
				year = y
				recent = true
			}
		}
	}
	for _, p := range temporalPhrases {
		if strings.Contains(padded, " "+p+" ") {
			recent = true
		}
	}
	return recent, year
}

// quotedPhrases returns text's quoted phrases of two terms or more,
// analyzed in lang.
func quotedPhrases(text, lang string) [][]string {
	var out [][]string
	for rest := text; ; {
		i := strings.IndexAny(rest, "\"“”")
		if i < 0 {
			return out
		}
		_, sz := utf8.DecodeRuneInString(rest[i:])
		rest = rest[i+sz:]
		j := strings.IndexAny(rest, "\"“”")
		if j < 0 {
			return out
		}
		var ph []string
		for _, t := range analysis.AnalyzeTokens(rest[:j], lang) {
			ph = append(ph, t.Term)
		}
		if len(ph) > 1 {
			out = append(out, ph)
		}
		_, sz = utf8.DecodeRuneInString(rest[j:])
		rest = rest[j+sz:]
	}
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
		for _, t := range analysis.AnalyzeTokens(p, lang) {
			if !analysis.IsFiller(t.Surface) {
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

// group is the term's group in an AND of the terms: its own, or, for a
// synonym, the query word it stands for.
func (t queryTerm) group() string {
	if t.Source == "synonym" && t.From != "" {
		return "\x00" + t.From
	}
	return t.Term
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

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}
