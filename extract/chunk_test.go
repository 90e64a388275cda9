package extract

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html/atom"
)

func TestChunkHeadingsAndPaths(t *testing.T) {
	md := "Intro paragraph.\n\n## Install\n\nGeneral notes.\n\n### On Debian\n\nUse apt.\n\n```bash\nsudo apt install askwpd\n```\n\n## Configure\n\nEdit the file."
	cs := ChunkMarkdown(md, ChunkOptions{})
	checkChunks(t, md, cs)
	want := []struct {
		prefix string
		path   string
		typ    string
	}{
		{"Intro", "", TypeProse},
		{"## Install", "Install", TypeProse},
		{"### On Debian", "Install > On Debian", TypeProse},
		{"```bash", "Install > On Debian", TypeCmd},
		{"## Configure", "Configure", TypeProse},
	}
	if len(cs) != len(want) {
		t.Fatalf("%d chunks, want %d: %+v", len(cs), len(want), cs)
	}
	for i, w := range want {
		if !strings.HasPrefix(cs[i].Text, w.prefix) || strings.Join(cs[i].HeadingPath, " > ") != w.path || cs[i].Type != w.typ {
			t.Errorf("chunk %d = %q %v %s; want %q %q %s", i, cs[i].Text, cs[i].HeadingPath, cs[i].Type, w.prefix, w.path, w.typ)
		}
	}
	if cs[3].CodeLang != "bash" {
		t.Errorf("code lang %q", cs[3].CodeLang)
	}
}

func TestChunkTargetAndCap(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 60; i++ {
		b.WriteString(strings.Repeat("word ", 40) + "end.\n\n") // ~50 tokens each
	}
	md := b.String()
	cs := ChunkMarkdown(md, ChunkOptions{TargetTokens: 200, MaxTokens: 300})
	checkChunks(t, md, cs)
	for _, c := range cs {
		if c.Tokens > 300 {
			t.Errorf("chunk %d has %d tokens", c.Ord, c.Tokens)
		}
	}
	if len(cs) < 10 {
		t.Errorf("only %d chunks", len(cs))
	}
}

func TestChunkOversizedCodeSplitByLines(t *testing.T) {
	var b strings.Builder
	b.WriteString("Before.\n\n```php\n")
	for i := 0; i < 400; i++ {
		b.WriteString("    $value_" + itoa(i) + " = compute( $input, " + itoa(i) + " ); // keep indentation\n")
	}
	b.WriteString("```\n\nAfter.")
	md := b.String()
	cs := ChunkMarkdown(md, ChunkOptions{TargetTokens: 200, MaxTokens: 400})
	checkChunks(t, md, cs)
	parts := 0
	for _, c := range cs {
		if c.Part == 0 {
			continue
		}
		parts++
		if c.CodeLang != "php" || c.Type != TypeCode {
			t.Errorf("part %d: lang %q type %q", c.Part, c.CodeLang, c.Type)
		}
		// Pieces end at line ends: every line is whole.
		for _, l := range strings.Split(c.Text, "\n") {
			if l != "```php" && l != "```" && !strings.HasPrefix(l, "    $value_") {
				t.Errorf("part %d has a broken line %q", c.Part, l)
			}
		}
		d := c.Display()
		if !strings.HasPrefix(d, "```php\n") || !strings.HasSuffix(d, "\n```") {
			t.Errorf("Display of part %d is not a fenced block: %q...", c.Part, d[:40])
		}
	}
	if parts < 2 {
		t.Errorf("oversized block split into %d parts", parts)
	}
}

func TestChunkTableNotSplitMidRow(t *testing.T) {
	var b strings.Builder
	b.WriteString("| a | b |\n| --- | --- |\n")
	for i := 0; i < 300; i++ {
		b.WriteString("| row " + itoa(i) + " | value with several words in it |\n")
	}
	md := b.String()
	cs := ChunkMarkdown(md, ChunkOptions{TargetTokens: 100, MaxTokens: 200})
	checkChunks(t, md, cs)
	for _, c := range cs {
		for _, l := range strings.Split(c.Text, "\n") {
			if !strings.HasPrefix(l, "|") || !strings.HasSuffix(l, "|") {
				t.Fatalf("chunk %d splits a row: %q", c.Ord, l)
			}
		}
	}
}

