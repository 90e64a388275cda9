package crawl

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
)

// FreshParam is the query argument that makes each fetch a URL no page
// cache holds. It is stripped from URLs (Canonical) and bodies before
// anything is stored.
const FreshParam = "askwpd_fresh"

// bypassCookie is the cookie WordPress page caches skip on by
// convention: nginx fastcgi_cache and Varnish configs for WordPress list
// wordpress_no_cache beside the login cookies, and caching plugins set
// it themselves. It logs nobody in.
const bypassCookie = "wordpress_no_cache=1"

// pin is where the fetcher connects for its origin: the web server on
// this host that proved it serves the site (package origin).
type pin struct {
	address string // host:port
	// plain is set when the origin speaks HTTP for an https site (TLS
	// ends in front of it): the request goes out as http with the site's
	// Host and X-Forwarded-Proto: https.
	plain bool
}

// pinState holds the fetcher's pin and bypass switch; the zero value
// dials the public address and shapes no request.
type pinState struct {
	p      atomic.Pointer[pin]
	bypass atomic.Bool
}

// PinOrigin makes address (host:port) the only address the fetcher
// dials, in place of the site's public one, keeping the site's Host
// header and TLS server name. scheme is what address speaks: "http" for
// an https site is an origin behind a TLS-terminating proxy, spoken to in
// plain HTTP/1.1 with X-Forwarded-Proto: https. An empty address dials
// the public address again. It is called before the first fetch.
func (f *Fetcher) PinOrigin(address, scheme string) {
	if address == "" {
		f.pins.p.Store(nil)
		return
	}
	p := &pin{address: address, plain: scheme == "http" && f.Origin.Scheme == "https"}
	f.pins.p.Store(p)
	if tr, ok := f.Client.Transport.(*http.Transport); ok && p.plain {
		// The transport takes this conn as past its TLS handshake and
		// speaks HTTP/1.1 on it: the request keeps its https URL (and so
		// the site's links and redirects) while the wire is plain.
		dial := tr.DialContext
		tr.DialTLSContext = dial
	}
}

// forwardedProto marks a request to a plain-HTTP origin of an https
// site, so WordPress behind it knows the visitor's scheme.
func (f *Fetcher) forwardedProto(req *http.Request) {
	if p := f.pins.p.Load(); p != nil && p.plain {
		req.Header.Set("X-Forwarded-Proto", "https")
	}
}

// PinnedOrigin is the pinned address, "" when the public one is dialed.
func (f *Fetcher) PinnedOrigin() string {
	if p := f.pins.p.Load(); p != nil {
		return p.address
	}
	return ""
}

// SetCacheBypass turns on requests that page caches pass to PHP.
func (f *Fetcher) SetCacheBypass(on bool) { f.pins.bypass.Store(on) }

// CacheBypass says whether requests bypass page caches.
func (f *Fetcher) CacheBypass() bool { return f.pins.bypass.Load() }

// dialTarget is the address to connect to for addr, the origin's public
// host:port.
func (f *Fetcher) dialTarget(addr string) string {
	if p := f.pins.p.Load(); p != nil {
		return p.address
	}
	return addr
}

func newFreshToken() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// shape makes req one a page cache passes to PHP, when the bypass is on,
// and returns the token it added ("" when off): a URL no cache holds, the
// no-cache request headers, and the no-cache cookie.
func (f *Fetcher) shape(req *http.Request) string {
	if !f.CacheBypass() {
		return ""
	}
	tok := newFreshToken()
	req.URL = withFresh(req.URL, tok)
	req.Header.Set("Cache-Control", "no-cache")
	req.Header.Set("Pragma", "no-cache")
	req.Header.Add("Cookie", bypassCookie)
	return tok
}

func withFresh(u *url.URL, tok string) *url.URL {
	c := *u
	arg := FreshParam + "=" + tok
	if c.RawQuery == "" {
		c.RawQuery = arg
	} else {
		c.RawQuery += "&" + arg
	}
	return &c
}

// refresh keeps the bypass on a same-origin redirect whose target dropped
// the token (a redirect to the permalink may rebuild the query).
func refresh(req *http.Request, via []*http.Request) {
	tok := via[0].URL.Query().Get(FreshParam)
	if tok != "" && req.URL.Query().Get(FreshParam) == "" {
		req.URL = withFresh(req.URL, tok)
	}
}

// unfresh is a fetched URL without the bypass token.
func unfresh(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" || !strings.Contains(u.RawQuery, FreshParam) {
		return raw
	}
	q := u.Query()
	q.Del(FreshParam)
	u.RawQuery = q.Encode()
	return u.String()
}

// stripFresh removes the token from a body that echoed the request's
// URL (a comment form's redirect_to, a theme's share links), in each
// spelling a page writes it, so what is stored is what a visitor sees.
func stripFresh(body []byte, tok string) []byte {
	if tok == "" || !bytes.Contains(body, []byte(tok)) {
		return body
	}
	for _, pair := range [][2]string{
		{"?" + FreshParam + "=" + tok + "&amp;", "?"},
		{"?" + FreshParam + "=" + tok + "&", "?"},
		{"&amp;" + FreshParam + "=" + tok, ""},
		{"&#038;" + FreshParam + "=" + tok, ""},
		{"&" + FreshParam + "=" + tok, ""},
		{"?" + FreshParam + "=" + tok, ""},
		{"%3F" + FreshParam + "%3D" + tok + "%26", "%3F"},
		{"%3F" + FreshParam + "%3D" + tok, ""},
		{"%26" + FreshParam + "%3D" + tok, ""},
		{tok, ""},
	} {
		body = bytes.ReplaceAll(body, []byte(pair[0]), []byte(pair[1]))
	}
	return body
}

// dialOrigin is the fetcher's dial: the origin's host:port only, sent to
// the pinned address when there is one.
func (f *Fetcher) dialOrigin(dialer *net.Dialer, allowed string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !strings.EqualFold(addr, allowed) {
			return nil, fmt.Errorf("%w: dial %s", ErrOffOrigin, addr)
		}
		return dialer.DialContext(ctx, network, f.dialTarget(addr))
	}
}
