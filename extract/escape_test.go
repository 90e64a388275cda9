package extract

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The Markdown is judged the way a client sees it: rendered by a CommonMark
// renderer, with GFM on and off, passing raw HTML and every URL through as the
// most permissive clients do.
var (
	mdCommonMark = goldmark.New(goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	mdGFM        = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
)

func renderMarkdown(t *testing.T, md goldmark.Markdown, src string) *html.Node {
	t.Helper()
	var b bytes.Buffer
	if err := md.Convert([]byte(src), &b); err != nil {
		t.Fatalf("render: %v", err)
	}
	doc, err := html.Parse(&b)
	if err != nil {
		t.Fatalf("parse rendered HTML: %v", err)
	}
	return doc
}

// renderedText is the text a reader sees, blocks and cells separated by one
// space.
func renderedText(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		switch {
		case c.Type == html.TextNode:
			b.WriteString(c.Data)
		case c.Type == html.ElementNode && (isBlockElem(c) || c.DataAtom == atom.Br):
			b.WriteByte(' ')
		}
		return true
	})
	return collapseSpace(b.String())
}

func elements(n *html.Node, a atom.Atom) []*html.Node {
	var out []*html.Node
	walk(n, func(c *html.Node) bool {
		if c.Type == html.ElementNode && c.DataAtom == a {
			out = append(out, c)
		}
		return true
	})
	return out
}

// authored returns the elements a of n, less the links GFM makes of a bare
// URL the page showed as text (harmless: their text is their address).
func authored(n *html.Node, a atom.Atom) []*html.Node {
	var out []*html.Node
	for _, e := range elements(n, a) {
		if a == atom.A && textOf(e) == attr(e, "href") {
			continue
		}
		out = append(out, e)
	}
	return out
}

func liveScheme(href string) bool {
	h := strings.ToLower(strings.Map(func(r rune) rune {
		if r <= ' ' {
			return -1
		}
		return r
	}, href))
	return strings.HasPrefix(h, "javascript:") || strings.HasPrefix(h, "data:") || strings.HasPrefix(h, "vbscript:")
}

type escapeCase struct {
	name    string
	body    string      // the page's content, inside <main>
	visible string      // what the browser shows, white space collapsed
	has     []atom.Atom // markup the extractor must keep
	hasNot  []atom.Atom // markup the page's text must not turn into
	code    []string    // text of <code> elements, byte for byte
	gfmOnly bool        // a table is a paragraph of pipes to plain CommonMark
}

