package search

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/search/index"
)

// matched returns the terms that occur in text, analyzed in lang.
func matched(an *analysis.Analyzer, terms []string, text, lang string) []string {
	m, _ := evidence(an, terms, nil, text, "", lang, 0, nil)
	return m
}

// evidence returns the terms found in metaWords (analyzed already, as
// index.Doc.metaWords), meta or text, in query order, and a
// snippet of about n bytes of text around the first match, matched words
// wrapped in ** so a reader sees why the passage matched. One pass over
// the words serves both. tm, when set, is what the rerank found of the
// terms in text: the text is analyzed again only for the terms it does
// not know (a stem such as "increas", which a word may also match by its
// surface), and not for the ones it knows are absent.
func evidence(an *analysis.Analyzer, terms, metaWords []string, meta, text, lang string, n int, tm *textMatches) ([]string, string) {
	want := make(map[string]bool, len(terms))
	for _, t := range terms {
		want[t] = true
	}
	initials := analysis.InitialsOf(terms)
	have := map[string]bool{}
	var known map[string]bool
	if tm != nil {
		known = tm.known
	}
	// pending counts, by initial, the terms the text may hold and no word
	// matched yet; it is set up after the meta.
	var pending map[rune]int
	done := false // some initial's terms were all found since the last look
	found := func(x string) {
		if have[x] {
			return
		}
		have[x] = true
		if pending != nil && !tm.absent(x) {
			r, _ := utf8.DecodeRuneInString(x)
			if pending[r]--; pending[r] == 0 {
				done = true
			}
		}
	}
	wanted := func(t analysis.Token) bool {
		hit := false
		index.TokenWords(t, func(x string) {
			if want[x] {
				found(x)
				hit = true
			}
		})
		return hit
	}
	for _, x := range metaWords {
		if want[x] {
			found(x)
		}
	}
	an.EachAt(meta, lang, initials, func(t analysis.Token, _ int) { wanted(t) })
	// In the text, an initial is looked for while a word may still match
	// one of its terms: not for absent terms, nor, past the words a snippet
	// can show (n/2 at most, from 8 before the first match), for terms
	// found already.
	initials, pending = &analysis.Initials{}, map[rune]int{}
	look := false
	// With the rerank's places, what the text can add is a word whose
	// surface is a term that is not its own word's (a stem such as
	// "increas"): where the text's words are ASCII, such a word is the
	// term spelt out as a whole word (analysis.MayHoldSurface), which
	// most are not: "increas" is in "increase", not a word of its own.
	// The scan for them was a twentieth of a search, and a tenth on
	// wpdocs' questions. The surfaces are read at the first term that
	// needs them: most terms are known.
	var surfaces *[]byte
	toRead := tm != nil
	for _, t := range terms {
		if known[t] || t == "" { // the absent terms are known ones
			continue
		}
		if toRead {
			toRead = false
			buf := lowerBufs.Get().(*[]byte)
			var ok bool
			if *buf, ok = analysis.AppendSurfaces((*buf)[:0], text); ok {
				surfaces = buf
				defer lowerBufs.Put(buf)
			} else {
				lowerBufs.Put(buf)
			}
		}
		if surfaces != nil && !analysis.MayHoldSurface(*surfaces, t) {
			continue
		}
		r, _ := utf8.DecodeRuneInString(t)
		initials.Add(t)
		look = true
		if !have[t] {
			pending[r]++
		}
	}
	// The text is analyzed in one pass; a token's offset says which of
	// its space-separated words to highlight (no token spans a space).
	// The words are split only as far as a snippet can show: past n/2
	// words after the first match (at least 2 bytes a word in it), a match
	// counts only among the terms found.
	// The spans are pooled: sized for a whole passage, they were a tenth
	// of a search's allocated bytes.
	sp := spanBufs.Get().(*[]span)
	ws := &words{text: text, spans: (*sp)[:0]}
	defer func() {
		*sp = ws.spans[:0]
		spanBufs.Put(sp)
	}()
	hits := make([]bool, 0, 64)
	hit := func(w int) {
		if w >= len(hits) {
			hits = append(hits, make([]bool, w+1-len(hits))...)
		}
		hits[w] = true
	}
	first := -1
	if tm != nil {
		w := 0
		for _, m := range tm.at {
			if !want[m.term] {
				continue
			}
			have[m.term] = true
			if n <= 0 || first >= 0 && w > first+n/2 {
				continue
			}
			for ws.has(w+1) && int(ws.spans[w+1].start) <= m.at {
				w++
			}
			hit(w)
			if first < 0 {
				first = w
			}
		}
	}
	if look {
		w := 0
		past := n <= 0
		done = true
		an.EachAt(text, lang, initials, func(t analysis.Token, at int) {
			if !past {
				for ws.has(w+1) && int(ws.spans[w+1].start) <= at {
					w++
				}
				if first >= 0 && w > first+n/2 {
					past = true
				}
			}
			if wanted(t) && !past {
				hit(w)
				if first < 0 || w < first {
					first = w
				}
			}
			if past && done {
				done = false
				for r, k := range pending {
					if k == 0 {
						initials.Remove(r)
						delete(pending, r)
					}
				}
			}
		})
	}
	out := []string{}
	for _, t := range terms {
		if have[t] {
			out = append(out, t)
		}
	}
	if n <= 0 {
		return out, ""
	}
	start := 0
	if first > 8 {
		start = first - 8
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	for i := start; ws.has(i) && b.Len() < n; i++ {
		if i > start {
			b.WriteByte(' ')
		}
		if i < len(hits) && hits[i] {
			b.WriteString("**" + ws.spans[i].of(text) + "**")
		} else {
			b.WriteString(ws.spans[i].of(text))
		}
		if !ws.has(i + 1) {
			return out, b.String()
		}
	}
	if ws.has(0) {
		b.WriteString("…")
	}
	return out, b.String()
}

var spanBufs = sync.Pool{New: func() any { return new([]span) }}

// lowerBufs hold a passage's surfaces (analysis.AppendSurfaces), for
// evidence.
var lowerBufs = sync.Pool{New: func() any { return new([]byte) }}

// asciiSpace is unicode.IsSpace for the ASCII bytes (false for the
// others, which words.has decodes).
var asciiSpace = [256]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// words splits a text into its space-separated words (strings.Fields,
// with each one's byte offsets), as far as a caller asks: a shown
// passage's snippet needs the words up to its matches and a few dozen
// after, and splitting every word of every hit's text was a twentieth of
// a search.
type words struct {
	text  string
	spans []span
	next  int // where splitting goes on
}

// has reports whether the text has an i-th word (from 0), splitting it
// as far as that.
func (ws *words) has(i int) bool {
	s := ws.text
	for len(ws.spans) <= i {
		// The spaces before the next word, then the word; ASCII without
		// a call, a byte at a time: this runs over every shown passage.
		j := ws.next
		for j < len(s) {
			if c := s[j]; c < utf8.RuneSelf {
				if !asciiSpace[c] {
					break
				}
				j++
			} else if r, size := utf8.DecodeRuneInString(s[j:]); unicode.IsSpace(r) {
				j += size
			} else {
				break
			}
		}
		if j == len(s) {
			ws.next = j
			break
		}
		start := j
		for j < len(s) {
			if c := s[j]; c < utf8.RuneSelf {
				if asciiSpace[c] {
					break
				}
				j++
			} else if r, size := utf8.DecodeRuneInString(s[j:]); !unicode.IsSpace(r) {
				j += size
			} else {
				break
			}
		}
		ws.spans = append(ws.spans, span{int32(start), int32(j)})
		ws.next = j
	}
	return i < len(ws.spans)
}

// span is a word of a text, by its byte offsets: a third of a string and
// an int, for every word of every shown passage.
type span struct{ start, end int32 }

func (w span) of(text string) string { return text[w.start:w.end] }
