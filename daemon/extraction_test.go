package daemon

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// postText is one public post as WordPress renders its content
// (testdata/the-content.php).
type postText struct {
	ID    int64  `json:"id"`
	Type  string `json:"type"`
	Title string `json:"title"`
	URL   string `json:"url"`
	HTML  string `json:"html"`
}

// postTexts asks WordPress for the content of every public post.
func postTexts(t *testing.T, site *wptest.Site) []postText {
	t.Helper()
	out, err := exec.Command("php", filepath.Join("testdata", "the-content.php"), site.Root(), site.Host()).Output()
	if err != nil {
		t.Fatalf("the-content.php: %v", err)
	}
	var ps []postText
	if err := json.Unmarshal(out, &ps); err != nil {
		t.Fatalf("the-content.php: %v: %.200s", err, out)
	}
	return ps
}

// unseen are the elements of the_content whose text a visitor does not
// read as the post's text: scripts, form controls and the media players'
// fallbacks, and captions, which the extractor leaves out with their
// pictures (a caption without its picture is noise).
var unseen = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Figcaption: true,
	atom.Form: true, atom.Button: true, atom.Select: true, atom.Textarea: true, atom.Audio: true, atom.Video: true,
	atom.Iframe: true, atom.Object: true, atom.Svg: true,
}

var unseenClass = []string{"wp-caption-text", "gallery-caption", "screen-reader-text"}

// blockElems break words apart: text on either side is never one word.
var blockElems = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Li: true, atom.Td: true, atom.Th: true, atom.Tr: true, atom.Br: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.Pre: true,
	atom.Blockquote: true, atom.Dd: true, atom.Dt: true, atom.Figure: true, atom.Section: true, atom.Ul: true,
	atom.Ol: true, atom.Table: true, atom.Hr: true, atom.Address: true, atom.Header: true, atom.Footer: true,
}

// contentText is the text of the_content's HTML as a reader sees it.
func contentText(h string) string {
	ctx := &html.Node{Type: html.ElementNode, DataAtom: atom.Div, Data: "div"}
	nodes, _ := html.ParseFragment(strings.NewReader(h), ctx)
	var b strings.Builder
	var visit func(n *html.Node)
	visit = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			b.WriteString(n.Data)
			return
		case html.ElementNode:
			if unseen[n.DataAtom] || hiddenElem(n) {
				return
			}
			if blockElems[n.DataAtom] {
				b.WriteByte(' ')
				defer b.WriteByte(' ')
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			visit(c)
		}
	}
	for _, n := range nodes {
		visit(n)
	}
	return b.String()
}

func hiddenElem(n *html.Node) bool {
	for _, a := range n.Attr {
		switch {
		case a.Key == "hidden", a.Key == "aria-hidden" && a.Val == "true":
			return true
		case a.Key == "class":
			for _, c := range strings.Fields(a.Val) {
				if slices.Contains(unseenClass, c) {
					return true
				}
			}
		}
	}
	return false
}

// words are the lowercased runs of letters and digits of s.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// missingWords lists the words of want (with their count) that got holds
// fewer times.
func missingWords(want, got []string) []string {
	have := map[string]int{}
	for _, w := range got {
		have[w]++
	}
	need := map[string]int{}
	for _, w := range want {
		need[w]++
	}
	var out []string
	for _, w := range want {
		if n := need[w]; n > have[w] {
			out = append(out, fmt.Sprintf("%s (%d of %d)", w, have[w], n))
			need[w] = 0
		}
	}
	return out
}

// chrome is the text of a rendered page outside the post's content, each
// text of the template (skip link, header, menus, title, byline, terms, post
// navigation, comments, query loops, footer) on its own, and the words of
// the content's wrapper as the page shows them (with what the oracle leaves
// out: embeds' fallback links, captions).
func chrome(t *testing.T, page []byte) (segs [][]string, inside []string) {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var visit func(n *html.Node, in bool)
	visit = func(n *html.Node, in bool) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Head, atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg:
				return
			}
			for _, a := range n.Attr {
				in = in || a.Key == "class" && slices.Contains(strings.Fields(a.Val), "wp-block-post-content")
			}
		}
		if n.Type == html.TextNode {
			if w := words(n.Data); in {
				inside = append(inside, w...)
			} else if len(w) > 0 {
				segs = append(segs, w)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			visit(c, in)
		}
	}
	visit(doc, false)
	return segs, inside
}

