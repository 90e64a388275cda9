package extract

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// pageMeta collects everything read from <head>, JSON-LD and body classes.
type pageMeta struct {
	metas      map[string]string // lowercased name/property -> first content
	metaTags   []string          // article:tag values
	title      string            // <title>
	canonical  string
	lang       string
	bodyClass  string
	shortlink  string
	ld         ldInfo
	timeAttr   string // first <time datetime>
	relTags    []string
	relCats    []string
	relAuthor  string
	articleCls string // class of <article id="post-N">
	byline     string // text of an author-name element
	h1s        []string
}

// underClass reports whether an ancestor of n (up to depth levels) has a class containing sub.
func underClass(n *html.Node, sub string, depth int) bool {
	for p := n.Parent; p != nil && depth > 0; p, depth = p.Parent, depth-1 {
		if strings.Contains(strings.ToLower(attr(p, "class")), sub) {
			return true
		}
	}
	return false
}

type ldInfo struct {
	headline, description, published, modified, author, section string
	keywords                                                    []string
}

// collectMeta scans the whole document once.
func collectMeta(doc *html.Node) *pageMeta {
	m := &pageMeta{metas: map[string]string{}}
	walk(doc, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		switch n.DataAtom {
		case atom.Html:
			if m.lang == "" {
				m.lang = strings.TrimSpace(attr(n, "lang"))
				if m.lang == "" {
					m.lang = strings.TrimSpace(attr(n, "xml:lang"))
				}
			}
		case atom.Title:
			if m.title == "" && n.FirstChild != nil {
				m.title = collapseSpace(textContent(n))
			}
		case atom.Meta:
			key := strings.ToLower(strings.TrimSpace(attr(n, "property")))
			if key == "" {
				key = strings.ToLower(strings.TrimSpace(attr(n, "name")))
			}
			if key == "" {
				key = strings.ToLower(strings.TrimSpace(attr(n, "itemprop")))
			}
			if key == "" {
				if he := strings.ToLower(attr(n, "http-equiv")); he == "content-language" {
					key = he
				}
			}
			val := strings.TrimSpace(attr(n, "content"))
			if key == "" || val == "" {
				return false
			}
			if key == "article:tag" {
				m.metaTags = append(m.metaTags, val)
			}
			if _, ok := m.metas[key]; !ok {
				m.metas[key] = val
			}
		case atom.Link:
			rel := strings.ToLower(attr(n, "rel"))
			for _, r := range strings.Fields(rel) {
				switch r {
				case "canonical":
					if m.canonical == "" {
						m.canonical = strings.TrimSpace(attr(n, "href"))
					}
				case "shortlink":
					if m.shortlink == "" {
						m.shortlink = strings.TrimSpace(attr(n, "href"))
					}
				}
			}
		case atom.Body:
			m.bodyClass = attr(n, "class")
		case atom.Script:
			if strings.Contains(strings.ToLower(attr(n, "type")), "ld+json") && n.FirstChild != nil {
				parseLD(n.FirstChild.Data, &m.ld)
			}
			return false
		case atom.Time:
			if m.timeAttr == "" {
				m.timeAttr = strings.TrimSpace(attr(n, "datetime"))
			}
		case atom.A:
			rel := strings.Fields(strings.ToLower(attr(n, "rel")))
			isTag, isCat, isAuthor := false, false, false
			for _, r := range rel {
				switch r {
				case "tag":
					isTag = true
				case "category":
					isCat = true
				case "author":
					isAuthor = true
				}
			}
			if isTag && !isCat && underClass(n, "categor", 4) {
				isCat, isTag = true, false
			}
			if isTag || isCat {
				t := textContent(n)
				if t != "" && len(t) < 100 {
					if isCat {
						m.relCats = appendUniq(m.relCats, t)
					} else {
						m.relTags = appendUniq(m.relTags, t)
					}
				}
			}
			if isAuthor && m.relAuthor == "" {
				m.relAuthor = textContent(n)
			}
		case atom.P, atom.Div, atom.Span:
			if m.byline == "" {
				for _, c := range strings.Fields(attr(n, "class")) {
					if c == "wp-block-post-author__name" || c == "author-name" || c == "entry-author-name" {
						if t := textContent(n); len(t) < 80 {
							m.byline = t
						}
					}
				}
			}
		case atom.Article:
			if m.articleCls == "" && strings.HasPrefix(attr(n, "id"), "post-") {
				m.articleCls = attr(n, "class")
			}
		}
		return true
	})
	return m
}

func appendUniq(list []string, s string) []string {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return list
		}
	}
	return append(list, s)
}

// walkLD calls fn on each object of one JSON-LD block: a single object,
// an array, or an @graph, and the values fn returns, to a bounded depth.
// Broken JSON has none.
func walkLD(src string, fn func(map[string]any) []any) {
	var v any
	if err := json.Unmarshal([]byte(strings.TrimSpace(src)), &v); err != nil {
		return
	}
	var visit func(v any, depth int)
	visit = func(v any, depth int) {
		if depth > 6 {
			return
		}
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				visit(e, depth+1)
			}
		case map[string]any:
			if g, ok := x["@graph"]; ok {
				visit(g, depth+1)
			}
			for _, e := range fn(x) {
				visit(e, depth+1)
			}
		}
	}
	visit(v, 0)
}

