package extract

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// block is one rendered block of the main content.
type block struct {
	md, txt string
	list    bool // list items are joined with a single newline (a tight list)
	code    bool
	heading int
	links   int // runes of link text in txt
	quote   bool
	// introduces: right after the block came a picture or the links to the
	// post's next page, which the text leaves out ("Eight columns:", then a
	// gallery).
	introduces bool
}

// renderer turns a cleaned content subtree into Markdown and plain text at once,
// so the two outputs always describe the same content.
type renderer struct {
	base   *url.URL
	blocks []block

	md, txt   []byte // current inline run
	space     bool   // a collapsed space is pending
	heading   int    // >0 while inside h1..h6
	lists     []listFrame
	liFresh   bool // next flush inside a list item gets the bullet
	quote     int
	inPre     int
	linkRunes int // link text in the current inline run
}

type listFrame struct {
	ordered bool
	n       int
}

func newRenderer(base *url.URL) *renderer { return &renderer{base: base} }

// trimTail drops the boilerplate that survives cleaning after the article's
// last paragraph of prose: "Related" / "More on this" headings whose lists were
// removed, link-only lines ("Back to overview"), and short label lines that do
// not end like a sentence ("Share this article", "Tags"). post says the blocks
// are a post's own text (see selectContent).
func (r *renderer) trimTail(post bool) {
	last := -1
	for i, b := range r.blocks {
		if b.heading == 0 && !b.code && isProse(b) {
			last = i
		}
	}
	if last < 0 {
		return
	}
	first := 0
	for i, b := range r.blocks {
		if b.heading == 0 && !b.code && isProse(b) {
			first = i
			break
		}
	}
	var kept []block
	for _, b := range r.blocks[:first] {
		// Before the text only link lines (breadcrumbs, category links) go:
		// short lines there are often the lead, a dateline or a kicker.
		if b.code || b.links*2 < utf8.RuneCountInString(b.txt) {
			kept = append(kept, b)
		}
	}
	for _, b := range r.blocks[first : last+1] {
		if teaserLine(b) {
			continue
		}
		kept = append(kept, b)
	}
	// In a post's own text (post), a label or link line followed by text
	// ("Delete Tag", then a sentence; a list item that is half link) belongs
	// to that text: only the trailing run of junk goes, and of it neither a
	// list (see cleanContent), nor a quote, nor a label (no link) of a picture
	// or of the next page.
	tail := r.blocks[last+1:]
	trailing := 0
	if post {
		trailing = len(tail)
		for trailing > 0 && tailJunk(tail[trailing-1]) {
			trailing--
		}
	}
	for i, b := range tail {
		if tailJunk(b) && i >= trailing && !(post && (b.list || b.quote || b.introduces && b.links == 0)) {
			continue
		}
		kept = append(kept, b)
	}
	// Headings left with nothing after them.
	for len(kept) > 0 && kept[len(kept)-1].heading > 0 {
		kept = kept[:len(kept)-1]
	}
	r.blocks = kept
}

// isProse reports a block that reads like article text: long enough, few links.
func isProse(b block) bool {
	n := utf8.RuneCountInString(b.txt)
	return n >= proseMinRunes && b.links*2 < n
}

// teaserLine reports a paragraph inside the text that is a link with at most a
// label ("Read also: <headline>"): a cross-reference to another page, not part
// of this one. List items are left alone: a list of links is often the content.
func teaserLine(b block) bool {
	if b.code || b.list || b.heading > 0 {
		return false
	}
	n := utf8.RuneCountInString(b.txt)
	return n < teaserMaxRunes && b.links*10 >= n*teaserLinkShare
}

const (
	teaserMaxRunes  = 300
	teaserLinkShare = 6 // tenths of the line that are link text
)

// proseMinRunes is the length of a block that counts as prose for trimTail.
const proseMinRunes = 120

func tailJunk(b block) bool {
	if b.code {
		return false
	}
	n := utf8.RuneCountInString(b.txt)
	if b.links*2 >= n {
		return true
	}
	if b.heading > 0 || b.list {
		// Headings go only when nothing follows; list items are short by nature.
		return false
	}
	if n < tailShortRunes {
		t := strings.TrimSpace(b.txt)
		last, _ := utf8.DecodeLastRuneInString(t)
		return !strings.ContainsRune(".!?…\"»“”)", last)
	}
	return false
}

