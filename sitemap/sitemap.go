// Package sitemap discovers page URLs from XML sitemaps and sitemap
// indexes (WordPress core's wp-sitemap.xml and the SEO plugins'), gzipped
// or not, nested up to a depth limit, and from robots.txt Sitemap: lines.
// It does no I/O of its own: the caller passes a Fetch function, so the
// same-origin guard and the limits live in one place.
package sitemap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	parser "github.com/oxffaa/gopher-parse-sitemap"
)

// Fetch returns the body of url. The caller closes it.
type Fetch func(ctx context.Context, url string) (io.ReadCloser, error)

// Entry is one page URL found in a sitemap.
type Entry struct {
	URL     string
	LastMod time.Time
	// Sitemap is the sitemap file that listed it.
	Sitemap string
}

// Options bound the walk.
type Options struct {
	MaxDepth    int   // nested index levels followed; default 4
	MaxSitemaps int   // sitemap files read; default 500
	MaxURLs     int   // entries returned; default 200,000
	MaxBytes    int64 // decompressed bytes read per file; default 50 MiB
	// Skip, when set, is asked about every nested sitemap URL before it is
	// fetched; returning true skips it (e.g. the users sitemap).
	Skip func(sitemapURL string) bool
	// Concurrency is how many files are fetched at once; default 4.
	Concurrency int
}

func (o *Options) defaults() {
	if o.MaxDepth <= 0 {
		o.MaxDepth = 4
	}
	if o.MaxSitemaps <= 0 {
		o.MaxSitemaps = 500
	}
	if o.MaxURLs <= 0 {
		o.MaxURLs = 200_000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 50 << 20
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
}

// Result is what a walk found.
type Result struct {
	Entries []Entry
	// Sitemaps lists the sitemap files read; Errors the ones that failed,
	// which do not stop the walk.
	Sitemaps []string
	Errors   []error
}

// ErrNotSitemap is returned for a document whose root is neither urlset
// nor sitemapindex.
var ErrNotSitemap = errors.New("sitemap: not a sitemap")

// Walk reads the sitemaps at roots and every index they nest, level by
// level, each file once. Files of one level are fetched Concurrency at a
// time; their entries are taken in the order the indexes list them.
func Walk(ctx context.Context, fetch Fetch, roots []string, opt Options) (*Result, error) {
	opt.defaults()
	res := &Result{}
	seen := map[string]bool{}
	urls := map[string]bool{}
	level := roots
	for depth := 0; len(level) > 0 && ctx.Err() == nil; depth++ {
		var todo []string
		for _, u := range level {
			if k := fileKey(u); !seen[k] && len(res.Sitemaps)+len(todo) < opt.MaxSitemaps {
				seen[k] = true
				todo = append(todo, u)
			}
		}
		type file struct {
			kind     string
			entries  []Entry
			children []string
			err      error
		}
		files := make([]file, len(todo))
		sem := make(chan struct{}, opt.Concurrency)
		var wg sync.WaitGroup
		for i, u := range todo {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				f := &files[i]
				f.kind, f.entries, f.children, f.err = read(ctx, fetch, u, opt.MaxBytes)
			}()
		}
		wg.Wait()
		var next []string
		for i, f := range files {
			u := todo[i]
			if f.err != nil {
				res.Errors = append(res.Errors, fmt.Errorf("sitemap %s: %w", u, f.err))
				continue
			}
			res.Sitemaps = append(res.Sitemaps, u)
			if f.kind == "urlset" {
				for _, e := range f.entries {
					if len(res.Entries) >= opt.MaxURLs {
						break
					}
					if e.URL == "" || urls[e.URL] {
						continue
					}
					urls[e.URL] = true
					e.Sitemap = u
					res.Entries = append(res.Entries, e)
				}
				continue
			}
			if depth >= opt.MaxDepth {
				res.Errors = append(res.Errors, fmt.Errorf("sitemap %s: nested deeper than %d levels, not followed", u, opt.MaxDepth))
				continue
			}
			for _, c := range f.children {
				if opt.Skip != nil && opt.Skip(c) {
					continue
				}
				next = append(next, c)
			}
		}
		level = next
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
}

// read fetches one sitemap file and parses it according to its root
// element: gopher-parse-sitemap's Parse silently returns nothing for an
// index, so the root decides which parser runs.
func read(ctx context.Context, fetch Fetch, u string, maxBytes int64) (kind string, entries []Entry, children []string, err error) {
	rc, err := fetch(ctx, u)
	if err != nil {
		return "", nil, nil, err
	}
	defer rc.Close()
	br := bufio.NewReader(rc)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return "", nil, nil, fmt.Errorf("gunzip: %w", err)
		}
		defer zr.Close()
		r = zr
	}
	// Read at most maxBytes decompressed: a gzip bomb stops here.
	body, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return "", nil, nil, fmt.Errorf("read: %w", err)
	}
	if int64(len(body)) > maxBytes {
		return "", nil, nil, fmt.Errorf("larger than %d bytes once decompressed", maxBytes)
	}
	kind, err = rootElement(body)
	if err != nil {
		return "", nil, nil, err
	}
	switch kind {
	case "urlset":
		err = parser.Parse(bytes.NewReader(body), func(e parser.Entry) error {
			en := Entry{URL: strings.TrimSpace(e.GetLocation())}
			if t := e.GetLastModified(); t != nil {
				en.LastMod = t.UTC()
			}
			entries = append(entries, en)
			return nil
		})
	case "sitemapindex":
		err = parser.ParseIndex(bytes.NewReader(body), func(e parser.IndexEntry) error {
			if loc := strings.TrimSpace(e.GetLocation()); loc != "" {
				children = append(children, loc)
			}
			return nil
		})
	}
	if err != nil {
		return kind, entries, children, fmt.Errorf("parse: %w", err)
	}
	return kind, entries, children, nil
}

func rootElement(body []byte) (string, error) {
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = false
	for {
		tok, err := d.Token()
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrNotSitemap, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "urlset", "sitemapindex":
				return se.Name.Local, nil
			}
			return "", fmt.Errorf("%w: root element <%s>", ErrNotSitemap, se.Name.Local)
		}
	}
}

// FromRobots returns the Sitemap: URLs listed in a robots.txt body.
func FromRobots(body []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), "sitemap") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// fileKey names a sitemap file for the walk's each-file-once rule, so an
// index that lists itself (or a child that lists its index back) under
// another spelling of its URL (host case, default port, a fragment) is
// not read again: an SEO plugin's index listing itself ends the walk
// rather than looping to the depth limit.
func fileKey(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return raw
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	u.Host = strings.TrimSuffix(strings.TrimSuffix(u.Host, ":80"), ":443")
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}
