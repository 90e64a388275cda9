package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/store"
)

// Defaults for a Node's timings.
const (
	// DefaultLeaseTTL is how long a lease lasts unrenewed: a leader that
	// dies is replaced within it plus FollowerTry.
	DefaultLeaseTTL = 10 * time.Second
	// DefaultPoll is how often a node reads the changelog.
	DefaultPoll = 200 * time.Millisecond
	// FollowerTry is how often a follower tries the lease.
	FollowerTry = time.Second
	// eventPoll is how often the leader reads the events table: a save
	// on another web head pings that head's daemon, not the leader.
	eventPoll = 100 * time.Millisecond
	// publishGap spaces the leader's publishes during a crawl, so a pass
	// costs a transaction per batch of pages rather than per page.
	publishGap = 50 * time.Millisecond
	tailBatch  = 200
	eventBatch = 500
	// eventKeep is how long finished events stay in the table.
	eventKeep = 24 * time.Hour
	// stmtWait bounds a statement of the changelog, the events or a
	// publish: a database that stops answering (a Galera node paused or
	// cut off, whose causal reads wait) is found unusable within it,
	// rather than holding a loop for the driver's read timeout.
	stmtWait = 5 * time.Second
)

// Node is one daemon's part in a cluster. Every node tails the changelog
// into its own store, so its search index follows; the node holding the
// lease (the leader) also turns the events table into work for its
// crawler, runs the passes, and publishes what its store indexed and
// removed, marking the events that caused it done in the same
// transaction. A leader that dies mid-way leaves its events not done and
// its unpublished pages unpublished: the next leader does both, once.
type Node struct {
	C       *Cluster
	Store   *store.DB
	Crawler *crawl.Crawler
	Log     *slog.Logger
	// ID names this process in the lease and on the changelog rows it
	// writes; Host is shown with it.
	ID, Host string
	TTL      time.Duration
	Poll     time.Duration
	// Pass runs one index pass for the leader, until ctx is done.
	Pass func(ctx context.Context, opt crawl.IndexOptions)

	// leader is whether the leader's work runs (lead): the store's
	// commits are noted for publishing while it does.
	leader atomic.Bool
	// t0 and until bound what Leader reports: this node may act as the
	// leader until t0+until, by its own clock, which is its last
	// successful renewal's start plus three quarters of the TTL. Another
	// node can take the lease only once it has expired by the database's
	// clock, a quarter of the TTL later, whether or not this node's
	// database still answers.
	t0    time.Time
	until atomic.Int64

	// db is the database's state as this node's statements found it;
	// badDB wakes the lease loop when one found it unusable.
	db    dbHealth
	badDB chan struct{}
	// view is the lease row and the database's state as last read, for
	// the status pages.
	view atomic.Pointer[view]

	// tailMu keeps the changelog applied by one goroutine at a time.
	tailMu  sync.Mutex
	applied atomic.Int64
	epoch   string

	wakeTail, wakeLead chan struct{}

	mu sync.Mutex
	// known is the changelog's state: each live URL's version.
	known map[string][32]byte
	// dirty are the URLs the store changed while this node led, and
	// removed whether it deleted a document; both wait for publish.
	dirty   map[string]bool
	removed bool
	// inflight maps an event's row id to its id in the local store,
	// for events taken from the table and not yet done.
	inflight map[int64]string
	// term names this node's current leadership in its events' local
	// ids (localEventID).
	term string

	stats nodeStats
}

type nodeStats struct {
	published, appliedRows, leaderships, eventsDone atomic.Int64
}

// Stats are a node's counters, for /metrics and the benchmark.
type Stats struct {
	Leader       bool
	AppliedID    int64
	Queries      int64
	Published    int64 // changelog rows this node wrote
	AppliedRows  int64 // changelog rows of other nodes it applied
	Leaderships  int64 // times it took the lease
	EventsDone   int64
	Pages        int // live URLs in the changelog, as this node knows it
	PendingEvent int // events taken and not done (leader)
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	n.mu.Lock()
	pages, pend := len(n.known), len(n.inflight)
	n.mu.Unlock()
	return Stats{Leader: n.Leader(), AppliedID: n.applied.Load(), Queries: n.C.Queries(),
		Published: n.stats.published.Load(), AppliedRows: n.stats.appliedRows.Load(),
		Leaderships: n.stats.leaderships.Load(), EventsDone: n.stats.eventsDone.Load(), Pages: pages, PendingEvent: pend}
}