var escapeCases = []escapeCase{
	{
		name:    "entities in prose",
		body:    `<p>Use &lt;b&gt; for bold, write &amp;amp; for &amp;, and AT&amp;T &amp; co. &amp;copy; &amp;#60; &amp;#x3C;</p>`,
		visible: `Use <b> for bold, write &amp; for &, and AT&T & co. &copy; &#60; &#x3C;`,
		hasNot:  []atom.Atom{atom.B},
	},
	{
		name:    "script as text",
		body:    `<p>&lt;script&gt;alert(1)&lt;/script&gt;</p><p>Or &lt;img src=x onerror=alert(1)&gt; inline.</p>`,
		visible: `<script>alert(1)</script> Or <img src=x onerror=alert(1)> inline.`,
		hasNot:  []atom.Atom{atom.Script, atom.Img},
	},
	{
		name:    "link syntax as text",
		body:    `<p>[a link](javascript:alert(1)) and ![pic](https://example.org/p.png) and [ref]: javascript:alert(1)</p><p>[ref]</p>`,
		visible: `[a link](javascript:alert(1)) and ![pic](https://example.org/p.png) and [ref]: javascript:alert(1) [ref]`,
		hasNot:  []atom.Atom{atom.A, atom.Img},
	},
	{
		name:    "script link",
		body:    `<p>Click <a href="javascript:alert(1)">x</a>, <a href=" JaVaScRiPt:alert(1)">y</a>, <a href="data:text/html,<script>alert(1)</script>">z</a> or <a href="vbscript:msgbox(1)">w</a>; read <a href="https://example.org/docs">the docs</a> or <a href="https://example.org/">v](javascript:alert(1)) [u</a>.</p>`,
		visible: `Click x, y, z or w; read the docs or v](javascript:alert(1)) [u.`,
		has:     []atom.Atom{atom.A},
		hasNot:  []atom.Atom{atom.Script},
	},
	{
		name:    "space inside a link",
		body:    `<p>by<a href="https://example.org/k"> Karl Tate</a>, who<a href="https://example.org/w">wrote </a>it</p>`,
		visible: `by Karl Tate, whowrote it`,
		has:     []atom.Atom{atom.A},
	},
	{
		name:    "emphasis as text",
		body:    `<p>*not emphasis* and **not strong** and _not either_ or ~~not struck~~, but snake_case and a__b stay words.</p>`,
		visible: `*not emphasis* and **not strong** and _not either_ or ~~not struck~~, but snake_case and a__b stay words.`,
		hasNot:  []atom.Atom{atom.Em, atom.Strong, atom.Del},
	},
	{
		name:    "block syntax as text",
		body:    `<p># not a heading</p><p>1. not a list</p><p>- nor this</p><p>+ nor this</p><p>&gt; nor a quote</p><p>---</p><p>&lt;div&gt;</p><p>| a | b |<br>| --- | --- |</p><p>Setext<br>===</p>`,
		visible: `# not a heading 1. not a list - nor this + nor this > nor a quote --- <div> | a | b | | --- | --- | Setext ===`,
		hasNot:  []atom.Atom{atom.H1, atom.H2, atom.Ol, atom.Ul, atom.Blockquote, atom.Hr, atom.Div, atom.Table},
	},
	{
		name:    "heading",
		body:    `<h2>The &lt;em&gt; tag &amp;amp; C #</h2><p>Body &lt;i&gt; text.</p>`,
		visible: `The <em> tag &amp; C # Body <i> text.`,
		has:     []atom.Atom{atom.H2},
		hasNot:  []atom.Atom{atom.Em, atom.I},
	},
	{
		name:    "table",
		body:    `<table><tr><th>Tag</th><th>Entity</th></tr><tr><td>&lt;b&gt; | &lt;i&gt;</td><td>&amp;lt; *x* a\</td></tr></table>`,
		visible: `Tag Entity <b> | <i> &lt; *x* a\`,
		has:     []atom.Atom{atom.Table, atom.Td},
		hasNot:  []atom.Atom{atom.B, atom.I, atom.Em},
		gfmOnly: true,
	},
	{
		name:    "list items",
		body:    `<ul><li>&lt;li&gt; &amp; &amp;amp;</li><li>[x] not a task</li><li># not a heading</li></ul><ol><li>1. inner</li><li>&lt;script&gt;alert(1)&lt;/script&gt;</li></ol>`,
		visible: `<li> & &amp; [x] not a task # not a heading 1. inner <script>alert(1)</script>`,
		has:     []atom.Atom{atom.Ul, atom.Ol, atom.Li},
		hasNot:  []atom.Atom{atom.Script, atom.Input, atom.H1},
	},
	{
		name:    "blockquote",
		body:    `<blockquote><p>&lt;b&gt;quoted&lt;/b&gt; &gt; not nested</p></blockquote>`,
		visible: `<b>quoted</b> > not nested`,
		has:     []atom.Atom{atom.Blockquote},
		hasNot:  []atom.Atom{atom.B},
	},
	{
		name:    "inline code",
		body:    "<p>Run <code>&lt;?php echo $a &amp;&amp; $b[0] *x* \\d ?&gt;</code> and <code>a `` b</code> now &lt;i&gt;.</p>",
		visible: "Run <?php echo $a && $b[0] *x* \\d ?> and a `` b now <i>.",
		has:     []atom.Atom{atom.Code},
		hasNot:  []atom.Atom{atom.I},
		code:    []string{`<?php echo $a && $b[0] *x* \d ?>`, "a `` b"},
	},
	{
		name:    "code span opening a line",
		body:    "<p><code>a ``` b</code> is not a fence</p>",
		visible: "a ``` b is not a fence",
		has:     []atom.Atom{atom.Code},
		hasNot:  []atom.Atom{atom.Pre},
		code:    []string{"a ``` b"},
	},
	{
		name:    "code block",
		body:    "<pre><code>&lt;script&gt;alert(1)&lt;/script&gt;\nif a &amp;&amp; b { s := \"```\" }\n# not a heading\n\\* [x](y) &amp;amp;</code></pre><p>After &lt;b&gt;.</p>",
		visible: "<script>alert(1)</script> if a && b { s := \"```\" } # not a heading \\* [x](y) &amp; After <b>.",
		has:     []atom.Atom{atom.Pre, atom.Code},
		hasNot:  []atom.Atom{atom.Script, atom.B, atom.H1, atom.A},
		code:    []string{"<script>alert(1)</script>\nif a && b { s := \"```\" }\n# not a heading\n\\* [x](y) &amp;\n"},
	},
	{
		name:    "backslashes and bangs",
		body:    `<p>C:\path\*file and C:\dir\ end\<br>next line. Wow!<a href="https://example.org/">link</a></p>`,
		visible: `C:\path\*file and C:\dir\ end\ next line. Wow!link`,
		has:     []atom.Atom{atom.A},
		hasNot:  []atom.Atom{atom.Img},
	},
}

