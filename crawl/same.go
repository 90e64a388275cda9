package crawl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"

	"github.com/askwp/askwpd/store"
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

// sameBody marks a frontier URL unchanged, without extracting it again,
// when its body is the one it was last indexed from, and says whether it
// did; the caller then records the fetch. The same bytes extracted by
// the same build give the same document, so a full pass skips them too:
// it is the fetch, not a validator, that says they are the same. It
// keeps to where extracting would only have found what the store holds:
// a page whose document is at its own URL, not a listing (whose links the
// pass follows), and, where the database is read, a post it still
// confirms public, with the dates and type the document has.
func (c *Crawler) sameBody(ctx context.Context, ps *passState, t *store.URLState, page *Page, sum string) (outcome, store.URLResult, bool) {
	if sum == "" || t.BodyHash != sum || (t.Status != "indexed" && t.Status != "unchanged") ||
		page.URL != t.URL || c.isHome(t.URL) || isArchive(page.Body) {
		return outcome{}, store.URLResult{}, false
	}
	var want *store.Document
	if c.WP != nil {
		post := ps.public[t.PostID]
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
