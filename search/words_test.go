package search

import (
	"slices"
	"testing"
	"unicode"
)

// fieldsByRune is words as it was, rune by rune.
func fieldsByRune(s string) (words []string, starts []int) {
	start := -1
	for i, r := range s {
		if unicode.IsSpace(r) {
			if start >= 0 {
				words, starts = append(words, s[start:i]), append(starts, start)
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		words, starts = append(words, s[start:]), append(starts, start)
	}
	return words, starts
}

func FuzzWords(f *testing.F) {
	for _, s := range []string{"", " a  b\\n", "caf\u00e9\u00a0au\u2003lait\u0085x", "\xff \xfe\tz\r\n", "\v\f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Word by word, as a snippet asks for them, and all at once.
		var w []string
		var st []int
		ws := &words{text: s}
		for i := 0; ws.has(i); i++ {
			w, st = append(w, ws.spans[i].of(s)), append(st, int(ws.spans[i].start))
		}
		w0, st0 := fieldsByRune(s)
		if !slices.Equal(w, w0) || !slices.Equal(st, st0) {
			t.Errorf("words(%q) one by one = %q %v, rune by rune %q %v", s, w, st, w0, st0)
		}
		all := &words{text: s}
		if all.has(len(s)) || len(all.spans) != len(w0) {
			t.Errorf("words(%q) at once: %d words, want %d", s, len(all.spans), len(w0))
		}
	})
}
