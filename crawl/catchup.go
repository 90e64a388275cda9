package crawl

import (
	"context"
	"time"

	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/wp"
)

// missedChange is a post the database says changed after its page was
// last fetched.
type missedChange struct {
	w        *postWork
	modified time.Time
}

// missedChanges reads what the database says changed since the index last
// fetched a page: while the daemon was down, editors published, updated,
// trashed or unpublished posts, and the shim's events for them wait in its
// outbox until its next attempt. Posts no longer public are taken out of
// search at once. It returns the public posts modified after their page
// was fetched, and the new ones, to re-render. Nothing when the index is
// empty (the first pass covers the site) or the database is not read.
func (c *Crawler) missedChanges(ctx context.Context) ([]missedChange, error) {
	if c.WP == nil {
		return nil, nil
	}
	newest, err := c.Store.NewestFetch(ctx)
	if err != nil || newest.IsZero() {
		return nil, err
	}
	since := newest.Add(-freshness.CatchUpSlack)
	posts, err := c.WP.Posts(ctx, wp.PostFilter{Types: c.knownTypes(ctx), ModifiedSince: since, AnyStatus: true, Light: true})
	if err != nil || len(posts) == 0 {
		return nil, err
	}
	known, postURLs, err := c.indexedURLs(ctx)
	if err != nil {
		return nil, err
	}
	var out []missedChange
	removed := 0
	for _, p := range posts {
		u := postURLs[p.ID]
		switch {
		case !p.Public():
			if u != "" {
				c.removePost(ctx, p.ID, u, "not public in the database")
				removed++
			}
		case u != "" && known[u] != nil && known[u].Queued:
			// An interrupted pass, resumed at the same time, fetches it.
		case u == "" || known[u] == nil || !fetchedAfter(known[u].FetchedAt, p.Modified):
			out = append(out, missedChange{w: &postWork{id: p.ID, url: u, catchUp: true}, modified: p.Modified})
		}
	}
	if removed > 0 || len(out) > 0 {
		c.Log.Info("Catching up on changes made while the daemon was down", "since", since,
			"removed", removed, "to_render", len(out))
	}
	return out, nil
}

// catchUp re-renders the next few missed changes, and returns the rest.
// A post whose page was fetched since its change (an event's re-render got
// there first) is left out. A few at a time, so events that arrive in the
// meantime wait for one group, not the whole backlog.
func (c *Crawler) catchUp(ctx context.Context, missed []missedChange) []missedChange {
	n := min(len(missed), c.refreshGroup())
	var works []*postWork
	for _, m := range missed[:n] {
		if !c.fetchedSince(ctx, m.w.id, m.modified) {
			works = append(works, m.w)
		}
	}
	c.refreshAll(ctx, works)
	if rest := missed[n:]; len(rest) > 0 || ctx.Err() != nil {
		return rest
	}
	c.Log.Info("Caught up")
	return nil
}

// fetchedSince reports whether a page of post id was fetched after a change
// at modified.
func (c *Crawler) fetchedSince(ctx context.Context, id int64, modified time.Time) bool {
	urls, err := c.Store.PostDocuments(ctx, id)
	if err != nil {
		return false
	}
	for _, u := range urls {
		if st, err := c.Store.FindURL(ctx, u); err == nil && st != nil && fetchedAfter(st.FetchedAt, modified) {
			return true
		}
	}
	return false
}

// fetchedAfter reports whether a fetch at fetched saw a change the
// database dates modified: after the whole second, since the database
// keeps whole seconds (freshness.DatabaseGrain) and a fetch in the same
// second may have come before the change.
func fetchedAfter(fetched, modified time.Time) bool {
	return !fetched.Before(modified.Add(freshness.DatabaseGrain))
}
