package extract

import (
	"bytes"
	"net/url"
	"regexp"
	"strings"
	"sync"

	readability "codeberg.org/readeck/go-readability"
	"github.com/microcosm-cc/bluemonday"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// contentClassRe matches class/id tokens of article-body containers: WordPress
// ones (entry-content, wp-block-post-content, post-content) and the generic CMS
// shapes (article-body, story__content, post_text, ...). Layout containers such as
// main-content or page-content are deliberately not in it: they hold sidebars and
// teaser lists as often as articles, and <main>/<article> cover them.
var contentClassRe = regexp.MustCompile(`^(?:[a-z0-9]+[-_]+)*(?:entry|post|article|story|blog|news|single|td-post)[-_]*(?:content|body|text|entry|inner|copy)(?:[-_]+[a-z0-9]+)*$|^wp-block-post-content$|^(?:articlebody|storybody|postbody|entrycontent|articletext)$`)

// maybeContentToken is a cheap filter in front of contentClassRe.
func maybeContentToken(t string) bool {
	for _, w := range [...]string{"content", "body", "text", "entry", "inner", "copy"} {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

func isContentContainer(n *html.Node) bool {
	if n.DataAtom == atom.Body || n.DataAtom == atom.Html || n.DataAtom == atom.Li || n.DataAtom == atom.A ||
		n.DataAtom == atom.Span || n.DataAtom == atom.P {
		return false
	}
	if strings.EqualFold(attr(n, "itemprop"), "articleBody") {
		return true
	}
	for _, v := range []string{attr(n, "class"), attr(n, "id")} {
		for _, t := range strings.Fields(strings.ToLower(v)) {
			if maybeContentToken(t) && contentClassRe.MatchString(t) && !noiseAttr(t, noiseWords) {
				return true
			}
		}
	}
	return false
}

// minContent is the non-link text (in characters) a container needs to be trusted.
const minContent = 250

// maxCandidates caps the candidates ranked per kind.
const maxCandidates = 64

// nestedKeep is the share of an outer candidate's text a nested candidate must
// hold to be preferred.
const nestedKeep = 0.7

type candidate struct {
	n      *html.Node
	source string
	s      stats
}

func (c candidate) good() float64 {
	return float64(c.s.text - c.s.linkText)
}

// selectContent picks the main-content node and cleans it. Order: a forced
// container; on a singular WordPress page, the one element its post's content
// was printed into, at any length (post is then true: the node is the post's
// own text, see theContent); the largest WordPress/CMS content container, the
// largest <article>, <main>, [role=main]; then readability scoring when none of
// those holds enough non-link text; then the body.
func selectContent(doc *html.Node, base *url.URL) (n *html.Node, source string, post bool) {
	body := findFirst(doc, func(n *html.Node) bool { return n.DataAtom == atom.Body })
	if body == nil {
		body = doc
	}
	if f := findFirst(body, func(n *html.Node) bool { return forced(n) && attr(n, "data-askwp") != "keep" }); f != nil {
		cleanContent(f, false)
		return f, "forced", false
	}
	if pc, ok := theContent(body); ok {
		if pc == nil {
			return nil, "wp_content", true
		}
		pullLead(pc, body)
		dropChromeBlocks(pc, true)
		unwrapButtons(pc)
		cleanContent(pc, true)
		return pc, "wp_content", true
	}
	n, source = selectByScore(doc, body, base)
	return n, source, false
}

// selectByScore is the selection for pages whose markup does not name their
// content: candidates ranked by their non-link text.
func selectByScore(doc, body *html.Node, base *url.URL) (*html.Node, string) {

	var wp, art, mainEl, roleMain []candidate
	walk(body, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		switch {
		case n.DataAtom == atom.Main:
			mainEl = append(mainEl, candidate{n: n, source: "main"})
		case n.DataAtom == atom.Article:
			art = append(art, candidate{n: n, source: "article"})
		case strings.EqualFold(attr(n, "role"), "main"):
			roleMain = append(roleMain, candidate{n: n, source: "role_main"})
		}
		if isContentContainer(n) {
			wp = append(wp, candidate{n: n, source: "wp_content"})
		}
		return true
	})
	best := func(cs []candidate) *candidate {
		// Bound the work on pathological pages (thousands of nested
		// candidates): ranking is quadratic in their number.
		if len(cs) > maxCandidates {
			cs = cs[:maxCandidates]
		}
		var b *candidate
		for i := range cs {
			if insideNoise(cs[i].n, body) {
				continue
			}
			cs[i].s = measureClean(cs[i].n)
			if b == nil || cs[i].good() > b.good() {
				b = &cs[i]
			}
		}
		// A nested candidate that keeps most of the text is the more precise one.
		for b != nil {
			var inner *candidate
			for i := range cs {
				c := &cs[i]
				if c != b && c.n != b.n && isAncestor(b.n, c.n) && c.good() >= nestedKeep*b.good() &&
					(inner == nil || c.good() > inner.good()) {
					inner = c
				}
			}
			if inner == nil {
				break
			}
			b = inner
		}
		return b
	}
	var chosen *candidate
	for _, group := range [][]candidate{wp, art, mainEl, roleMain} {
		if c := best(group); c != nil && c.good() >= minContent && !linky(c.s) {
			chosen = c
			break
		}
	}
	if chosen != nil {
		if chosen.source == "wp_content" {
			pullLead(chosen.n, body)
		}
		n := chosen.n
		if m := mergeRepeated(n, body); m != nil {
			n = m
		}
		dropChromeBlocks(n, false)
		cleanContent(n, false)
		return n, chosen.source
	}
	// Readability re-scores the whole tree; on multi-megabyte documents that
	// costs seconds for little gain, so they go straight to the body.
	if big := measure(body); big.text > 1<<20 {
		cleanContent(body, false)
		return body, "body"
	}
	if n := readabilityNode(doc, base); n != nil {
		dropChromeBlocks(n, false)
		cleanContent(n, false)
		if s := measure(n); s.text-s.linkText >= minContent/2 {
			return n, "readability"
		}
	}
	dropChromeBlocks(body, false)
	cleanContent(body, false)
	return body, "body"
}

// linky reports a container that is mostly links (a listing, a menu).
func linky(s stats) bool {
	return s.text == 0 || float64(s.linkText)/float64(s.text) > 0.5
}

// insideNoise reports whether n sits inside a boilerplate region (below stop):
// a teaser <article> in a sidebar, a comment. A noise-classed ancestor of which n
// holds at least a third of the text is a layout wrapper ("content
// sidebar-right", an <aside> around the article and its standfirst), not a
// boilerplate region.
func insideNoise(n, stop *html.Node) bool {
	own := -1
	for p := n.Parent; p != nil && p != stop; p = p.Parent {
		if p.Type == html.ElementNode && isNoise(p) {
			if own < 0 {
				own = measureClean(n).text
			}
			if own*3 < measureClean(p).text {
				return true
			}
		}
	}
	return false
}

// readabilityNode runs readeck/go-readability on a copy of the document.
// KeepClasses stays on so language-x classes on code blocks survive.
func readabilityNode(doc *html.Node, base *url.URL) *html.Node {
	p := readability.NewParser()
	p.KeepClasses = true
	p.DisableJSONLD = true
	art, err := p.ParseDocument(doc, base)
	if err != nil || art.Node == nil {
		return nil
	}
	return art.Node
}

var (
	policyOnce sync.Once
	policy     *bluemonday.Policy
)

// sanitizer is bluemonday's UGC policy plus class="language-*" on pre/code,
// which UGCPolicy would otherwise drop (and with it the fence language).
func sanitizer() *bluemonday.Policy {
	policyOnce.Do(func() {
		p := bluemonday.UGCPolicy()
		p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[a-z0-9_+#.-]+$`)).OnElements("pre", "code")
		p.AllowAttrs(markerAttr).Matching(regexp.MustCompile(`^(?:picture|pages)$`)).OnElements("hr")
		policy = p
	})
	return policy
}

// sanitize runs the content subtree through bluemonday and re-parses it, so
// only allowed markup reaches the Markdown renderer. Generic containers the
// policy does not know are renamed to div first, so dropping their tags cannot
// glue the words of neighbouring blocks together.
func sanitize(n *html.Node) *html.Node {
	walk(n, func(c *html.Node) bool {
		if c.Type != html.ElementNode {
			return true
		}
		switch c.DataAtom {
		case atom.Main, atom.Section, atom.Article, atom.Header, atom.Footer, atom.Center, atom.Fieldset,
			atom.Form, atom.Details, atom.Summary, atom.Figure, atom.Figcaption, atom.Hgroup, atom.Address,
			atom.Dialog, atom.Menu, atom.Legend, atom.Nav, atom.Aside, atom.Body, atom.Html, atom.Noscript:
			c.DataAtom, c.Data = atom.Div, "div"
		case 0:
			c.DataAtom, c.Data = atom.Div, "div"
		}
		return true
	})
	var buf bytes.Buffer
	if err := html.Render(&buf, n); err != nil {
		return n
	}
	clean := sanitizer().SanitizeReader(&buf)
	ctx := &html.Node{Type: html.ElementNode, DataAtom: atom.Div, Data: "div"}
	nodes, err := html.ParseFragment(clean, ctx)
	if err != nil {
		return n
	}
	root := &html.Node{Type: html.ElementNode, DataAtom: atom.Div, Data: "div"}
	for _, c := range nodes {
		root.AppendChild(c)
	}
	return root
}

// leadClassRe matches class/id words of a standfirst: the summary paragraph that
// many themes print with the headline, outside the body container.
var leadClassRe = regexp.MustCompile(`(?:^|[-_])(?:lead|leadtext|lede|teaser|intro|standfirst|summary|excerpt|subline|subtitle|abstract|deck|dek)(?:$|[-_])`)

const (
	leadMinRunes = 30
	leadMaxRunes = 1200
	leadLevels   = 4 // how far up from the container the lead is looked for
)

// pullLead moves a standfirst found just before the content container (within
// a few ancestor levels) into the container, as its first child.
func pullLead(c, stop *html.Node) {
	scope := c
	for i := 0; i < leadLevels && scope.Parent != nil && scope.Parent != stop; i++ {
		scope = scope.Parent
	}
	var lead *html.Node
	reached := false
	walk(scope, func(n *html.Node) bool {
		if lead != nil || reached {
			return false
		}
		if n == c {
			reached = true
			return false
		}
		if n.Type != html.ElementNode || n == scope {
			return true
		}
		switch n.DataAtom {
		case atom.Nav, atom.Aside, atom.Footer, atom.Form, atom.Ul, atom.Ol, atom.A:
			return false
		}
		if !leadAttr(n) || isAncestor(n, c) {
			return true
		}
		s := measure(n)
		if s.text >= leadMinRunes && s.text <= leadMaxRunes && s.linkText*10 < s.text*3 {
			lead = n
		}
		return false
	})
	if lead == nil {
		return
	}
	removeNode(lead)
	c.InsertBefore(lead, c.FirstChild)
}

func leadAttr(n *html.Node) bool {
	for _, v := range []string{attr(n, "class"), attr(n, "id")} {
		for _, t := range strings.Fields(strings.ToLower(v)) {
			if leadClassRe.MatchString(t) {
				return true
			}
		}
	}
	return false
}

// repeatLevels is how far above the chosen container a repeated unit (a post
// of a thread, a section of a recipe) is looked for.
const repeatLevels = 8

// mergeRepeated handles content split over repeated siblings: the posts of a
// forum thread, the sections of a recipe or a CMS page. It climbs from the
// chosen container c to the first ancestor-or-self u that has siblings of the
// same kind (tag, base class), and takes from each such sibling the node at
// the same place as c in u (same chain of tags and base classes). Siblings that
// are boilerplate, listings, or separate documents (own <h1>: the next article
// of an infinite-scroll page) are left out. The gathered nodes are moved, in
// document order, into a new wrapper, which is returned; nil means there is
// nothing to merge.
func mergeRepeated(c, body *html.Node) *html.Node {
	var path []*html.Node // c's ancestors below u, innermost first
	u := c
	for level := 0; level < repeatLevels && u.Parent != nil && u != body && u.Parent != body; level++ {
		if u == c || firstClass(u) != "" {
			if parts := repeatedPeers(c, u, path, body); len(parts) >= 2 {
				w := &html.Node{Type: html.ElementNode, DataAtom: atom.Div, Data: "div"}
				c.Parent.InsertBefore(w, c)
				for _, p := range parts {
					removeNode(p)
					w.AppendChild(p)
				}
				return w
			}
		}
		path = append(path, u)
		u = u.Parent
	}
	return nil
}

// repeatedPeers returns c and its counterparts in the siblings of u that are of
// u's kind, in document order; path holds the nodes from c (first) up to below u.
func repeatedPeers(c, u *html.Node, path []*html.Node, body *html.Node) []*html.Node {
	var parts []*html.Node
	for s := u.Parent.FirstChild; s != nil; s = s.NextSibling {
		if s == u {
			parts = append(parts, c)
			continue
		}
		if !samePeer(s, u) || isNoise(s) || hasH1(s) {
			continue
		}
		p := s
		for i := len(path) - 1; i >= 0 && p != nil; i-- {
			var next *html.Node
			for x := p.FirstChild; x != nil; x = x.NextSibling {
				if samePeer(x, path[i]) {
					next = x
					break
				}
			}
			p = next
		}
		if p == nil || insideNoise(p, body) {
			continue
		}
		if st := measureClean(p); st.text == 0 || linky(st) {
			continue
		}
		parts = append(parts, p)
	}
	return parts
}

// samePeer reports whether x is of the same kind as ref: same tag and base
// class, and a content container exactly when ref is one (so an author box
// styled like the article body does not join it).
func samePeer(x, ref *html.Node) bool {
	return x.Type == html.ElementNode && x.DataAtom == ref.DataAtom && x.Data == ref.Data &&
		firstClass(x) == firstClass(ref) && isContentContainer(x) == isContentContainer(ref)
}

func hasH1(n *html.Node) bool {
	return findFirst(n, func(x *html.Node) bool { return x.DataAtom == atom.H1 }) != nil
}

// firstClass is the first class token: themes vary the modifiers
// ("box recipe-header", "box recipe-steps") but keep the base class.
func firstClass(n *html.Node) string {
	f := strings.Fields(attr(n, "class"))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
