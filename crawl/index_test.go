package crawl

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/wp"
)

func TestPermalink(t *testing.T) {
	c := &Crawler{Site: Site{URL: "https://example.org/blog"}}
	post := &wp.Post{ID: 42, Type: "post", Name: "caf%c3%a9-hours", Date: time.Date(2025, 3, 7, 9, 5, 1, 0, time.UTC)}
	for _, tc := range []struct {
		structure string
		post      *wp.Post
		want      string
	}{
		{"/%year%/%monthnum%/%day%/%postname%/", post, "https://example.org/blog/2025/03/07/caf%c3%a9-hours/"},
		{"/%postname%", post, "https://example.org/blog/caf%c3%a9-hours"},
		{"/archives/%post_id%", post, "https://example.org/blog/archives/42"},
		{"/%year%/%hour%%minute%%second%-%postname%/", post, "https://example.org/blog/2025/090501-caf%c3%a9-hours/"},
		{"/index.php/%year%/%postname%/", post, "https://example.org/blog/index.php/2025/caf%c3%a9-hours/"},
		// What it cannot spell.
		{"/%category%/%postname%/", post, ""},
		{"/%author%/%postname%/", post, ""},
		{"", post, ""},
		{"/%postname%/", &wp.Post{ID: 7, Type: "book", Name: "about", Date: post.Date}, ""},
		{"/%postname%/", &wp.Post{ID: 8, Type: "post", Date: post.Date}, ""},
		{"/%year%/%postname%/", &wp.Post{ID: 9, Type: "post", Name: "x"}, ""},
	} {
		c.structure.Store(tc.structure)
		if got := c.permalink(tc.post, nil); got != tc.want {
			t.Errorf("%q, post %d: %q, want %q", tc.structure, tc.post.ID, got, tc.want)
		}
		want := tc.want
		if want == "" {
			want = c.postURL(tc.post.ID, tc.post)
		}
		if got := c.postAddress(tc.post.ID, tc.post, nil); got != want {
			t.Errorf("%q, post %d: postAddress %q, want %q", tc.structure, tc.post.ID, got, want)
		}
	}
}

func TestPageLink(t *testing.T) {
	c := &Crawler{Site: Site{URL: "https://example.org/blog", PageOnFront: 2}}
	pages := map[int64]*wp.Post{
		2:  {ID: 2, Type: "page", Name: "home"},
		17: {ID: 17, Type: "page", Name: "about"},
		18: {ID: 18, Type: "page", Name: "team", Parent: 17},
		19: {ID: 19, Type: "page", Name: "%ce%b5", Parent: 18},
		20: {ID: 20, Type: "page", Name: "orphan", Parent: 99},
		21: {ID: 21, Type: "page", Name: "loop", Parent: 22},
		22: {ID: 22, Type: "page", Name: "pool", Parent: 21},
	}
	for _, tc := range []struct {
		structure string
		id        int64
		want      string
	}{
		{"/%postname%/", 17, "https://example.org/blog/about/"},
		{"/%year%/%postname%", 18, "https://example.org/blog/about/team"},
		{"/%postname%/", 19, "https://example.org/blog/about/team/%ce%b5/"},
		{"/index.php/%postname%/", 17, "https://example.org/blog/index.php/about/"},
		{"/%postname%/", 2, "https://example.org/blog/"},
		// A parent it does not know (private, or not read), a cycle, plain
		// permalinks: /?page_id=N.
		{"/%postname%/", 20, ""},
		{"/%postname%/", 21, ""},
		{"", 17, ""},
	} {
		c.structure.Store(tc.structure)
		if got := c.permalink(pages[tc.id], pages); got != tc.want {
			t.Errorf("%q, page %d: %q, want %q", tc.structure, tc.id, got, tc.want)
		}
	}
	c.structure.Store("/%postname%/")
	if got, want := c.postAddress(20, pages[20], pages), "https://example.org/blog/?page_id=20"; got != want {
		t.Errorf("postAddress of a page under an unknown parent = %q, want %q", got, want)
	}
}

// A password form is the page's own unless a listing shows it in a listed
// post's item.
func TestProtected(t *testing.T) {
	form := `<form action="/wp-login.php?action=postpass" class="post-password-form" method="post"><p>This content is password-protected.</p></form>`
	for _, tc := range []struct {
		name, page string
		want       bool
	}{
		{"blog index", `<body class="home blog"><main><ul class="wp-block-post-template"><li class="wp-block-post post-29 post-password-required"><h2>Protected: Plans</h2><div class="entry-content">` + form + `</div></li><li class="wp-block-post post-16"><p>Open.</p></li></ul></main></body>`, false},
		{"static front page listing posts", `<body class="home page page-id-2"><main><div class="entry-content"><p>Welcome.</p></div><ul><li class="post-29">` + form + `</li></ul></main></body>`, false},
		{"the post", `<body class="single postid-29"><main><div class="entry-content">` + form + `</div></main></body>`, true},
		{"a classic theme's post", `<body class="single postid-29"><article class="post-29"><div class="entry-content">` + form + `</div></article></body>`, true},
		{"a page that names no post", `<body><div class="post-29">` + form + `</div></body>`, true},
		{"an archive that names no post", `<body class="archive category"><div class="post-29">` + form + `</div></body>`, false},
	} {
		page := []byte(`<!DOCTYPE html><html><head><title>t</title></head>` + tc.page + `</html>`)
		res, err := extract.Extract(context.Background(), bytes.NewReader(page), extract.Options{URL: "https://example.org/x/"})
		if err != nil {
			t.Fatal(err)
		}
		if got := protected(page, res); got != tc.want {
			t.Errorf("%s: protected %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSubPage(t *testing.T) {
	for _, tc := range []struct {
		u, base string
		want    bool
	}{
		{"https://s/2018/11/post/2/", "https://s/2018/11/post/", true},
		{"https://s/2018/11/post/12", "https://s/2018/11/post", true},
		{"https://s/2018/11/post/", "https://s/2018/11/post/", false},
		{"https://s/2018/11/post/feed/", "https://s/2018/11/post/", false},
		{"https://s/2018/11/post-2/", "https://s/2018/11/post/", false},
		{"https://s/new-slug/", "https://s/old-slug/", false},
	} {
		if got := subPage(tc.u, tc.base); got != tc.want {
			t.Errorf("subPage(%q, %q) = %v, want %v", tc.u, tc.base, got, tc.want)
		}
	}
}
