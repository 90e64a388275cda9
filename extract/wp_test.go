package extract

import (
	"context"
	"strings"
	"testing"
)

// chromeTT5 is text Twenty Twenty-Five prints around a post's content on
// the test site (scripts/wp/seed.php): skip link, header, navigation, byline,
// terms, post navigation, comment form, "More posts", footer. The seeded
// password-protected post's title is among the other posts' titles it lists.
var chromeTT5 = []string{
	"Skip to content", "Askwpd Demo", "Field notes on coffee", "Pricing & FAQ", "Written by", "Jonas Berger",
	"announcements", "Leave a Reply", "Your email address", "Post Comment", "More posts", "SECRETPASSWORDPOST",
	"Bicycle Commuter Lighting Kit", "Designed with", "Twenty Twenty-Five", "Next Page",
}

// The pages of Twenty Twenty-Five (WordPress 7.1) rendered from the test
// site's seed, whatever their length: the text is the post's content and
// nothing of the template, a short page's exactly.
func TestBlockThemePages(t *testing.T) {
	for _, tc := range []struct {
		file, url string
		title     string
		postID    int64
		postType  string
		text      string // the whole text, when set
		contains  []string
		thin      bool
	}{
		{file: "tt5-workshops.html", url: "http://127.0.0.1:8090/workshops/", title: "Workshops", postID: 21,
			postType: "page", text: "Coming soon.", thin: true},
		{file: "tt5-short-post.html", url: "http://127.0.0.1:8090/2026/12/02/cluster-check-zzqqtest/",
			title: "Cluster check zzqqtest", postID: 136, postType: "post",
			text: "The word zzqqtest is written once, for the cluster test.", thin: true},
		{file: "tt5-relaunch-notes.html", url: "http://127.0.0.1:8090/2026/12/01/relaunch-notes-lantern-search/",
			title: "Relaunch Notes: Lantern Search Arrives on the Demo Site", postID: 16, postType: "post",
			contains: []string{"Today we relaunched the site.", "What changed", `"chunk_tokens": 400`,
				"tell us through the contact page."}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			res := extractFile(t, tc.file, tc.url)
			if res.Source != "wp_content" || res.Title != tc.title || res.PostID != tc.postID || res.PostType != tc.postType {
				t.Errorf("source %q title %q post %d/%q, want wp_content %q %d/%q", res.Source, res.Title, res.PostID,
					res.PostType, tc.title, tc.postID, tc.postType)
			}
			if tc.text != "" && res.Text != tc.text {
				t.Errorf("text = %q, want %q", res.Text, tc.text)
			}
			for _, s := range tc.contains {
				if !strings.Contains(res.Text, s) {
					t.Errorf("text lacks %q", s)
				}
			}
			for _, s := range chromeTT5 {
				if strings.Contains(res.Text, s) || strings.Contains(res.Markdown, s) {
					t.Errorf("text holds the template's %q", s)
				}
			}
			if res.Thin != tc.thin || res.Protected {
				t.Errorf("thin %v (%s), protected %v; want thin %v", res.Thin, res.ThinReason, res.Protected, tc.thin)
			}
			checkChunks(t, res.Markdown, res.Chunks)
			golden(t, tc.file, res.Markdown)
		})
	}
}

// Only the content's links carry their text: the template's are other
// posts' titles (a password-protected one's among them), and stay as
// addresses for discovery.
func TestAnchorTextIsContentOnly(t *testing.T) {
	res := extractFile(t, "tt5-relaunch-notes.html", "http://127.0.0.1:8090/2026/12/01/relaunch-notes-lantern-search/")
	texts := map[string]string{}
	for _, l := range res.Links {
		texts[l.URL] = l.Text
	}
	for u, want := range map[string]string{
		"http://127.0.0.1:8090/about/":   "About page",
		"http://127.0.0.1:8090/contact/": "contact page",
		// Post navigation and "More posts".
		"http://127.0.0.1:8090/2026/11/12/secret-password-post/":          "",
		"http://127.0.0.1:8090/2026/11/01/bicycle-commuter-lighting-kit/": "",
		// The menu and the footer.
		"http://127.0.0.1:8090/pricing-faq/": "",
		"https://wordpress.org":              "",
	} {
		got, ok := texts[u]
		if !ok {
			t.Errorf("no link to %s among %d", u, len(res.Links))
			continue
		}
		if got != want {
			t.Errorf("link to %s: text %q, want %q", u, got, want)
		}
	}
}