// runIn reports whether seq occurs in ws as a run of consecutive words.
func runIn(seq, ws []string) bool {
	for i := 0; i+len(seq) <= len(ws); i++ {
		if slices.Equal(ws[i:i+len(seq)], seq) {
			return true
		}
	}
	return false
}

// leakedChrome lists the template's texts that the stored text holds and
// the post's content does not: a run of two words or more found in the
// text, or a single word that is a whole line of it. (A run is looked for
// in content as is, the words of the content's blocks one after the other.)
func leakedChrome(segs [][]string, text string, content []string) []string {
	got := words(text)
	lines := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		lines[strings.Join(words(l), " ")] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range segs {
		k := strings.Join(s, " ")
		if seen[k] || runIn(s, content) {
			continue
		}
		seen[k] = true
		if len(s) > 1 && runIn(s, got) || len(s) == 1 && lines[k] {
			out = append(out, k)
		}
	}
	return out
}

// uniqueWords picks for each post a word of its content or title that no
// other post's title or content holds, as the search analyzes words (and
// that a query does not drop as filler): the longest one, or "" when there
// is none.
func uniqueWords(ps []postText) map[int64]string {
	terms := make([]map[string]bool, len(ps))
	owners := map[string]int{}
	for i, p := range ps {
		terms[i] = map[string]bool{}
		for _, term := range analysis.Analyze(p.Title+" "+contentText(p.HTML), "") {
			if !terms[i][term] {
				terms[i][term] = true
				owners[term]++
			}
		}
	}
	out := map[int64]string{}
	for i, p := range ps {
		best := ""
		for _, w := range strings.Fields(p.Title + " " + contentText(p.HTML)) {
			w = strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) })
			ts := analysis.Analyze(w, "")
			if len(w) <= len(best) || len(ts) == 0 || analysis.IsFiller(strings.ToLower(w)) ||
				strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
				continue
			}
			unique := true
			for _, term := range ts {
				unique = unique && owners[term] == 1 && terms[i][term]
			}
			if unique {
				best = w
			}
		}
		out[p.ID] = best
	}
	return out
}

// checkExtraction compares every public post's stored text with WordPress's
// rendering of its content: every word of the content is in it (exact, when
// exact is set: the same words in the same order), none of the template's
// chrome is; and a search for a word unique to the post finds it first. It
// returns how many posts were found first, of how many had a unique word.
func checkExtraction(t *testing.T, d *Daemon, ps []postText, exact bool) (first, withWord int) {
	t.Helper()
	ctx := context.Background()
	client := &http.Client{Timeout: 30 * time.Second}
	unique := uniqueWords(ps)
	for _, p := range ps {
		u := crawl.Canonical(p.URL)
		doc, err := d.Store.FindDocument(ctx, u, false)
		if err != nil {
			t.Errorf("post %d %s: not indexed: %v", p.ID, u, err)
			continue
		}
		content := words(contentText(p.HTML))
		got := words(doc.Text)
		if exact && !slices.Equal(content, got) {
			t.Errorf("post %d %s: text %q, want the words of its content %q", p.ID, u, doc.Text, strings.Join(content, " "))
		} else if miss := missingWords(content, got); len(miss) > 0 {
			t.Errorf("post %d %s: text lacks %d words of its content: %v", p.ID, u, len(miss), miss)
		}
		resp, err := client.Get(p.URL)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		segs, inside := chrome(t, page)
		if leak := leakedChrome(segs, doc.Text, append(content, inside...)); len(leak) > 0 {
			t.Errorf("post %d %s: text holds the template's %q", p.ID, u, leak)
		}
		w := unique[p.ID]
		if w == "" {
			t.Logf("post %d %s: no word of its own (%q)", p.ID, u, p.Title)
			continue
		}
		withWord++
		var r tool.SearchResponse
		call(t, d, "search_site", map[string]any{"query": w}, &r)
		if firstURL(r) == u {
			first++
		} else {
			t.Errorf("post %d %s: search_site %q finds %s first", p.ID, u, w, firstURL(r))
		}
	}
	return first, withWord
}

// sweepPost is a post or page the short-page sweep publishes.
type sweepPost struct {
	Type, Title, Content string
	text                 string // the text the page must have, exactly
	id                   int64
	url                  string
}

