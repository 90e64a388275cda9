package crawl

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFetch_CacheBypass: with the bypass on, every request carries a
// one-off query argument, the no-cache headers and the no-cache cookie
// (never a login cookie), kept across a redirect that drops the
// argument; the page's URL and body come back without the token.
func TestFetch_CacheBypass(t *testing.T) {
	var mu sync.Mutex
	var seen []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		if r.URL.Path == "/old/" {
			http.Redirect(w, r, "/new/", http.StatusMovedPermanently) // the query is dropped
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<html><body><a href="`+r.URL.String()+`">me</a> <a href="/?`+strings.ReplaceAll(r.URL.RawQuery, "&", "&amp;")+`&amp;x=1">q</a></body></html>`)
	}))
	defer srv.Close()
	o, _ := ParseOrigin(srv.URL)
	f := NewFetcher(o, 5*time.Second, 1<<20, "t", slog.New(slog.DiscardHandler))
	f.SetCacheBypass(true)
	p, err := f.Get(context.Background(), srv.URL+"/old/?a=b", Conditional{})
	if err != nil {
		t.Fatal(err)
	}
	if p.URL != srv.URL+"/new/" {
		t.Errorf("page URL %q, want the redirect's target without the token", p.URL)
	}
	if strings.Contains(string(p.Body), FreshParam) {
		t.Errorf("the body keeps the token: %s", p.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	toks := map[string]bool{}
	for _, r := range seen {
		tok := r.URL.Query().Get(FreshParam)
		if tok == "" {
			t.Errorf("%s: no %s", r.URL, FreshParam)
		}
		toks[tok] = true
		if r.Header.Get("Cache-Control") != "no-cache" || r.Header.Get("Pragma") != "no-cache" {
			t.Errorf("%s: no-cache headers missing: %v", r.URL, r.Header)
		}
		c := r.Header.Get("Cookie")
		if !strings.Contains(c, "wordpress_no_cache=1") || strings.Contains(c, "logged_in") {
			t.Errorf("%s: cookie %q", r.URL, c)
		}
	}
	if len(seen) != 2 || len(toks) != 1 {
		t.Errorf("%d requests with %d tokens, want the redirect to keep the one token", len(seen), len(toks))
	}
	// Off, the request is the plain one.
	f.SetCacheBypass(false)
	seen = nil
	mu.Unlock()
	if _, err := f.Get(context.Background(), srv.URL+"/new/", Conditional{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(seen) != 1 || seen[0].URL.RawQuery != "" || seen[0].Header.Get("Cookie") != "" {
		t.Errorf("bypass off: request %v %v", seen[0].URL, seen[0].Header)
	}
}

// TestFetch_PinnedOrigin: a pinned fetcher connects only to the pinned
// address while the Host header stays the site's, and off-origin URLs
// stay refused.
func TestFetch_PinnedOrigin(t *testing.T) {
	var host string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host = r.Host
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<p>origin</p>")
	}))
	defer srv.Close()
	// The site's public address: a port nothing listens on.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	public := ln.Addr().String()
	ln.Close()
	o, _ := ParseOrigin("http://" + public)
	f := NewFetcher(o, 5*time.Second, 1<<20, "t", slog.New(slog.DiscardHandler))
	if _, err := f.Get(context.Background(), "http://"+public+"/", Conditional{}); err == nil {
		t.Fatal("the public address answered: the test's premise is off")
	}
	f.PinOrigin(strings.TrimPrefix(srv.URL, "http://"), "http")
	p, err := f.Get(context.Background(), "http://"+public+"/a/", Conditional{})
	if err != nil {
		t.Fatal(err)
	}
	if host != public || !strings.Contains(string(p.Body), "origin") || p.URL != "http://"+public+"/a/" {
		t.Errorf("Host %q, URL %q, body %q: want the site's Host and URL from the pinned server", host, p.URL, p.Body)
	}
	if _, err := f.Get(context.Background(), srv.URL+"/", Conditional{}); err == nil {
		t.Error("the pinned address itself was fetched as a URL: only the site's origin may be")
	}
}
