package crawl

import (
	"context"
	"crypto/tls"
	"errors"
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

	"github.com/askwp/askwpd/internal/nettest"
	"github.com/askwp/askwpd/internal/wptest"
)

func listen(t *testing.T) *nettest.CountingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &nettest.CountingListener{Listener: ln}
}

// TestFetch_NeverLeavesOrigin redirects to another host, another port and
// another scheme, directly and after same-origin hops, and counts the
// connections every other listener receives: none.
func TestFetch_NeverLeavesOrigin(t *testing.T) {
	originLn, otherLn, tlsLn := listen(t), listen(t), listen(t)
	var otherHits atomic.Int64
	other := &httptest.Server{Listener: otherLn, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>elsewhere</body></html>")
	})}}
	other.Start()
	defer other.Close()
	tlsSrv := &httptest.Server{Listener: tlsLn, Config: &http.Server{Handler: other.Config.Handler}}
	tlsSrv.StartTLS()
	defer tlsSrv.Close()

	originPort := originLn.Addr().(*net.TCPAddr).Port
	otherPort := otherLn.Addr().(*net.TCPAddr).Port
	tlsPort := tlsLn.Addr().(*net.TCPAddr).Port
	targets := map[string]string{
		"another host":             fmt.Sprintf("http://localhost:%d/x", originPort),
		"another port":             fmt.Sprintf("http://127.0.0.1:%d/x", otherPort),
		"another host and port":    fmt.Sprintf("http://localhost:%d/x", otherPort),
		"another scheme":           fmt.Sprintf("https://127.0.0.1:%d/x", originPort),
		"another scheme and port":  fmt.Sprintf("https://127.0.0.1:%d/x", tlsPort),
		"userinfo trick":           fmt.Sprintf("http://127.0.0.1:%d@localhost:%d/x", originPort, otherPort),
		"protocol-relative":        fmt.Sprintf("//localhost:%d/x", otherPort),
		"an IPv6 loopback address": fmt.Sprintf("http://[::1]:%d/x", originPort),
	}
	var originHits atomic.Int64
	origin := &httptest.Server{Listener: originLn, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		originHits.Add(1)
		switch {
		case strings.HasPrefix(r.URL.Path, "/to/"):
			name := strings.TrimPrefix(r.URL.Path, "/to/")
			http.Redirect(w, r, targets[name], http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/hop/"):
			// Two same-origin hops, then off-origin.
			var n int
			var name string
			fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/hop/"), "%d", &n)
			name = r.URL.Query().Get("to")
			if n < 2 {
				http.Redirect(w, r, fmt.Sprintf("/hop/%d?to=%s", n+1, strings.ReplaceAll(name, " ", "+")), http.StatusMovedPermanently)
				return
			}
			http.Redirect(w, r, targets[name], http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/loop/"):
			var n int
			fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/loop/"), "%d", &n)
			http.Redirect(w, r, fmt.Sprintf("/loop/%d", n+1), http.StatusFound)
		default:
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html><body>home</body></html>")
		}
	})}}
	origin.Config.SetKeepAlivesEnabled(false)
	origin.Start()
	defer origin.Close()

	o, err := ParseOrigin(origin.URL)
	if err != nil {
		t.Fatal(err)
	}
	logs := &wptest.SyncBuffer{}
	f := NewFetcher(o, 5*time.Second, 1<<20, "askwpd-test", slog.New(slog.NewTextHandler(logs, nil)))
	f.Client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // would a TLS dial succeed, it would be counted
	ctx := context.Background()

	for name := range targets {
		for _, path := range []string{"/to/" + name, "/hop/0?to=" + strings.ReplaceAll(name, " ", "+")} {
			before := originLn.N.Load()
			hitsBefore := originHits.Load()
			_, err := f.Get(ctx, origin.URL+path, Conditional{})
			if !errors.Is(err, ErrOffOrigin) {
				t.Errorf("%s via %s: err = %v, want ErrOffOrigin", name, path, err)
			}
			// Every connection the origin saw carried one of our own
			// same-origin requests: no TLS dial, no other-host dial.
			if conns, hits := originLn.N.Load()-before, originHits.Load()-hitsBefore; conns != hits {
				t.Errorf("%s via %s: origin saw %d connections for %d requests", name, path, conns, hits)
			}
		}
	}
	if n := otherLn.N.Load() + tlsLn.N.Load(); n != 0 {
		t.Errorf("other listeners saw %d connections, want 0", n)
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("other servers answered %d requests", n)
	}
	if !strings.Contains(logs.String(), "Refused off-origin redirect") {
		t.Error("refusals are not logged")
	}
	// Direct requests off-origin are refused before any dial, too.
	for name, u := range targets {
		if _, err := f.Get(ctx, u, Conditional{}); !errors.Is(err, ErrOffOrigin) && !strings.HasPrefix(u, "//") {
			t.Errorf("direct %s: err = %v, want ErrOffOrigin", name, err)
		}
		if _, err := f.Open(ctx, u); err == nil {
			t.Errorf("Open %s succeeded", name)
		}
	}
	if n := otherLn.N.Load() + tlsLn.N.Load(); n != 0 {
		t.Errorf("other listeners saw %d connections after direct requests", n)
	}
	// More than five hops, all same-origin: refused as a loop.
	if _, err := f.Get(ctx, origin.URL+"/loop/0", Conditional{}); !errors.Is(err, ErrRedirects) {
		t.Errorf("redirect loop: err = %v, want ErrRedirects", err)
	}
}

