package index

import (
	"net/url"
	"slices"
	"strings"

	"github.com/askwp/askwpd/analysis"
)

// DocWords are what the ranking reads of a page's own fields, analyzed
// once, at the page's first search: a search reads them for every
// candidate page, and analyzing them at each search cost more than the
// rest of the whole-page score (BenchmarkWholePage: +55 % when they were
// analyzed each time).
type DocWords struct {
	// Title is the title's terms, analyzed as a query is (the title
	// phrase bonus, the confidence); TitleTerms as the index is (the
	// page's name words).
	Title, TitleTerms []string
	// Meta are the words of the title, categories and tags a hit's
	// evidence matches a query's terms against, each once (TokenWords).
	Meta []string
	// URL is the terms of the URL's path, as often as the path has them.
	URL []string
	// Key is the key the links to the page are counted under (AnchorKey).
	Key string
}

// Words returns d's DocWords, working them out at the first call. A
// page's fields do not change: a changed page is a new Doc.
func (m *Index) Words(d *Doc) *DocWords {
	if w := d.words.Load(); w != nil {
		return w
	}
	w := &DocWords{
		Title:      m.an.Analyze(d.Title, d.Lang),
		TitleTerms: m.an.IndexTerms(d.Title, d.Lang, nil),
		URL:        m.an.IndexTerms(urlWords(d.URL), d.Lang, nil),
		Key:        AnchorKey(d.URL),
	}
	add := func(x string) {
		if x != "" && !slices.Contains(w.Meta, x) {
			w.Meta = append(w.Meta, x)
		}
	}
	// The fields are joined by spaces, which no token spans.
	m.an.EachAt(d.Title+"\n"+strings.Join(d.Categories, " ")+" "+strings.Join(d.Tags, " "), d.Lang, nil,
		func(t analysis.Token, _ int) { TokenWords(t, add) })
	w.Meta = slices.Clip(w.Meta)
	d.words.Store(w)
	return w
}

// DocTerms are a page's name words (DocWords.TitleTerms and URL) as the
// index's terms, those it holds, in order: the whole-page score reads
// them for each candidate page, and looking each word up in the index
// at every search cost BenchmarkWholePage a third more. They stay good
// until the slots are renumbered (the only time a term is dropped), or,
// when a word was no term, until the index has more terms.
type DocTerms struct {
	// URL is the URL path's terms, as often as the path has them; Names
	// the title's then the URL's, each once.
	URL        []*Term
	Names      []Name
	renumbered uint64
	terms      int // the index's terms when a word was missing; else -1
}

// DocTerms returns d's DocTerms, resolving them when the index's terms
// may have changed since. Call with the read lock held.
func (m *Index) DocTerms(d *Doc) *DocTerms {
	if t := d.terms.Load(); t != nil && t.renumbered == m.renumbered && (t.terms < 0 || t.terms == len(m.terms)) {
		return t
	}
	w := m.Words(d)
	t := &DocTerms{renumbered: m.renumbered, terms: -1}
	resolve := func(words []string) []*Term {
		var out []*Term
		for _, x := range words {
			if mt := m.terms[x]; mt != nil {
				out = append(out, mt)
			} else {
				t.terms = len(m.terms)
			}
		}
		return out
	}
	t.URL = resolve(w.URL)
	add := func(mt *Term, title bool) {
		// A permalink repeats its title's words.
		if !slices.ContainsFunc(t.Names, func(n Name) bool { return n.Term == mt }) {
			t.Names = append(t.Names, Name{mt, title})
		}
	}
	for _, mt := range resolve(w.TitleTerms) {
		add(mt, true)
	}
	for _, mt := range t.URL {
		add(mt, false)
	}
	d.terms.Store(t)
	return t
}

// Name is a page's name word: a term of its title (and so of each of its
// chunks) or of its URL path.
type Name struct {
	Term  *Term
	Title bool
}

// TokenWords calls f with each word by which t matches a query term: its
// parts, its term and its surface (none for a token without a term). A
// hit's evidence and a page's Meta words both match by these.
func TokenWords(t analysis.Token, f func(string)) {
	if t.Term == "" {
		return
	}
	for _, x := range t.Parts {
		f(x)
	}
	f(t.Term)
	f(t.Surface)
}

var slugSpaces = strings.NewReplacer("-", " ", "_", " ")

// urlWords returns the words of a page's URL path: a WordPress permalink
// is made of its title's and its parents' slugs ("/docs/how-to/add-a-
// sidebar/"), which name the page the way its site's authors do.
// Numbers (dates, ids) and file extensions are left out.
func urlWords(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	var b strings.Builder
	for _, seg := range strings.Split(u.Path, "/") {
		if i := strings.LastIndexByte(seg, '.'); i > 0 {
			seg = seg[:i]
		}
		if seg == "" || strings.Trim(seg, "0123456789") == "" {
			continue
		}
		b.WriteString(slugSpaces.Replace(seg))
		b.WriteByte(' ')
	}
	return b.String()
}
