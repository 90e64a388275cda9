package extract

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Options configure one extraction.
type Options struct {
	URL      string // the page URL (used to resolve relative links, canonical)
	SiteName string // optional; used to strip " – Site Name" title suffixes
	MaxBytes int64  // input cap; 0 means DefaultMaxBytes. Larger input is truncated cleanly, not an error.
	// NoChunks skips chunking (Result.Chunks stays nil).
	NoChunks bool
	// Chunk configures chunking of Result.Markdown.
	Chunk ChunkOptions
}

// Result is one extracted page. See the package comment for the JSON date format.
type Result struct {
	URL          string    `json:"url"`
	CanonicalURL string    `json:"canonical_url"`
	Title        string    `json:"title"`
	Text         string    `json:"text"`     // main content, plain text, paragraphs separated by "\n"
	Markdown     string    `json:"markdown"` // main content as Markdown; the stored body chunk offsets index into
	Lang         string    `json:"lang"`
	Published    time.Time `json:"published"` // zero when unknown
	Modified     time.Time `json:"modified"`
	PostID       int64     `json:"post_id"`   // from body classes postid-N / page-id-N, 0 if unknown
	PostType     string    `json:"post_type"` // post, page, or a custom type from body classes, "" if unknown
	Description  string    `json:"description"`
	Author       string    `json:"author"`
	Categories   []string  `json:"categories,omitempty"`
	Tags         []string  `json:"tags,omitempty"`
	Thin         bool      `json:"thin"`
	ThinReason   string    `json:"thin_reason,omitempty"` // "too_short", "placeholder", "title_only", "empty"
	Source       string    `json:"source"`                // "forced", "main", "article", "role_main", "wp_content", "readability", "body"
	WordCount    int       `json:"word_count"`
	ContentHash  string    `json:"content_hash"` // hex sha256 of Markdown
	Links        []Link    `json:"links,omitempty"`
	Chunks       []Chunk   `json:"chunks,omitempty"`
	// FetchedAt is set by the caller (the daemon knows when it fetched); Extract leaves it zero.
	FetchedAt time.Time `json:"fetched_at"`
	// Truncated reports that the input exceeded MaxBytes and was cut.
	Truncated bool `json:"truncated,omitempty"`
	// Protected reports that WordPress asks here for the password of the
	// page's own post: the page shows a password form, and not in a listed
	// post's item (see protectedPage). Its text is never content.
	Protected bool `json:"protected,omitempty"`
	// Product is the page's schema.org product, nil on other pages.
	Product *Product `json:"product,omitempty"`
	// Translations are the page's versions in other languages.
	Translations []Translation `json:"translations,omitempty"`
}

// Link is an outgoing link of the page. Text is its anchor text when the
// link is in the main content, "" for the template's links (see anchorTexts).
type Link struct {
	URL  string `json:"url"`
	Text string `json:"text"`
}

// ErrNotHTML is returned for input that has no parseable document at all.
var ErrNotHTML = errors.New("extract: input is not an HTML document")

const maxLinks = 5000

// Extract parses one HTML page. It never panics; pathological input gives a clean
// error or a truncated result.
func Extract(ctx context.Context, r io.Reader, opt Options) (res *Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("extract: internal error: %v", p)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	max := opt.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	data, truncated, err := readCapped(r, max)
	if err != nil {
		return nil, err
	}
	data = toUTF8(data)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	base, _ := url.Parse(opt.URL)
	if base != nil && !base.IsAbs() {
		base = nil
	}
	res = &Result{URL: opt.URL, Truncated: truncated}

	doc, perr := html.ParseWithOptions(bytes.NewReader(data))
	if perr != nil {
		// x/net/html refuses trees nested deeper than 512 elements. Such pages
		// still get their text, through the tokenizer, as a body extraction.
		txt := tokenText(data)
		if strings.TrimSpace(txt) == "" {
			return nil, fmt.Errorf("extract: parse: %w", perr)
		}
		res.Text = txt
		res.Markdown = plainToMarkdown(txt)
		res.Source = "body"
		res.CanonicalURL = opt.URL
		finish(res, opt, "")
		return res, nil
	}

	meta := collectMeta(doc)
	res.Links = collectLinks(doc, base)
	res.Product = extractProduct(doc)
	alternates, current := pageLangs(doc, base)
	res.Protected = protectedPage(doc)
	preclean(doc)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	// The headlines are read before content selection cuts the page down:
	// the title is the page's, wherever its <h1> stands.
	meta.h1s = headlines(doc)

	node, source, post := selectContent(doc, base)
	res.Source = source
	anchorTexts(res.Links, node, base)
	if node != nil {
		node = sanitize(node)
		rd := newRenderer(base)
		rd.render(node)
		rd.flush()
		rd.trimTail(post)
		res.Markdown, res.Text = rd.output()
	}
	fillMeta(res, meta, base, opt)
	fillLangs(res, alternates, current)
	finish(res, opt, res.Title)
	return res, nil
}

