package analysis

import (
	"strings"
	"unicode"
)

// SurfaceWords splits text into words as written, for text that goes back
// to a reader or into a query a person reads: case and diacritics kept, and
// the inner "-", "." and "'" of names and numbers such as PHP-FPM, 3.5 or
// O'Brien kept too. Analyze, not this, decides what matches.
func SurfaceWords(s string) []string {
	var out []string
	var b strings.Builder
	rs := []rune(s)
	flush := func() {
		w := strings.Trim(b.String(), "-.'’")
		if w != "" {
			out = append(out, w)
		}
		b.Reset()
	}
	for i, r := range rs {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		case (r == '-' || r == '.' || r == '\'' || r == '’') && b.Len() > 0 && i+1 < len(rs) && (unicode.IsLetter(rs[i+1]) || unicode.IsDigit(rs[i+1])):
			b.WriteRune(r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// IsStopword reports whether word, in any case, is on lang's stopword list
// (English's when lang has none).
func IsStopword(lang, word string) bool {
	return languageOf(lang).stopwords[strings.ToLower(fold(word))]
}
