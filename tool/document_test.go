package tool

import "testing"

// A page must not end between a backslash and the character it escapes:
// the next page would then start with live markup.
func TestPageOfKeepsEscapes(t *testing.T) {
	text := []rune("abcdefghi\\<script\\>")
	for maxChars := 1; maxChars <= len(text); maxChars++ {
		for start := 0; start < len(text); {
			_, end, _ := pageOf(text, start, maxChars)
			if end <= start {
				t.Fatalf("maxChars %d: page [%d,%d) is empty", maxChars, start, end)
			}
			if end < len(text) && backslashesBefore(text, end)%2 == 1 {
				t.Errorf("maxChars %d: page [%d,%d) ends on an escaping backslash", maxChars, start, end)
			}
			start = end
		}
	}
}
