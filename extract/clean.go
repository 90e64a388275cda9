package extract

import (
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// preclean removes what is never content anywhere on the page: scripts, styles,
// embedded objects, form controls, comments and hidden elements (hidden,
// aria-hidden="true", inline display:none / visibility:hidden). Hidden text is
// dropped on purpose: it is where prompt-injection payloads hide.
func preclean(root *html.Node) {
	var dead, templates []*html.Node
	walk(root, func(n *html.Node) bool {
		switch n.Type {
		case html.CommentNode:
			dead = append(dead, n)
			return false
		case html.ElementNode:
		default:
			return true
		}
		if n.DataAtom == atom.Script && isTemplateScript(n) {
			templates = append(templates, n)
			return false
		}
		switch n.DataAtom {
		case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Math, atom.Iframe,
			atom.Object, atom.Embed, atom.Canvas, atom.Input, atom.Select, atom.Textarea, atom.Button,
			atom.Link, atom.Meta, atom.Head, atom.Dialog:
			dead = append(dead, n)
			return false
		}
		if isHidden(n) {
			dead = append(dead, n)
			return false
		}
		if n.DataAtom == atom.Pre {
			normalizeCodeLang(n)
		}
		return true
	})
	for _, n := range dead {
		removeNode(n)
	}
	// Blogger and similar platforms ship the post body as HTML inside
	// <script type="text/template">: parse it in place, then clean it too.
	for _, n := range templates {
		expandTemplate(n)
	}
}

func isTemplateScript(n *html.Node) bool {
	switch strings.ToLower(strings.TrimSpace(attr(n, "type"))) {
	case "text/template", "text/x-template", "text/html":
		return n.FirstChild != nil && n.Parent != nil
	}
	return false
}

func expandTemplate(n *html.Node) {
	ctx := &html.Node{Type: html.ElementNode, DataAtom: atom.Div, Data: "div"}
	nodes, err := html.ParseFragment(strings.NewReader(n.FirstChild.Data), ctx)
	if err != nil {
		removeNode(n)
		return
	}
	div := &html.Node{Type: html.ElementNode, DataAtom: atom.Div, Data: "div"}
	for _, c := range nodes {
		div.AppendChild(c)
	}
	n.Parent.InsertBefore(div, n)
	removeNode(n)
	var dead []*html.Node
	walk(div, func(c *html.Node) bool {
		if c.Type == html.CommentNode || (c.Type == html.ElementNode && (c.DataAtom == atom.Script || c.DataAtom == atom.Style || isHidden(c))) {
			dead = append(dead, c)
			return false
		}
		return true
	})
	for _, c := range dead {
		removeNode(c)
	}
}

var hiddenStyleRe = regexp.MustCompile(`(?i)(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)`)

func isHidden(n *html.Node) bool {
	if n.DataAtom == atom.Html || n.DataAtom == atom.Body {
		return false
	}
	for _, a := range n.Attr {
		switch a.Key {
		case "hidden":
			return true
		case "aria-hidden":
			if strings.EqualFold(strings.TrimSpace(a.Val), "true") {
				return true
			}
		case "style":
			if hiddenStyleRe.MatchString(a.Val) {
				return true
			}
		case "class":
			for _, t := range strings.Fields(a.Val) {
				switch strings.ToLower(t) {
				case "hidden", "is-hidden", "d-none", "sr-only", "screen-reader-text", "visually-hidden",
					"visuallyhidden", "screen-reader-only", "invisible", "element-invisible":
					return true
				}
			}
		}
	}
	return false
}

var (
	brushRe = regexp.MustCompile(`(?i)\bbrush\s*:\s*([a-z0-9_+#.-]+)`)
)

// normalizeCodeLang copies language hints into class="language-x" on the <pre>
// so that they survive sanitizing: <pre lang>, data-lang, data-language, the
// SyntaxHighlighter "brush: x" class, lang-x / highlight-x / hljs x classes, on the
// <pre> or on its <code> child.
func normalizeCodeLang(pre *html.Node) {
	if lang := findLangHint(pre); lang != "" {
		setAttr(pre, "class", "language-"+lang)
		return
	}
	for c := pre.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Code {
			if lang := findLangHint(c); lang != "" {
				setAttr(pre, "class", "language-"+lang)
				return
			}
		}
	}
	setAttr(pre, "class", "")
}

