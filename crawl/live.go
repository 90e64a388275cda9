package crawl

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/store"
)

// Live is what FetchNow made of one page.
type Live struct {
	// Status is the crawler's outcome: indexed, unchanged, duplicate,
	// gone, private, skipped or error.
	Status string
	// URL is the canonical URL the page was indexed under.
	URL string
	// Err is the failure behind an error status.
	Err error
	// Truncated is true when the page was larger than the fetch limit and
	// only its beginning was indexed.
	Truncated bool
	// ErrorClass and HTTPStatus are the fetch's, as recorded.
	ErrorClass string
	HTTPStatus int
}

// FetchNow fetches one page live and indexes it through the crawler's own
// per-URL path (private-content guard included), recording the fetch in
// the frontier as a pass would. via names the caller in the page's
// sources.
func (c *Crawler) FetchNow(ctx context.Context, u, via string) Live {
	if pu, err := url.Parse(u); err != nil || !c.Site.Owns(pu) {
		// Another site of the network, on the same origin, is not this one's.
		return Live{Status: "error", Err: fmt.Errorf("%w: %s is not a page of %s", ErrOffOrigin, u, c.Site.URL), ErrorClass: "off_origin"}
	}
	if err := c.Limiter.Wait(ctx); err != nil {
		return Live{Status: "error", Err: err, ErrorClass: "timeout"}
	}
	out, rec := c.indexURL(ctx, u, []string{via}, nil)
	wctx := context.WithoutCancel(ctx)
	// Running out of the expansion's time is not the page's fault.
	if out.status != "error" || ctx.Err() == nil {
		if err := c.Store.RecordFetch(wctx, u, rec); err != nil {
			c.Log.Error("Unable to record fetch", "url", u, "error", err)
		}
		if out.url != "" && out.url != u {
			rec2 := rec
			rec2.Status = out.status
			_ = c.Store.RecordFetch(wctx, out.url, rec2)
		}
	}
	return Live{Status: out.status, URL: out.url, Err: out.err, Truncated: out.truncated,
		ErrorClass: rec.ErrorClass, HTTPStatus: rec.HTTPStatus}
}

// Expandable filters links to pages worth fetching: this origin, not the
// admin or login, not feeds, files or listings.
func (c *Crawler) Expandable(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || !c.Site.Owns(u) || isLoginURL(u) {
		return false
	}
	p := strings.ToLower(u.Path)
	if strings.HasPrefix(p, "/wp-json") || strings.HasPrefix(p, "/wp-content") || strings.HasPrefix(p, "/wp-includes") ||
		strings.Contains(p, "/feed") || strings.HasSuffix(p, ".xml") || strings.HasSuffix(p, ".php") && !strings.HasSuffix(p, "/index.php") {
		return false
	}
	switch path.Ext(p) {
	case "", ".html", ".htm":
	default:
		return false
	}
	qv := u.Query()
	for _, k := range []string{"s", "replytocom", "feed", "cat", "tag", "author", "paged"} {
		if qv.Has(k) {
			return false
		}
	}
	for _, seg := range []string{"/category/", "/tag/", "/author/", "/page/"} {
		if strings.Contains(p, seg) {
			return false
		}
	}
	return p != "/" || u.RawQuery != ""
}

// saveLinks stores a freshly indexed page's same-origin links, for
// selective expansion. A failure costs only expansion candidates.
func (c *Crawler) saveLinks(ctx context.Context, docID int64, self string, links []extract.Link) {
	out := make([]store.Link, 0, len(links))
	for _, l := range links {
		cu := Canonical(l.URL)
		if cu == "" || cu == self {
			continue
		}
		u, err := url.Parse(cu)
		if err != nil || !c.Site.Owns(u) {
			continue
		}
		text := strings.Join(strings.Fields(l.Text), " ")
		if r := []rune(text); len(r) > 200 {
			text = string(r[:200])
		}
		out = append(out, store.Link{URL: cu, Text: text})
	}
	if err := c.Store.PutLinks(ctx, docID, out); err != nil {
		c.Log.Warn("Unable to store links", "url", self, "error", err)
	}
}
