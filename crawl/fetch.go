package crawl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// Fetch errors, classified so the crawler and fetch_live_url can act on
// them without looking at status codes.
var (
	ErrOffOrigin = errors.New("fetch: refused: not the site's origin")
	ErrLoginWall = errors.New("fetch: page requires login (redirects to wp-login.php)")
	ErrGone      = errors.New("fetch: page not found")
	ErrForbidden = errors.New("fetch: forbidden")
	ErrServer    = errors.New("fetch: server error")
	ErrTimeout   = errors.New("fetch: timed out")
	ErrNotHTML   = errors.New("fetch: not an HTML page")
	ErrRedirects = errors.New("fetch: too many redirects")
	// ErrThrottled is a 429: the site limits how fast it is asked.
	ErrThrottled = errors.New("fetch: throttled by the site")

	// ErrUnreachable is a connection the site refused or dropped: the
	// server is down or restarting, not the page missing.
	ErrUnreachable = errors.New("fetch: site unreachable")
)

// ErrorClass names an error for storage and metrics.
func ErrorClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrOffOrigin):
		return "off_origin"
	case errors.Is(err, ErrLoginWall):
		return "login_wall"
	case errors.Is(err, ErrGone):
		return "not_found"
	case errors.Is(err, ErrForbidden):
		return "forbidden"
	case errors.Is(err, ErrThrottled):
		return "throttled"
	case errors.Is(err, ErrServer):
		return "server_error"
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrUnreachable):
		return "unreachable"
	case errors.Is(err, ErrNotHTML):
		return "not_html"
	case errors.Is(err, ErrRedirects):
		return "redirects"
	}
	return "other"
}

// Origin is a scheme://host[:port] that fetches are confined to.
type Origin struct {
	Scheme string
	Host   string // lowercase hostname, no port
	Port   string // always set: "80" or "443" when the URL had none
}

// ParseOrigin reads the origin of a site URL.
func ParseOrigin(site string) (Origin, error) {
	u, err := url.Parse(strings.TrimSpace(site))
	if err != nil {
		return Origin{}, fmt.Errorf("site url %q: %w", site, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" {
		return Origin{}, fmt.Errorf("site url %q: want http(s)://host", site)
	}
	o := Origin{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Hostname()), Port: u.Port()}
	if o.Port == "" {
		o.Port = map[string]string{"http": "80", "https": "443"}[o.Scheme]
	}
	return o, nil
}

// String is the origin as a URL prefix.
func (o Origin) String() string {
	h := o.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if o.Port == "80" && o.Scheme == "http" || o.Port == "443" && o.Scheme == "https" {
		return o.Scheme + "://" + h
	}
	return o.Scheme + "://" + h + ":" + o.Port
}

// Same reports whether u is on this origin. Userinfo is refused outright:
// http://site@evil/ tricks read as one host and connect to another.
func (o Origin) Same(u *url.URL) bool {
	if u == nil || u.User != nil || u.Opaque != "" {
		return false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) == o.Scheme && strings.ToLower(u.Hostname()) == o.Host && port == o.Port
}

// Page is a fetched page.
type Page struct {
	URL          string // after redirects
	Status       int
	Body         []byte
	ContentType  string
	ETag         string
	LastModified string
	NotModified  bool
	Truncated    bool
	Elapsed      time.Duration
	// RetryAfter is the pause a 429 or 503 asked for (throttle.go).
	RetryAfter time.Duration
	// RobotsTag is the X-Robots-Tag header (seo.go).
	RobotsTag string
}

// Fetcher GETs pages from one origin only.
type Fetcher struct {
	Origin    Origin
	Client    *http.Client
	MaxBytes  int64
	UserAgent string
	Log       *slog.Logger

	// requests counts the requests sent to the site: cluster mode's
	// promise that a follower never fetches a page is checked on it.
	requests atomic.Int64
	// pins is the pinned origin address and the cache bypass (bypass.go).
	pins pinState
}

// Requests returns how many requests this fetcher has sent to the site.
func (f *Fetcher) Requests() int64 { return f.requests.Load() }

// NewFetcher returns a fetcher whose transport can only ever dial the
// origin's own host and port: even a redirect that slipped past the URL
// check could not connect anywhere else.
func NewFetcher(o Origin, timeout time.Duration, maxBytes int64, ua string, log *slog.Logger) *Fetcher {
	f := &Fetcher{Origin: o, MaxBytes: maxBytes, UserAgent: ua, Log: log}
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	allowed := net.JoinHostPort(o.Host, o.Port)
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would be a connection to somewhere else
		DialContext:           f.dialOrigin(dialer, allowed),
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       60 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		ForceAttemptHTTP2:     true,
	}
	f.Client = &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return ErrRedirects
			}
			if isLoginURL(req.URL) {
				return ErrLoginWall
			}
			if !o.Same(req.URL) {
				log.Warn("Refused off-origin redirect", "from", via[len(via)-1].URL.String(), "to", req.URL.String())
				return fmt.Errorf("%w: redirect to %s", ErrOffOrigin, req.URL.Redacted())
			}
			refresh(req, via)
			return nil
		},
	}
	return f
}

func isLoginURL(u *url.URL) bool {
	p := strings.ToLower(u.Path)
	return strings.HasSuffix(p, "/wp-login.php") || strings.HasPrefix(p, "/wp-admin")
}

// Conditional carries validators from a previous fetch.
type Conditional struct {
	ETag, LastModified string
}