func findLangHint(n *html.Node) string {
	for _, k := range []string{"data-lang", "data-language", "lang"} {
		if v := cleanLang(attr(n, k)); v != "" && !(k == "lang" && looksLikeHumanLang(v)) {
			return v
		}
	}
	class := attr(n, "class")
	if m := brushRe.FindStringSubmatch(class); m != nil {
		return cleanLang(m[1])
	}
	fields := strings.Fields(class)
	for _, t := range fields {
		t = strings.ToLower(t)
		for _, p := range []string{"language-", "lang-", "highlight-source-", "highlight-", "brush-", "code-"} {
			if strings.HasPrefix(t, p) {
				if l := cleanLang(strings.TrimPrefix(t, p)); l != "" {
					return l
				}
			}
		}
	}
	// highlight.js: class="hljs php"; pandoc: class="sourceCode php".
	for i, t := range fields {
		if (t == "hljs" || t == "sourceCode") && i+1 < len(fields) {
			return cleanLang(fields[i+1])
		}
	}
	return ""
}

// looksLikeHumanLang tells a BCP 47 tag (lang="en-US") from a code language.
func looksLikeHumanLang(v string) bool {
	if len(v) == 2 && v != "go" && v != "js" && v != "ts" && v != "sh" && v != "py" && v != "rb" && v != "cs" {
		return true
	}
	if len(v) == 5 && v[2] == '-' {
		return true
	}
	return false
}

// noiseWords are class/id words (split on - and _) of boilerplate containers.
// Hard words always mark boilerplate. Soft words (share, meta, author, ...) also
// show up on wrappers of the article itself ("entry share"), so an element that
// they mark is dropped only when it holds little prose (see softNoiseMax).
var noiseWords = map[string]bool{
	"nav": true, "navbar": true, "navigation": true, "menu": true, "breadcrumb": true, "breadcrumbs": true,
	"sidebar": true, "footer": true, "comments": true, "comment": true, "commentlist": true,
	"respond": true, "sharedaddy": true, "addtoany": true, "a2a": true, "relatedposts": true, "related": true,
	"recommended": true, "newsletter": true, "subscribe": true, "subscription": true, "signup": true,
	"cookie": true, "cookies": true, "consent": true, "gdpr": true, "modal": true, "popup": true, "ad": true,
	"ads": true, "advert": true, "adverts": true, "advertisement": true, "advertising": true, "adsense": true,
	"adsbygoogle": true, "sponsor": true, "sponsored": true, "promo": true, "pagination": true, "pager": true,
	"disqus": true, "outbrain": true, "taboola": true, "masthead": true, "widgets": true,
}

var softNoiseWords = map[string]bool{
	"share": true, "sharing": true, "sharer": true, "social": true, "skip": true, "tags": true, "tagcloud": true,
	"toolbar": true, "byline": true, "meta": true, "author": true, "postmeta": true, "print": true,
	"banner": true, "caption": true, "credit": true, "credits": true,
}

// softNoiseMax is the non-link text (characters) above which a soft-noise
// element is kept.
const softNoiseMax = 400

// roleNoise are ARIA landmark roles that are never the article body.
var roleNoise = map[string]bool{
	"navigation": true, "banner": true, "contentinfo": true, "complementary": true, "dialog": true,
	"alertdialog": true, "search": true, "menu": true, "menubar": true, "toolbar": true,
}

