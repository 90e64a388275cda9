package extract

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The stored body is Markdown that clients render, so every character the page
// showed as text must reach the reader as text: a page that displays
// "<script>" or "[x](javascript:…)" must not turn into markup WordPress had
// filtered out. Text is escaped with backslashes only, since CommonMark gives
// "\" + ASCII punctuation a literal meaning everywhere outside code, and quote
// matching can drop backslashes to get back to what the reader saw.

// appendText appends c, a character of the page's text, to md, escaped when a
// CommonMark or GFM renderer would read it as the start of inline markup.
// rest is the text that follows c in the same text node.
func appendText(md []byte, c rune, rest string) []byte {
	if c < utf8.RuneSelf && needsEscape(md, byte(c), rest) {
		md = append(md, '\\')
	}
	return utf8.AppendRune(md, c)
}

// escapeText escapes a whole piece of page text (table cells, captions, lines
// of the plain-text fallback).
func escapeText(s string) string {
	md := make([]byte, 0, len(s)+8)
	for i, c := range s {
		md = appendText(md, c, s[i+utf8.RuneLen(c):])
	}
	return string(md)
}

func needsEscape(md []byte, c byte, rest string) bool {
	switch c {
	case '\\', '`', '*', '[', ']', '<', '>', '|', '~':
		// "~" is GFM strikethrough, "|" a GFM table cell border; ">" closes
		// nothing on its own but is escaped with "<" so a tag reads as text
		// even when quoted from the middle.
		return true
	case '_':
		// An underscore between two letters or digits never opens or closes
		// emphasis, and identifiers like snake_case are searched as one word.
		// A run is decided once, at its first underscore, so a long run stays
		// linear.
		if after, escaped := afterUnderscore(md); after {
			return escaped
		}
		return !wordBefore(md) || !wordAfter(rest)
	case '&':
		return entityLike(rest)
	}
	return false
}

// afterUnderscore reports whether md ends with an underscore of the page's
// text, and whether that one was escaped.
func afterUnderscore(md []byte) (after, escaped bool) {
	n := len(md)
	if n == 0 || md[n-1] != '_' {
		return false, false
	}
	k := 0
	for j := n - 2; j >= 0 && md[j] == '\\'; j-- {
		k++
	}
	return true, k%2 == 1
}

func wordBefore(md []byte) bool {
	r, _ := utf8.DecodeLastRune(md)
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

func wordAfter(rest string) bool {
	r, _ := utf8.DecodeRuneInString(strings.TrimLeft(rest, "_"))
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// entityLike reports whether "&" followed by s reads as a character reference
// ("&amp;", "&#60;", "&#x3C;"), which a renderer would decode.
func entityLike(s string) bool {
	i, hex := 0, false
	if strings.HasPrefix(s, "#") {
		i = 1
		if len(s) > 1 && (s[1] == 'x' || s[1] == 'X') {
			i, hex = 2, true
		}
		j := i
		for j < len(s) && (isDigit(s[j]) || hex && isHexLetter(s[j])) {
			j++
		}
		return j > i && j < len(s) && s[j] == ';'
	}
	j := 0
	for j < len(s) && (isDigit(s[j]) || isASCIILetter(s[j])) {
		j++
	}
	return j > 0 && j < len(s) && s[j] == ';' && isASCIILetter(s[0])
}

func isDigit(c byte) bool       { return c >= '0' && c <= '9' }
func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isHexLetter(c byte) bool   { return c|0x20 >= 'a' && c|0x20 <= 'f' }

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// escapeHeadingEnd keeps a trailing run of "#" in a heading's text: without
// the escape, "## C #" would render as the heading "C".
func escapeHeadingEnd(s string) string {
	k := len(strings.TrimRight(s, "#"))
	if k == len(s) || (k > 0 && s[k-1] != ' ' && s[k-1] != '\t') {
		return s
	}
	return s[:k] + `\` + s[k:]
}

// splitsEscape reports whether cutting md at i would separate a backslash from
// the punctuation it escapes; start is where the piece being cut begins.
func splitsEscape(md string, start, i int) bool {
	if i >= len(md) || !isASCIIPunct(md[i]) {
		return false
	}
	n := 0
	for j := i - 1; j >= start && md[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// unescapeInline removes the backslash escapes of a line of inline Markdown,
// leaving code spans verbatim, so a heading's title reads as on the page.
func unescapeInline(s string) string {
	if !strings.ContainsRune(s, '\\') {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && isASCIIPunct(s[i+1]) {
				b.WriteByte(s[i+1])
				i += 2
				continue
			}
		case '`':
			n := 1
			for i+n < len(s) && s[i+n] == '`' {
				n++
			}
			if end := closingTicks(s, i+n, n); end >= 0 {
				b.WriteString(s[i:end])
				i = end
				continue
			}
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// closingTicks returns the end of the backtick run of exactly n that closes a
// code span opened before from, or -1.
func closingTicks(s string, from, n int) int {
	for i := from; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		if j-i == n {
			return j
		}
		i = j
	}
	return -1
}