// finish computes the quality flags, hashes and chunks.
func finish(res *Result, opt Options, title string) {
	res.Markdown = strings.ToValidUTF8(res.Markdown, "\uFFFD")
	res.Text = strings.ToValidUTF8(res.Text, "\uFFFD")
	res.WordCount = countWords(res.Text)
	res.Thin, res.ThinReason = thinness(res.Text, title, res.WordCount)
	sum := sha256.Sum256([]byte(res.Markdown))
	res.ContentHash = hex.EncodeToString(sum[:])
	if res.CanonicalURL == "" {
		res.CanonicalURL = opt.URL
	}
	if !opt.NoChunks {
		res.Chunks = ChunkMarkdown(res.Markdown, opt.Chunk)
	}
}

func fillMeta(res *Result, m *pageMeta, base *url.URL, opt Options) {
	site := opt.SiteName
	if site == "" {
		site = m.metas["og:site_name"]
	}
	title := m.metas["og:title"]
	if title == "" {
		title = m.ld.headline
	}
	if title == "" {
		title = pickTitle(m.title, site, m.h1s)
	}
	res.Title = stripSiteName(title, site)

	res.CanonicalURL = resolve(base, m.canonical)
	if res.CanonicalURL == "" {
		res.CanonicalURL = resolve(base, m.metas["og:url"])
	}
	res.Lang = m.lang
	if res.Lang == "" {
		res.Lang = m.metas["content-language"]
	}
	if res.Lang == "" {
		res.Lang = strings.ReplaceAll(m.metas["og:locale"], "_", "-")
	}
	res.Published = firstDate(m.metas["article:published_time"], m.ld.published, m.metas["datepublished"],
		m.metas["og:published_time"], m.metas["dc.date"], m.metas["date"], m.timeAttr)
	res.Modified = firstDate(m.metas["article:modified_time"], m.metas["og:updated_time"], m.ld.modified,
		m.metas["datemodified"])
	res.PostID, res.PostType = wpBodyClasses(m.bodyClass, m.articleCls)
	if res.PostID == 0 && m.shortlink != "" {
		if s := shortlinkP.FindStringSubmatch(m.shortlink); s != nil {
			fmt.Sscan(s[1], &res.PostID)
		}
	}
	res.Description = m.metas["description"]
	if res.Description == "" {
		res.Description = m.metas["og:description"]
	}
	if res.Description == "" {
		res.Description = m.ld.description
	}
	if res.Description == "" {
		res.Description = excerpt(res.Text, 300)
	}
	res.Description = collapseSpace(res.Description)
	res.Author = m.metas["author"]
	if res.Author == "" || strings.HasPrefix(res.Author, "http") {
		res.Author = m.ld.author
	}
	if res.Author == "" {
		res.Author = m.relAuthor
	}
	if res.Author == "" {
		res.Author = m.byline
	}
	if res.Author == "" {
		if a := m.metas["article:author"]; !strings.HasPrefix(a, "http") {
			res.Author = a
		}
	}
	res.Author = collapseSpace(res.Author)
	res.Categories = m.relCats
	if len(res.Categories) == 0 {
		if s := firstNonEmpty(m.metas["article:section"], m.ld.section); s != "" {
			res.Categories = []string{s}
		}
	}
	res.Tags = m.relTags
	if len(res.Tags) == 0 {
		res.Tags = m.metaTags
	}
	if len(res.Tags) == 0 {
		res.Tags = m.ld.keywords
	}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func firstDate(s ...string) time.Time {
	for _, x := range s {
		if t := parseDate(x); !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// excerpt returns the first paragraph of text, cut at a word boundary.
func excerpt(text string, max int) string {
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	r := []rune(text)
	if len(r) <= max {
		return text
	}
	cut := string(r[:max])
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return cut + "…"
}

// anchorTexts keeps the text of the links the content holds, and only
// theirs: a link's text elsewhere on the page is the template's (menus, post
// navigation, "More posts", a sidebar's recent posts), made of other posts'
// titles, the password-protected ones' included. The links themselves stay
// for discovery.
func anchorTexts(links []Link, content *html.Node, base *url.URL) {
	inContent := map[string]string{}
	if content != nil {
		walk(content, func(n *html.Node) bool {
			if n.Type != html.ElementNode || n.DataAtom != atom.A {
				return true
			}
			if u := linkURL(n, base); u != "" {
				if t := textContent(n); t != "" && inContent[u] == "" {
					inContent[u] = t
				}
			}
			return false
		})
	}
	for i := range links {
		links[i].Text = inContent[links[i].URL]
	}
}

// linkURL is the absolute address of a link, without its fragment, or "".
func linkURL(n *html.Node, base *url.URL) string {
	href := attr(n, "href")
	if href == "" || strings.HasPrefix(href, "#") {
		return ""
	}
	u := resolveURL(base, href)
	if u == nil {
		return ""
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// collectLinks returns the page's outgoing links (absolute, deduplicated, without
// fragments), from the whole page including navigation: they feed discovery.
func collectLinks(doc *html.Node, base *url.URL) []Link {
	seen := map[string]int{}
	var out []Link
	walk(doc, func(n *html.Node) bool {
		if len(out) >= maxLinks {
			return false
		}
		if n.Type != html.ElementNode || n.DataAtom != atom.A {
			return true
		}
		abs := linkURL(n, base)
		if abs == "" {
			return false
		}
		text := textContent(n)
		if text == "" {
			text = attr(n, "title")
			if text == "" {
				text = attr(n, "aria-label")
			}
		}
		if i, ok := seen[abs]; ok {
			if out[i].Text == "" {
				out[i].Text = text
			}
			return false
		}
		seen[abs] = len(out)
		out = append(out, Link{URL: abs, Text: text})
		return false
	})
	return out
}

// countWords counts runs of letters/digits; each Han/Kana/Hangul rune counts as a word.
func countWords(s string) int {
	n := 0
	in := false
	for _, r := range s {
		if unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) {
			n++
			in = false
			continue
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || unicode.Is(unicode.Mn, r) {
			if !in {
				n++
			}
			in = true
		} else {
			in = false
		}
	}
	return n
}

var placeholderRe = regexp.MustCompile(`(?i)\b(coming soon|under construction|lorem ipsum|page not found|nothing (?:was )?found|no posts found|work in progress|this is an example page|this is your first post|sample page|stay tuned)\b`)

const thinWords = 50

// thinness flags pages with too little content to answer from on their own.
func thinness(text, title string, words int) (bool, string) {
	t := strings.TrimSpace(text)
	if t == "" {
		return true, "empty"
	}
	if title != "" && strings.EqualFold(collapseSpace(t), collapseSpace(title)) {
		return true, "title_only"
	}
	if words < 150 && placeholderRe.MatchString(t) {
		return true, "placeholder"
	}
	if words < thinWords {
		return true, "too_short"
	}
	return false, ""
}

// tokenText is the last-resort extractor for documents the tree parser refuses:
// it streams tokens, skips script/style, and breaks lines at block tags.
func tokenText(data []byte) string {
	z := html.NewTokenizer(bytes.NewReader(data))
	var b strings.Builder
	skip := 0
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return collapseLines(b.String())
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch a {
			case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Head:
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
			case atom.Br, atom.P, atom.Div, atom.Li, atom.Tr, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6,
				atom.Pre, atom.Blockquote, atom.Section, atom.Article, atom.Table, atom.Ul, atom.Ol:
				b.WriteByte('\n')
			default:
				if a == 0 || blockAtoms[a] {
					b.WriteByte(' ')
				}
			}
		}
	}
}

// collapseLines collapses spaces within lines and drops empty lines.
func collapseLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = collapseSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// plainToMarkdown turns plain lines into Markdown paragraphs.
func plainToMarkdown(txt string) string {
	lines := strings.Split(txt, "\n")
	for i := range lines {
		lines[i] = escapeLineStart(escapeText(lines[i]))
	}
	return strings.Join(lines, "\n\n")
}

// headlines returns the text of the page's first <h1> elements.
func headlines(doc *html.Node) []string {
	var h1s []string
	walk(doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.H1 {
			if t := textContent(n); t != "" && len(h1s) < 8 {
				h1s = append(h1s, t)
			}
			return false
		}
		return true
	})
	return h1s
}

// pickTitle chooses between <title> and the page's <h1> elements: an h1 that the
// <title> contains is the headline without the site decoration; otherwise the
// <title> minus the site name, or its longest part around a separator.
func pickTitle(docTitle, site string, h1s []string) string {
	lt := strings.ToLower(docTitle)
	best := ""
	for _, h := range h1s {
		// The headline leads the <title> ("Headline – Site"); the site name trails it.
		if strings.HasPrefix(lt, strings.ToLower(h)) && len(h)*10 >= len(docTitle)*3 {
			return h
		}
	}
	for _, h := range h1s {
		if len(h) > len(best) && len(h)*10 >= len(docTitle)*4 && strings.Contains(lt, strings.ToLower(h)) {
			best = h
		}
	}
	if best != "" {
		return best
	}
	if docTitle == "" {
		if len(h1s) > 0 {
			return h1s[0]
		}
		return ""
	}
	if site != "" {
		return stripSiteName(docTitle, site)
	}
	for _, sep := range []string{" | ", " – ", " — ", " - ", " · ", " :: ", " » "} {
		if strings.Contains(docTitle, sep) {
			best := ""
			for _, part := range strings.Split(docTitle, sep) {
				if len(part) > len(best) {
					best = part
				}
			}
			return strings.TrimSpace(best)
		}
	}
	return docTitle
}
