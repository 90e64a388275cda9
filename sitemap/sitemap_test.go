package sitemap

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func mapFetch(files map[string]string) Fetch {
	return func(ctx context.Context, u string) (io.ReadCloser, error) {
		s, ok := files[u]
		if !ok {
			return nil, errors.New("404")
		}
		return io.NopCloser(strings.NewReader(s)), nil
	}
}

func gz(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

func TestWalk(t *testing.T) {
	files := map[string]string{
		"s/index.xml": `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
			<sitemap><loc>s/posts.xml</loc></sitemap><sitemap><loc>s/pages.xml.gz</loc></sitemap>
			<sitemap><loc>s/users.xml</loc></sitemap><sitemap><loc>s/missing.xml</loc></sitemap>
			<sitemap><loc>s/index.xml</loc></sitemap></sitemapindex>`,
		"s/posts.xml": `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
			<url><loc> http://x.test/a/ </loc><lastmod>2026-01-02T03:04:05+00:00</lastmod></url>
			<url><loc>http://x.test/b/</loc></url></urlset>`,
		"s/pages.xml.gz": gz(`<urlset><url><loc>http://x.test/about/</loc></url><url><loc>http://x.test/a/</loc></url></urlset>`),
		"s/users.xml":    `<urlset><url><loc>http://x.test/author/admin/</loc></url></urlset>`,
	}
	res, err := Walk(context.Background(), mapFetch(files), []string{"s/index.xml"}, Options{
		Skip: func(u string) bool { return strings.Contains(u, "users") },
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range res.Entries {
		got = append(got, e.URL)
	}
	if want := "http://x.test/a/ http://x.test/b/ http://x.test/about/"; strings.Join(got, " ") != want {
		t.Errorf("urls = %v, want %s", got, want)
	}
	if res.Entries[0].LastMod.IsZero() || res.Entries[0].Sitemap != "s/posts.xml" {
		t.Errorf("entry = %+v", res.Entries[0])
	}
	if len(res.Errors) != 1 {
		t.Errorf("errors = %v, want the missing sitemap only", res.Errors)
	}
}

func TestWalk_Limits(t *testing.T) {
	// An index that nests itself ever deeper stops at MaxDepth.
	files := map[string]string{}
	for i := 0; i < 10; i++ {
		files[fmt.Sprintf("s/%d.xml", i)] = fmt.Sprintf(`<sitemapindex><sitemap><loc>s/%d.xml</loc></sitemap></sitemapindex>`, i+1)
	}
	res, _ := Walk(context.Background(), mapFetch(files), []string{"s/0.xml"}, Options{MaxDepth: 3})
	if len(res.Sitemaps) != 4 {
		t.Errorf("read %d sitemaps, want 4", len(res.Sitemaps))
	}
	// A gzip bomb is cut at MaxBytes.
	bomb := gz("<urlset>" + strings.Repeat(" ", 1<<20) + "</urlset>")
	res, _ = Walk(context.Background(), mapFetch(map[string]string{"b": bomb}), []string{"b"}, Options{MaxBytes: 1 << 16})
	if len(res.Errors) != 1 || len(res.Entries) != 0 {
		t.Errorf("gzip bomb: %+v", res)
	}
	// HTML is not a sitemap.
	res, _ = Walk(context.Background(), mapFetch(map[string]string{"h": "<html><body>hi</body></html>"}), []string{"h"}, Options{})
	if len(res.Errors) != 1 || !errors.Is(res.Errors[0], ErrNotSitemap) {
		t.Errorf("html: %v", res.Errors)
	}
}

func TestFromRobots(t *testing.T) {
	got := FromRobots([]byte("User-agent: *\nDisallow: /wp-admin/\nSitemap: http://x.test/wp-sitemap.xml\nsitemap:http://x.test/s2.xml\n"))
	if len(got) != 2 || got[0] != "http://x.test/wp-sitemap.xml" || got[1] != "http://x.test/s2.xml" {
		t.Errorf("FromRobots = %v", got)
	}
}