// parseLD reads schema.org JSON-LD, keeping the first article-like object.
func parseLD(src string, out *ldInfo) {
	walkLD(src, func(x map[string]any) []any {
		typ := strings.ToLower(ldString(x["@type"]))
		articleLike := strings.Contains(typ, "article") || strings.Contains(typ, "posting") ||
			strings.Contains(typ, "webpage") || strings.Contains(typ, "report")
		if !articleLike {
			return nil
		}
		set := func(dst *string, s string) {
			if *dst == "" {
				*dst = strings.TrimSpace(s)
			}
		}
		set(&out.headline, ldString(x["headline"]))
		set(&out.description, ldString(x["description"]))
		set(&out.published, ldString(x["datePublished"]))
		set(&out.modified, ldString(x["dateModified"]))
		set(&out.section, ldString(x["articleSection"]))
		if out.author == "" {
			out.author = ldAuthor(x["author"])
		}
		if len(out.keywords) == 0 {
			switch k := x["keywords"].(type) {
			case string:
				for _, s := range strings.Split(k, ",") {
					if s = strings.TrimSpace(s); s != "" {
						out.keywords = append(out.keywords, s)
					}
				}
			case []any:
				for _, s := range k {
					if t := strings.TrimSpace(ldString(s)); t != "" {
						out.keywords = append(out.keywords, t)
					}
				}
			}
		}
		return nil
	})
}

func ldString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		if len(x) > 0 {
			return ldString(x[0])
		}
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

func ldAuthor(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var names []string
		for _, e := range x {
			if s := ldAuthor(e); s != "" {
				names = append(names, s)
			}
		}
		return strings.Join(names, ", ")
	case map[string]any:
		return ldString(x["name"])
	}
	return ""
}

var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05",
	"2006-01-02 15:04",
	"2006-01-02",
	time.RFC1123Z,
	time.RFC1123,
}

// parseDate accepts the ISO-8601 shapes found in meta tags, JSON-LD and <time>.
func parseDate(s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			if t.Year() < 1990 || t.Year() > 2100 {
				return time.Time{}
			}
			return t
		}
	}
	return time.Time{}
}

var (
	postIDRe   = regexp.MustCompile(`^(?:postid|page-id)-(\d+)$`)
	shortlinkP = regexp.MustCompile(`[?&]p=(\d+)`)
)

// wpBodyClasses reads the post ID and type from WordPress body classes:
// single posts carry "single single-TYPE postid-N", pages "page page-id-N".
func wpBodyClasses(bodyClass, articleClass string) (id int64, typ string) {
	for _, c := range strings.Fields(bodyClass) {
		if m := postIDRe.FindStringSubmatch(c); m != nil && id == 0 {
			id, _ = strconv.ParseInt(m[1], 10, 64)
			if strings.HasPrefix(c, "page-id-") && typ == "" {
				typ = "page"
			}
		}
		if strings.HasPrefix(c, "single-") && typ == "" {
			t := strings.TrimPrefix(c, "single-")
			if t != "" && !strings.HasPrefix(t, "format") && !strings.HasPrefix(t, "author") && t != "paged" {
				typ = t
			}
		}
	}
	if typ == "" && id != 0 {
		// Block themes and some classic themes: <article class="post-12 TYPE type-TYPE">.
		for _, c := range strings.Fields(articleClass) {
			if strings.HasPrefix(c, "type-") {
				typ = strings.TrimPrefix(c, "type-")
				break
			}
		}
		if typ == "" {
			typ = "post"
		}
	}
	return id, typ
}

// stripSiteName removes a " – Site", " | Site", " - Site" suffix (or prefix).
func stripSiteName(title, site string) string {
	title = collapseSpace(title)
	if title == "" {
		return ""
	}
	seps := []string{" | ", " – ", " — ", " - ", " · ", " :: ", " » ", " // "}
	if site != "" {
		for _, sep := range seps {
			if strings.HasSuffix(strings.ToLower(title), strings.ToLower(sep+site)) {
				return strings.TrimSpace(title[:len(title)-len(sep+site)])
			}
			if strings.HasPrefix(strings.ToLower(title), strings.ToLower(site+sep)) {
				return strings.TrimSpace(title[len(site+sep):])
			}
		}
		if strings.EqualFold(title, site) {
			return title
		}
	}
	return title
}

// resolve makes href absolute against base; "" when unusable.
func resolve(base *url.URL, href string) string {
	if u := resolveURL(base, href); u != nil {
		return u.String()
	}
	return ""
}

// resolveURL parses href against base; nil for empty, unparsable or non-web URLs.
func resolveURL(base *url.URL, href string) *url.URL {
	href = strings.TrimSpace(href)
	if href == "" {
		return nil
	}
	u, err := url.Parse(href)
	if err != nil {
		return nil
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	switch u.Scheme {
	case "http", "https", "":
		return u
	}
	return nil
}
