package crawl

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/wp"
)

// MaxEventAttempts bounds retries of an event whose work keeps failing
// (the site answering 5xx, say); the nightly pass covers it after that.
const MaxEventAttempts = 8

// ReceiveEvents stores a batch of verified events, then takes every page
// an event says is no longer public out of search at once, before the
// worker re-checks with the database. It returns store.ErrDuplicateEvent
// for a replayed id, with nothing stored or changed.
func (c *Crawler) ReceiveEvents(ctx context.Context, evs []*store.Event) (int, error) {
	c.init()
	if err := c.Store.InsertEvents(ctx, evs); err != nil {
		return 0, c.StoreFailed(err)
	}
	for _, e := range evs {
		if removes(e) {
			c.removePost(context.WithoutCancel(ctx), e.PostID, e.URL, e.Type)
		}
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return len(evs), nil
}

// changedAt is when the sender saw the change an event reports: its "at",
// or when it was received, which is never before the change.
func changedAt(e *store.Event) time.Time {
	if e.At.IsZero() {
		return e.ReceivedAt
	}
	if e.ReceivedAt.IsZero() || e.At.Before(e.ReceivedAt) {
		return e.At
	}
	return e.ReceivedAt
}

// removes says whether an event reports a post leaving public view.
// Trusting an event to remove is safe; it is never trusted to add.
func removes(e *store.Event) bool {
	switch e.Type {
	case store.EventPostUnpublished, store.EventPostDeleted, store.EventPostTrashed:
		return true
	case store.EventPostPublished, store.EventPostUpdated:
		if e.Status != "" && e.Status != "publish" {
			return true
		}
		return e.Public != nil && !*e.Public || e.HasPassword
	}
	return false
}

// removePost deletes a post's pages, by post ID and by URL.
func (c *Crawler) removePost(ctx context.Context, postID int64, rawURL, why string) {
	if postID > 0 {
		if ok, err := c.Store.DeletePost(ctx, postID); err != nil {
			c.Log.Error("Unable to remove post", "post_id", postID, "error", err)
		} else if ok {
			c.Log.Info("Removed post", "post_id", postID, "reason", why)
		}
	}
	if cu := c.resolve(rawURL); cu != "" && rawURL != "" {
		if ok, err := c.Store.DeleteDocument(ctx, cu); err != nil {
			c.Log.Error("Unable to remove page", "url", cu, "error", err)
		} else if ok {
			c.Log.Info("Removed page", "url", cu, "reason", why)
		}
	}
}

// StartEvents runs the event worker until ctx is done or the returned
// stop is called (which waits for it). It first applies what a previous
// run accepted and did not apply. With catchUp, it also re-renders what
// the database says changed since the index last fetched a page
// (missedChanges), a group at a time between the events that come in.
func (c *Crawler) StartEvents(ctx context.Context, catchUp bool) (stop func()) {
	c.init()
	c.loadConventions(ctx)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var recrawls atomic.Int32
	go func() {
		defer close(done)
		var missed []missedChange
		if catchUp {
			var err error
			if missed, err = c.missedChanges(ctx); err != nil && ctx.Err() == nil {
				c.Log.Warn("Unable to catch up on changes made while the daemon was down; the next pass will", "error", err)
			}
		}
		t := time.NewTicker(freshness.EventTick)
		defer t.Stop()
		lastPrune := time.Time{}
		for {
			if _, err := c.ApplyEvents(ctx); err != nil && ctx.Err() == nil {
				c.Log.Error("Unable to apply events", "error", err)
			}
			if len(missed) > 0 && ctx.Err() == nil {
				missed = c.catchUp(ctx, missed)
				continue
			}
			c.startRecrawl(ctx, &recrawls)
			if time.Since(lastPrune) > freshness.EventPruneEvery {
				lastPrune = time.Now()
				if _, err := c.Store.PruneEvents(ctx, c.Store.Now().Add(-freshness.EventKeep)); err != nil && ctx.Err() == nil {
					c.Log.Warn("Unable to prune events", "error", err)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-c.wake:
			case <-t.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
		// A re-crawl started by an event stops with ctx; wait for it to
		// write its run record.
		c.Wait()
	}
}

// postWork is the collapsed work for one post in a batch of events, or
// one post the catch-up found changed.
type postWork struct {
	id     int64
	url    string
	remove bool
	why    string
	events []int64
	// post is the post as the database has it (nil: not there), read for
	// a group of works at once (lookupPosts); lookErr is that read's error.
	post    *wp.Post
	lookErr error
	// catchUp marks a post the database, not an event, said changed.
	catchUp bool
	// changed is the latest change its events report (changedAt).
	changed time.Time
}

// ApplyEvents applies every pending event once and returns how many it
// applied. Events for one post collapse into one database check and at
// most one fetch. Removals go first.
func (c *Crawler) ApplyEvents(ctx context.Context) (int, error) {
	applied := 0
	tried := map[int64]bool{}
	for ctx.Err() == nil {
		evs, err := c.Store.PendingEvents(ctx, 200, MaxEventAttempts)
		if err != nil {
			return applied, err
		}
		var fresh []*store.Event
		for _, e := range evs {
			if !tried[e.ID] {
				tried[e.ID] = true
				fresh = append(fresh, e)
			}
		}
		if len(fresh) == 0 {
			return applied, nil
		}
		n, err := c.applyBatch(ctx, fresh)
		applied += n
		if err != nil {
			return applied, err
		}
	}
	return applied, ctx.Err()
}

func (c *Crawler) applyBatch(ctx context.Context, evs []*store.Event) (int, error) {
	b := c.collapse(ctx, evs)
	// Removals first: nothing else may run while a page that left public
	// view is still searchable.
	for _, id := range b.order {
		if w := b.posts[id]; w.remove {
			c.removePost(ctx, w.id, w.url, w.why)
		}
	}
	if b.recrawl != "" {
		// Durable before the events are marked: a crash in between
		// re-runs the events, never loses the re-crawl.
		recrawl := b.recrawl
		if cur, _ := c.Store.GetMeta(ctx, "recrawl_pending"); cur != "" {
			recrawl = strongerRecrawl(recrawl, cur)
		}
		if err := c.Store.SetMeta(ctx, "recrawl_pending", recrawl); err != nil {
			return 0, err
		}
	}
	applied := len(b.done)
	if err := c.Store.MarkEventsApplied(ctx, b.done, ""); err != nil {
		return 0, err
	}

	var works, shown []*postWork
	for _, id := range b.order {
		if w := b.posts[id]; !w.remove && c.refreshed.covers(w.id, w.changed) {
			shown = append(shown, w)
		} else {
			works = append(works, w)
		}
	}
	// A refresh that began after the changes these events report already
	// shows them: the backlog the shim kept while the daemon was down,
	// after the catch-up re-rendered its posts.
	var ids []int64
	for _, w := range shown {
		ids = append(ids, w.events...)
	}
	if err := c.Store.MarkEventsApplied(ctx, ids, ""); err != nil {
		return applied, err
	}
	return applied + len(ids) + int(c.refreshAll(ctx, works)), nil
}

// refreshAll refreshes works, crawl.concurrency at a time, and returns how
// many events that applied. Their posts are read from the database a group
// at a time, each group just before its first page is fetched: one query
// rather than one a post, and never read long before the fetch it steers.
func (c *Crawler) refreshAll(ctx context.Context, works []*postWork) int64 {
	var n atomic.Int64
	p := pool.New().WithMaxGoroutines(max(1, c.Opts.Concurrency))
	for len(works) > 0 && ctx.Err() == nil {
		group := works[:min(len(works), c.refreshGroup())]
		works = works[len(group):]
		c.lookupPosts(ctx, group)
		for _, w := range group {
			p.Go(func() { n.Add(c.applyPost(ctx, w)) })
		}
	}
	p.Wait()
	return n.Load()
}

// refreshGroup is how many posts refreshAll reads and hands to its workers
// at a time, and how many the catch-up takes between events: four rounds
// of crawl.concurrency.
func (c *Crawler) refreshGroup() int { return 4 * max(1, c.Opts.Concurrency) }

// lookupPosts reads the posts of works from the database in one query.
func (c *Crawler) lookupPosts(ctx context.Context, works []*postWork) {
	if c.WP == nil {
		return
	}
	ids := make([]int64, len(works))
	for i, w := range works {
		ids[i] = w.id
	}
	posts, err := c.WP.Posts(ctx, wp.PostFilter{IDs: ids, Light: true})
	byID := make(map[int64]*wp.Post, len(posts))
	for _, p := range posts {
		byID[p.ID] = p
	}
	for _, w := range works {
		w.post, w.lookErr = byID[w.id], err
	}
}

// batch is a batch of events collapsed: the work per post, in order, the
// events that need no post work, and the strongest re-crawl asked for.
type batch struct {
	order   []int64
	posts   map[int64]*postWork
	done    []int64
	recrawl string
}

func (b *batch) work(id int64) *postWork {
	w := b.posts[id]
	if w == nil {
		w = &postWork{id: id}
		b.posts[id] = w
		b.order = append(b.order, id)
	}
	return w
}

// collapse turns a batch of events into one piece of work per post. A
// term event whose posts cannot be read is marked applied with the error.
func (c *Crawler) collapse(ctx context.Context, evs []*store.Event) *batch {
	b := &batch{posts: map[int64]*postWork{}}
	for _, e := range evs {
		switch e.Type {
		case store.EventPostPublished, store.EventPostUpdated, store.EventPostUnpublished, store.EventPostDeleted, store.EventPostTrashed:
			if e.PostID <= 0 {
				b.done = append(b.done, e.ID)
				continue
			}
			w := b.work(e.PostID)
			if e.URL != "" {
				w.url = e.URL
			}
			if removes(e) {
				w.remove, w.why = true, e.Type
			}
			w.events = append(w.events, e.ID)
			if at := changedAt(e); at.After(w.changed) {
				w.changed = at
			}
		case store.EventTermChanged:
			ids, err := c.termPosts(ctx, e)
			if err != nil {
				_ = c.Store.MarkEventsApplied(ctx, []int64{e.ID}, err.Error())
				continue
			}
			if len(ids) == 0 {
				b.done = append(b.done, e.ID)
			}
			for i, id := range ids {
				w := b.work(id)
				if i == 0 {
					w.events = append(w.events, e.ID)
				}
				if e.ReceivedAt.After(w.changed) {
					w.changed = e.ReceivedAt
				}
			}
		case store.EventMenuChanged:
			b.recrawl = strongerRecrawl(b.recrawl, "recrawl:menu")
			b.done = append(b.done, e.ID)
		case store.EventThemeChanged:
			b.recrawl = strongerRecrawl(b.recrawl, "recrawl:theme")
			b.done = append(b.done, e.ID)
		case store.EventPermalinksChanged:
			b.recrawl = strongerRecrawl(b.recrawl, "recrawl:permalinks")
			b.done = append(b.done, e.ID)
		default:
			b.done = append(b.done, e.ID)
		}
	}
	return b
}

// applyPost refreshes one post and marks its events, returning how many
// events it applied.
func (c *Crawler) applyPost(ctx context.Context, w *postWork) int64 {
	started := c.Store.Now()
	err := c.refreshPost(ctx, w)
	if ctx.Err() != nil {
		return 0 // shutting down: the events stay pending
	}
	msg := ""
	if err != nil {
		msg = err.Error()
		c.Log.Warn("Event not applied; will retry", "post_id", w.id, "error", err)
		if errors.Is(err, wp.ErrUnreachable) || SiteFault(err) {
			// The database or the site is down: that says nothing about
			// the event, so it keeps its attempts and is retried each tick
			// until they are back, however long the outage.
			if err := c.Store.NoteEventsError(context.WithoutCancel(ctx), w.events, msg); err != nil {
				c.Log.Error("Unable to note event error", "error", err)
			}
			return 0
		}
	}
	if err := c.Store.MarkEventsApplied(context.WithoutCancel(ctx), w.events, msg); err != nil {
		c.Log.Error("Unable to mark events applied", "error", err)
		return 0
	}
	if msg != "" {
		return 0
	}
	c.refreshed.note(w.id, started)
	n := int64(len(w.events))
	// Later batches' events for this post that arrived before this
	// refresh began are answered by it too.
	more, err := c.Store.MarkPostEventsApplied(context.WithoutCancel(ctx), w.id, started)
	if err != nil {
		c.Log.Error("Unable to mark events applied", "error", err)
	}
	return n + more
}

// strongerRecrawl picks the re-crawl that covers the other: a theme or
// permalink change re-renders everything, a menu change re-discovers.
func strongerRecrawl(a, b string) string {
	rank := map[string]int{"": 0, "recrawl:menu": 1, "recrawl:theme": 2, "recrawl:permalinks": 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// termPosts returns the posts a term_changed event affects: the ones it
// names, or else the posts in its terms.
func (c *Crawler) termPosts(ctx context.Context, e *store.Event) ([]int64, error) {
	if len(e.PostIDs) > 0 || c.WP == nil {
		return e.PostIDs, nil
	}
	return c.WP.TermPosts(ctx, e.TermIDs)
}

// refreshPost re-checks one post with the database and re-renders its page
// when, and only when, the database says it is public.
func (c *Crawler) refreshPost(ctx context.Context, w *postWork) error {
	var post *wp.Post
	if c.WP != nil {
		if w.lookErr != nil {
			return w.lookErr
		}
		p := w.post
		if p == nil || !p.Public() || !contains(c.knownTypes(ctx), p.Type) {
			c.removePost(ctx, w.id, w.url, "not public in the database")
			return nil
		}
		post = p
	}
	target := ""
	if cu := c.resolve(w.url); cu != "" && w.url != "" && crawlable(cu) {
		target = cu
	} else if urls, err := c.Store.PostDocuments(ctx, w.id); err == nil && len(urls) > 0 {
		target = urls[0]
	} else {
		target = c.postAddress(w.id, post, nil)
	}
	out, err := c.renderNow(ctx, target, w, post)
	if err != nil {
		return err
	}
	if out.status == "gone" && !postIDURL(target) {
		// The event's address is stale (a renamed slug): ask WordPress.
		out, err = c.renderNow(ctx, c.postURL(w.id, post), w, post)
		if err != nil {
			return err
		}
	}
	if out.status == "error" {
		return out.err
	}
	return nil
}

// renderNow fetches and indexes one URL outside the crawl budget, paced by
// the event limiter unless it is the page's first re-render in a while.
func (c *Crawler) renderNow(ctx context.Context, u string, w *postWork, post *wp.Post) (outcome, error) {
	if !c.fresh.take(u, time.Now()) {
		if err := c.eventLimiter.Wait(ctx); err != nil {
			return outcome{}, err
		}
	}
	postID, msg, sources := w.id, "Re-rendered on event", []string{"event"}
	if w.catchUp {
		msg, sources = "Re-rendered on catch-up", []string{SourceDB}
	}
	st, _ := c.Store.FindURL(ctx, u) // nil when there is no row
	if st != nil {
		for _, s := range st.Sources {
			if !contains(sources, s) {
				sources = append(sources, s)
			}
		}
	}
	var public map[int64]*wp.Post
	if post != nil {
		public = map[int64]*wp.Post{postID: post}
	}
	// A save that changed nothing the page shows comes back as it was
	// indexed, and is not extracted again.
	page, err := c.Fetcher.Get(ctx, u, Conditional{})
	out, rec := c.process(ctx, u, st, page, err, sources, public)
	if out.status == "error" && ctx.Err() != nil {
		return out, ctx.Err()
	}
	if rec.PostID == 0 && postIDURL(u) {
		rec.PostID = postID
	}
	if err := c.Store.RecordFetch(ctx, u, rec); err != nil {
		return out, err
	}
	if out.url != "" && out.url != u {
		rec.Status = out.status
		if err := c.Store.RecordFetch(ctx, out.url, rec); err != nil {
			return out, err
		}
	}
	if out.status == "indexed" || out.status == "unchanged" {
		c.Log.Info(msg, "url", out.url, "post_id", postID, "status", out.status)
	}
	return out, nil
}

// startRecrawl starts the re-crawl an event asked for, in the background,
// once no other pass is running. It stays pending (in the store) until a
// pass of its kind completes.
func (c *Crawler) startRecrawl(ctx context.Context, running *atomic.Int32) {
	kind, err := c.Store.GetMeta(ctx, "recrawl_pending")
	if err != nil || kind == "" || !running.CompareAndSwap(0, 1) {
		return
	}
	go func() {
		defer running.Store(0)
		run, err := c.Index(ctx, IndexOptions{Kind: kind, Full: kind != "recrawl:menu"})
		switch {
		case errors.Is(err, ErrCrawlRunning), ctx.Err() != nil:
			return
		case err != nil:
			c.Log.Error("Re-crawl failed", "kind", kind, "error", err)
			return
		}
		if run.Kind != kind {
			return // it resumed an interrupted pass first
		}
		if cur, _ := c.Store.GetMeta(ctx, "recrawl_pending"); cur == kind {
			_ = c.Store.SetMeta(ctx, "recrawl_pending", "")
		}
	}()
}
