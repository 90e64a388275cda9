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
// index.DocWords.Meta), meta or text, in query order, and a snippet of
// about n bytes of text around the first match, matched words wrapped in
// ** so a reader sees why the passage matched. One pass over the words
// serves both. tm, when set, is what the rerank found of the terms in
// text: the text is analyzed again only for the terms it does not know
// (a stem such as "increas", which a word may also match by its
// surface), and not for the ones it knows are absent.
func evidence(an *analysis.Analyzer, terms, metaWords []string, meta, text, lang string, n int, tm *textMatches) ([]string, string) {
	e := &evidenceScan{terms: terms, want: make(map[string]bool, len(terms)), have: map[string]bool{}, tm: tm, n: n, first: -1}
	for _, t := range terms {
		e.want[t] = true
	}
	for _, x := range metaWords {
		if e.want[x] {
			e.found(x)
		}
	}
	an.EachAt(meta, lang, analysis.InitialsOf(terms), func(t analysis.Token, _ int) { e.wanted(t) })
	// From here on, pending counts by initial the terms the text may hold
	// and no word matched yet.
	e.pending = map[rune]int{}
	initials, look := e.textInitials(text)
	defer e.release()
	// The text is analyzed in one pass; a token's offset says which of
	// its space-separated words to highlight (no token spans a space).
	// The spans are pooled, as are the surfaces (lowerBufs): made anew,
	// BenchmarkEvidence took 37-39 % longer.
	sp := spanBufs.Get().(*[]span)
	e.ws = words{text: text, spans: (*sp)[:0]}
	defer func() {
		*sp = e.ws.spans[:0]
		spanBufs.Put(sp)
	}()
	e.hits = make([]bool, 0, 64)
	if tm != nil {
		e.markMatches()
	}
	if look {
		e.scanText(an, text, lang, initials)
	}
	out := []string{}
	for _, t := range terms {
		if e.have[t] {
			out = append(out, t)
		}
	}
	if n <= 0 {
		return out, ""
	}
	return out, e.snippet(text)
}

// evidenceScan is one evidence call's state.
type evidenceScan struct {
	terms      []string
	want, have map[string]bool
	tm         *textMatches
	pending    map[rune]int
	done       bool // some initial's terms were all found since the last look
	ws         words
	hits       []bool  // by word of the text: it matched
	surfaces   *[]byte // from lowerBufs, given back by release
	first      int     // the first matched word, or -1
	n          int     // the snippet's bytes
}

// found records that term x was found.
func (e *evidenceScan) found(x string) {
	if e.have[x] {
		return
	}
	e.have[x] = true
	if e.pending != nil && !e.tm.absent(x) {
		r, _ := utf8.DecodeRuneInString(x)
		if e.pending[r]--; e.pending[r] == 0 {
			e.done = true
		}
	}
}

// wanted records the terms token t matches, and reports whether it
// matched one.
func (e *evidenceScan) wanted(t analysis.Token) bool {
	hit := false
	index.TokenWords(t, func(x string) {
		if e.want[x] {
			e.found(x)
			hit = true
		}
	})
	return hit
}

// textInitials returns the initials the text is analyzed for, and
// whether it is to be analyzed at all. An initial is looked for while a
// word may still match one of its terms: not for absent terms, nor, past
// the words a snippet can show, for terms found already.
//
// With the rerank's places, what the text can add is a word whose
// surface is a term that is not its own word's (a stem such as
// "increas"): where the text's words are ASCII, such a word is the term
// spelt out as a whole word (analysis.MayHoldSurface), which most are
// not: "increas" is in "increase", not a word of its own. Scanning for
// every such term, BenchmarkEvidence took 15 % longer on chat questions
// (p=0.029; within noise on claims). The surfaces are read at the first
// term that needs them: most terms are known.
func (e *evidenceScan) textInitials(text string) (initials *analysis.Initials, look bool) {
	var known map[string]bool
	if e.tm != nil {
		known = e.tm.known
	}
	initials = &analysis.Initials{}
	toRead := e.tm != nil
	for _, t := range e.terms {
		if known[t] || t == "" { // the absent terms are known ones
			continue
		}
		if toRead {
			toRead = false
			buf := lowerBufs.Get().(*[]byte)
			var ok bool
			if *buf, ok = analysis.AppendSurfaces((*buf)[:0], text); ok {
				e.surfaces = buf
			} else {
				lowerBufs.Put(buf)
			}
		}
		if e.surfaces != nil && !analysis.MayHoldSurface(*e.surfaces, t) {
			continue
		}
		r, _ := utf8.DecodeRuneInString(t)
		initials.Add(t)
		look = true
		if !e.have[t] {
			e.pending[r]++
		}
	}
	return initials, look
}

