package sitemap

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
)

// FuzzWalk feeds arbitrary bytes as a sitemap. Property: the walk ends,
// never panics, reads each file once, and returns no more entries than
// the limits allow, each with a non-empty URL.
func FuzzWalk(f *testing.F) {
	f.Add(`<urlset><url><loc>http://x.test/a/</loc><lastmod>2026-01-02</lastmod></url></urlset>`)
	f.Add(`<sitemapindex><sitemap><loc>root</loc></sitemap><sitemap><loc>child</loc></sitemap></sitemapindex>`)
	f.Add(gz(`<urlset><url><loc>http://x.test/z/</loc></url></urlset>`))
	f.Add("\x1f\x8b\x08\x00garbage")
	f.Add(`<?xml version="1.0" encoding="ISO-8859-1"?><urlset><url><loc>http://x.test/é</loc></url></urlset>`)
	f.Add(`<html><body>not a sitemap</body></html>`)
	f.Fuzz(func(t *testing.T, body string) {
		reads := map[string]int{}
		var mu sync.Mutex // Walk reads an index's children side by side
		fetch := func(ctx context.Context, u string) (io.ReadCloser, error) {
			mu.Lock()
			reads[u]++
			mu.Unlock()
			// Every URL serves the same body: an index that names other
			// files makes a self-similar tree, or a cycle.
			return io.NopCloser(strings.NewReader(body)), nil
		}
		opt := Options{MaxDepth: 3, MaxSitemaps: 20, MaxURLs: 500, MaxBytes: 1 << 20}
		res, _ := Walk(context.Background(), fetch, []string{"root"}, opt)
		if res == nil {
			t.Fatal("nil result")
		}
		for u, n := range reads {
			if n > 1 {
				t.Fatalf("read %q %d times", u, n)
			}
		}
		if len(reads) > opt.MaxSitemaps {
			t.Fatalf("read %d files, limit %d", len(reads), opt.MaxSitemaps)
		}
		if len(res.Entries) > opt.MaxURLs {
			t.Fatalf("%d entries, limit %d", len(res.Entries), opt.MaxURLs)
		}
		for _, e := range res.Entries {
			if e.URL == "" {
				t.Fatal("entry with empty URL")
			}
		}
	})
}

// FuzzFromFeed reads arbitrary bytes as an RSS or Atom feed. Property: no
// panic, and every entry has a URL, without surrounding space.
func FuzzFromFeed(f *testing.F) {
	for _, s := range []string{
		`<rss version="2.0"><channel><item><link>http://x.test/a/</link><pubDate>Mon, 02 Jan 2026 15:04:05 +0000</pubDate></item></channel></rss>`,
		`<feed xmlns="http://www.w3.org/2005/Atom"><entry><link rel="alternate" href="http://x.test/b/"/><updated>2026-01-02T15:04:05Z</updated></entry></feed>`,
		`<feed><entry><link/></entry></feed>`,
		`<feed><entry><link rel="self" href="http://x.test/feed"/><link href=" http://x.test/c/ "/></entry></feed>`,
		`<rss><channel><item><link>  </link></item></channel></rss>`,
		`<?xml version="1.0" encoding="ISO-8859-1"?><rss><channel><item><link>http://x.test/é</link></item></channel></rss>`,
		`not xml`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, e := range FromFeed(body) {
			if e.URL == "" || strings.TrimSpace(e.URL) != e.URL {
				t.Fatalf("entry URL %q from %q", e.URL, body)
			}
		}
	})
}
