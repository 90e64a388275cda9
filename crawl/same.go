package crawl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"

	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/wp"
)

// bodyHash is the hash a fetch records for a page indexed from body, or
// "" when the crawler has no build key.
func (c *Crawler) bodyHash(body []byte) string {
	if c.BuildKey == "" {
		return ""
	}
	h := sha256.New()
	io.WriteString(h, c.BuildKey)
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// process is afterFetch for a URL whose frontier row, t, may say it was
// indexed from the same body: then the page is marked unchanged without
// being extracted again (sameBody). t is nil for a URL with no row. The
// result carries the body's hash when the page was indexed at u.
func (c *Crawler) process(ctx context.Context, u string, t *store.URLState, page *Page, err error, sources []string, public map[int64]*wp.Post) (outcome, store.URLResult) {
	var sum string
	if err == nil && !page.NotModified {
		sum = c.bodyHash(page.Body)
		if t != nil {
			if out, rec, ok := c.sameBody(ctx, public, t, page, sum); ok {
				return out, rec
			}
		}
	}
	out, rec := c.afterFetch(ctx, u, page, err, sources, public)
	switch {
	case err == nil && page.NotModified && t != nil:
		rec.BodyHash = t.BodyHash
	case (out.status == "indexed" || out.status == "unchanged") && out.url == u && !out.listing:
		rec.BodyHash = sum
	}
	return out, rec
}

// sameBody marks a frontier URL unchanged, without extracting it again,
// when its body is the one it was last indexed from, and says whether it
// did; the caller then records the fetch. The same bytes extracted by
// the same build give the same document, so a full pass skips them too:
// it is the fetch, not a validator, that says they are the same. It
// keeps to where extracting would only have found what the store holds:
// a page whose document is at its own URL, not a listing (whose links the
// pass follows), and, where the database is read, a post it still
// confirms public, with the dates and type the document has.
func (c *Crawler) sameBody(ctx context.Context, public map[int64]*wp.Post, t *store.URLState, page *Page, sum string) (outcome, store.URLResult, bool) {
	if sum == "" || t.BodyHash != sum || (t.Status != "indexed" && t.Status != "unchanged") ||
		page.URL != t.URL || c.isListing(t.URL, page.Body) {
		return outcome{}, store.URLResult{}, false
	}
	var want *store.Document
	if c.WP != nil {
		post := public[t.PostID]
		if t.PostID <= 0 || post == nil {
			return outcome{}, store.URLResult{}, false
		}
		want = &store.Document{PostID: post.ID, PostType: post.Type, Published: post.Published, Modified: post.Modified}
	}
	ok, err := c.Store.TouchDocument(ctx, t.URL, c.Store.Now(), want)
	if err != nil || !ok {
		return outcome{}, store.URLResult{}, false
	}
	rec := store.URLResult{Status: "unchanged", HTTPStatus: page.Status, PostID: t.PostID, ETag: page.ETag,
		LastModified: page.LastModified, BodyHash: sum}
	return outcome{status: "unchanged", url: t.URL, postID: t.PostID, truncated: page.Truncated}, rec, true
}