func extractBody(t *testing.T, body string) *Result {
	t.Helper()
	page := `<!doctype html><html><head><title>T</title></head><body><main>` + body + `</main></body></html>`
	res, err := Extract(context.Background(), strings.NewReader(page), Options{URL: "https://example.org/p/"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestMarkdownRendersAsPageText(t *testing.T) {
	for _, tc := range escapeCases {
		t.Run(tc.name, func(t *testing.T) {
			res := extractBody(t, tc.body)
			if got := collapseSpace(res.Text); got != tc.visible {
				t.Fatalf("plain text = %q, want %q", got, tc.visible)
			}
			renderers := map[string]goldmark.Markdown{"gfm": mdGFM, "commonmark": mdCommonMark}
			for name, md := range renderers {
				doc := renderMarkdown(t, md, res.Markdown)
				for _, a := range elements(doc, atom.A) {
					if liveScheme(attr(a, "href")) {
						t.Errorf("%s: live link %q in\n%s", name, attr(a, "href"), res.Markdown)
					}
				}
				if name == "commonmark" && tc.gfmOnly {
					continue
				}
				if got := renderedText(doc); got != tc.visible {
					t.Errorf("%s: rendered text\n%q, want\n%q; markdown:\n%s", name, got, tc.visible, res.Markdown)
				}
				for _, a := range tc.hasNot {
					if len(authored(doc, a)) > 0 {
						t.Errorf("%s: page text became <%s> in\n%s", name, a, res.Markdown)
					}
				}
				for _, a := range tc.has {
					if len(elements(doc, a)) == 0 {
						t.Errorf("%s: no <%s> in\n%s", name, a, res.Markdown)
					}
				}
				codes := elements(doc, atom.Code)
				for i, want := range tc.code {
					if i >= len(codes) || textOf(codes[i]) != want {
						t.Errorf("%s: code %d is not %q verbatim in\n%s", name, i, want, res.Markdown)
					}
				}
			}
			for _, want := range tc.code {
				if !strings.Contains(res.Markdown, strings.TrimSuffix(want, "\n")) {
					t.Errorf("markdown lacks the code %q byte for byte:\n%s", want, res.Markdown)
				}
			}
			checkChunks(t, res.Markdown, res.Chunks)
		})
	}
}

// textOf is the raw text of n, white space kept.
func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		return true
	})
	return b.String()
}