func TestChunkPlainText(t *testing.T) {
	// BEIR-style corpus text: one long line, no Markdown at all.
	md := strings.Repeat("Cells were cultured in a medium, and the results were significant. ", 200)
	cs := ChunkMarkdown(md, ChunkOptions{})
	checkChunks(t, md, cs)
	if len(cs) < 3 {
		t.Errorf("%d chunks", len(cs))
	}
	for _, c := range cs {
		if c.Type != TypeProse || c.Tokens > 800 {
			t.Errorf("chunk %d: %s %d tokens", c.Ord, c.Type, c.Tokens)
		}
	}
	// No whitespace at all.
	md = strings.Repeat("x", 10000)
	checkChunks(t, md, ChunkMarkdown(md, ChunkOptions{}))
	if cs := ChunkMarkdown("", ChunkOptions{}); len(cs) != 0 {
		t.Errorf("empty input gave %d chunks", len(cs))
	}
	if cs := ChunkMarkdown(" \n\n\t", ChunkOptions{}); len(cs) != 0 {
		t.Errorf("blank input gave %d chunks", len(cs))
	}
}

func TestChunkEdgeCases(t *testing.T) {
	for _, md := range []string{
		"```go\nunclosed fence\nstill code",
		"~~~~\ncode with ``` inside\n~~~~\ntext",
		"# só ünïcödé\n\nçà et là 日本語のテキスト\n\n```\n```",
		"line\r\nwith\r\n\r\ncrlf\r\n",
		"bad \xff\xfe utf8 \xc3\n\n## h \xe2\x82\n\ntext",
		"####### not a heading\n#no space\n# \n",
		"```\n" + strings.Repeat("a", 20000) + "\n```",
	} {
		cs := ChunkMarkdown(md, ChunkOptions{TargetTokens: 50, MaxTokens: 100})
		checkChunks(t, md, cs)
		for _, c := range cs {
			if !utf8.ValidString(c.Text) {
				t.Errorf("invalid UTF-8 chunk %q", c.Text)
			}
		}
	}
}

// TestClassify is the table of chunk type rules.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		lang, body, want string
	}{
		{"php", "<?php echo 1;", TypeCode},
		{"go", "package main", TypeCode},
		{"bash", "echo hi", TypeCmd},
		{"console", "$ ls", TypeCmd},
		{"powershell", "Get-Item .", TypeCmd},
		{"json", `{"a":1}`, TypeConfig},
		{"yaml", "a: 1", TypeConfig},
		{"ini", "[x]\na=1", TypeConfig},
		{"nginx", "server { listen 80; }", TypeConfig},
		{"http", "GET /wp-json/wp/v2/posts", TypeAPI},
		{"graphql", "query { posts { id } }", TypeAPI},
		{"", "$ sudo apt install nginx\n$ systemctl reload nginx", TypeCmd},
		{"", "sudo apt update\nsudo apt install php-fpm", TypeCmd},
		{"", "wp plugin list --status=active", TypeCmd},
		{"", `{"name": "x", "version": "1.0"}`, TypeConfig},
		{"", "server:\n  port: 8080\n  host: localhost", TypeConfig},
		{"", "[mysqld]\nmax_connections = 200\n; comment", TypeConfig},
		{"", "<?xml version=\"1.0\"?><a/>", TypeConfig},
		{"", "GET /wp-json/wp/v2/posts?per_page=5 HTTP/1.1\nHost: example.org", TypeAPI},
		{"", "function foo() {\n  return bar(1);\n}", TypeCode},
		{"", "for i := 0; i < 3; i++ {\n\tfmt.Println(i)\n}", TypeCode},
	} {
		if got := classifyCode(tc.lang, tc.body); got != tc.want {
			t.Errorf("classifyCode(%q, %q) = %s, want %s", tc.lang, tc.body, got, tc.want)
		}
	}
	for _, tc := range []struct{ text, want string }{
		{"Plain explanation of the feature.", TypeProse},
		{"Call `GET /wp-json/askwp/v1/search` with a query.", TypeAPI},
		{"The endpoint lives at /wp-json/wp/v2/posts and returns JSON.", TypeAPI},
		{"$ make\n$ make install", TypeCmd},
	} {
		if got := classifyProse(tc.text); got != tc.want {
			t.Errorf("classifyProse(%q) = %s, want %s", tc.text, got, tc.want)
		}
	}
}