// tailShortRunes: shorter tail lines without sentence punctuation are labels.
const tailShortRunes = 50

// markdown joins the blocks: blank line between blocks, single newline inside lists.
func (r *renderer) output() (md, txt string) {
	var mb, tb strings.Builder
	for i, b := range r.blocks {
		if i > 0 {
			if b.list && r.blocks[i-1].list {
				mb.WriteByte('\n')
			} else {
				mb.WriteString("\n\n")
			}
			tb.WriteByte('\n')
		}
		mb.WriteString(b.md)
		tb.WriteString(b.txt)
	}
	return mb.String(), tb.String()
}

func (r *renderer) render(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		r.text(n.Data)
		return
	case html.DocumentNode:
		r.children(n)
		return
	case html.ElementNode:
	default:
		return
	}
	switch n.DataAtom {
	case atom.Img, atom.Picture, atom.Hr:
		if n.DataAtom != atom.Hr || attr(n, markerAttr) != "" {
			r.introduce()
		}
		return
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Math,
		atom.Input, atom.Button, atom.Select, atom.Textarea, atom.Option, atom.Iframe, atom.Object,
		atom.Embed, atom.Video, atom.Audio, atom.Canvas, atom.Map, atom.Head, atom.Title, atom.Meta,
		atom.Link, atom.Source, atom.Track:
		return
	case atom.Br:
		r.lineBreak()
		return
	case atom.Pre:
		r.flush()
		r.codeBlock(n)
		return
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		r.flush()
		r.heading = int(n.Data[1] - '0')
		r.children(n)
		r.flush()
		r.heading = 0
		return
	case atom.Ul, atom.Ol:
		r.flush()
		r.lists = append(r.lists, listFrame{ordered: n.DataAtom == atom.Ol})
		r.children(n)
		r.flush()
		r.lists = r.lists[:len(r.lists)-1]
		return
	case atom.Li:
		r.flush()
		if len(r.lists) > 0 {
			r.lists[len(r.lists)-1].n++
		}
		r.liFresh = true
		r.children(n)
		r.flush()
		r.liFresh = false
		return
	case atom.Table:
		r.flush()
		if isDataTable(n) {
			r.table(n)
		} else {
			r.children(n)
		}
		r.flush()
		return
	case atom.Blockquote:
		r.flush()
		r.quote++
		r.children(n)
		r.flush()
		r.quote--
		return
	case atom.A:
		href := attr(n, "href")
		link := ""
		if href != "" && !strings.HasPrefix(href, "#") && r.heading == 0 {
			link = resolve(r.base, href)
		}
		if link == "" {
			r.children(n)
			return
		}
		r.wrapInline(n, "[", "]("+mdURL(link)+")")
		return
	case atom.Code, atom.Kbd, atom.Samp, atom.Tt:
		if r.inPre == 0 {
			inner := collapseSpace(textContent(n))
			if inner == "" {
				return
			}
			ticks := strings.Repeat("`", maxRun(inner, '`')+1)
			pad := ""
			if strings.HasPrefix(inner, "`") || strings.HasSuffix(inner, "`") {
				pad = " "
			}
			r.inline(ticks+pad+inner+pad+ticks, inner)
			return
		}
	}
	if isBlockElem(n) {
		r.flush()
		r.children(n)
		r.flush()
		return
	}
	r.children(n)
}

func (r *renderer) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		r.render(c)
	}
}