// TestFetch_Limits checks the body cap, the error classes and the
// retry decision a crawl makes from them.
func TestFetch_Limits(t *testing.T) {
	big := strings.Repeat("<p>"+strings.Repeat("é", 40)+"</p>\n", 200_000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, "<html><body>"+big+"</body></html>")
		case "/404":
			http.NotFound(w, r)
		case "/410":
			w.WriteHeader(410)
		case "/403":
			w.WriteHeader(403)
		case "/500":
			w.WriteHeader(503)
		case "/slow":
			// Simulates a site slower than the short fetcher's timeout; it
			// ends as soon as the fetcher gives up, so Close does not wait.
			select {
			case <-time.After(1500 * time.Millisecond):
			case <-r.Context().Done():
			}
		case "/pdf":
			w.Header().Set("Content-Type", "application/pdf")
			io.WriteString(w, "%PDF-1.4")
		case "/etag":
			if r.Header.Get("If-None-Match") == `"v1"` {
				w.WriteHeader(304)
				return
			}
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html><body>tagged</body></html>")
		}
	}))
	defer srv.Close()
	o, _ := ParseOrigin(srv.URL)
	f := NewFetcher(o, 20*time.Second, 5<<20, "askwpd-test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	short := NewFetcher(o, 500*time.Millisecond, 5<<20, "askwpd-test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()

	p, err := f.Get(ctx, srv.URL+"/big", Conditional{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Truncated || len(p.Body) > 5<<20 || len(p.Body) < 5<<20-64<<10 {
		t.Errorf("big page: truncated=%v len=%d, want cut just under 5 MiB", p.Truncated, len(p.Body))
	}
	if !strings.HasSuffix(string(p.Body), ">") && !strings.HasSuffix(string(p.Body), "\n") {
		t.Errorf("big page cut mid-tag: ...%q", p.Body[len(p.Body)-20:])
	}
	for path, want := range map[string]string{"/404": "not_found", "/410": "not_found", "/403": "forbidden",
		"/500": "server_error", "/slow": "timeout", "/pdf": "not_html"} {
		ff := f
		if path == "/slow" {
			ff = short
		}
		_, err := ff.Get(ctx, srv.URL+path, Conditional{})
		if got := ErrorClass(err); got != want {
			t.Errorf("%s: class %q (%v), want %q", path, got, err, want)
		}
	}
	p, err = f.Get(ctx, srv.URL+"/etag", Conditional{})
	if err != nil || p.ETag != `"v1"` {
		t.Fatalf("etag: %+v %v", p, err)
	}
	p, err = f.Get(ctx, srv.URL+"/etag", Conditional{ETag: p.ETag})
	if err != nil || !p.NotModified {
		t.Fatalf("conditional GET: %+v %v, want 304", p, err)
	}
	if b1, b2 := backoff(1), backoff(2); b1 <= 0 || b2 <= b1 || backoff(30) > 6*time.Hour {
		t.Errorf("backoff: %v %v %v", b1, b2, backoff(30))
	}
}

func TestCanon(t *testing.T) {
	c := &Crawler{}
	c.Site.URL = "http://example.org"
	c.Site.Origin, _ = ParseOrigin(c.Site.URL)
	c.structure.Store("/%year%/%postname%/")
	for in, want := range map[string]string{
		"HTTP://Example.ORG:80/a/b?utm_source=x&fbclid=1#top": "http://example.org/a/b/",
		"http://example.org/a/b/?gclid=2":                     "http://example.org/a/b/",
		"http://example.org/file.pdf":                         "http://example.org/file.pdf",
		"http://example.org/?p=12&utm_medium=mail":            "http://example.org/?p=12",
		"http://example.org":                                  "http://example.org/",
		"http://example.org/a?b=1":                            "http://example.org/a?b=1",
	} {
		if got := c.canon(in); got != want {
			t.Errorf("canon(%q) = %q, want %q", in, got, want)
		}
	}
	c.structure.Store("/%year%/%postname%")
	if got := c.canon("http://example.org/a/b/"); got != "http://example.org/a/b" {
		t.Errorf("no-slash convention: %q", got)
	}
	if got := c.resolve("/x/"); got != "http://example.org/x" {
		t.Errorf("resolve = %q", got)
	}
	if got := c.resolve("https://example.org/x"); got != "" {
		t.Errorf("resolve of another scheme = %q, want refused", got)
	}
}

// TestBreaker: the breaker trips once, after limit failures in a row; a
// page that answers, or is merely missing, starts the count again.
func TestBreaker(t *testing.T) {
	b := &breaker{limit: 3}
	fault := fmt.Errorf("%w: x", ErrServer)
	gone := fmt.Errorf("%w: x", ErrGone)
	seq := []struct {
		err  error
		trip bool
	}{{fault, false}, {fault, false}, {nil, false}, {fault, false}, {gone, false}, {fault, false}, {fault, false}, {fault, true}, {fault, false}}
	for i, s := range seq {
		if got := b.observe(s.err); got != s.trip {
			t.Errorf("step %d (%v): trip=%v, want %v", i, s.err, got, s.trip)
		}
	}
	if n, last := b.tripped(); last == nil || n != 4 || b.faults() != 7 {
		t.Errorf("breaker after the sequence: run %d, last %v, faults %d; want 4, set, 7", n, last, b.faults())
	}
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
	otherPort := nettest.Trap(t, "127.0.0.1:0")
	_, trapPort, _ := net.SplitHostPort(otherPort.Addr().String())
	otherHost := nettest.Trap(t, "127.0.0.2:"+sitePort)
	traps := []*nettest.CountingListener{otherPort, otherHost}
	if ln, err := net.Listen("tcp", "[::1]:"+trapPort); err == nil {
		ln.Close()
		traps = append(traps, nettest.Trap(t, "[::1]:"+trapPort))
	}
	total := func() int64 {
		var n int64
		for _, tr := range traps {
			n += tr.N.Load()
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

// failingSite answers every request as a site failing as a whole does:
// 500, a hang until the client gives up, or a reset connection, by mode.
type failingSite struct {
	srv     *httptest.Server
	mode    atomic.Int32
	closing chan struct{}
}

const (
	site500 int32 = iota + 1
	siteHang
	siteRefuse
)

func newFailingSite(t *testing.T) *failingSite {
	f := &failingSite{closing: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch f.mode.Load() {
		case site500:
			http.Error(w, "Error establishing a database connection", http.StatusInternalServerError)
		case siteHang:
			select {
			case <-r.Context().Done():
			case <-f.closing:
			}
		case siteRefuse:
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = c.(*net.TCPConn).SetLinger(0)
				_ = c.Close()
			}
		}
	}))
	t.Cleanup(func() {
		close(f.closing) // frees hanging handlers, which Close waits for
		f.srv.Close()
	})
	return f
}

// TestFetch_ErrorClasses: a site failing as a whole is told apart
// from a page that is wrong, by Get (pages) and Open (sitemaps, robots,
// feed) alike, and only those failures count towards stopping a pass.
func TestFetch_ErrorClasses(t *testing.T) {
	sp := newFailingSite(t)
	o, err := ParseOrigin(sp.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFetcher(o, 300*time.Millisecond, 1<<20, "askwpd-test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	for _, tc := range []struct {
		mode int32
		want string
	}{{site500, "server_error"}, {siteHang, "timeout"}, {siteRefuse, "unreachable"}} {
		sp.mode.Store(tc.mode)
		_, gerr := f.Get(ctx, sp.srv.URL+"/a-page/", Conditional{})
		rc, oerr := f.Open(ctx, sp.srv.URL+"/wp-sitemap.xml")
		if rc != nil {
			rc.Close()
		}
		for what, err := range map[string]error{"Get": gerr, "Open": oerr} {
			if got := ErrorClass(err); got != tc.want || !SiteFault(err) {
				t.Errorf("%s with the site in mode %d: class %q (%v), want %q and a site fault", what, tc.mode, got, err, tc.want)
			}
		}
	}

	// A closed port is unreachable too.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	co, _ := ParseOrigin(closed)
	cf := NewFetcher(co, time.Second, 1<<20, "askwpd-test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := cf.Get(ctx, closed+"/", Conditional{}); ErrorClass(err) != "unreachable" {
		t.Errorf("closed port: class %q (%v), want unreachable", ErrorClass(err), err)
	}
}
