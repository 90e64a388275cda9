package tool

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// quoteMatch is where a quote occurs in a body, in code points.
type quoteMatch struct {
	found      bool
	start, end int
	kind       string // exact | normalized
	starts     []int  // every occurrence's start
}

const maxOccurrences = 20

// findQuote looks for quote in body: verbatim first; then with runs of
// whitespace, typographic quote marks and dashes, Markdown emphasis and
// escapes made equal on both sides, mapping the match back to the exact
// offsets of the original body.
func findQuote(body, quote string) quoteMatch {
	q := strings.TrimSpace(quote)
	if q == "" {
		return quoteMatch{}
	}
	// A match right after an escaping backslash is not the page's text as
	// stored; the normalized search below returns it with its backslash.
	if i := strings.Index(body, q); i >= 0 && !escapedByte(body, i) {
		m := quoteMatch{found: true, kind: "exact"}
		qn := utf8.RuneCountInString(q)
		rs := utf8.RuneCountInString(body[:i])
		for off := i; off >= 0 && len(m.starts) < maxOccurrences; {
			m.starts = append(m.starts, rs)
			j := strings.Index(body[off+1:], q)
			if j < 0 {
				break
			}
			rs += utf8.RuneCountInString(body[off : off+1+j])
			off += 1 + j
		}
		m.start, m.end = m.starts[0], m.starts[0]+qn
		return m
	}
	nb, pos := normalizeQuote(body)
	nq, _ := normalizeQuote(q)
	if len(nq) == 0 {
		return quoteMatch{}
	}
	m := quoteMatch{kind: "normalized"}
	br := []rune(body)
	for from := 0; len(m.starts) < maxOccurrences; {
		i := indexRunes(nb[from:], nq)
		if i < 0 {
			break
		}
		i += from
		// Normalizing dropped the backslash that escapes the first
		// character; the passage keeps it, or "\# not a heading" would be
		// quoted as a heading.
		start := pos[i]
		if backslashesBefore(br, start)%2 == 1 {
			start--
		}
		if !m.found {
			m.found, m.start, m.end = true, start, pos[i+len(nq)-1]+1
		}
		m.starts = append(m.starts, start)
		from = i + 1
	}
	return m
}

// normalizeQuote folds s for quote matching and returns, for each rune of
// the result, the code point offset in s it came from.
func normalizeQuote(s string) ([]rune, []int) {
	out := make([]rune, 0, len(s))
	pos := make([]int, 0, len(s))
	space := true // drops leading whitespace
	i := 0
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			if !space {
				out, pos = append(out, ' '), append(pos, i)
				space = true
			}
		case r == '*' || r == '`' || r == '\\':
			// Markdown emphasis, code spans and escapes: the rendered
			// page a reader quotes from shows none of them.
		default:
			switch r {
			case '‘', '’', '‛', '′':
				r = '\''
			case '“', '”', '„', '″', '«', '»':
				r = '"'
			case '‐', '‑', '‒', '–', '—', '―', '−':
				r = '-'
			}
			if r == '…' {
				out, pos = append(out, '.', '.', '.'), append(pos, i, i, i)
			} else {
				out, pos = append(out, r), append(pos, i)
			}
			space = false
		}
		i++
	}
	for len(out) > 0 && out[len(out)-1] == ' ' {
		out, pos = out[:len(out)-1], pos[:len(pos)-1]
	}
	return out, pos
}

// escapedByte reports whether body[i] follows an odd run of backslashes.
func escapedByte(body string, i int) bool {
	n := 0
	for i > 0 && body[i-1] == '\\' {
		n++
		i--
	}
	return n%2 == 1
}

func indexRunes(s, sub []rune) int {
	if len(sub) == 0 {
		return 0
	}
outer:
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i] != sub[0] {
			continue
		}
		for j := 1; j < len(sub); j++ {
			if s[i+j] != sub[j] {
				continue outer
			}
		}
		return i
	}
	return -1
}