// wrapInline renders n's children and wraps the Markdown in pre/post when the
// children produced any text.
func (r *renderer) wrapInline(n *html.Node, pre, post string) {
	if r.space && len(r.txt) > 0 && !endsWithNL(r.txt) {
		r.md = append(r.md, ' ')
		r.txt = append(r.txt, ' ')
	}
	r.space = false
	mdStart, txtStart, nb := len(r.md), len(r.txt), len(r.blocks)
	r.children(n)
	if len(r.blocks) != nb || len(r.md) < mdStart || len(r.txt) < txtStart {
		// A block inside the link (<a><div>…</div></a>, valid HTML5) flushed
		// the run: the text already went out as blocks of its own.
		return
	}
	if pre == "[" {
		r.linkRunes += utf8.RuneCount(r.txt[txtStart:])
	}
	seg := string(r.md[mdStart:])
	inner := strings.TrimSpace(seg)
	if inner == "" || len(r.txt) == txtStart || strings.Contains(inner, "\n") {
		return
	}
	// White space around the text moves outside the brackets, where it
	// still separates the link from the words next to it.
	lead := seg[:len(seg)-len(strings.TrimLeftFunc(seg, unicode.IsSpace))]
	trail := seg[len(strings.TrimRightFunc(seg, unicode.IsSpace)):]
	r.md = append(r.md[:mdStart], lead...)
	if pre == "[" && lead == "" && mdStart > 0 && r.md[mdStart-1] == '!' {
		// "Wow!" right before a link would make it an image.
		r.md = append(r.md[:mdStart-1], `\!`...)
	}
	r.md = append(r.md, pre...)
	r.md = append(r.md, inner...)
	r.md = append(r.md, post...)
	r.md = append(r.md, trail...)
}

func endsWithNL(b []byte) bool { return len(b) > 0 && b[len(b)-1] == '\n' }

func maxRun(s string, c byte) int {
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			cur++
			if cur > best {
				best = cur
			}
		} else {
			cur = 0
		}
	}
	return best
}

func mdURL(u string) string {
	r := strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E")
	return r.Replace(u)
}

// inline appends already-formatted Markdown and its plain text.
func (r *renderer) inline(md, txt string) {
	if r.space && len(r.txt) > 0 && !endsWithNL(r.txt) {
		r.md = append(r.md, ' ')
		r.txt = append(r.txt, ' ')
	}
	r.space = false
	r.md = append(r.md, md...)
	r.txt = append(r.txt, txt...)
}

// text appends a text node with HTML whitespace collapsing.
func (r *renderer) text(s string) {
	for i := 0; i < len(s); {
		c, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if c == utf8.RuneError && size == 1 {
			c = '\uFFFD'
		}
		if isSpace(c) {
			r.space = true
			continue
		}
		// Control characters, BOMs and soft hyphens (U+00AD, invisible unless a
		// line breaks there) would only split words for search and citations.
		if c == 0 || (c < 0x20 && c != '\t') || c == 0x7f || c == '\uFEFF' || c == '\u00AD' {
			continue
		}
		if r.space && len(r.txt) > 0 && !endsWithNL(r.txt) {
			r.md = append(r.md, ' ')
			r.txt = append(r.txt, ' ')
		}
		r.space = false
		r.md = appendText(r.md, c, s[i:])
		r.txt = utf8.AppendRune(r.txt, c)
	}
}

// introduce marks the last block as the label of what follows it, when
// nothing came in between.
func (r *renderer) introduce() {
	if len(strings.TrimSpace(string(r.txt))) == 0 && len(r.blocks) > 0 {
		r.blocks[len(r.blocks)-1].introduces = true
	}
}

func (r *renderer) lineBreak() {
	if len(r.txt) == 0 || endsWithNL(r.txt) {
		return
	}
	r.md = append(r.md, '\n')
	r.txt = append(r.txt, '\n')
	r.space = false
}

