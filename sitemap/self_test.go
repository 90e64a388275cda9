package sitemap

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
)

// TestWalk_IndexListsItself: an SEO plugin's index that lists itself,
// under another spelling too, and a child that lists the index back, are
// each read once, and the walk still finds the child's pages.
func TestWalk_IndexListsItself(t *testing.T) {
	const idx = `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
		<sitemap><loc>http://x.test/sitemap_index.xml</loc></sitemap>
		<sitemap><loc>HTTP://X.TEST:80/sitemap_index.xml#again</loc></sitemap>
		<sitemap><loc>http://x.test/post-sitemap.xml</loc></sitemap></sitemapindex>`
	files := map[string]string{
		"http://x.test/sitemap_index.xml":          idx,
		"HTTP://X.TEST:80/sitemap_index.xml#again": idx,
		"http://x.test/post-sitemap.xml": `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
			<sitemap><loc>http://x.test/sitemap_index.xml</loc></sitemap>
			<sitemap><loc>http://x.test/post-sitemap2.xml</loc></sitemap></sitemapindex>`,
		"http://x.test/post-sitemap2.xml": `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
			<url><loc>http://x.test/a/</loc></url></urlset>`,
	}
	var reads atomic.Int32
	fetch := func(ctx context.Context, u string) (io.ReadCloser, error) {
		reads.Add(1)
		return mapFetch(files)(ctx, u)
	}
	res, err := Walk(context.Background(), fetch, []string{"http://x.test/sitemap_index.xml"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 3 {
		t.Errorf("read %d files, want 3 (each once): %v", n, res.Sitemaps)
	}
	if len(res.Entries) != 1 || res.Entries[0].URL != "http://x.test/a/" {
		t.Errorf("entries %+v, want the one page", res.Entries)
	}
	for _, e := range res.Errors {
		if strings.Contains(e.Error(), "deeper") {
			t.Errorf("the walk looped to the depth limit: %v", e)
		}
	}
}
