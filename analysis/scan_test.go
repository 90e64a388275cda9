package analysis

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// scanWords takes runs of ASCII word bytes whole: it finds the words, and
// where they start, that a rune-by-rune scan (scanWordsReference, the
// scan before it) finds, on random text mixing ASCII, apostrophes, dots
// between digits, diacritics, combining marks and scripts without spaces;
// and stopping after k words gives the first k.
func TestScanWords_Runs(t *testing.T) {
	pieces := []string{"plugin", "WP_Query", "v1", "2", "3.14", ".", "'", "’", "don't", "o’clock", "e\u0301", "café",
		"Łódź", "日本", "語", "-", " ", "  ", "\n", ",", "(", ")", "_", "x", "α", "ǅ", "١٢", "a.b", "9.", ".5", "it's'", "’s"}
	rng := rand.New(rand.NewPCG(3, 4))
	type word struct {
		raw string
		at  int
	}
	for range 5000 {
		var b strings.Builder
		for range rng.IntN(30) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		var got, want []word
		scanWords(text, func(raw string, at int) { got = append(got, word{raw, at}) })
		scanWordsReference(text, func(raw string, at int) bool { want = append(want, word{raw, at}); return true })
		if !slices.Equal(got, want) {
			t.Fatalf("%q: %v, want %v", text, got, want)
		}
		if len(want) == 0 {
			continue
		}
		k := 1 + rng.IntN(len(want))
		var first []word
		scanWordsWhile(text, func(raw string, at int) bool { first = append(first, word{raw, at}); return len(first) < k })
		if !slices.Equal(first, want[:k]) {
			t.Fatalf("%q stopping after %d: %v, want %v", text, k, first, want[:k])
		}
	}
}

func scanWordsReference(text string, fn func(raw string, at int) bool) {
	var buf []byte // the word, once an apostrophe was dropped from it
	start, end := -1, 0
	split, stopped := false, false
	flush := func() {
		if start < 0 {
			return
		}
		w := text[start:end]
		if split {
			w = string(buf)
		}
		stopped = !fn(w, start)
		start, split = -1, false
	}
	add := func(i, size int) {
		if start < 0 {
			start = i
		}
		if split {
			buf = append(buf, text[i:i+size]...)
		}
		end = i + size
	}
	prev := rune(-1)
	for i := 0; i < len(text) && !stopped; {
		at := i
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		i += size
		switch {
		case r < utf8.RuneSelf && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_'):
			// Most text is ASCII: skip the Unicode tables.
			add(at, size)
		case r < utf8.RuneSelf && r != '\'' && r != '.':
			flush()
		case isIdeograph(r):
			flush()
			if !stopped {
				stopped = !fn(text[at:i], at)
			}
		case isWordRune(r):
			add(at, size)
		case (r == '\'' || r == '’') && start >= 0 && unicode.IsLetter(prev):
			next, _ := utf8.DecodeRuneInString(text[i:])
			if !unicode.IsLetter(next) {
				flush()
			} else if !split {
				// Skip the apostrophe and keep joining.
				buf, split = append(buf[:0], text[start:end]...), true
			}
		case r == '.' && start >= 0 && unicode.IsDigit(prev):
			next, _ := utf8.DecodeRuneInString(text[i:])
			if unicode.IsDigit(next) {
				add(at, size)
			} else {
				flush()
			}
		default:
			flush()
		}
		prev = r
	}
	if !stopped {
		flush()
	}
}
