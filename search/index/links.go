package index

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/store"
)

// Links holds, for each page, the words around the links the site's
// other pages make to it: "instead of building a custom loading
// indicator, we took advantage of the [Spinner] component" tells what the
// Spinner page is for in the words of someone who needed it, which the
// page itself may never use. The links are read from the stored chunks'
// Markdown (the extractor keeps a page's links there, absolute), so they
// are the links of the main content, not of menus and footers; a page
// is named by its URL, so a link may come before the page it points to.
//
// They are part of the index's contents: loaded with the postings,
// changed by the same commits, under the same lock.
type Links struct {
	// bySource lists each page's links, to take them back when the page
	// changes; byTerm counts, for each term, its occurrences around the
	// links to each page (by AnchorKey).
	bySource map[int64][]anchorLink
	byTerm   map[string]map[int32]int32
	// targets numbers the linked pages' keys (AnchorKey), so that the
	// counts hold a number rather than a URL per term and page.
	targets map[string]int32
}

// anchorLink is one stored link: its target's number and the terms
// around it.
type anchorLink struct {
	target int32
	terms  []string
}

// foundLink is a link as chunkLinks finds it: its target's anchorKey.
type foundLink struct {
	key   string
	terms []string
}

func newLinks() *Links {
	return &Links{bySource: map[int64][]anchorLink{}, byTerm: map[string]map[int32]int32{}, targets: map[string]int32{}}
}

// add adds the links of page source.
func (a *Links) add(source int64, links []foundLink) {
	for _, l := range links {
		id, ok := a.targets[l.key]
		if !ok {
			id = int32(len(a.targets))
			a.targets[l.key] = id
		}
		a.addLink(source, anchorLink{target: id, terms: l.terms})
	}
}

func (a *Links) addLink(source int64, l anchorLink) {
	for _, t := range l.terms {
		m := a.byTerm[t]
		if m == nil {
			m = map[int32]int32{}
			a.byTerm[t] = m
		}
		m[l.target]++
	}
	a.bySource[source] = append(a.bySource[source], l)
}

// drop takes back the links of page source.
func (a *Links) drop(source int64) {
	for _, l := range a.bySource[source] {
		for _, t := range l.terms {
			m := a.byTerm[t]
			if m[l.target]--; m[l.target] <= 0 {
				delete(m, l.target)
			}
			if len(m) == 0 {
				delete(a.byTerm, t)
			}
		}
	}
	delete(a.bySource, source)
}

// TargetIDs returns the numbers of the pages with keys (AnchorKey), -1
// for a page no link points to. Call with the index's read lock held.
func (a *Links) TargetIDs(keys []string) []int32 {
	ids := make([]int32, len(keys))
	for i, k := range keys {
		id, ok := a.targets[k]
		if !ok {
			id = -1
		}
		ids[i] = id
	}
	return ids
}

// Counts calls fn with how often term occurs around the links to each
// page of ids (from TargetIDs) where it does. Call with the index's read
// lock held.
func (a *Links) Counts(term string, ids []int32, fn func(i int, n int32)) {
	byID := a.byTerm[term]
	if len(byID) == 0 {
		return
	}
	for i, id := range ids {
		if id < 0 {
			continue
		}
		if n := byID[id]; n != 0 {
			fn(i, n)
		}
	}
}

// mdLink is an inline Markdown link as the extractor writes it:
// [text](url), an image's ![alt](src) aside.
var mdLink = regexp.MustCompile(`(!?)\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\(<?([^()\s<>]+)>?(?:\s+"[^"\n]*")?\)`)

// anchorWindow is how many words on each side of a link's text count as
// its context: about a sentence's worth. On wpdocs, 15 did better than 10
// (+0.0078, not worse on 20 of 20 halves) and than 20; 0–5 words did worse.
const anchorWindow = 15

// chunkLinks returns the links of a chunk to other pages, each with the
// terms of its text and of the words around it on its line.
func chunkLinks(an *analysis.Analyzer, c *store.IndexChunk) []foundLink {
	if !strings.Contains(c.Text, "](") {
		return nil
	}
	base, err := url.Parse(c.Doc.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") {
		return nil
	}
	self := AnchorKey(c.Doc.URL)
	site := keyOf(&url.URL{Scheme: base.Scheme, Host: base.Host}) + "/"
	var out []foundLink
	for _, line := range strings.Split(c.Text, "\n") {
		// Every link holds "](": a line without one needs no regexp,
		// whose scan of a long paragraph costs more than the test.
		if !strings.Contains(line, "](") {
			continue
		}
		ms := mdLink.FindAllStringSubmatchIndex(line, -1)
		if len(ms) == 0 {
			continue
		}
		// The line's words with every link replaced by its text, and where
		// each link's text starts and ends among them.
		var words []string
		spans := make([][2]int, len(ms))
		prev := 0
		for i, m := range ms {
			words = append(words, strings.Fields(line[prev:m[0]])...)
			spans[i][0] = len(words)
			words = append(words, strings.Fields(line[m[4]:m[5]])...)
			spans[i][1] = len(words)
			prev = m[1]
		}
		words = append(words, strings.Fields(line[prev:])...)
		for i, m := range ms {
			if line[m[2]:m[3]] == "!" {
				continue
			}
			target := resolveLink(base, line[m[6]:m[7]])
			// Only the site's own pages: a link elsewhere names no page of
			// this index.
			if target == "" || target == self || !strings.HasPrefix(target, site) {
				continue
			}
			from, to := max(0, spans[i][0]-anchorWindow), min(len(words), spans[i][1]+anchorWindow)
			terms := an.IndexTerms(strings.Join(words[from:to], " "), c.Doc.Lang, nil)
			if len(terms) > 0 {
				out = append(out, foundLink{key: target, terms: terms})
			}
		}
	}
	return out
}

// resolveLink returns the key of the page a link points at, "" for a
// link that leaves http(s).
func resolveLink(base *url.URL, href string) string {
	u, err := base.Parse(href)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	return keyOf(u)
}

// AnchorKey is the form of a page's URL that links to it share: host in
// lower case, no fragment, no trailing slash.
func AnchorKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return keyOf(u)
}

func keyOf(u *url.URL) string {
	host := strings.ToLower(u.Host)
	host = strings.TrimSuffix(strings.TrimSuffix(host, ":80"), ":443")
	k := strings.ToLower(u.Scheme) + "://" + host + strings.TrimSuffix(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		k += "?" + u.RawQuery
	}
	return k
}
