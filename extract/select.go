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
			if contentClassRe.MatchString(t) && !noiseAttr(t, noiseWords) {
				return true
			}
		}
	}
	return false
}

// minContent is the non-link text (in characters) a container needs to be trusted.
const minContent = 250

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
// container, the largest WordPress/CMS content container, the largest <article>,
// <main>, [role=main]; then readability scoring when none of those holds enough
// non-link text; then the body.
func selectContent(doc *html.Node, base *url.URL) (*html.Node, string) {
	body := findFirst(doc, func(n *html.Node) bool { return n.DataAtom == atom.Body })
	if body == nil {
		body = doc
	}
	if f := findFirst(body, func(n *html.Node) bool { return forced(n) && attr(n, "data-askwp") != "keep" }); f != nil {
		cleanContent(f)
		return f, "forced"
	}

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
		cleanContent(chosen.n)
		return chosen.n, chosen.source
	}
	// Readability re-scores the whole tree; on multi-megabyte documents that
	// costs seconds for little gain, so they go straight to the body.
	if big := measure(body); big.text > 1<<20 {
		cleanContent(body)
		return body, "body"
	}
	if n := readabilityNode(doc, base); n != nil {
		cleanContent(n)
		if s := measure(n); s.text-s.linkText >= minContent/2 {
			return n, "readability"
		}
	}
	cleanContent(body)
	return body, "body"
}

// linky reports a container that is mostly links (a listing, a menu).
func linky(s stats) bool {
	return s.text == 0 || float64(s.linkText)/float64(s.text) > 0.5
}

// insideNoise reports whether n sits inside a boilerplate region (below stop):
// a teaser <article> in a sidebar, a comment. A noise-classed ancestor of which n
// holds at least half the text is a layout wrapper ("content sidebar-right"),
// not a boilerplate region.
func insideNoise(n, stop *html.Node) bool {
	own := -1
	for p := n.Parent; p != nil && p != stop; p = p.Parent {
		if p.Type == html.ElementNode && isNoise(p) {
			if own < 0 {
				own = measure(n).text
			}
			if own*2 < measure(p).text {
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