// release gives back the surfaces textInitials borrowed.
func (e *evidenceScan) release() {
	if e.surfaces != nil {
		lowerBufs.Put(e.surfaces)
		e.surfaces = nil
	}
}

// hit marks word w of the text matched.
func (e *evidenceScan) hit(w int) {
	if w >= len(e.hits) {
		e.hits = append(e.hits, make([]bool, w+1-len(e.hits))...)
	}
	e.hits[w] = true
}

// markMatches marks the words the rerank found the terms at. The words
// are split only as far as a snippet can show: past n/2 words after the
// first match (at least 2 bytes a word in it), a match counts only among
// the terms found.
func (e *evidenceScan) markMatches() {
	w, ws, n := 0, &e.ws, e.n
	for _, m := range e.tm.at {
		if !e.want[m.term] {
			continue
		}
		e.have[m.term] = true
		if n <= 0 || e.first >= 0 && w > e.first+n/2 {
			continue
		}
		for ws.has(w+1) && int(ws.spans[w+1].start) <= m.at {
			w++
		}
		e.hit(w)
		if e.first < 0 {
			e.first = w
		}
	}
}

// scanText analyzes the text for initials, marking the words that match
// a term; past the words a snippet can show, it stops looking for the
// initials whose terms were all found.
func (e *evidenceScan) scanText(an *analysis.Analyzer, text, lang string, initials *analysis.Initials) {
	w, ws, n := 0, &e.ws, e.n
	past := n <= 0
	e.done = true
	an.EachAt(text, lang, initials, func(t analysis.Token, at int) {
		if !past {
			for ws.has(w+1) && int(ws.spans[w+1].start) <= at {
				w++
			}
			if e.first >= 0 && w > e.first+n/2 {
				past = true
			}
		}
		if e.wanted(t) && !past {
			e.hit(w)
			if e.first < 0 || w < e.first {
				e.first = w
			}
		}
		if past && e.done {
			e.done = false
			for r, k := range e.pending {
				if k == 0 {
					initials.Remove(r)
					delete(e.pending, r)
				}
			}
		}
	})
}

// snippet is about n bytes of text from 8 words before the first match,
// the matched words in **.
func (e *evidenceScan) snippet(text string) string {
	ws := &e.ws
	start := 0
	if e.first > 8 {
		start = e.first - 8
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	for i := start; ws.has(i) && b.Len() < e.n; i++ {
		if i > start {
			b.WriteByte(' ')
		}
		if i < len(e.hits) && e.hits[i] {
			b.WriteString("**" + ws.spans[i].of(text) + "**")
		} else {
			b.WriteString(ws.spans[i].of(text))
		}
		if !ws.has(i + 1) {
			return b.String()
		}
	}
	if ws.has(0) {
		b.WriteString("…")
	}
	return b.String()
}

// spanBufs hold a passage's words (evidence).
var spanBufs = sync.Pool{New: func() any { return new([]span) }}

// lowerBufs hold a passage's surfaces (analysis.AppendSurfaces), for
// evidence.
var lowerBufs = sync.Pool{New: func() any { return new([]byte) }}

// asciiSpace is unicode.IsSpace for the ASCII bytes (false for the
// others, which words.has decodes): decoding every rune, BenchmarkEvidence
// took 18 % longer on claims (p=0.035; on chat questions within noise).
var asciiSpace = [256]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// words splits a text into its space-separated words (strings.Fields,
// with each one's byte offsets), as far as a caller asks: a shown
// passage's snippet needs the words up to its matches and a few dozen
// after.
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
		// The spaces before the next word, then the word; ASCII a byte at
		// a time.
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
