package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/nettest"
)

// TestDaemon_OffOriginDiscovery serves a sitemap and pages that list
// off-origin URLs and runs a whole index pass and fetch_live_url: nothing
// but the site is ever contacted.
func TestDaemon_OffOriginDiscovery(t *testing.T) {
	otherPort := nettest.Trap(t, "127.0.0.1:0")
	trapURL := "http://" + otherPort.Addr().String()
	var site *httptest.Server
	site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/wp-sitemap.xml":
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<sitemapindex><sitemap><loc>%s/posts.xml</loc></sitemap><sitemap><loc>%s/evil.xml</loc></sitemap></sitemapindex>`, site.URL, trapURL)
		case "/posts.xml":
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<urlset><url><loc>%s/a/</loc></url><url><loc>%s/steal/</loc></url><url><loc>http://127.0.0.2%s/b/</loc></url><url><loc>javascript:alert(1)</loc></url></urlset>`,
				site.URL, trapURL, strings.TrimPrefix(site.URL, "http://127.0.0.1"))
		case "/robots.txt":
			fmt.Fprintf(w, "Sitemap: %s/robots-sitemap.xml\n", trapURL)
		default:
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<html><body><main><h1>Page %s</h1><p>Words about gardens and sheds and fences.</p>
				<a href="%s/x/">x</a> <a href="//%s/y/">y</a> <a href="http://user@%s/z/">z</a></main></body></html>`,
				r.URL.Path, trapURL, otherPort.Addr().String(), otherPort.Addr().String())
		}
	}))
	defer site.Close()

	cfg := config.Default()
	cfg.SiteURL = site.URL
	cfg.StateDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.Crawl.RatePerSec = 500
	cfg.Schedule.Disabled = true
	d, err := Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Index(context.Background(), crawl.IndexOptions{Full: true}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{trapURL + "/", "http://user@" + otherPort.Addr().String() + "/", "file:///etc/passwd"} {
		args, _ := json.Marshal(map[string]string{"url": u})
		if _, err := d.Call(context.Background(), "fetch_live_url", args); err != nil && strings.Contains(err.Error(), "OFFORIGIN") {
			t.Errorf("fetch_live_url(%s) returned off-origin content", u)
		}
	}
	if n := otherPort.N.Load(); n != 0 {
		t.Errorf("%d connection(s) left the site during discovery, crawl and fetch_live_url", n)
	}
	urls, err := d.Store.DocumentURLs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for u := range urls {
		if !strings.HasPrefix(u, site.URL) {
			t.Errorf("indexed off-origin URL %s", u)
		}
	}
	if len(urls) == 0 {
		t.Error("nothing indexed from the site itself")
	}
}