// flush closes the current inline run as a block.
func (r *renderer) flush() {
	txt := strings.TrimSpace(string(r.txt))
	md := strings.TrimSpace(string(r.md))
	r.md, r.txt, r.space = r.md[:0], r.txt[:0], false
	links := r.linkRunes
	r.linkRunes = 0
	if txt == "" {
		return
	}
	b := block{txt: txt, links: links, quote: r.quote > 0}
	lines := strings.Split(md, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	switch {
	case r.heading > 0:
		b.heading = r.heading
		b.md = strings.Repeat("#", r.heading) + " " + escapeHeadingEnd(strings.Join(lines, " "))
		b.txt = strings.ReplaceAll(txt, "\n", " ")
	case len(r.lists) > 0:
		b.list = true
		indent := ""
		for _, f := range r.lists[:len(r.lists)-1] {
			if f.ordered {
				indent += "   "
			} else {
				indent += "  "
			}
		}
		top := r.lists[len(r.lists)-1]
		marker := "- "
		if top.ordered {
			marker = itoa(max(top.n, 1)) + ". "
		}
		cont := indent + strings.Repeat(" ", len(marker))
		for i := range lines {
			lines[i] = escapeLineStart(lines[i])
			if i == 0 && r.liFresh {
				lines[i] = indent + marker + lines[i]
			} else {
				lines[i] = cont + lines[i]
			}
		}
		r.liFresh = false
		b.md = strings.Join(lines, "\n")
	default:
		for i := range lines {
			lines[i] = escapeLineStart(lines[i])
		}
		b.md = strings.Join(lines, "\n")
	}
	if r.quote > 0 {
		q := strings.Repeat("> ", r.quote)
		ls := strings.Split(b.md, "\n")
		for i := range ls {
			ls[i] = q + ls[i]
		}
		b.md = strings.Join(ls, "\n")
	}
	r.blocks = append(r.blocks, b)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return string(buf[i:])
}

// escapeLineStart backslash-escapes text that Markdown (and our chunker) would
// read as block syntax: headings, quotes, bullets, numbered items, fences, rules.
func escapeLineStart(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '#', '>', '|', '=':
		return `\` + s
	case '-', '+', '*':
		if len(s) == 1 || s[1] == ' ' || s[1] == s[0] {
			return `\` + s
		}
	case '`', '~':
		// A code span at the start of a line is not a fence.
		if _, _, ok := fenceOpen(s); ok {
			return `\` + s
		}
	}
	if s[0] >= '0' && s[0] <= '9' {
		i := 0
		for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i < len(s) && (s[i] == '.' || s[i] == ')') && (i+1 == len(s) || s[i+1] == ' ') {
			return s[:i] + `\` + s[i:]
		}
	}
	return s
}

// codeBlock renders <pre> as a fenced block with the language from class="language-x".
func (r *renderer) codeBlock(n *html.Node) {
	var b strings.Builder
	collectCode(n, &b)
	code := strings.ReplaceAll(b.String(), "\r\n", "\n")
	code = strings.ReplaceAll(code, "\r", "\n")
	code = strings.ToValidUTF8(code, "\uFFFD")
	// Drop leading blank lines and trailing white space, keep indentation.
	for {
		i := strings.IndexByte(code, '\n')
		if i < 0 || strings.TrimSpace(code[:i]) != "" {
			break
		}
		code = code[i+1:]
	}
	code = strings.TrimRight(code, " \t\n\u00a0")
	if strings.TrimSpace(code) == "" {
		return
	}
	code = strings.ReplaceAll(code, "\u00a0", " ")
	lang := codeLang(n)
	fence := strings.Repeat("`", max(3, maxRun(code, '`')+1))
	r.blocks = append(r.blocks, block{
		md:   fence + lang + "\n" + code + "\n" + fence,
		txt:  code,
		code: true,
	})
}

// collectCode gathers the raw text of a <pre>, turning <br> and line-per-element
// highlighter markup (div/p/li/tr per line) into newlines.
func collectCode(n *html.Node, b *strings.Builder) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch c.Type {
		case html.TextNode:
			b.WriteString(c.Data)
		case html.ElementNode:
			switch c.DataAtom {
			case atom.Br:
				b.WriteByte('\n')
				continue
			case atom.Script, atom.Style, atom.Button:
				continue
			}
			blockish := c.DataAtom == atom.Div || c.DataAtom == atom.P || c.DataAtom == atom.Li || c.DataAtom == atom.Tr
			if blockish && b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
				b.WriteByte('\n')
			}
			collectCode(c, b)
		}
	}
}

// codeLang reads the language-x class that normalizeCodeLangs put on pre or code.
func codeLang(pre *html.Node) string {
	if l := langFromClass(attr(pre, "class")); l != "" {
		return l
	}
	for c := pre.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Code {
			return langFromClass(attr(c, "class"))
		}
	}
	return ""
}

func langFromClass(class string) string {
	for _, t := range strings.Fields(class) {
		if strings.HasPrefix(t, "language-") {
			return cleanLang(strings.TrimPrefix(t, "language-"))
		}
	}
	return ""
}

// cleanLang keeps a language name safe for a fence info string.
func cleanLang(l string) string {
	l = strings.ToLower(strings.TrimSpace(l))
	var b strings.Builder
	for _, c := range l {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '#' || c == '-' || c == '_' || c == '.' {
			b.WriteRune(c)
		}
		if b.Len() >= 24 {
			break
		}
	}
	s := b.String()
	switch s {
	case "none", "plain", "plaintext", "text", "nohighlight", "txt", "auto":
		return ""
	}
	return s
}