// Leader reports whether this node holds the lease: it leads, and the
// lease it last renewed has not run out by this node's clock.
func (n *Node) Leader() bool {
	return n.leader.Load() && !n.t0.IsZero() && time.Since(n.t0) < time.Duration(n.until.Load())
}

// cursorKey is where the store keeps the last changelog id applied, with
// the tables' epoch: "epoch:id".
const cursorKey = "cluster_changelog"

// Run takes part in the cluster until ctx is done: it applies the
// changelog, and leads when it can. It gives the lease up on return.
func (n *Node) Run(ctx context.Context) error {
	if n.TTL <= 0 {
		n.TTL = DefaultLeaseTTL
	}
	if n.Poll <= 0 {
		n.Poll = DefaultPoll
	}
	n.wakeTail, n.wakeLead, n.badDB = make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{}, 1)
	n.known, n.dirty, n.inflight = map[string][32]byte{}, map[string]bool{}, map[int64]string{}
	n.t0 = time.Now()
	// A database that is not usable at start (a Galera node rejoining)
	// is waited for; the store serves searches meanwhile.
	for {
		err := n.loadCursor(ctx)
		if n.noteDB(err) == nil {
			break
		}
		if !Unusable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(FollowerTry):
		}
	}
	cancelObs := n.Store.Observe(n)
	defer cancelObs()

	var loops sync.WaitGroup
	loops.Go(func() { n.tailLoop(ctx) })
	loops.Go(func() { n.watchLoop(ctx) })
	n.leaseLoop(ctx)
	loops.Wait()
	return nil
}

// loadCursor reads where this store stopped in the changelog, and the
// versions of the pages up to there. A cursor into tables that were
// dropped and made again (another epoch) starts over.
func (n *Node) loadCursor(ctx context.Context) error {
	l, err := n.C.Leader(ctx)
	if err != nil {
		return err
	}
	n.epoch = l.Epoch
	v, err := n.Store.GetMeta(ctx, cursorKey)
	if err != nil {
		return fmt.Errorf("cluster: read cursor: %w", err)
	}
	ep, id, _ := strings.Cut(v, ":")
	cur, _ := strconv.ParseInt(id, 10, 64)
	if ep != n.epoch || cur <= 0 {
		return nil
	}
	known, err := n.C.Versions(ctx, cur)
	if err != nil {
		return err
	}
	n.known = known
	n.applied.Store(cur)
	return nil
}