func FuzzChunkMarkdown(f *testing.F) {
	f.Add("# T\n\ntext\n\n```go\ncode\n```\n", 10, 20)
	f.Add("| a | b |\n|---|---|\n| 1 | 2 |\n", 1, 1)
	f.Add("```\nunclosed", 1, 2)
	f.Add("x\xff\n\n## y\r\n~~~\n~~~", 0, 0)
	f.Add(strings.Repeat("word ", 3000), 5, 7)
	// A prose line split at a space so that a piece starts with ``` (found by
	// the random test; the old fence check took it for a broken fence).
	f.Add("|word ```\t```-~~~`~~~a1. 1. |        |\n\n#  ~~~```. -\téaé", 2, 10)
	f.Fuzz(func(t *testing.T, md string, target, maxTok int) {
		opt := ChunkOptions{TargetTokens: target % 2000, MaxTokens: maxTok % 4000}
		cs := ChunkMarkdown(md, opt)
		checkChunks(t, md, cs)
	})
}

func FuzzExtract(f *testing.F) {
	for _, fx := range []string{"classic-code-post.html", "pagebuilder-page.html"} {
		f.Add(readTestdata(f, fx))
	}
	f.Add([]byte("<html><body><main><pre lang=php>&lt;?php</pre><table><tr><td>a|b</td></tr></table></main></body></html>"))
	f.Add([]byte("<div hidden>secret</div><p>x\xff</p>"))
	f.Add([]byte("<main><p>&lt;script&gt;alert(1)&lt;/script&gt; [a](javascript:alert(1)) <a href=/x>b](javascript:alert(1)) [c</a></p></main>"))
	f.Fuzz(func(t *testing.T, page []byte) {
		res, err := Extract(context.Background(), strings.NewReader(string(page)), Options{URL: "https://example.org/a/b"})
		if err != nil {
			return
		}
		if !utf8.ValidString(res.Markdown) || !utf8.ValidString(res.Text) || !utf8.ValidString(res.Title) {
			t.Fatal("invalid UTF-8 in output")
		}
		checkChunks(t, res.Markdown, res.Chunks)
		doc := renderMarkdown(t, mdGFM, res.Markdown)
		if len(elements(doc, atom.Script)) > 0 {
			t.Fatalf("the Markdown renders a script element: %q", res.Markdown)
		}
		for _, a := range elements(doc, atom.A) {
			if liveScheme(attr(a, "href")) {
				t.Fatalf("the Markdown renders a script link: %q", res.Markdown)
			}
		}
	})
}

func readTestdata(t testing.TB, name string) []byte {
	b, err := readFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestChunkRandomProperties drives the chunker with random Markdown-ish soup
// (fences, headings, tables, CRLF, invalid UTF-8) and tiny budgets.
func TestChunkRandomProperties(t *testing.T) {
	alpha := []string{"`", "```", "~~~", "#", "# ", "\n", "\n\n", " ", "|", "a", "word ", "é", "日本", "\xff", "\r\n", ". ", "-", "1. ", "\t", "    ", "\\", "\\<", "<"}
	seed := uint64(1)
	rnd := func(n int) int {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int(seed % uint64(n))
	}
	n := 20000
	if raceEnabled || testing.Short() {
		n = 2000
	}
	for it := 0; it < n; it++ {
		var b strings.Builder
		for k := rnd(200); k > 0; k-- {
			b.WriteString(alpha[rnd(len(alpha))])
		}
		md := b.String()
		checkChunks(t, md, ChunkMarkdown(md, ChunkOptions{TargetTokens: rnd(50) - 5, MaxTokens: rnd(80) - 5}))
	}
}