// isDataTable separates data tables (rendered as Markdown tables) from layout tables.
func isDataTable(t *html.Node) bool {
	if role := attr(t, "role"); role == "presentation" || role == "none" {
		return false
	}
	data := true
	rows := 0
	walk(t, func(n *html.Node) bool {
		if !data {
			return false
		}
		if n == t || n.Type != html.ElementNode {
			return true
		}
		switch n.DataAtom {
		case atom.Table, atom.Ul, atom.Ol, atom.Pre, atom.Blockquote, atom.H1, atom.H2, atom.H3, atom.H4,
			atom.H5, atom.H6, atom.Form, atom.Article, atom.Section:
			data = false
		case atom.Tr:
			rows++
		}
		return true
	})
	return data && rows > 0 && rows < 2000
}

func (r *renderer) table(t *html.Node) {
	var rows [][]string
	var caption string
	walk(t, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		switch n.DataAtom {
		case atom.Caption:
			caption = textContent(n)
			return false
		case atom.Tr:
			var row []string
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && (c.DataAtom == atom.Td || c.DataAtom == atom.Th) {
					row = append(row, cellText(c))
				}
			}
			if len(row) > 0 {
				rows = append(rows, row)
			}
			return false
		}
		return true
	})
	if caption != "" {
		r.blocks = append(r.blocks, block{md: escapeLineStart(escapeText(caption)), txt: caption})
	}
	width := 0
	for _, row := range rows {
		width = max(width, len(row))
	}
	if width == 0 {
		return
	}
	// Tables whose every row holds one cell are really paragraphs.
	if width == 1 {
		for _, row := range rows {
			if row[0] != "" {
				r.blocks = append(r.blocks, block{md: escapeLineStart(escapeText(row[0])), txt: row[0]})
			}
		}
		return
	}
	var mb, tb strings.Builder
	for i, row := range rows {
		empty := true
		for _, c := range row {
			if c != "" {
				empty = false
			}
		}
		if empty {
			continue
		}
		mb.WriteString("|")
		for j := 0; j < width; j++ {
			c := ""
			if j < len(row) {
				c = row[j]
			}
			mb.WriteString(" " + escapeText(c) + " |")
		}
		mb.WriteByte('\n')
		if i == 0 {
			mb.WriteString("|" + strings.Repeat(" --- |", width) + "\n")
		}
		if tb.Len() > 0 {
			tb.WriteByte('\n')
		}
		nonEmpty := row[:0:0]
		for _, c := range row {
			if c != "" {
				nonEmpty = append(nonEmpty, c)
			}
		}
		tb.WriteString(strings.Join(nonEmpty, "\t"))
	}
	if tb.Len() == 0 {
		return
	}
	r.blocks = append(r.blocks, block{md: strings.TrimRight(mb.String(), "\n"), txt: tb.String()})
}

func cellText(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		switch c.Type {
		case html.TextNode:
			b.WriteString(c.Data)
		case html.ElementNode:
			if isBlockElem(c) || c.DataAtom == atom.Br {
				b.WriteByte(' ')
			}
			switch c.DataAtom {
			case atom.Script, atom.Style, atom.Img, atom.Svg:
				return false
			}
		}
		return true
	})
	return collapseSpace(b.String())
}

var blockAtoms = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true, atom.Details: true,
	atom.Dialog: true, atom.Dd: true, atom.Div: true, atom.Dl: true, atom.Dt: true, atom.Fieldset: true,
	atom.Figcaption: true, atom.Figure: true, atom.Footer: true, atom.Form: true, atom.H1: true, atom.H2: true,
	atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.Header: true, atom.Hgroup: true,
	atom.Hr: true, atom.Li: true, atom.Main: true, atom.Nav: true, atom.Ol: true, atom.P: true, atom.Pre: true,
	atom.Section: true, atom.Table: true, atom.Ul: true, atom.Tr: true, atom.Td: true, atom.Th: true,
	atom.Tbody: true, atom.Thead: true, atom.Tfoot: true, atom.Caption: true, atom.Summary: true,
	atom.Center: true, atom.Body: true, atom.Html: true, atom.Legend: true, atom.Menu: true,
}

func isBlockElem(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return false
	}
	return blockAtoms[n.DataAtom]
}
