// Package testsite generates the sites that the search packages' tests and
// benchmarks index: deterministic for a seeded rand.Rand, no shared data.
package testsite

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/askwp/askwpd/store"
)

// Random generates n WordPress-like pages, numbered from from: Zipf-distributed words,
// mixed-case tags and categories, code and prose chunks, several post
// types, languages and dates (some missing).
func Random(rng *rand.Rand, from, n int) []*store.Document {
	words := make([]string, 400)
	for i := range words {
		words[i] = fmt.Sprintf("%s%s", []string{"theme", "plugin", "block", "widget", "menu", "cache", "query", "route"}[i%8],
			strings.Repeat("e", 1+i/8%4)+fmt.Sprint(i/32))
		if i%5 == 0 {
			words[i] = strings.TrimRight(words[i], "0123456789") + "s" // letters only, stemmable
		}
	}
	zipf := rand.NewZipf(rng, 1.2, 3, uint64(len(words)-1))
	text := func(n int) string {
		var b []string
		for i := 0; i < n; i++ {
			b = append(b, words[zipf.Uint64()])
		}
		return strings.Join(b, " ")
	}
	var docs []*store.Document
	for i := from; i < from+n; i++ {
		d := &store.Document{
			URL: fmt.Sprintf("http://x.test/p/%d/", i), Title: text(1 + rng.IntN(4)),
			PostType:    []string{"post", "page", "product"}[rng.IntN(3)],
			Lang:        []string{"en", "en-US", "de", "EN-gb"}[rng.IntN(4)],
			Categories:  []string{[]string{"News", "Guides", "Ünïcode"}[rng.IntN(3)]},
			Tags:        []string{text(1), strings.ToUpper(text(1))},
			ContentHash: fmt.Sprint("h", i, rng.IntN(1000)),
			Thin:        rng.IntN(10) == 0,
		}
		if rng.IntN(5) > 0 {
			d.Published = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(900)) * 24 * time.Hour)
		}
		var body strings.Builder
		for c := 0; c < 1+rng.IntN(4); c++ {
			ch := store.Chunk{Ord: c, Type: "prose", Text: text(5 + rng.IntN(60)), HeadingPath: []string{text(2)}}
			if rng.IntN(4) == 0 {
				ch.Type, ch.CodeLang = "code", []string{"go", "php", "python"}[rng.IntN(3)]
				ch.Text = "function " + words[rng.IntN(len(words))] + "_x() { return " + text(3) + "; }"
			}
			ch.Start = len([]rune(body.String()))
			ch.End = ch.Start + len([]rune(ch.Text))
			body.WriteString(ch.Text + "\n\n")
			d.Chunks = append(d.Chunks, ch)
		}
		d.Body, d.Text = body.String(), body.String()
		docs = append(docs, d)
	}
	return docs
}

// Linked is n pages of a site, each linking to a few others with
// words around the links, some in a second chunk. Each call draws new
// words and links, so a page written again changes its links.
func Linked(rng *rand.Rand, n int) []*store.Document {
	words := []string{"spinner", "loading", "indicator", "coupon", "checkout", "theme", "widget", "cache", "route", "menu"}
	say := func() string {
		var b []string
		for range 2 + rng.IntN(5) {
			b = append(b, words[rng.IntN(len(words))])
		}
		return strings.Join(b, " ")
	}
	var docs []*store.Document
	for i := range n {
		var sections []string
		for range 1 + rng.IntN(2) {
			var lines []string
			for range rng.IntN(3) {
				to := rng.IntN(n + 3) // now and then a page that is not there
				lines = append(lines, fmt.Sprintf("%s [%s](http://x.test/p/%d/#top) %s", say(), say(), to, say()))
			}
			sections = append(sections, strings.Join(append(lines, say()), "\n"))
		}
		d := Page(fmt.Sprintf("/p/%d/", i), fmt.Sprintf("Page %d", i), sections...)
		d.ContentHash = fmt.Sprint(i, rng.Int())
		docs = append(docs, d)
	}
	return docs
}

// Page is a page of one chunk per section, at url under http://x.test.
func Page(url, title string, sections ...string) *store.Document {
	d := &store.Document{URL: "http://x.test" + url, Title: title, PostType: "page", Lang: "en", ContentHash: url}
	for i, s := range sections {
		start := len([]rune(d.Body))
		d.Body += s + "\n\n"
		d.Chunks = append(d.Chunks, store.Chunk{Ord: i, Text: s, Start: start, End: start + len([]rune(s)),
			HeadingPath: []string{fmt.Sprintf("Step %d", i+1)}, Type: "prose", ContentHash: fmt.Sprint(url, i)})
	}
	d.Text = d.Body
	return d
}
