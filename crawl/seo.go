package crawl

import (
	"context"

	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/store"
)

// canonicalCopy applies the site's rel=canonical to the page fetched at
// final. A canonical to another origin is ignored (a syndicated post, a
// misconfigured plugin): the page stays under its own address. One to
// another page of the site makes this page that page's copy: it is not
// stored (a document it left at its own address is removed), and the
// canonical page is queued, so the content is stored once, under the
// canonical URL, from that page's own fetch. dup says the page was a copy.
func (c *Crawler) canonicalCopy(ctx context.Context, final string, res *extract.Result, rec store.URLResult) (outcome, store.URLResult, bool) {
	if res.CanonicalURL == "" {
		return outcome{}, rec, false
	}
	cu := c.resolve(res.CanonicalURL)
	if cu == "" || cu == final {
		return outcome{}, rec, false
	}
	if _, err := c.Store.DeleteDocument(ctx, final); err != nil {
		return outcome{status: "error", err: err}, rec, true
	}
	rec.Status = "duplicate"
	// Recorded at its own address (the canonical page's row is its own
	// fetch's), and a listing of the one link: the pass queues the
	// canonical page like a link it found.
	return outcome{status: "duplicate", url: final, listing: true, links: []extract.Link{{URL: cu}}}, rec, true
}

// noindexed keeps a page marked noindex out of answers, unless
// crawl.index_noindex says otherwise: a document it left is removed. Its
// links are followed as any page's are, so a noindex home page still
// leads the crawl to the site. skip says the page was left out.
func (c *Crawler) noindexed(ctx context.Context, final string, page *Page, res *extract.Result, listing bool, rec store.URLResult) (outcome, store.URLResult, bool) {
	if c.Opts.IndexNoindex || !extract.Noindex(page.Body, page.RobotsTag) {
		return outcome{}, rec, false
	}
	removed, err := c.Store.DeleteDocument(ctx, final)
	if err != nil {
		return outcome{status: "error", err: err}, rec, true
	}
	if removed {
		c.Log.Info("Removed page", "url", final, "reason", "noindex")
	}
	rec.Status = "skipped"
	return outcome{status: "skipped", url: final, removed: removed, listing: listing, links: res.Links}, rec, true
}
