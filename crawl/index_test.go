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
		{"/%postname%/", &wp.Post{ID: 7, Type: "page", Name: "about", Date: post.Date}, ""},
		{"/%postname%/", &wp.Post{ID: 8, Type: "post", Date: post.Date}, ""},
		{"/%year%/%postname%/", &wp.Post{ID: 9, Type: "post", Name: "x"}, ""},
	} {
		c.structure.Store(tc.structure)
		if got := c.permalink(tc.post); got != tc.want {
			t.Errorf("%q, post %d: %q, want %q", tc.structure, tc.post.ID, got, tc.want)
		}
		want := tc.want
		if want == "" {
			want = c.postURL(tc.post.ID, tc.post)
		}
		if got := c.postAddress(tc.post.ID, tc.post); got != want {
			t.Errorf("%q, post %d: postAddress %q, want %q", tc.structure, tc.post.ID, got, want)
		}
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
