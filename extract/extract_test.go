package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden testdata/*.md files")

type fixtureWant struct {
	file, url    string
	source       string
	title        string
	postID       int64
	postType     string
	published    string
	lang         string
	contains     []string          // must be in Text
	absent       []string          // must not be in Text or Markdown
	chunkTypes   map[string]string // code_lang (or "-" + first words) -> type
	categories   []string
	minWordCount int
}

var fixtures = []fixtureWant{
	{
		file: "classic-post.html", url: "https://example.org/2024/03/migrating-to-php-8-3/",
		source: "wp_content", title: "Migrating a Site to PHP 8.3", postID: 42, postType: "post",
		published: "2024-03-05T09:30:00Z", lang: "en-US",
		contains: []string{"Last month we moved forty client sites", "What broke", "Scan plugins\tPHPCompatibility\t10 min",
			"needed no emergency fixes"},
		absent: []string{"Ignore all previous instructions", "HIDDEN-DECORATION-TEXT", "Share this", "Upgrading to PHP 7.4 in 2020",
			"Great write-up", "Leave a comment", "Recent Posts", "Proudly powered", "We use cookies", "Skip to content",
			"About the team", "<", "Previous post"},
		categories:   []string{"PHP"},
		minWordCount: 150,
	},
	{
		file: "classic-code-post.html", url: "https://example.test/2023/11/rest-route/",
		source: "wp_content", title: "Registering a REST route from a plugin", postID: 314, postType: "post",
		published: "2023-11-20T08:00:00+01:00", lang: "en-GB",
		contains: []string{"register_rest_route( 'garden/v1', '/beds/(?P<id>\\d+)'", "$ wp plugin activate garden-api", `"plants": [`},
		absent:   []string{"Snippets", "© Code Garden"},
		chunkTypes: map[string]string{
			"php": TypeCode, "json": TypeConfig, "-```\n$ wp plugin": TypeCmd, "-## The plugin code": TypeProse,
		},
		categories: []string{"Tutorials"},
	},
	{
		file: "pagebuilder-page.html", url: "https://holzwerk.example/leistungen/",
		title: "Leistungen", postID: 7, postType: "page", lang: "de-DE",
		contains: []string{"Seit 1987 fertigen wir", "Einbauschränke", "Kirsche natur", "aus demselben Stamm"},
		absent:   []string{"Startseite", "Teilen auf Facebook", "Impressum"},
	},
	{
		file: "tt3-php-fpm-per-site-pool-users.html", url: "http://127.0.0.1:8089/2025/03/22/php-fpm-per-site-pool-users/",
		source: "wp_content", title: "Hardening PHP-FPM Pools with Per-Site Unix Users", postID: 5, postType: "post",
		lang: "en-US", published: "2025-03-22T01:53:40Z",
		contains: []string{"We host five small WordPress sites", "[bakery]"},
		absent:   []string{"Leave a Reply", "Proudly powered"},
		chunkTypes: map[string]string{
			"ini": TypeConfig, "php": TypeCode, "-## Creating the user": TypeCmd,
		},
		categories: []string{"Self-Hosting"},
	},
	{
		file: "tt3-caddy-json-reverse-proxy-wordpress.html", url: "http://127.0.0.1:8089/2025/08/14/caddy-json-reverse-proxy-wordpress/",
		source: "wp_content", title: "Caddy JSON Config for a Reverse Proxy in Front of WordPress", postID: 8, postType: "post",
		chunkTypes: map[string]string{"json": TypeConfig},
	},
	{
		file: "tt3-token-bucket-rate-limiter-go.html", url: "http://127.0.0.1:8089/2026/05/16/token-bucket-rate-limiter-go/",
		source: "wp_content", title: "A Token Bucket Rate Limiter in Forty Lines of Go", postID: 12, postType: "post",
		chunkTypes: map[string]string{"go": TypeCode},
	},
	{
		file: "tt3-about.html", url: "http://127.0.0.1:8089/about/",
		source: "wp_content", title: "About This Workshop Journal", postID: 17, postType: "page",
	},
}

func extractFile(t testing.TB, file, u string) *Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Extract(context.Background(), bytes.NewReader(data), Options{URL: u})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return res
}

func TestFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.file, func(t *testing.T) {
			res := extractFile(t, f.file, f.url)
			if f.source != "" && res.Source != f.source {
				t.Errorf("source = %q, want %q", res.Source, f.source)
			}
			if res.Title != f.title {
				t.Errorf("title = %q, want %q", res.Title, f.title)
			}
			if res.PostID != f.postID || res.PostType != f.postType {
				t.Errorf("post = %d/%q, want %d/%q", res.PostID, res.PostType, f.postID, f.postType)
			}
			if f.published != "" && res.Published.Format(time.RFC3339) != f.published {
				t.Errorf("published = %s, want %s", res.Published.Format(time.RFC3339), f.published)
			}
			if f.lang != "" && res.Lang != f.lang {
				t.Errorf("lang = %q, want %q", res.Lang, f.lang)
			}
			for _, s := range f.contains {
				if !strings.Contains(res.Text, s) {
					t.Errorf("text lacks %q", s)
				}
			}
			for _, s := range f.absent {
				if strings.Contains(res.Text, s) || (s != "<" && strings.Contains(res.Markdown, s)) {
					t.Errorf("text contains %q", s)
				}
			}
			for _, c := range f.categories {
				found := false
				for _, x := range res.Categories {
					found = found || x == c
				}
				if !found {
					t.Errorf("categories %q lack %q", res.Categories, c)
				}
			}
			if res.WordCount < f.minWordCount {
				t.Errorf("word count %d < %d", res.WordCount, f.minWordCount)
			}
			if res.Thin {
				t.Errorf("thin: %s", res.ThinReason)
			}
			checkChunks(t, res.Markdown, res.Chunks)
			for key, typ := range f.chunkTypes {
				found := false
				for _, c := range res.Chunks {
					match := c.CodeLang == key
					if strings.HasPrefix(key, "-") {
						match = strings.HasPrefix(c.Text, key[1:])
					}
					if match {
						found = true
						if c.Type != typ {
							t.Errorf("chunk %q: type %q, want %q", key, c.Type, typ)
						}
					}
				}
				if !found {
					t.Errorf("no chunk %q in %d chunks", key, len(res.Chunks))
				}
			}
			golden(t, f.file, res.Markdown)
		})
	}
}

// golden compares the Markdown with testdata/NAME.md (-update rewrites it).
func golden(t *testing.T, file, md string) {
	t.Helper()
	path := filepath.Join("testdata", strings.TrimSuffix(file, ".html")+".md")
	if *update {
		if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden: %v (run go test -update)", err)
	}
	if string(want) != md {
		t.Errorf("markdown differs from %s (run go test -update and review the diff)", path)
	}
}

// checkChunks asserts the citation invariants on every chunk of md. It is
// linear in len(md), so fuzzing stays fast on inputs with many chunks.
func checkChunks(t testing.TB, md string, chunks []Chunk) {
	t.Helper()
	runes := []rune(md)
	lastText := -1 // index of the last non-space rune
	for i := len(runes) - 1; i >= 0; i-- {
		if !unicode.IsSpace(runes[i]) {
			lastText = i
			break
		}
	}
	fences := fenceRanges(string(runes))
	prev := 0
	for i, c := range chunks {
		if c.Ord != i {
			t.Fatalf("chunk %d: ord %d", i, c.Ord)
		}
		if c.Start < prev || c.End <= c.Start || c.End > len(runes) {
			t.Fatalf("chunk %d: bad range [%d,%d) after %d (len %d)", i, c.Start, c.End, prev, len(runes))
		}
		if got := string(runes[c.Start:c.End]); got != c.Text {
			t.Fatalf("chunk %d: text mismatch:\n%q\n%q", i, got, c.Text)
		}
		if c.End < len(runes) && splitsEscape(c.Text+string(runes[c.End]), 0, len(c.Text)) {
			t.Fatalf("chunk %d ends between a backslash and the %q it escapes: %q", i, runes[c.End], c.Text)
		}
		if gap := string(runes[prev:c.Start]); strings.TrimSpace(gap) != "" {
			t.Fatalf("chunk %d: non-space gap %q", i, gap)
		}
		if c.Text == "" || c.Tokens <= 0 || c.ContentHash == "" || c.Type == "" {
			t.Fatalf("chunk %d: empty fields %+v", i, c)
		}
		// A fenced block is never split unless the chunk is a numbered piece:
		// every fence the chunk overlaps lies entirely inside it.
		if c.Part == 0 {
			for _, f := range fences {
				if f[0] < c.End && f[1] > c.Start && (f[0] < c.Start || f[1] > c.End) {
					t.Fatalf("chunk %d [%d,%d) cuts the fence [%d,%d): %q", i, c.Start, c.End, f[0], f[1], c.Text)
				}
			}
		}
		prev = c.End
	}
	if lastText >= prev {
		t.Fatalf("text after the last chunk: %q", string(runes[prev:]))
	}
}

// fenceRanges returns the rune ranges [start, end) of the fenced blocks of md,
// from the opening fence to the end of the closing fence line (or of md), with
// trailing white space excluded, found by an independent line scan.
func fenceRanges(md string) [][2]int {
	var out [][2]int
	var open byte
	openLen, start, pos := 0, 0, 0
	for _, l := range strings.SplitAfter(md, "\n") {
		line := strings.TrimSuffix(l, "\n")
		n := utf8.RuneCountInString(l)
		if open == 0 {
			if ch, fl, ok := fenceOpen(line); ok && strings.TrimSpace(line) != "" {
				open, openLen, start = ch, fl, pos
			}
		} else if isFenceClose(line, open, openLen) {
			out = append(out, [2]int{start, pos + utf8.RuneCountInString(strings.TrimRight(line, " \t\r"))})
			open = 0
		}
		pos += n
	}
	if open != 0 {
		out = append(out, [2]int{start, utf8.RuneCountInString(strings.TrimRight(md, " \t\r\n"))})
	}
	return out
}

func TestResultJSON(t *testing.T) {
	res := extractFile(t, "classic-post.html", "https://example.org/2024/03/migrating-to-php-8-3/")
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["published"] != "2024-03-05T09:30:00Z" || m["fetched_at"] != "" {
		t.Errorf("dates: published=%v fetched_at=%v", m["published"], m["fetched_at"])
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Published.Equal(res.Published) || !back.FetchedAt.IsZero() || back.Markdown != res.Markdown ||
		len(back.Chunks) != len(res.Chunks) {
		t.Errorf("round trip lost data")
	}
}

func TestThin(t *testing.T) {
	for _, tc := range []struct {
		body, reason string
	}{
		{`<main><h1>Shop</h1><p>Coming soon! Our new shop opens in spring.</p></main>`, "placeholder"},
		{`<main><p>Short note.</p></main>`, "too_short"},
		{`<main><h1>Hello</h1></main>`, "title_only"},
		{`<main></main>`, "empty"},
	} {
		res, err := Extract(context.Background(), strings.NewReader(`<html><head><title>Hello</title></head><body>`+tc.body+`</body></html>`), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Thin || res.ThinReason != tc.reason {
			t.Errorf("%s: thin=%v reason=%q, want %q", tc.body, res.Thin, res.ThinReason, tc.reason)
		}
	}
}

func TestCodeLanguageHints(t *testing.T) {
	page := `<html><body><article class="post"><div class="entry-content"><p>` + strings.Repeat("Some words here. ", 30) + `</p>
<pre lang="python">print(1)</pre>
<pre data-lang="yaml">a: 1</pre>
<pre class="brush: bash; gutter: false">ls -la</pre>
<pre><code class="language-go">package main</code></pre>
<pre class="lang-ruby">puts 1</pre>
<pre><code class="hljs rust">fn main() {}</code></pre>
<pre lang="en">not a language hint</pre>
</div></article></body></html>`
	res, err := Extract(context.Background(), strings.NewReader(page), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"```python\n", "```yaml\n", "```bash\n", "```go\n", "```ruby\n", "```rust\n", "```\nnot a language"} {
		if !strings.Contains(res.Markdown, want) {
			t.Errorf("markdown lacks %q:\n%s", want, res.Markdown)
		}
	}
}

func TestPathological(t *testing.T) {
	ctx := context.Background()
	cases := map[string]func() io.Reader{
		"deep-10k": func() io.Reader {
			return strings.NewReader("<html><body>" + strings.Repeat("<div>", 10000) + "deep text here" + strings.Repeat("</div>", 10000))
		},
		"invalid-utf8": func() io.Reader {
			return bytes.NewReader([]byte("<html><body><main><p>ok \xff\xfe\xc3 bad \xe2\x82 bytes</p><pre>\xff code</pre></main></body></html>"))
		},
		"50MB": func() io.Reader {
			unit := []byte("<p>" + strings.Repeat("lorem ipsum dolor sit amet ", 40) + "</p>\n")
			return io.LimitReader(&repeatReader{unit: unit}, 50<<20)
		},
		"giant-pre": func() io.Reader {
			var b strings.Builder
			b.WriteString("<html><body><main><pre>")
			for i := 0; i < 100000; i++ {
				b.WriteString("line of code number ")
				b.WriteString(itoa(i))
				b.WriteString(" with some &lt;tokens&gt;\n")
			}
			b.WriteString("</pre></main></body></html>")
			return strings.NewReader(b.String())
		},
		// Runs of characters whose escaping looks at their neighbours.
		"punctuation-runs": func() io.Reader {
			return strings.NewReader("<html><body><main><p>" + strings.Repeat("_", 300000) + strings.Repeat("a_", 100000) +
				strings.Repeat("&amp;a", 100000) + strings.Repeat(`\&lt;`, 100000) + "</p></main></body></html>")
		},
		"empty":   func() io.Reader { return strings.NewReader("") },
		"garbage": func() io.Reader { return bytes.NewReader([]byte{0, 1, 2, 3, '<', '<', '>', 0xff}) },
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			opt := Options{}
			if raceEnabled {
				opt.MaxBytes = 1 << 20
			}
			res, err := Extract(ctx, mk(), opt)
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			if err != nil {
				return // a clean error is fine
			}
			if !utf8.ValidString(res.Markdown) || !utf8.ValidString(res.Text) {
				t.Error("invalid UTF-8 in output")
			}
			checkChunks(t, res.Markdown, res.Chunks)
			if name == "50MB" && !res.Truncated {
				t.Error("50MB input not marked truncated")
			}
			if name == "deep-10k" && !strings.Contains(res.Text, "deep text here") {
				t.Errorf("deep text lost: %q", res.Text)
			}
		})
	}
}

type repeatReader struct {
	unit []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.unit[r.off:])
		n += c
		r.off = (r.off + c) % len(r.unit)
	}
	return n, nil
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Extract(ctx, strings.NewReader("<p>x</p>"), Options{}); err == nil {
		t.Error("no error on canceled context")
	}
}

func TestTitle(t *testing.T) {
	for _, tc := range []struct{ page, site, want string }{
		{`<title>Post A – My Blog</title><body><h1>My Blog</h1><h1>Post A</h1>`, "", "Post A"},
		{`<title>Post B | My Blog</title><body><p>x</p>`, "My Blog", "Post B"},
		{`<title>A long headline here | Short</title><body><p>x</p>`, "", "A long headline here"},
		{`<meta property="og:title" content="OG wins"><title>T</title>`, "", "OG wins"},
	} {
		res, err := Extract(context.Background(), strings.NewReader(tc.page), Options{SiteName: tc.site})
		if err != nil {
			t.Fatal(err)
		}
		if res.Title != tc.want {
			t.Errorf("%s: title %q, want %q", tc.page, res.Title, tc.want)
		}
	}
}

var readFile = os.ReadFile