// Identifiers stay whole words for search: only the underscores that could
// start or end emphasis are escaped.
func TestMarkdownKeepsWordsWhole(t *testing.T) {
	res := extractBody(t, `<p>Set wp_cache_key and a__b, not _x_ or y_.</p>`)
	for _, w := range []string{"wp_cache_key", "a__b", `\_x\_`, `y\_`} {
		if !strings.Contains(res.Markdown, w) {
			t.Errorf("markdown %q lacks %q", res.Markdown, w)
		}
	}
}

// The fallback for pages the tree parser refuses goes through the same
// escaping.
func TestPlainFallbackEscapes(t *testing.T) {
	md := plainToMarkdown("&lt;script&gt; is text\n# not a heading\n[x](javascript:alert(1))")
	doc := renderMarkdown(t, mdGFM, md)
	for _, a := range []atom.Atom{atom.Script, atom.H1, atom.A} {
		if len(elements(doc, a)) > 0 {
			t.Errorf("<%s> in %q", a, md)
		}
	}
	if got, want := renderedText(doc), "&lt;script&gt; is text # not a heading [x](javascript:alert(1))"; got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
}

func TestHeadingPathIsPageText(t *testing.T) {
	md := "## The \\<em\\> tag, C \\#\n\ntext\n\n### `a\\*b` \\*\n\nmore"
	cs := ChunkMarkdown(md, ChunkOptions{TargetTokens: 1})
	want := []string{"The <em> tag, C #", "`a\\*b` *"}
	if len(cs) != 2 || strings.Join(cs[1].HeadingPath, "|") != strings.Join(want, "|") {
		t.Fatalf("heading paths: %+v, want %q", cs, want)
	}
}

// A prose line with no space to cut at is cut between runes, but never between
// a backslash and what it escapes.
func TestChunkKeepsEscapesWhole(t *testing.T) {
	for _, md := range []string{
		strings.Repeat(`\<`, 400),
		"x" + strings.Repeat(`\<`, 400),
		strings.Repeat(`\\\<`, 300),
	} {
		for target := 1; target < 12; target++ {
			cs := ChunkMarkdown(md, ChunkOptions{TargetTokens: target, MaxTokens: target})
			if len(cs) < 2 {
				t.Fatalf("target %d: %d chunks", target, len(cs))
			}
			checkChunks(t, md, cs)
		}
	}
}

// On real pages the Markdown, rendered, shows the same text as Result.Text:
// nothing of the page's text turned into markup, and no markup got lost.
func TestEvalPagesRenderAsText(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("renders every evaluation page")
	}
	pages := evalPages(t, "article-extraction-benchmark", "trafilatura-eval")
	for i, page := range pages {
		res, err := Extract(context.Background(), bytes.NewReader(page), Options{URL: "https://example.org/a/"})
		if err != nil {
			continue
		}
		doc := renderMarkdown(t, mdGFM, res.Markdown)
		for _, a := range elements(doc, atom.A) {
			if liveScheme(attr(a, "href")) {
				t.Errorf("page %d: live link %q", i, attr(a, "href"))
			}
		}
		if n := len(elements(doc, atom.Script)); n > 0 {
			t.Errorf("page %d: %d script elements", i, n)
		}
		// Renderers fold U+2028 and friends into white space, as browsers do.
		got, want := strings.Fields(renderedText(doc)), strings.Fields(res.Text)
		if k := firstDiff(got, want); k >= 0 {
			t.Errorf("page %d: rendered Markdown shows %q where the page shows %q", i,
				strings.Join(got[max(0, k-5):min(len(got), k+5)], " "), strings.Join(want[max(0, k-5):min(len(want), k+5)], " "))
		}
		checkChunks(t, res.Markdown, res.Chunks)
	}
}

// firstDiff returns the index of the first word where a and b differ, or -1.
func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
