package extract

import (
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// WordPress's own markup says more than any length or density measure can,
// and it says it on a one-line page as clearly as on a long one:
//
//   - On a singular view the body classes name the post (postid-N,
//     page-id-N). The post's text is what the_content printed, inside the
//     theme's wrapper: core's post-content block (wp-block-post-content) in a
//     block theme, entry-content by the convention nearly every classic theme
//     follows. Everything else on the page is the template's: the title, the
//     byline, terms, post navigation, comments, query loops ("More posts"),
//     header and footer template parts.
//   - post_class() marks every post's container post-N: a query loop's
//     items and a classic loop's <article>s. A content wrapper inside
//     another post's container is not this page's.
//   - Core's theme and widget blocks (site title, post title, date, author,
//     terms, navigation, comments, query loops, latest posts, archives...)
//     print the site's or other posts' data, not text an author wrote, even
//     when an author placed one in the post's content; and the listings
//     among them name password-protected posts by title.
//
// A singular page whose markup has exactly one such wrapper gets it as its
// text, whatever its length (see theContent), with the chrome blocks out (see
// dropChromeBlocks) and cleaned as a post's own text (cleanContent and
// trimTail with post set).

// wpContentClasses are the class tokens of the_content's wrapper.
var wpContentClasses = map[string]bool{"wp-block-post-content": true, "entry-content": true}

// wpChromeBlocks are core's blocks that print the site's or other posts'
// data (the "theme" and the dynamic "widgets" blocks), by the class token
// WordPress gives their outer element. The listings among them are marked
// true: on an archive or a blog index they are the page (see
// dropChromeBlocks).
var wpChromeBlocks = map[string]bool{
	// The site.
	"wp-block-site-title": false, "wp-block-site-tagline": false, "wp-block-site-logo": false,
	"wp-block-template-part": false, "wp-block-navigation": false, "wp-block-loginout": false,
	"wp-block-search": false, "wp-block-social-links": false,
	// A post's metadata, around its content.
	"wp-block-post-author": false, "wp-block-post-author-name": false, "wp-block-post-author-biography": false,
	"wp-block-avatar": false, "wp-block-post-date": false, "wp-block-post-terms": false,
	"wp-block-read-more": false, "wp-block-post-navigation-link": false, "wp-block-query-pagination": false,
	"wp-block-comments": false, "wp-block-comments-title": false, "wp-block-comment-template": false,
	"wp-block-post-comments-form": false, "wp-block-term-description": false,
	// Listings of other content, and the parts of a post a listing shows.
	"wp-block-query": true, "wp-block-post-template": true, "wp-block-post-title": true,
	"wp-block-post-excerpt": true, "wp-block-post-featured-image": true, "wp-block-latest-posts": true,
	"wp-block-latest-comments": true, "wp-block-archives": true, "wp-block-categories": true,
	"wp-block-page-list": true, "wp-block-tag-cloud": true, "wp-block-calendar": true, "wp-block-rss": true,
	"wp-block-query-title": true,
	// A password-protected post in a listing: its title and its form.
	"post-password-required": false,
}

// wpSingular returns the post ID the body classes name (postid-N,
// page-id-N, attachmentid-N), or 0 on a listing or a non-WordPress page.
func wpSingular(body *html.Node) int64 {
	for _, c := range strings.Fields(attr(body, "class")) {
		for _, p := range [...]string{"postid-", "page-id-", "attachmentid-"} {
			if v, ok := strings.CutPrefix(c, p); ok {
				if id, err := strconv.ParseInt(v, 10, 64); err == nil && id > 0 {
					return id
				}
			}
		}
	}
	return 0
}

// isWPContent reports the_content's wrapper.
func isWPContent(n *html.Node) bool {
	if n.Type != html.ElementNode || n.DataAtom == atom.Body || n.DataAtom == atom.Html {
		return false
	}
	for _, t := range strings.Fields(attr(n, "class")) {
		if wpContentClasses[t] {
			return true
		}
	}
	return false
}

// otherPost reports whether n is the container of a post other than self:
// post_class() marks each post's container post-N, in a classic loop and in
// a query loop's items (which may list self too).
func otherPost(n *html.Node, self int64) bool {
	for _, t := range strings.Fields(attr(n, "class")) {
		if v, ok := strings.CutPrefix(t, "post-"); ok {
			if id, err := strconv.ParseInt(v, 10, 64); err == nil && id > 0 && id != self {
				return true
			}
		}
	}
	return false
}

// blockTheme reports the template canvas of a block theme, which wraps the
// whole page in div.wp-site-blocks.
func blockTheme(body *html.Node) bool {
	for c := body.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && hasClass(c, "wp-site-blocks") {
			return true
		}
	}
	return false
}