// isNoise reports whether an element inside the main content is boilerplate.
func isNoise(n *html.Node) bool {
	if n.DataAtom == atom.Main || strings.EqualFold(attr(n, "role"), "main") {
		// The main landmark is never boilerplate, whatever its words:
		// WordPress 7 names it the skip link's target (id
		// "wp--skip-link--target").
		return false
	}
	switch n.DataAtom {
	case atom.Nav, atom.Aside, atom.Footer, atom.Form, atom.Menu, atom.Figcaption:
		return !forced(n)
	case atom.Header:
		// An article header holding a paragraph of prose carries the
		// standfirst; other headers are the site's or the byline's.
		return !forced(n) && !hasLeadPara(n)
	}
	if roleNoise[strings.ToLower(attr(n, "role"))] {
		return !forced(n)
	}
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		// A heading's id is often an anchor slug of its own text
		// ("nav_the-results"): its words say nothing about boilerplate.
		return false
	}
	ca, ia := attr(n, "class"), attr(n, "id")
	if noiseAttr(ca, noiseWords) || noiseAttr(ia, noiseWords) {
		return !forced(n)
	}
	if noiseAttr(ca, softNoiseWords) || noiseAttr(ia, softNoiseWords) {
		if forced(n) {
			return false
		}
		s := measure(n)
		return s.text-s.linkText < softNoiseMax
	}
	return false
}

// hasLeadPara reports a paragraph of prose (not a link list) in n.
func hasLeadPara(n *html.Node) bool {
	return findFirst(n, func(c *html.Node) bool {
		if c.DataAtom != atom.P {
			return false
		}
		s := measure(c)
		return s.text-s.linkText >= leadParaRunes
	}) != nil
}

// leadParaRunes is the length from which a paragraph in a header is a standfirst.
const leadParaRunes = 80

// forced is the force-include escape: data-askwp="content"/"keep" or the class
// askwp-content marks an element that must never be dropped.
func forced(n *html.Node) bool {
	v := attr(n, "data-askwp")
	return v == "content" || v == "keep" || hasClass(n, "askwp-content")
}

func noiseAttr(v string, words map[string]bool) bool {
	if v == "" {
		return false
	}
	for _, tok := range strings.Fields(strings.ToLower(v)) {
		if strings.HasPrefix(tok, "widget") && words["widgets"] {
			return true
		}
		start := 0
		for i := 0; i <= len(tok); i++ {
			if i == len(tok) || tok[i] == '-' || tok[i] == '_' {
				if i > start && words[tok[start:i]] {
					return true
				}
				start = i + 1
			}
		}
	}
	return false
}

// cleanContent removes boilerplate below root (root itself is kept): noise
// elements, then link-dense lists and boxes. In a post's own text (post, see
// selectContent) a list of links is the author's (a reading list, the
// resources of a how-to) and stays; boxes of links are still the plugins'.
func cleanContent(root *html.Node, post bool) {
	var dead []*html.Node
	total := measureClean(root).text
	walk(root, func(n *html.Node) bool {
		if n == root || n.Type != html.ElementNode {
			return true
		}
		if isNoise(n) {
			// A "noise" element holding most of the text is a layout wrapper
			// (class="container sidebar_right", a page-wide <form>): keep it and
			// look inside.
			if s := measureClean(n); total > 0 && s.text*2 > total {
				return true
			}
			dead = append(dead, n)
			return false
		}
		return true
	})
	for _, n := range dead {
		removeNode(n)
	}
	dead = dead[:0]
	walk(root, func(n *html.Node) bool {
		if n == root || n.Type != html.ElementNode {
			return true
		}
		switch n.DataAtom {
		case atom.Ul, atom.Ol, atom.Dl, atom.Div, atom.Section, atom.Table:
			if forced(n) || post && (n.DataAtom == atom.Ul || n.DataAtom == atom.Ol) {
				return true
			}
			s := measure(n)
			if s.links >= 2 && s.text > 0 && float64(s.linkText)/float64(s.text) > 0.7 {
				dead = append(dead, n)
				return false
			}
		}
		return true
	})
	for _, n := range dead {
		removeNode(n)
	}
	dropIllustrations(root, post)
}

// captionMax is the most text (characters) an illustration block may carry and
// still be taken for a picture with its caption and credit.
const captionMax = 200