// Wake makes the node read the tables now: the shim pinged it.
func (n *Node) Wake() {
	for _, c := range []chan struct{}{n.wakeTail, n.wakeLead} {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Receive writes events that reached this node by webhook to the events
// table, for the leader; an event the shim wrote already is skipped.
func (n *Node) Receive(ctx context.Context, evs []*store.Event) (int, error) {
	rows := make([]EventRow, len(evs))
	for i, e := range evs {
		rows[i] = EventRow{EventID: e.EventID, JSON: e.Payload}
	}
	ctx, cancel := context.WithTimeout(ctx, stmtWait)
	defer cancel()
	if err := n.noteDB(n.C.InsertEvents(ctx, rows)); err != nil {
		return 0, err
	}
	n.Wake()
	return len(evs), nil
}

// IndexCommitted notes, while this node leads, the URLs its store
// changed, for the next publish. It is quick, as the store asks.
func (n *Node) IndexCommitted(c store.IndexCommit) {
	if !n.leader.Load() {
		return
	}
	added := map[int64]bool{}
	n.mu.Lock()
	for _, op := range c.Ops {
		if op.Add != nil {
			added[op.Add.Doc.ID] = true
			n.dirty[op.Add.Doc.URL] = true
		}
	}
	for _, op := range c.Ops {
		if op.Add == nil && !added[op.Delete] {
			n.removed = true
		}
	}
	n.mu.Unlock()
	n.wakePublish()
}

func (n *Node) wakePublish() {
	select {
	case n.wakeLead <- struct{}{}:
	default:
	}
}

var _ store.IndexObserver = (*Node)(nil)

// --- the changelog ------------------------------------------------------------

func (n *Node) tailLoop(ctx context.Context) {
	t := time.NewTicker(n.Poll)
	defer t.Stop()
	for {
		if err := n.catchUp(ctx); err != nil && ctx.Err() == nil && !Unusable(err) {
			n.Log.Warn("Unable to apply the cluster changelog; retrying", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.wakeTail:
		}
	}
}

// catchUp applies every changelog row after the cursor.
func (n *Node) catchUp(ctx context.Context) error {
	n.tailMu.Lock()
	defer n.tailMu.Unlock()
	for {
		tctx, cancel := context.WithTimeout(ctx, stmtWait)
		es, err := n.C.Tail(tctx, n.applied.Load(), tailBatch)
		cancel()
		if n.noteDB(err) != nil {
			return err
		}
		for _, e := range es {
			if err := n.apply(ctx, &e); err != nil {
				return err
			}
			n.applied.Store(e.ID)
		}
		if len(es) > 0 {
			// After the rows: a crash in between re-applies them, which
			// changes nothing (the store finds the same content).
			if err := n.Store.SetMeta(ctx, cursorKey, n.epoch+":"+strconv.FormatInt(n.applied.Load(), 10)); err != nil {
				return fmt.Errorf("cluster: save cursor: %w", err)
			}
		}
		if len(es) < tailBatch {
			return nil
		}
	}
}

// apply writes one changelog row to the store through its normal path,
// so the search index follows. This node's own rows are in its store
// already.
func (n *Node) apply(ctx context.Context, e *Entry) error {
	own := e.Node == n.ID
	switch e.Op {
	case OpPut:
		if !own {
			d, err := Decode(e.Doc)
			if err != nil {
				// A row this version cannot read is skipped, not retried
				// forever; the next put of its URL replaces it.
				n.Log.Error("Skipped a changelog row", "id", e.ID, "url", e.URL, "error", err)
				return nil
			}
			d.FetchedAt = n.Store.Now()
			if _, err := n.Store.PutDocument(ctx, d); err != nil {
				return err
			}
			// As if fetched here: a pass this node runs as leader later
			// skips it until the post changes.
			if err := n.Store.RecordFetch(ctx, d.URL, store.URLResult{Status: "indexed", HTTPStatus: 200, PostID: d.PostID}); err != nil {
				return err
			}
			n.stats.appliedRows.Add(1)
		}
		n.mu.Lock()
		n.known[e.URL] = e.Version
		n.mu.Unlock()
	case OpDelete:
		if !own {
			if _, err := n.Store.DeleteDocument(ctx, e.URL); err != nil {
				return err
			}
			n.stats.appliedRows.Add(1)
		}
		n.mu.Lock()
		delete(n.known, e.URL)
		n.mu.Unlock()
	}
	return nil
}

// --- the lease ----------------------------------------------------------------

func (n *Node) leaseLoop(ctx context.Context) {
	var stop func()
	stepDown := func(why string) {
		n.until.Store(0)
		if stop == nil {
			return
		}
		n.Log.Warn("No longer the cluster leader", "reason", why)
		stop()
		stop = nil
	}
	wait := time.Duration(0)
	for {
		if stop != nil {
			// Wake when the lease runs out, whatever the database does.
			wait = min(wait, max(0, n.validFor()))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if stop != nil {
				stop()
				n.release(ctx)
			}
			return
		case <-n.badDB:
			t.Stop()
			// Unless a statement since found it usable again.
			if why := n.db.reason(); why != "" {
				stepDown("the database is not usable: " + why)
			}
			wait = FollowerTry
			continue
		case <-t.C:
		}
		if stop != nil && n.validFor() <= 0 {
			stepDown("the lease ran out before it could be renewed")
		}
		// A renewal may take as long as the lease has left; a try, a
		// second. Past that the statement is given up (the driver closes
		// its connection), so a database that stopped answering holds
		// nothing here.
		limit := FollowerTry
		if stop != nil {
			limit = n.validFor()
		}
		start := time.Now()
		lctx, cancel := context.WithTimeout(ctx, limit)
		ok, err := n.C.TryLead(lctx, n.ID, n.Host, n.TTL)
		cancel()
		if ctx.Err() != nil {
			wait = 0 // shutting down: the select above releases the lease
			continue
		}
		n.noteDB(err)
		switch {
		case err != nil && refused(err):
			stepDown("the database is not usable: " + oneLine(err))
			wait = FollowerTry
		case err != nil:
			if !Unusable(err) {
				n.Log.Warn("Unable to reach the cluster lease", "error", err)
			}
			// Retried soon: the lease may run out meanwhile, and the
			// check above steps down when it has.
			wait = min(FollowerTry, n.TTL/8)
		case ok:
			n.until.Store(int64(start.Sub(n.t0) + n.TTL - n.TTL/4))
			if stop == nil {
				stop = n.lead(ctx)
			}
			wait = n.TTL / 4
		default:
			stepDown("another node holds the lease")
			wait = FollowerTry
		}
	}
}

// release gives the lease up as the node stops, so another takes it at
// once.
func (n *Node) release(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := n.C.Release(ctx, n.ID); err != nil {
		n.Log.Warn("Unable to release the cluster lease", "error", err)
	}
}

// validFor is how long this node may still act on its last renewal.
func (n *Node) validFor() time.Duration {
	return time.Duration(n.until.Load()) - time.Since(n.t0)
}

// lead makes this node the leader: it applies the rest of the changelog,
// publishes what its store holds that the changelog lacks, then runs the
// event intake, the publisher and a pass. The returned stop ends them.
func (n *Node) lead(parent context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	n.stats.leaderships.Add(1)
	n.term = randomID(4)
	go func() {
		defer close(done)
		// Leading with the changelog half applied would publish this
		// store's older copies over newer pages: retry until it is done.
		for {
			err := n.catchUp(ctx)
			if err == nil {
				break
			}
			n.Log.Error("Unable to apply the changelog before leading; retrying", "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
		n.leader.Store(true)
		defer n.leader.Store(false)
		n.Log.Info("Leading the cluster", "node", n.ID, "changelog_id", n.applied.Load())
		n.seed(ctx)
		var pass sync.WaitGroup
		pass.Go(func() {
			// The store was filled from the changelog: its pages count as
			// fetched, so only what no leader published is fetched.
			opt := crawl.IndexOptions{Kind: "incremental", Incremental: true, SkipCurrent: true}
			if empty, err := n.Store.Empty(ctx); err == nil && empty {
				opt = crawl.IndexOptions{Kind: "initial"}
			}
			n.Pass(ctx, opt)
			// A page stored with no text changed no chunk, so its store
			// told IndexCommitted nothing: published from the list.
			if ctx.Err() == nil {
				n.seed(ctx)
				n.wakePublish()
			}
		})
		n.leaderLoop(ctx)
		pass.Wait()
		n.handOver(context.WithoutCancel(ctx))
		n.mu.Lock()
		clear(n.dirty)
		clear(n.inflight)
		n.removed = false
		n.mu.Unlock()
	}()
	return func() {
		cancel()
		<-done
	}
}

// seed marks for publishing the pages this store has and the changelog
// lacks: a daemon that ran alone before cluster mode was turned on.
func (n *Node) seed(ctx context.Context) {
	urls, err := n.Store.DocumentURLs(ctx)
	if err != nil {
		n.Log.Warn("Unable to list the store's pages", "error", err)
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for u := range urls {
		if _, ok := n.known[u]; !ok {
			n.dirty[u] = true
		}
	}
}

func (n *Node) leaderLoop(ctx context.Context) {
	t := time.NewTicker(eventPoll)
	defer t.Stop()
	lastPrune := time.Time{}
	for {
		if err := n.intake(ctx); err != nil && ctx.Err() == nil && !Unusable(err) {
			n.Log.Warn("Unable to read the cluster's events", "error", err)
		}
		err := n.publish(ctx)
		switch {
		case errors.Is(err, ErrLeaseLost):
			// The lease loop finds out at its next renewal and stops this.
			n.Log.Warn("Lost the cluster lease while publishing")
		case err != nil && ctx.Err() == nil && !Unusable(err):
			n.Log.Warn("Unable to publish to the cluster changelog; retrying", "error", err)
		}
		if time.Since(lastPrune) > time.Hour {
			lastPrune = time.Now()
			pctx, cancel := context.WithTimeout(ctx, stmtWait)
			if _, err := n.C.PruneEvents(pctx, eventKeep); n.noteDB(err) != nil && ctx.Err() == nil {
				n.Log.Warn("Unable to prune cluster events", "error", err)
			}
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.wakeLead:
			select {
			case <-ctx.Done():
				return
			case <-time.After(publishGap):
			}
		}
	}
}

// localEventID is an event row's id in the local store: the epoch keeps
// rows of tables made again from matching old local events, and the term
// those this node took in an earlier leadership (handOver).
func (n *Node) localEventID(id int64) string {
	return "cluster:" + n.epoch + ":" + strconv.FormatInt(id, 10) + ":" + n.term
}

// handOver closes, in the local store, the events this node took as
// leader and did not finish: they are not done in the table, and the
// next leader does them. Left open, this node's crawler would go on
// re-rendering their pages as a follower, into its own store alone, and
// retrying them while its database is away.
func (n *Node) handOver(ctx context.Context) {
	n.mu.Lock()
	var lids []string
	for _, lid := range n.inflight {
		if lid != "" {
			lids = append(lids, lid)
		}
	}
	n.mu.Unlock()
	var ids []int64
	for _, lid := range lids {
		if e, err := n.Store.FindEvent(ctx, lid); err == nil && e.AppliedAt.IsZero() {
			ids = append(ids, e.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	if err := n.Store.MarkEventsApplied(ctx, ids, ""); err != nil {
		n.Log.Warn("Unable to close the events left to the next leader", "error", err)
		return
	}
	n.Log.Info("Left unfinished events to the next cluster leader", "events", len(ids))
}

// intake hands the table's new events to the crawler, which applies them
// as it applies webhooks.
func (n *Node) intake(ctx context.Context) error {
	tctx, cancel := context.WithTimeout(ctx, stmtWait)
	rows, err := n.C.PendingEvents(tctx, eventBatch)
	cancel()
	if n.noteDB(err) != nil {
		return err
	}
	var evs []*store.Event
	n.mu.Lock()
	for _, r := range rows {
		if _, ok := n.inflight[r.ID]; ok {
			continue
		}
		lid := n.localEventID(r.ID)
		n.inflight[r.ID] = lid
		e, err := parseEvent(r.JSON)
		if err != nil {
			// Stored by a shim or daemon of another version: it is
			// finished as unreadable, not retried.
			n.Log.Warn("Skipped an unreadable cluster event", "id", r.ID, "error", err)
			n.inflight[r.ID] = ""
			continue
		}
		e.EventID = lid
		evs = append(evs, e)
	}
	n.mu.Unlock()
	if len(evs) == 0 {
		return nil
	}
	_, err = n.Crawler.ReceiveEvents(ctx, evs)
	if errors.Is(err, store.ErrDuplicateEvent) {
		// Taken by this node before it last stopped leading: one at a
		// time, the ones stored already are skipped.
		for _, e := range evs {
			if _, err := n.Crawler.ReceiveEvents(ctx, []*store.Event{e}); err != nil && !errors.Is(err, store.ErrDuplicateEvent) {
				return err
			}
		}
		return nil
	}
	return err
}

// parseEvent reads a wire event as api does a webhook's.
func parseEvent(raw []byte) (*store.Event, error) {
	e, err := store.ParseEvent(raw)
	if err != nil {
		return nil, err
	}
	if !store.KnownEventType(e.Type) {
		return nil, fmt.Errorf("unknown event type %q", e.Type)
	}
	e.SentAt = time.Now()
	return e, nil
}

// publish writes what the store changed since the last publish to the
// changelog, with the events whose work is finished, in one transaction.
// An event is finished when the crawler has applied it; its pages were
// written, and so noted by IndexCommitted, before that.
func (n *Node) publish(ctx context.Context) error {
	n.mu.Lock()
	ids := make(map[int64]string, len(n.inflight))
	for id, lid := range n.inflight {
		ids[id] = lid
	}
	n.mu.Unlock()
	var done []int64
	for id, lid := range ids {
		if lid == "" {
			done = append(done, id)
			continue
		}
		e, err := n.Store.FindEvent(ctx, lid)
		if err != nil {
			continue // not stored yet, or a read failed: next time
		}
		if !e.AppliedAt.IsZero() || e.Attempts > crawl.MaxEventAttempts {
			done = append(done, id)
		}
	}
	slices.Sort(done)

	n.mu.Lock()
	dirty, removed := n.dirty, n.removed
	n.dirty, n.removed = map[string]bool{}, false
	n.mu.Unlock()
	if len(dirty) == 0 && !removed && len(done) == 0 {
		return nil
	}
	// The changelog first: a publish whose commit was not answered (the
	// connection lost) may have committed, and its rows, applied here,
	// make the pages known, so they are not published a second time.
	err := n.catchUp(ctx)
	var entries []Entry
	if err == nil {
		entries, err = n.entries(ctx, dirty, removed)
	}
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, stmtWait)
		err = n.noteDB(n.C.Publish(pctx, n.ID, n.TTL, entries, done))
		cancel()
	}
	if err != nil {
		n.mu.Lock()
		for u := range dirty {
			n.dirty[u] = true
		}
		n.removed = n.removed || removed
		n.mu.Unlock()
		return err
	}
	n.stats.published.Add(int64(len(entries)))
	n.stats.eventsDone.Add(int64(len(done)))
	n.mu.Lock()
	for _, e := range entries {
		if e.Op == OpPut {
			n.known[e.URL] = e.Version
		} else {
			delete(n.known, e.URL)
		}
	}
	for _, id := range done {
		delete(n.inflight, id)
	}
	n.mu.Unlock()
	return nil
}

// entries turns the changed URLs into changelog rows: the document as
// the store has it now, or a tombstone when it is gone. A page whose
// version the changelog has already (re-fetched, same content) is left.
func (n *Node) entries(ctx context.Context, dirty map[string]bool, removed bool) ([]Entry, error) {
	urls := make([]string, 0, len(dirty))
	for u := range dirty {
		urls = append(urls, u)
	}
	if removed {
		local, err := n.Store.DocumentURLs(ctx)
		if err != nil {
			return nil, err
		}
		n.mu.Lock()
		for u := range n.known {
			if _, ok := local[u]; !ok && !dirty[u] {
				urls = append(urls, u)
			}
		}
		n.mu.Unlock()
	}
	slices.Sort(urls)
	var out []Entry
	for _, u := range urls {
		n.mu.Lock()
		have, known := n.known[u]
		n.mu.Unlock()
		d, err := n.Store.FindDocument(ctx, u, true)
		if errors.Is(err, store.ErrNotFound) {
			if known {
				out = append(out, Entry{URL: u, Op: OpDelete, Version: URLHash(u), Node: n.ID})
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		doc, v, err := Encode(d)
		if err != nil {
			return nil, err
		}
		if known && have == v {
			continue
		}
		out = append(out, Entry{URL: u, Op: OpPut, Version: v, Doc: doc, Node: n.ID})
	}
	return out, nil
}
