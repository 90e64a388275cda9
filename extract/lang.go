package extract

import (
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Translation is another language's version of the page, from its
// <link rel="alternate" hreflang> links (Polylang, WPML and the SEO
// plugins print them).
type Translation struct {
	Lang string `json:"lang"`
	URL  string `json:"url"`
}

// maxTranslations caps the alternates kept: a site has a few languages.
const maxTranslations = 50

// pageLangs reads the page's hreflang alternates and the language its
// multilingual plugin's switcher marks as current. They are read before
// preclean drops the <head>'s links.
func pageLangs(doc *html.Node, base *url.URL) (alternates []Translation, current string) {
	walk(doc, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		switch n.DataAtom {
		case atom.Link:
			hl := strings.TrimSpace(attr(n, "hreflang"))
			if hl == "" || !hasToken(attr(n, "rel"), "alternate") || len(alternates) >= maxTranslations {
				return false
			}
			if u := resolve(base, strings.TrimSpace(attr(n, "href"))); u != "" {
				alternates = append(alternates, Translation{Lang: hl, URL: u})
			}
			return false
		case atom.Li, atom.Div, atom.Span, atom.A:
			if current == "" {
				current = switcherLang(attr(n, "class"))
			}
		}
		return true
	})
	return alternates, current
}

// switcherLang reads a language switcher's current item: Polylang marks
// it "lang-item lang-item-fr current-lang", WPML "wpml-ls-item-fr
// wpml-ls-current-language".
func switcherLang(class string) string {
	if class == "" {
		return ""
	}
	cls := strings.Fields(class)
	var lang string
	current := false
	for _, c := range cls {
		switch {
		case c == "current-lang" || c == "wpml-ls-current-language":
			current = true
		case strings.HasPrefix(c, "lang-item-") && !isDigitsOnly(c[len("lang-item-"):]):
			lang = c[len("lang-item-"):]
		case strings.HasPrefix(c, "wpml-ls-item-") && c != "wpml-ls-item-legacy-dropdown":
			lang = c[len("wpml-ls-item-"):]
		}
	}
	if !current {
		return ""
	}
	return lang
}

func isDigitsOnly(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func hasToken(list, tok string) bool {
	for _, t := range strings.Fields(strings.ToLower(list)) {
		if t == tok {
			return true
		}
	}
	return false
}

// fillLangs sets the page's language where <html lang> and the meta tags
// left it unset, and its translations: the alternates other than itself
// and x-default.
func fillLangs(res *Result, alternates []Translation, current string) {
	self := map[string]bool{res.URL: true, res.CanonicalURL: true}
	for _, a := range alternates {
		if self[a.URL] && res.Lang == "" && !strings.EqualFold(a.Lang, "x-default") {
			res.Lang = a.Lang
		}
	}
	if res.Lang == "" {
		res.Lang = current
	}
	seen := map[string]bool{}
	for _, a := range alternates {
		if self[a.URL] || strings.EqualFold(a.Lang, "x-default") || seen[a.URL] {
			continue
		}
		seen[a.URL] = true
		res.Translations = append(res.Translations, a)
	}
}
