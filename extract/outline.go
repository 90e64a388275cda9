package extract

import (
	"strings"
	"unicode/utf8"
)

// Heading is one ATX heading of a Markdown body.
type Heading struct {
	Level int
	// Title reads as the page shows it: escapes undone, a closing "#"
	// run dropped.
	Title string
	// Start is the character offset of the heading's line in the body.
	Start int
}

// Outline lists the headings of md outside code fences, by the same rules
// the chunker reads it with, so a fence of four backticks or an escaped
// "#" means the same to both.
func Outline(md string) []Heading {
	out := []Heading{}
	var fenceCh byte
	fenceN, pos := 0, 0
	for _, line := range strings.SplitAfter(md, "\n") {
		text := strings.TrimRight(line, "\r\n")
		switch {
		case fenceN > 0:
			if isFenceClose(text, fenceCh, fenceN) {
				fenceN = 0
			}
		default:
			if ch, n, ok := fenceOpen(text); ok {
				fenceCh, fenceN = ch, n
			} else if lvl, title, ok := headingLine(text); ok && title != "" {
				out = append(out, Heading{Level: lvl, Title: title, Start: pos})
			}
		}
		pos += utf8.RuneCountInString(line)
	}
	return out
}
