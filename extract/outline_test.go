package extract

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOutline(t *testing.T) {
	md := "# Café menu\n\n" +
		"\\# not a heading, a paragraph that starts with a hash\n\n" +
		"## C \\#\n\n" +
		"````php\n```\n# a comment inside code, not a heading\n```\n````\n\n" +
		"### Opening hours ###\n\n" +
		"`` ```inline`` code span opening a line\n\n" +
		"#### Contact"
	at := func(line string) int { return utf8.RuneCountInString(md[:strings.Index(md, line)]) }
	got := Outline(md)
	want := []Heading{
		{Level: 1, Title: "Café menu", Start: 0},
		{Level: 2, Title: "C #", Start: at("## C")},
		{Level: 3, Title: "Opening hours", Start: at("### Opening")},
		{Level: 4, Title: "Contact", Start: at("#### Contact")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Outline:\n got %+v\nwant %+v", got, want)
	}
	runes := []rune(md)
	for _, h := range got {
		if runes[h.Start] != '#' {
			t.Errorf("%q: offset %d is not the heading's line", h.Title, h.Start)
		}
	}
}
