// Package origin finds the web server on this host that answers for the
// site, so the fetcher reads WordPress itself rather than a CDN, an edge
// cache or a bot wall in front of it.
//
// An address is proven when it answers GET /?askwpd_origin=NONCE, sent
// with the site's own Host header (and TLS server name), with
// HMAC-SHA256(nonce, webhook secret): only the plugin on this install
// knows the secret, so a proven address is this WordPress and not some
// other site on the same port. The proof says nothing about caches in
// between (a local Varnish forwards it too); the fetcher's cache bypass
// covers those.
package origin

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxDiscovery bounds a whole discovery.
const maxDiscovery = 4 * time.Second

// Param is the query argument the plugin answers with the proof.
const Param = "askwpd_origin"

// NoSecret is the warning's reason when there was no secret to check a
// proof with.
const NoSecret = "no webhook secret to check a proof with"

// Result is the address the fetcher dials for the site.
type Result struct {
	// Address is host:port; empty means the site's public address.
	Address string `json:"address"`
	// Scheme is what is spoken to Address: "http" to an origin behind a
	// TLS-terminating proxy, else the site's own scheme.
	Scheme string `json:"scheme,omitempty"`
	Proven bool   `json:"proven"`
	// Source says how Address was chosen: "configured", "discovered",
	// "site" (the site's URL already names this host) or "public".
	Source string `json:"source"`
	// Warning says why the fetcher is not on a proven origin.
	Warning string `json:"warning,omitempty"`
}

// Candidate is one address that may be the origin.
type Candidate struct {
	Scheme  string // "http" or "https"
	Address string // host:port
	// Configured is the config's `origin`: used even unproven, since the
	// operator named it.
	Configured bool
}

// Candidates lists the addresses worth probing for site, in order: the
// configured origin alone when one is set, else the loopback addresses
// on the ports a local web server listens on for it.
func Candidates(site *url.URL, configured string) ([]Candidate, error) {
	if configured = strings.TrimSpace(configured); configured != "" {
		u, err := url.Parse(configured)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("origin %q: want http(s)://host[:port]", configured)
		}
		return []Candidate{{Scheme: u.Scheme, Address: hostPort(u), Configured: true}}, nil
	}
	var out []Candidate
	seen := map[string]bool{}
	add := func(scheme, port string) {
		for _, h := range []string{"127.0.0.1", "::1"} {
			a := net.JoinHostPort(h, port)
			if !seen[scheme+a] {
				seen[scheme+a] = true
				out = append(out, Candidate{Scheme: scheme, Address: a})
			}
		}
	}
	// The site's own port first: a server on it is the likeliest to hold
	// the site's virtual host.
	add(site.Scheme, portOf(site))
	if site.Scheme == "https" {
		add("https", "443")
	}
	add("http", "80")
	add("http", "8080")
	return out, nil
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

func hostPort(u *url.URL) string { return net.JoinHostPort(u.Hostname(), portOf(u)) }

// Answer is the proof the plugin gives for nonce.
func Answer(nonce string, secret []byte) string {
	m := hmac.New(sha256.New, secret)
	io.WriteString(m, nonce)
	return hex.EncodeToString(m.Sum(nil))
}

// Nonce is a fresh random nonce for one probe.
func Nonce() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Prove asks c for the proof as the site would be asked, and says why
// it is not the site's origin when it is not.
func Prove(ctx context.Context, site *url.URL, c Candidate, secret []byte, timeout time.Duration) error {
	nonce := Nonce()
	client := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, c.Address)
			},
			TLSClientConfig:   &tls.Config{ServerName: site.Hostname()},
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	u := url.URL{Scheme: c.Scheme, Host: site.Host, Path: "/", RawQuery: Param + "=" + nonce}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("origin %s: %w", c.Address, err)
	}
	req.Host = site.Host
	req.Header.Set("Cache-Control", "no-cache")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("origin %s: %w", c.Address, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return fmt.Errorf("origin %s: read: %w", c.Address, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("origin %s: HTTP %d to the proof request (is the askwpd plugin active?)", c.Address, resp.StatusCode)
	}
	want := Answer(nonce, secret)
	if !hmac.Equal([]byte(strings.TrimSpace(string(body))), []byte(want)) {
		return fmt.Errorf("origin %s: answers, but not with this install's proof (another site, or the plugin is missing)", c.Address)
	}
	return nil
}

// Discover probes the candidates in order and returns the first proven
// one. With none proven it returns the configured origin, unproven, when
// one is set, and else the public address; either way with a warning.
func Discover(ctx context.Context, siteURL, configured string, secret []byte) (Result, error) {
	site, err := url.Parse(siteURL)
	if err != nil || site.Hostname() == "" {
		return Result{}, fmt.Errorf("origin: site url %q: %w", siteURL, err)
	}
	cands, err := Candidates(site, configured)
	if err != nil {
		return Result{}, err
	}
	return Among(ctx, site, cands, secret)
}

// Among is Discover over a given list of candidates.
func Among(ctx context.Context, site *url.URL, cands []Candidate, secret []byte) (Result, error) {
	// A start never waits long on servers that accept and then hang.
	ctx, cancel := context.WithTimeout(ctx, maxDiscovery)
	defer cancel()
	var errs []string
	for _, c := range cands {
		if len(secret) == 0 {
			errs = append(errs, NoSecret)
			break
		}
		if err := Prove(ctx, site, c, secret, time.Second); err != nil {
			if ctx.Err() != nil {
				errs = append(errs, "stopped looking after "+maxDiscovery.String())
				break
			}
			errs = append(errs, err.Error())
			continue
		}
		src := "discovered"
		if c.Configured {
			src = "configured"
		}
		return Result{Address: c.Address, Scheme: c.Scheme, Proven: true, Source: src}, nil
	}
	if len(cands) == 1 && cands[0].Configured {
		return Result{Address: cands[0].Address, Scheme: cands[0].Scheme, Source: "configured",
			Warning: "the configured origin did not prove it is this site: " + strings.Join(errs, "; ")}, nil
	}
	return Result{Source: "public", Warning: "no local web server proved it serves this site; fetching from the public address, " +
		"where a CDN or page cache may answer (set `origin` in the config): " + strings.Join(dedupe(errs), "; ")}, nil
}

// dedupe keeps a warning short: refused ports all read alike.
func dedupe(errs []string) []string {
	if len(errs) > 4 {
		return append(errs[:3:3], fmt.Sprintf("and %d more", len(errs)-3))
	}
	return errs
}