// publishSweep publishes the posts through WordPress's API, and deletes
// them when the test ends.
func publishSweep(t *testing.T, site *wptest.Site, ps []*sweepPost) {
	t.Helper()
	type in struct {
		PostType    string `json:"post_type"`
		PostTitle   string `json:"post_title"`
		PostContent string `json:"post_content"`
		PostStatus  string `json:"post_status"`
		PostAuthor  int    `json:"post_author"`
	}
	var args []in
	for _, p := range ps {
		args = append(args, in{p.Type, p.Title, p.Content, "publish", 1})
	}
	raw, _ := json.Marshal(args)
	out := site.PHP(t, `$out = array(); foreach (json_decode(base64_decode('`+base64.StdEncoding.EncodeToString(raw)+`'), true) as $a) {
		$id = wp_insert_post(wp_slash($a), true);
		if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); }
		$out[] = array('id' => $id, 'url' => get_permalink($id));
	} echo json_encode($out);`)
	var made []struct {
		ID  int64  `json:"id"`
		URL string `json:"url"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "["):]), &made); err != nil {
		t.Fatalf("php: %v: %s", err, out)
	}
	var ids []string
	for i, m := range made {
		ps[i].id, ps[i].url = m.ID, m.URL
		ids = append(ids, fmt.Sprint(m.ID))
	}
	t.Cleanup(func() {
		site.PHP(t, `foreach (array(`+strings.Join(ids, ",")+`) as $id) { wp_delete_post($id, true); }`)
	})
}

// para is one paragraph block, as the block editor saves it.
func para(s string) string {
	return "<!-- wp:paragraph -->\n<p>" + s + "</p>\n<!-- /wp:paragraph -->\n\n"
}

// TestExtraction_BlockThemePages is the block-theme acceptance on the test
// site (WordPress 7.1, Twenty Twenty-Five; 6.1, Twenty Twenty-Three): every
// public post and page is stored with exactly its content's words, none of
// the template's, and a search for a word of its own finds it first; the
// short posts and pages of a sweep, one-liners included, have exactly their
// content as text. After the pass, the blog index is a listing (its
// password-protected post's form does not make it private) and no row of
// the frontier is left pending (a classic menu's /?page_id=N neither).
func TestExtraction_BlockThemePages(t *testing.T) {
	site := wptest.Get(t)
	site.Lock(t)
	ctx := context.Background()

	// Up to the lengths that came out empty (pages to about 200
	// characters, posts to 120), and past them.
	word := func() string { return wptest.Word("zq", "sw") }
	var sweep []*sweepPost
	for _, typ := range []string{"post", "page"} {
		w := []string{word(), word(), word(), word(), word(), word()}
		sweep = append(sweep,
			&sweepPost{Type: typ, Title: "Note " + w[0], Content: para(w[0] + "."), text: w[0] + "."},
			&sweepPost{Type: typ, Title: "Soon " + w[1], Content: para("Coming soon: " + w[1] + "."), text: "Coming soon: " + w[1] + "."},
			&sweepPost{Type: typ, Title: "Ferry " + w[2], Content: para("The " + w[2] + " ferry leaves at dawn."),
				text: "The " + w[2] + " ferry leaves at dawn."},
			&sweepPost{Type: typ, Title: "Kiosk " + w[3],
				Content: para("Tickets for the " + w[3] + " crossing are sold at the kiosk on the pier, and on board when the kiosk is closed for lunch."),
				text:    "Tickets for the " + w[3] + " crossing are sold at the kiosk on the pier, and on board when the kiosk is closed for lunch."},
			&sweepPost{Type: typ, Title: "Rules " + w[4],
				Content: para("House rules of the "+w[4]+" workshop:") +
					"<!-- wp:list -->\n<ul class=\"wp-block-list\"><!-- wp:list-item -->\n<li>Tools go back where they came from.</li>\n<!-- /wp:list-item --><!-- wp:list-item -->\n<li>No soldering on the wooden bench.</li>\n<!-- /wp:list-item --><!-- wp:list-item -->\n<li>The last one out switches off the compressor and locks the back door.</li>\n<!-- /wp:list-item --></ul>\n<!-- /wp:list -->\n\n",
				text: "House rules of the " + w[4] + " workshop:\nTools go back where they came from.\nNo soldering on the wooden bench.\nThe last one out switches off the compressor and locks the back door."},
			&sweepPost{Type: typ, Title: "Hours " + w[5],
				Content: "<!-- wp:heading -->\n<h2 class=\"wp-block-heading\">Opening hours</h2>\n<!-- /wp:heading -->\n\n" +
					para("The "+w[5]+" shop opens at nine on weekdays and at ten on Saturdays. It stays closed on Sundays and on public holidays, and for two weeks in August."),
				text: "Opening hours\nThe " + w[5] + " shop opens at nine on weekdays and at ten on Saturdays. It stays closed on Sundays and on public holidays, and for two weeks in August."},
		)
	}
	publishSweep(t, site, sweep)

	d := openTestDaemon(t, site, nil)
	if _, err := d.Index(ctx, crawl.IndexOptions{Full: true}); err != nil {
		t.Fatal(err)
	}
	for _, p := range sweep {
		doc, err := d.Store.FindDocument(ctx, crawl.Canonical(p.url), false)
		if err != nil {
			t.Errorf("%s %d %s: not indexed: %v", p.Type, p.id, p.url, err)
			continue
		}
		if doc.Text != p.text {
			t.Errorf("%s %d %s (%d characters): text %q (source %s), want exactly %q", p.Type, p.id, p.url,
				len(p.Content), doc.Text, doc.Source, p.text)
		}
	}
	ps := postTexts(t, site)
	first, n := checkExtraction(t, d, ps, true)
	t.Logf("%d public posts and pages (%d of the sweep); found first by a word of its own: %d of %d", len(ps), len(sweep), first, n)

	// The pass's frontier rows: the blog index read as a listing, nothing
	// left pending.
	rows, err := d.Store.ListURLs(ctx, store.URLFilter{})
	if err != nil {
		t.Fatal(err)
	}
	home := crawl.Canonical(site.URL() + "/")
	for _, r := range rows {
		if r.Status == "pending" || r.Queued {
			t.Errorf("%s is still %s (queued %v, sources %v) after the pass", r.URL, r.Status, r.Queued, r.Sources)
		}
		if r.URL == home && r.Status == "private" {
			t.Errorf("the blog index %s is %s: a listed post's password form made it private", r.URL, r.Status)
		}
	}
}

// tutSites are the Theme Unit Test sites (ASKWPD_TEST_TUT_ENVS, a
// comma-separated list of env files, else .wp-tut/env and .wp-tut24/env
// of the checkout) that are up; see scripts/test.sh's tut step.
func tutSites(t *testing.T) []*wptest.Site {
	t.Helper()
	if _, err := os.Stat(filepath.Join(wptest.RepoRoot(), "..", "shared", "evaldata", "wp-theme-unit-test")); err != nil {
		t.Skipf("the Theme Unit Test data is not here (%v)", err)
	}
	paths := strings.Split(os.Getenv("ASKWPD_TEST_TUT_ENVS"), ",")
	if paths[0] == "" {
		paths = []string{filepath.Join(wptest.RepoRoot(), ".wp-tut", "env"), filepath.Join(wptest.RepoRoot(), ".wp-tut24", "env")}
	}
	var sites []*wptest.Site
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		env := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				env[k] = strings.Trim(v, `"'`)
			}
		}
		sites = append(sites, &wptest.Site{Env: env})
	}
	if len(sites) == 0 {
		t.Skip("no Theme Unit Test site is up; run: ASKWPD_SITE_NAME=tut ASKWPD_WP_STATE=$PWD/.wp-tut bash scripts/wp-up.sh --wxr " +
			"(and tut24 with ASKWPD_WP_THEME=twentytwentyfour), or scripts/test.sh tut")
	}
	return sites
}

// TestExtraction_ThemeUnitTest runs the comparison on the WordPress Theme
// Unit Test import, on each theme's site: every public item's stored text
// holds every word of its content as WordPress renders it, and none of the
// template's chrome. Found first by a word of its own is measured, and
// asserted, for the items that have one.
func TestExtraction_ThemeUnitTest(t *testing.T) {
	for _, site := range tutSites(t) {
		name := filepath.Base(site.Env["WP_STATE_DIR"])
		t.Run(name, func(t *testing.T) {
			site.Lock(t)
			theme := strings.TrimSpace(site.PHP(t, `echo get_stylesheet();`))
			d := openTestDaemon(t, site, nil)
			if _, err := d.Index(context.Background(), crawl.IndexOptions{Full: true}); err != nil {
				t.Fatal(err)
			}
			ps := postTexts(t, site)
			first, n := checkExtraction(t, d, ps, false)
			t.Logf("%s (%s): %d public posts and pages; found first by a word of its own: %d of %d", name, theme, len(ps), first, n)
		})
	}
}
