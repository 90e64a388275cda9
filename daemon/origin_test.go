package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askwp/askwpd/config"
)

// trap listens where an attacker would want the crawler to go and counts
// connections. It answers like a plausible page, so a fetch that got
// there would have succeeded.
func trap(t *testing.T, addr string) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	cl := &countingListener{Listener: ln}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body><main><p>OFFORIGIN secret metadata</p></main></body></html>")
	})}
	go srv.Serve(cl)
	t.Cleanup(func() { srv.Close() })
	return cl
}

// TestFetcher_SameOriginGuard throws hostile URLs and redirects at the
// fetcher, and asserts for each that no connection is opened anywhere but
// the site: to another port, another loopback address, IPv6 loopback, or
// a "metadata" address stand-in.
func TestFetcher_SameOriginGuard(t *testing.T) {
	var siteHits atomic.Int64
	var redirectTo atomic.Value
	site := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		siteHits.Add(1)
		switch {
		case strings.HasPrefix(r.URL.Path, "/redirect"):
			http.Redirect(w, r, redirectTo.Load().(string), http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/loop"):
			http.Redirect(w, r, "/loop"+r.URL.Path, http.StatusFound)
		default:
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html><body><main><p>site page</p></main></body></html>")
		}
	}))
	site.Start()
	defer site.Close()
	_, sitePort, _ := net.SplitHostPort(site.Listener.Addr().String())

	// Traps: another port on the same address, the same port on another
	// loopback address (127.0.0.2 stands in for a link-local metadata
	// server, 169.254.169.254, which we must not touch here), and IPv6.
	otherPort := trap(t, "127.0.0.1:0")
	_, trapPort, _ := net.SplitHostPort(otherPort.Addr().String())
	otherHost := trap(t, "127.0.0.2:"+sitePort)
	traps := []*countingListener{otherPort, otherHost}
	if ln, err := net.Listen("tcp", "[::1]:"+trapPort); err == nil {
		ln.Close()
		traps = append(traps, trap(t, "[::1]:"+trapPort))
	}
	total := func() int64 {
		var n int64
		for _, tr := range traps {
			n += tr.n.Load()
		}
		return n
	}

	o, err := ParseOrigin(site.URL)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFetcher(o, 3*time.Second, 1<<20, "askwpd-test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	sitePrefix := "http://127.0.0.1:" + sitePort
	trapURL := "http://127.0.0.1:" + trapPort

	// Direct requests: each must be refused before any connection.
	direct := []string{
		trapURL + "/",                                                   // another port
		"http://127.0.0.2:" + sitePort + "/",                            // another host, same port
		"https://127.0.0.1:" + sitePort + "/",                           // another scheme
		"http://127.0.0.1:" + sitePort + "@127.0.0.1:" + trapPort + "/", // userinfo trick
		"http://user:pass@127.0.0.1:" + sitePort + "/",                  // userinfo on the site itself
		"http://2130706434:" + sitePort + "/",                           // decimal IP for 127.0.0.2
		"http://0177.0.0.1:" + trapPort + "/",                           // octal
		"http://0x7f.0.0.1:" + trapPort + "/",                           // hex
		"http://127.1:" + trapPort + "/",                                // short form
		"http://0:" + trapPort + "/",                                    // 0.0.0.0
		"http://[::1]:" + trapPort + "/",                                // IPv6 loopback
		"http://[::ffff:127.0.0.1]:" + trapPort + "/",                   // IPv4-mapped IPv6
		"http://127.0.0.1.:" + trapPort + "/",                           // trailing dot
		"HTTP://127.0.0.1:" + trapPort + "/",                            // upper-case scheme, other port
		"http://xn--lcalhost-9of:" + sitePort + "/",                     // IDN homograph of localhost (punycode)
		"http://lоcalhost:" + sitePort + "/",                            // the same homograph, Cyrillic о
		"http://metadata.google.internal/computeMetadata/v1/",           // a name for the metadata server
		"http://169.254.169.254/latest/meta-data/",                      // the metadata server itself
		"javascript:alert(1)",
		"data:text/html,<p>x</p>",
		"file:///etc/passwd",
		"ftp://127.0.0.1:" + trapPort + "/",
		`http:\\127.0.0.1:` + trapPort + `\`,
		"http://127.0.0.1:" + trapPort + "#@127.0.0.1:" + sitePort + "/",
		sitePrefix + "\r\nHost: 127.0.0.1:" + trapPort,
		sitePrefix + "/wp-login.php?redirect_to=" + trapURL, // the login page itself is never fetched
		sitePrefix + "/" + strings.Repeat("a", 100_000),     // overly long: allowed to fail, only on the site
	}
	for i, u := range direct {
		before := total()
		_, _ = f.Get(context.Background(), u, Conditional{})
		if rc, err := f.Open(context.Background(), u); err == nil {
			rc.Close()
		}
		if n := total() - before; n != 0 {
			t.Errorf("direct case %d %.80q: %d connection(s) left the site", i, u, n)
		}
	}

	// Path tricks stay on the site: they may be fetched, from the site.
	for _, u := range []string{sitePrefix + "/../../etc/passwd", sitePrefix + "//127.0.0.1:" + trapPort + "/", sitePrefix + "/%2e%2e/%2e%2e/"} {
		before := total()
		_, _ = f.Get(context.Background(), u, Conditional{})
		if n := total() - before; n != 0 {
			t.Errorf("path case %q: %d connection(s) left the site", u, n)
		}
	}

	// Redirects from the site: every hop is checked.
	redirects := []string{
		trapURL + "/",
		"http://127.0.0.2:" + sitePort + "/",
		"https://127.0.0.1:" + sitePort + "/",
		"//127.0.0.1:" + trapPort + "/",
		"http://127.0.0.1:" + sitePort + "@127.0.0.1:" + trapPort + "/",
		"http://[::1]:" + trapPort + "/",
		"http://2130706434:" + sitePort + "/",
		"/wp-login.php?redirect_to=%2F",
		"javascript:alert(1)",
		"file:///etc/passwd",
	}
	for i, to := range redirects {
		redirectTo.Store(to)
		before, hitsBefore := total(), siteHits.Load()
		_, err := f.Get(context.Background(), sitePrefix+fmt.Sprintf("/redirect%d", i), Conditional{})
		if n := total() - before; n != 0 {
			t.Errorf("redirect case %d to %q: %d connection(s) left the site", i, to, n)
		}
		if err == nil {
			t.Errorf("redirect case %d to %q: followed", i, to)
		}
		if siteHits.Load() == hitsBefore {
			t.Errorf("redirect case %d: the site was never asked", i)
		}
	}

	// A redirect loop stops after 5 hops.
	hitsBefore := siteHits.Load()
	if _, err := f.Get(context.Background(), sitePrefix+"/loop", Conditional{}); err == nil {
		t.Error("redirect loop followed to the end")
	}
	if hops := siteHits.Load() - hitsBefore; hops > 6 {
		t.Errorf("redirect loop: %d requests, want at most 6", hops)
	}
	if total() != 0 {
		t.Fatalf("%d connection(s) reached a trap", total())
	}
	// Control: the traps do count, so zero above means zero.
	for _, tr := range traps {
		resp, err := http.Get("http://" + tr.Addr().String() + "/")
		if err != nil {
			t.Fatalf("control request to trap %s: %v", tr.Addr(), err)
		}
		resp.Body.Close()
	}
	if total() != int64(len(traps)) {
		t.Errorf("control: traps counted %d connections, want %d", total(), len(traps))
	}
}

// TestDaemon_OffOriginDiscovery serves a sitemap and pages that list
// off-origin URLs and runs a whole index pass and fetch_live_url: nothing
// but the site is ever contacted.
func TestDaemon_OffOriginDiscovery(t *testing.T) {
	otherPort := trap(t, "127.0.0.1:0")
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
	if _, err := d.Index(context.Background(), IndexOptions{Full: true}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{trapURL + "/", "http://user@" + otherPort.Addr().String() + "/", "file:///etc/passwd"} {
		args, _ := json.Marshal(map[string]string{"url": u})
		if _, err := d.Call(context.Background(), "fetch_live_url", args); err != nil && strings.Contains(err.Error(), "OFFORIGIN") {
			t.Errorf("fetch_live_url(%s) returned off-origin content", u)
		}
	}
	if n := otherPort.n.Load(); n != 0 {
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