// dropIllustrations removes picture blocks: an element holding an image and
// no more than a caption's worth of text. Images never reach the output, and a
// caption or photo credit read without its picture is noise in the text.
//
// In a post's own text (post), a block of WordPress's layout (a column, a
// group, a cover, media and text) is not a picture box however little text
// it holds beside its picture: the author set that text there. Only the
// picture blocks inside it (an image or gallery block, a classic caption)
// are.
func dropIllustrations(root *html.Node, post bool) {
	var dead []*html.Node
	walk(root, func(n *html.Node) bool {
		if n == root || n.Type != html.ElementNode {
			return true
		}
		switch n.DataAtom {
		case atom.Figure, atom.Div, atom.Span, atom.A, atom.Section:
		default:
			return true
		}
		if post && layoutBlock(n) {
			return true
		}
		if forced(n) || !hasImage(n) {
			return false
		}
		if s := measure(n); s.text <= captionMax && !hasProsePara(n) && !repeated(n) {
			dead = append(dead, n)
			return false
		}
		return true
	})
	for _, n := range dead {
		if post {
			// The renderer keeps a label of the picture (see trimTail).
			n.Parent.InsertBefore(marker("picture"), n)
		}
		removeNode(n)
	}
}

// hasProsePara reports a paragraph of real text inside n: an image set in a
// paragraph illustrates that text (a recipe step, a review), it is not a caption.
func hasProsePara(n *html.Node) bool {
	return findFirst(n, func(c *html.Node) bool {
		return c.DataAtom == atom.P && measure(c).text >= captionProse
	}) != nil
}

// captionProse is the paragraph length from which text next to an image is prose.
const captionProse = 80

// repeated reports an element with a sibling of the same tag and class: steps,
// slides and cards repeat, a caption stands alone.
func repeated(n *html.Node) bool {
	cls := attr(n, "class")
	for _, sib := range []*html.Node{n.PrevSibling, n.NextSibling} {
		for s := sib; s != nil; {
			if s.Type == html.ElementNode {
				if s.DataAtom == n.DataAtom && attr(s, "class") == cls {
					return true
				}
				break
			}
			if sib == n.PrevSibling {
				s = s.PrevSibling
			} else {
				s = s.NextSibling
			}
		}
	}
	return false
}

func hasImage(n *html.Node) bool {
	return findFirst(n, func(c *html.Node) bool {
		return c.Type == html.ElementNode && (c.DataAtom == atom.Img || c.DataAtom == atom.Picture)
	}) != nil
}

// stats are text measures of a subtree.
type stats struct {
	text     int // characters of visible text (whitespace collapsed)
	linkText int // characters inside <a>
	links    int
	paras    int
	commas   int
}

func measure(root *html.Node) stats {
	var s stats
	var visit func(n *html.Node, inLink bool)
	visit = func(n *html.Node, inLink bool) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				l := textLen(c.Data)
				s.text += l
				if inLink {
					s.linkText += l
				}
				s.commas += strings.Count(c.Data, ",")
			case html.ElementNode:
				il := inLink
				switch c.DataAtom {
				case atom.A:
					s.links++
					il = true
				case atom.P:
					s.paras++
				}
				visit(c, il)
			}
		}
	}
	visit(root, false)
	return s
}

// measureClean is measure that skips noise subtrees, used to rank candidates
// before anything is removed.
func measureClean(root *html.Node) stats {
	var s stats
	var visit func(n *html.Node, inLink bool)
	visit = func(n *html.Node, inLink bool) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				l := textLen(c.Data)
				s.text += l
				if inLink {
					s.linkText += l
				}
			case html.ElementNode:
				if isNoise(c) {
					continue
				}
				il := inLink
				switch c.DataAtom {
				case atom.A:
					s.links++
					il = true
				case atom.P:
					s.paras++
				}
				visit(c, il)
			}
		}
	}
	visit(root, false)
	return s
}

// textLen counts non-space runes plus one per whitespace run.
func textLen(s string) int {
	n := 0
	space := true
	for _, r := range s {
		if isSpace(r) {
			if !space {
				n++
			}
			space = true
			continue
		}
		space = false
		n++
	}
	return n
}
