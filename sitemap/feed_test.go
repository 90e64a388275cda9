package sitemap

import (
	"reflect"
	"testing"
)

func TestFromFeed(t *testing.T) {
	rss := `<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>S</title><link>http://s/</link>
<item><title>A</title><link>http://s/2026/01/02/a/</link><pubDate>Fri, 02 Jan 2026 10:00:00 +0000</pubDate></item>
<item><title>B</title><link> http://s/b/ </link></item></channel></rss>`
	got := FromFeed([]byte(rss))
	if len(got) != 2 || got[0].URL != "http://s/2026/01/02/a/" || got[0].LastMod.IsZero() || got[1].URL != "http://s/b/" {
		t.Fatalf("rss: %+v", got)
	}
	atom := `<feed xmlns="http://www.w3.org/2005/Atom"><entry><link rel="alternate" href="http://s/c/"/><updated>2026-01-02T10:00:00Z</updated></entry></feed>`
	if got := FromFeed([]byte(atom)); len(got) != 1 || got[0].URL != "http://s/c/" || got[0].LastMod.IsZero() {
		t.Fatalf("atom: %+v", got)
	}
	// An empty <link/> names no page (found by FuzzFromFeed); the
	// entry's next link does.
	atom = `<feed><entry><link/><link href="http://s/d/"/></entry><entry><link href=""/></entry></feed>`
	if got := FromFeed([]byte(atom)); len(got) != 1 || got[0].URL != "http://s/d/" {
		t.Fatalf("atom with empty links: %+v", got)
	}
	if got := FromFeed([]byte("<html>not a feed")); len(got) != 0 {
		t.Fatalf("html: %+v", got)
	}
}

func TestPostTypes(t *testing.T) {
	got := PostTypes([]string{
		"http://s/wp-sitemap.xml",
		"http://s/wp-sitemap-posts-post-1.xml",
		"http://s/wp-sitemap-posts-page-1.xml",
		"http://s/wp-sitemap-posts-book_review-2.xml",
		"http://s/wp-sitemap-taxonomies-category-1.xml",
		"http://s/sitemap_index.xml",
		"http://s/product-sitemap.xml",
		"http://s/category-sitemap.xml",
		"http://s/post-sitemap2.xml",
	})
	want := []string{"post", "page", "book_review", "product"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PostTypes = %v, want %v", got, want)
	}
}