// theContent finds, on a singular WordPress page, the one element the post's
// content was printed into. ok is false when the page is not one or its markup
// does not single one out (two wrappers that are not nested); n is nil with ok
// true when a block theme printed no wrapper: core's post-content block prints
// nothing for an empty post, and the rest of the page is the template's.
func theContent(body *html.Node) (n *html.Node, ok bool) {
	self := wpSingular(body)
	if self == 0 {
		return nil, false
	}
	var found []*html.Node
	var visit func(n *html.Node)
	visit = func(n *html.Node) {
		for c := n.FirstChild; c != nil && len(found) < 2; c = c.NextSibling {
			if c.Type != html.ElementNode || otherPost(c, self) {
				continue
			}
			if isWPContent(c) {
				// The outermost wrapper: one nested in it is the same text.
				found = append(found, c)
				continue
			}
			visit(c)
		}
	}
	visit(body)
	switch {
	case len(found) == 0:
		return nil, blockTheme(body)
	case len(found) > 1 || insideNoise(found[0], body):
		return nil, false
	}
	return found[0], true
}

// chromeBlock reports a core block of wpChromeBlocks; listing says whether it
// is one of the listings.
func chromeBlock(n *html.Node) (chrome, listing bool) {
	for _, t := range strings.Fields(attr(n, "class")) {
		if l, ok := wpChromeBlocks[t]; ok {
			chrome = true
			listing = listing || l
		}
	}
	return chrome, listing
}

// markerAttr marks an <hr> that stands, in a post's own text, for what the
// cleaning took out and the text refers to: a picture, or the links to the
// post's next pages ("pages"). The renderer prints nothing for it, but a
// label line before it ("Eight columns:", then a gallery) is the post's.
const markerAttr = "data-askwpd"

func marker(kind string) *html.Node {
	return &html.Node{Type: html.ElementNode, DataAtom: atom.Hr, Data: "hr",
		Attr: []html.Attribute{{Key: markerAttr, Val: kind}}}
}

// pageLinks reports wp_link_pages's list of a paginated post's pages, which
// the_content's wrapper holds in a block theme.
func pageLinks(n *html.Node) bool {
	return hasClass(n, "post-nav-links") || hasClass(n, "page-links")
}

// bylineMax is the text (characters) a block may keep once its chrome blocks
// are out and still be taken for the labels around them ("Written by … in …").
const bylineMax = 40

// dropChromeBlocks removes core's chrome blocks below root. In a post's own
// text (post) every one of them goes; elsewhere the listings stay, since on an
// archive or the blog index they are the page's content. A block left with
// no more than the labels of the chrome it held goes too.
func dropChromeBlocks(root *html.Node, post bool) {
	var dead []*html.Node
	parents := map[*html.Node]bool{}
	walk(root, func(n *html.Node) bool {
		if n == root || n.Type != html.ElementNode || forced(n) {
			return true
		}
		if post && pageLinks(n) {
			n.Parent.InsertBefore(marker("pages"), n)
			dead = append(dead, n)
			return false
		}
		if chrome, listing := chromeBlock(n); chrome && (post || !listing) {
			dead = append(dead, n)
			if n.Parent != root {
				parents[n.Parent] = true
			}
			return false
		}
		return true
	})
	for _, n := range dead {
		removeNode(n)
	}
	for p := range parents {
		if p.Parent != nil && measure(p).text <= bylineMax {
			removeNode(p)
		}
	}
}

// unwrapButtons turns the links of core's button blocks into their label:
// a button is the author's own text, which the cleaning of link lines
// would otherwise take for a cross-reference to another page.
func unwrapButtons(root *html.Node) {
	var links []*html.Node
	walk(root, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.A && hasClass(n, "wp-block-button__link") {
			links = append(links, n)
			return false
		}
		return true
	})
	for _, a := range links {
		span := &html.Node{Type: html.ElementNode, DataAtom: atom.Span, Data: "span"}
		for c := a.FirstChild; c != nil; c = a.FirstChild {
			a.RemoveChild(c)
			span.AppendChild(c)
		}
		a.Parent.InsertBefore(span, a)
		removeNode(a)
	}
}

// layoutBlock reports the wrapper of a core block that lays out other
// blocks or sets text on a picture: any wp-block-* class but the picture
// blocks'.
func layoutBlock(n *html.Node) bool {
	for _, t := range strings.Fields(attr(n, "class")) {
		if strings.HasPrefix(t, "wp-block-") && t != "wp-block-image" && t != "wp-block-gallery" &&
			!strings.HasPrefix(t, "wp-block-image-") && !strings.HasPrefix(t, "wp-block-gallery-") {
			return true
		}
	}
	return false
}

// protectedPage reports a password form that asks for the page's own post:
// WordPress's (form.post-password-form, or a form posting to
// wp-login.php?action=postpass) outside the container of any other post. A
// listing shows one in a password-protected post's item (post-N of that
// post); the page of the post shows it for itself. On a page that names no
// post, every post-N container is another post's.
func protectedPage(doc *html.Node) bool {
	body := findFirst(doc, func(n *html.Node) bool { return n.DataAtom == atom.Body })
	if body == nil {
		return false
	}
	self := wpSingular(body)
	found := false
	var visit func(n *html.Node)
	visit = func(n *html.Node) {
		for c := n.FirstChild; c != nil && !found; c = c.NextSibling {
			if c.Type != html.ElementNode || otherPost(c, self) {
				continue
			}
			if c.DataAtom == atom.Form && (hasClass(c, "post-password-form") || strings.Contains(attr(c, "action"), "action=postpass")) {
				found = true
				return
			}
			visit(c)
		}
	}
	visit(body)
	return found
}
