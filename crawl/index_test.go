package crawl

import (
	"testing"
	"time"

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