// Get fetches one URL of the origin. A body over MaxBytes is cut at the
// limit (Truncated) rather than refused: the start of a long page is still
// worth indexing.
func (f *Fetcher) Get(ctx context.Context, rawURL string, cond Conditional) (*Page, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("fetch %q: %w", rawURL, err)
	}
	if !f.Origin.Same(u) {
		return nil, fmt.Errorf("%w: %s", ErrOffOrigin, u.Redacted())
	}
	if isLoginURL(u) {
		return nil, fmt.Errorf("%w: %s", ErrLoginWall, u.Redacted())
	}
	f.requests.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u, err)
	}
	req.Header.Set("User-Agent", f.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1")
	tok := f.shape(req)
	f.forwardedProto(req)
	if cond.ETag != "" {
		req.Header.Set("If-None-Match", cond.ETag)
	}
	if cond.LastModified != "" {
		req.Header.Set("If-Modified-Since", cond.LastModified)
	}
	start := time.Now()
	resp, err := f.Client.Do(req)
	if err != nil {
		return nil, transportError(u, err)
	}
	defer resp.Body.Close()
	p := &Page{
		URL:          unfresh(resp.Request.URL.String()),
		Status:       resp.StatusCode,
		ContentType:  resp.Header.Get("Content-Type"),
		ETag:         resp.Header.Get("ETag"),
		LastModified: resp.Header.Get("Last-Modified"),
		RetryAfter:   retryAfter(resp.StatusCode, resp.Header.Get("Retry-After"), time.Now()),
		RobotsTag:    strings.Join(resp.Header.Values("X-Robots-Tag"), ", "),
	}
	switch {
	case resp.StatusCode == http.StatusNotModified:
		p.NotModified = true
		p.Elapsed = time.Since(start)
		return p, nil
	case resp.StatusCode == 404 || resp.StatusCode == 410:
		return p, fmt.Errorf("%w: %s (%d)", ErrGone, u, resp.StatusCode)
	case resp.StatusCode == 401 || resp.StatusCode == 403:
		return p, fmt.Errorf("%w: %s (%d)", ErrForbidden, u, resp.StatusCode)
	case resp.StatusCode == http.StatusTooManyRequests:
		return p, fmt.Errorf("%w: %s (%d)", ErrThrottled, u, resp.StatusCode)
	case resp.StatusCode >= 500:
		return p, fmt.Errorf("%w: %s (%d)", ErrServer, u, resp.StatusCode)
	case resp.StatusCode != 200:
		return p, fmt.Errorf("fetch %s: unexpected status %d", u, resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(p.ContentType); p.ContentType != "" && mt != "text/html" && mt != "application/xhtml+xml" {
		return p, fmt.Errorf("%w: %s is %s", ErrNotHTML, u, mt)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.MaxBytes+1))
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
			return p, fmt.Errorf("%w: reading %s", ErrTimeout, u)
		}
		return p, fmt.Errorf("fetch %s: read body: %w", u, err)
	}
	if int64(len(body)) > f.MaxBytes {
		body, p.Truncated = cutClean(body[:f.MaxBytes]), true
	}
	p.Body = stripFresh(body, tok)
	p.Elapsed = time.Since(start)
	return p, nil
}

// transportError classifies a request that got no response, so the
// crawler can tell a site that is down from a page that is wrong.
func transportError(u *url.URL, err error) error {
	var (
		ne net.Error
		oe *net.OpError
	)
	switch {
	case errors.Is(err, ErrLoginWall), errors.Is(err, ErrOffOrigin), errors.Is(err, ErrRedirects):
		return fmt.Errorf("fetch %s: %w", u, unwrapURLError(err))
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: %s", ErrTimeout, u)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("fetch %s: %w", u, err)
	case errors.As(err, &oe), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, u, unwrapURLError(err))
	}
	return fmt.Errorf("fetch %s: %w", u, err)
}

// SiteFault reports whether err says the site itself is failing (5xx,
// 429, timeouts, refused or dropped connections) rather than one page.
func SiteFault(err error) bool {
	return errors.Is(err, ErrServer) || errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnreachable) || errors.Is(err, ErrThrottled)
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Open returns a body reader for sitemap files and robots.txt, through the
// same guard. Any content type is accepted.
func (f *Fetcher) Open(ctx context.Context, rawURL string) (io.ReadCloser, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("fetch %q: %w", rawURL, err)
	}
	if !f.Origin.Same(u) {
		return nil, fmt.Errorf("%w: %s", ErrOffOrigin, u.Redacted())
	}
	f.requests.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", f.UserAgent)
	f.shape(req)
	f.forwardedProto(req)
	resp, err := f.Client.Do(req)
	if err != nil {
		return nil, transportError(u, err)
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		switch {
		case resp.StatusCode == 404 || resp.StatusCode == 410:
			return nil, fmt.Errorf("%w: %s (%d)", ErrGone, u, resp.StatusCode)
		case resp.StatusCode == 401 || resp.StatusCode == 403:
			return nil, fmt.Errorf("%w: %s (%d)", ErrForbidden, u, resp.StatusCode)
		case resp.StatusCode >= 500:
			return nil, fmt.Errorf("%w: %s (%d)", ErrServer, u, resp.StatusCode)
		}
		return nil, fmt.Errorf("fetch %s: status %d", u, resp.StatusCode)
	}
	return resp.Body, nil
}

// cutClean shortens a body cut at the size cap back to the end of the
// last tag or line, so the parser never sees half a tag or half a
// character.
func cutClean(b []byte) []byte {
	floor := max(0, len(b)-64<<10)
	if i := bytes.LastIndexAny(b[floor:], ">\n"); i >= 0 {
		return b[:floor+i+1]
	}
	for len(b) > 0 && !utf8.Valid(b[len(b)-min(len(b), 4):]) {
		b = b[:len(b)-1]
	}
	return b
}
