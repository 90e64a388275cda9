package extract

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Noindex reports whether a page asks search engines not to index it:
// a robots (or googlebot) meta tag in its head, or the X-Robots-Tag
// header it was served with, saying noindex or none. SEO plugins set it
// on thin pages, thank-you pages, paginated archives: pages a site owner
// does not want found, and so not an answer either.
func Noindex(body []byte, robotsHeader string) bool {
	if robotsNoindex(robotsHeader) {
		return true
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return false
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch atom.Lookup(name) {
			case atom.Body:
				// The head is over: a robots meta in the body is not one.
				return false
			case atom.Meta:
				if hasAttr && metaNoindex(z) {
					return true
				}
			}
		}
	}
}

func metaNoindex(z *html.Tokenizer) bool {
	var name, content string
	for {
		k, v, more := z.TagAttr()
		switch strings.ToLower(string(k)) {
		case "name":
			name = strings.ToLower(strings.TrimSpace(string(v)))
		case "content":
			content = string(v)
		}
		if !more {
			break
		}
	}
	return (name == "robots" || name == "googlebot") && robotsNoindex(content)
}

// robotsNoindex reads a robots directive list ("noindex, follow"). An
// X-Robots-Tag may name a user agent first ("googlebot: noindex"); one
// for another crawler alone still says the site wants the page unfound.
func robotsNoindex(v string) bool {
	for _, d := range strings.FieldsFunc(strings.ToLower(v), func(r rune) bool { return r == ',' || r == ' ' || r == ':' }) {
		if d == "noindex" || d == "none" {
			return true
		}
	}
	return false
}
