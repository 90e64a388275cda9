package extract

import (
	"strings"

	"golang.org/x/net/html"
)

// attr returns the value of the attribute key on n ("" when absent).
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

func setAttr(n *html.Node, key, val string) {
	for i, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			n.Attr[i].Val = val
			return
		}
	}
	n.Attr = append(n.Attr, html.Attribute{Key: key, Val: val})
}

// hasClass reports whether the class attribute of n contains the token c.
func hasClass(n *html.Node, c string) bool {
	for _, t := range strings.Fields(attr(n, "class")) {
		if t == c {
			return true
		}
	}
	return false
}

// walk visits n and its descendants in document order. fn returns false to skip
// the children of a node. It is iterative so deep trees cannot exhaust the stack.
func walk(n *html.Node, fn func(*html.Node) bool) {
	if n == nil {
		return
	}
	if !fn(n) {
		return
	}
	c := n.FirstChild
	for c != nil {
		descend := fn(c)
		if descend && c.FirstChild != nil {
			c = c.FirstChild
			continue
		}
		for c != nil && c != n {
			if c.NextSibling != nil {
				c = c.NextSibling
				break
			}
			c = c.Parent
		}
		if c == n {
			return
		}
	}
}

func findFirst(n *html.Node, pred func(*html.Node) bool) *html.Node {
	var out *html.Node
	walk(n, func(c *html.Node) bool {
		if out != nil {
			return false
		}
		if c.Type == html.ElementNode && pred(c) {
			out = c
			return false
		}
		return true
	})
	return out
}

// textContent returns the concatenated text of n with whitespace collapsed.
func textContent(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
			b.WriteByte(' ')
		}
		return true
	})
	return collapseSpace(b.String())
}

// collapseSpace replaces runs of white space (including NBSP) with one space and trims.
func collapseSpace(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if isSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\f', '\v', 0xA0, 0x2007, 0x202F, 0x3000, 0x2002, 0x2003, 0x2009:
		return true
	}
	return false
}

// isAncestor reports whether a is an ancestor of (or equal to) n.
func isAncestor(a, n *html.Node) bool {
	for ; n != nil; n = n.Parent {
		if n == a {
			return true
		}
	}
	return false
}

func removeNode(n *html.Node) {
	if n.Parent != nil {
		n.Parent.RemoveChild(n)
	}
}