// A blog index lists a password-protected post with its form: the page is
// a listing, not protected, and the protected post's item is left out. The
// post's own page is protected and has no text.
func TestPasswordFormListingAndPost(t *testing.T) {
	index := extractFile(t, "tt5-blog-index.html", "http://127.0.0.1:8090/")
	if index.Protected || index.PostID != 0 {
		t.Errorf("blog index: protected %v, post %d; want a listing", index.Protected, index.PostID)
	}
	if index.Text == "" || strings.Contains(index.Text, "SECRETPASSWORDPOST") || strings.Contains(index.Text, "password") {
		t.Errorf("blog index text (%d bytes) is empty or shows the protected post: %.300q", len(index.Text), index.Text)
	}
	for _, l := range index.Links {
		if strings.Contains(l.Text, "SECRETPASSWORDPOST") {
			t.Errorf("blog index link %s keeps the protected post's title %q", l.URL, l.Text)
		}
	}
	post := extractFile(t, "tt5-password-post.html", "http://127.0.0.1:8090/2026/11/12/secret-password-post/")
	if !post.Protected || post.Text != "" || post.PostID != 29 {
		t.Errorf("protected post: protected %v, post %d, text %q; want protected, 29, no text", post.Protected, post.PostID, post.Text)
	}
}

// The same on a classic theme's markup (Twenty Twenty-One's shape): a
// one-line post is its entry-content, without the entry header, meta and
// footer, the post navigation, the comments or the sidebar's recent posts.
func TestClassicThemeShortPost(t *testing.T) {
	page := `<!DOCTYPE html><html lang="en-US"><head><title>Harbour notes &#8211; Ferries</title></head>
<body class="post-template-default single single-post postid-7 single-format-standard">
<a class="skip-link screen-reader-text" href="#content">Skip to content</a>
<header id="masthead" class="site-header"><p class="site-title"><a href="/">Ferries</a></p>
<nav id="site-navigation" class="primary-navigation"><ul><li><a href="/timetable/">Timetable</a></li></ul></nav></header>
<div id="content" class="site-content"><main id="main" class="site-main">
<article id="post-7" class="post-7 post type-post status-publish format-standard hentry category-news">
<header class="entry-header"><h1 class="entry-title">Harbour notes</h1></header>
<div class="entry-content"><p>The ferry leaves at dawn.</p></div>
<footer class="entry-footer"><span class="posted-on">Published <time datetime="2025-01-02">January 2, 2025</time></span>
<span class="byline">By <a href="/author/ann/">Ann</a></span><span class="cat-links">Categorized as <a href="/category/news/">News</a></span></footer>
</article>
<nav class="navigation post-navigation" aria-label="Posts"><div class="nav-previous"><a href="/secret/">Protected: Wholesale Roadmap</a></div></nav>
<div id="comments" class="comments-area"><div id="respond" class="comment-respond"><h2 class="comment-reply-title">Leave a comment</h2></div></div>
</main>
<aside id="secondary" class="widget-area"><section class="widget widget_recent_entries"><h2 class="widget-title">Recent Posts</h2>
<ul><li><a href="/secret/">Protected: Wholesale Roadmap</a></li><li><a href="/timetable/">Winter timetable</a></li></ul></section></aside>
</div>
<footer id="colophon" class="site-footer"><p>Proudly powered by WordPress</p></footer>
</body></html>`
	res, err := Extract(context.Background(), strings.NewReader(page), Options{URL: "https://ferries.example/2025/01/02/harbour-notes/"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "The ferry leaves at dawn." || res.Title != "Harbour notes" || res.Source != "wp_content" {
		t.Errorf("text %q title %q source %q", res.Text, res.Title, res.Source)
	}
	for _, l := range res.Links {
		if l.Text != "" {
			t.Errorf("template link %s keeps its text %q", l.URL, l.Text)
		}
	}
}
