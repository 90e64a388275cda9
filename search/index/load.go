package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/store"
)

// stats is the index's state as Stats reports it.
type stats struct {
	enabled, ready bool
	live           int
	loads          int64
}

// loadCall is one load of the index, which callers may join.
type loadCall struct {
	done chan struct{}
	err  error
}

// Stats reports the index's state.
type Stats struct {
	// Enabled is true once a load started (by Load or a first search).
	Enabled bool `json:"enabled"`
	Ready   bool `json:"ready"`
	Chunks  int  `json:"chunks"`
	// Loads counts loads of the index: the first, and one after each
	// write it could not follow (another process's).
	Loads int64 `json:"loads"`
	// Reread counts the chunk texts reloads read again into the cache:
	// what following another process's writes cost beyond the load.
	Reread int64 `json:"reread_texts"`
}

// ErrClosed is returned by a search on a closed Index.
var ErrClosed = errors.New("search: index closed")

// New returns the index of db, following db's commits from now on, with
// an to analyze what it reads. Load fills it; Ready waits for a load it
// starts itself.
func New(db *store.DB, an *analysis.Analyzer) *Index {
	ctx, stop := context.WithCancel(context.Background())
	m := newIndex(an)
	m.db, m.ctx, m.stop, m.Texts = db, ctx, stop, newTexts(textCacheBytes, termListBytes)
	unIndex, unTexts := db.Observe(m), db.Observe(m.Texts)
	m.unobserve = func() { unIndex(); unTexts() }
	return m
}

// Load reads the store into memory, or waits for the load in progress.
// Searches wait for the first load to finish; later loads (after another
// process wrote the store) run while searches use the index they have.
func (m *Index) Load(ctx context.Context) error {
	c, err := m.startLoad()
	if err != nil {
		return err
	}
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return fmt.Errorf("search: load: %w", ctx.Err())
	}
}

// startLoad starts a load unless one is running, and returns it.
func (m *Index) startLoad() (*loadCall, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if m.loading != nil {
		return m.loading, nil
	}
	reload := m.ready
	m.enabled, m.building, m.buffered = true, true, nil
	c := &loadCall{done: make(chan struct{})}
	m.loading = c
	// The load belongs to the index, not to whoever asked first: a search
	// that gives up waiting leaves it running for the next; Close stops it.
	go func() {
		// A load follows another process's writes, which the cached texts
		// did not see, before and during the load. A reload reads the
		// chunks the cache held again, as they are now: otherwise each
		// search would read its own texts from the store until the
		// daemon's next pass warmed the cache.
		var held map[int64]bool
		if reload {
			held = m.Texts.Held()
		}
		m.Texts.clear()
		if err := m.build(m.ctx); err != nil {
			c.err = fmt.Errorf("search: load: %w", err)
		}
		m.Texts.clear()
		if c.err == nil && len(held) > 0 {
			w, _ := m.Warm(m.ctx, held, 0) // closed, or the store failed: searches read what they need
			m.reread.Add(int64(w.Texts))
		}
		m.mu.Lock()
		m.loading = nil
		m.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

// Ready waits until the index has been loaded once, starting the load
// when nobody did. Only ctx bounds the wait: a search during start-up is
// slow, not an error.
func (m *Index) Ready(ctx context.Context) error {
	for {
		m.mu.RLock()
		ok := m.ready
		m.mu.RUnlock()
		if ok {
			return nil
		}
		c, err := m.startLoad()
		if err != nil {
			return err
		}
		select {
		case <-c.done:
			if c.err != nil {
				return c.err
			}
		case <-ctx.Done():
			return fmt.Errorf("search: waiting for the index to load: %w", ctx.Err())
		}
	}
}

// memWaitMax bounds how long a search waits for this process's commit to
// reach the index.
const memWaitMax = 20 * time.Millisecond

// lookEvery spaces the searches' looks for another process's writes.
const lookEvery = time.Second

// reloadEvery spaces the reloads searches start.
const reloadEvery = 10 * time.Second

// CatchUp brings the index up to the store as far as a search can afford.
// The store counts every commit; when its count is ahead of the index's,
// either this process's commit is on its way (wait a moment for it) or
// another process wrote the store (askwpd index beside serve). That write
// reaches the index only by a reload, which runs in the background, at
// most once per reloadEvery: meanwhile searches answer from the index as
// it is, a few seconds stale, rather than wait for a reload of the whole
// store or fall back to a slower engine.
//
// Only this process's commits must be seen at once (a page fetched live
// is searched for next), and the store says when one is on its way
// (Delivering). Another process's writes wait for a reload anyway, so the
// store's count, a query that cost 4 % of a search, is read at most once
// per lookEvery unless a commit of this process is on its way.
func (m *Index) CatchUp(ctx context.Context) {
	if !m.db.Delivering() {
		now, last := time.Now().UnixNano(), m.lastLook.Load()
		if now-last < int64(lookEvery) || !m.lastLook.CompareAndSwap(last, now) {
			return
		}
	}
	cur, err := m.db.IndexWrites(ctx)
	if err != nil {
		return // the index as it is beats no answer
	}
	behind := func() (missed, behind bool) {
		m.mu.RLock()
		defer m.mu.RUnlock()
		return m.missed, m.missed || m.gen < cur
	}
	if _, b := behind(); !b {
		return
	}
	if m.db.Delivering() {
		// The count may be ahead by this process's commit alone, which
		// will land: on a busy machine its delivery can take longer than
		// memWaitMax, and a reload then read the whole store again and
		// emptied the caches keyed by slot, for a commit already on its
		// way. Another process's write among them is not lost: a later
		// delivery skips its count and sets missed, which reloads even
		// while this process's commits are on their way (a process that
		// always has one would otherwise never reload), or, with nothing
		// on its way, a later look finds the count still ahead.
		landed := m.waitGen(ctx, cur, memWaitMax)
		missed, b := behind()
		if !b || !landed && !missed {
			return
		}
	}
	now, last := time.Now().UnixNano(), m.lastReload.Load()
	if now-last >= int64(reloadEvery) && m.lastReload.CompareAndSwap(last, now) {
		m.startLoad() //nolint:errcheck // closed: nothing to reload; a failed load is retried by a later search
	}
}

// Stats reports the index's state. While a commit holds the index, or
// waits for the searches under way to let it in, it reports the state
// read last: /metrics and /v1/status ask for it on every scrape, and
// under load a scrape waited for the lock for 26-28 ms, where the state
// of one commit ago is as good an answer.
func (m *Index) Stats() Stats {
	s := m.stats.Load()
	if s == nil {
		m.mu.RLock()
	} else if !m.mu.TryRLock() {
		return s.public(m)
	}
	s = &stats{enabled: m.enabled, ready: m.ready, live: m.live, loads: m.loads}
	m.mu.RUnlock()
	m.stats.Store(s)
	return s.public(m)
}

func (s *stats) public(m *Index) Stats {
	return Stats{Enabled: s.enabled, Ready: s.ready, Chunks: s.live, Loads: s.loads, Reread: m.reread.Load()}
}

// Gen is the store's count of index writes the index reflects: it moves
// with every commit the index follows.
func (m *Index) Gen() int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.gen
}

// Close stops following the store and frees the index's memory. Loads
// after Close fail with ErrClosed.
func (m *Index) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	loading := m.loading
	m.mu.Unlock()
	m.unobserve()
	m.stop()
	if loading != nil {
		<-loading.done
	}
	m.an.Forget()
	m.mu.Lock()
	m.resetLocked()
	m.enabled, m.ready, m.buffered = false, false, nil
	m.mu.Unlock()
}

// build reads the whole store (or the snapshot of it, when there is one
// at the store's count) into fresh contents and swaps them in, then
// applies the commits that landed meanwhile. The caller has set building.
func (m *Index) build(ctx context.Context) error {
	fresh, gen, fromSnap, err := m.readSnapshot(ctx, m.db)
	if err == nil && !fromSnap {
		fresh, gen, err = m.readStore(ctx, m.db)
	}
	if err != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		// A failed reload leaves the index it had, which still follows
		// this process's commits.
		m.building = false
		if m.ready {
			m.applyBufferedLocked()
		}
		m.buffered = nil
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.contents = *fresh
	m.renumbered++
	m.setGenLocked(gen)
	m.ready, m.missed, m.building = true, false, false
	m.fromSnap, m.snapOnDisk = fromSnap, fromSnap
	if fromSnap {
		m.snapGen = gen
	}
	m.loads++
	m.applyBufferedLocked()
	m.buffered = nil
	return nil
}

// readStore reads every stored chunk, and the links between them, into
// fresh contents, in one pass over the store.
func (m *Index) readStore(ctx context.Context, db *store.DB) (*contents, int64, error) {
	// Analysis is most of the work: a worker per core analyzes batches
	// of chunks (postings and links) while this goroutine reads the next
	// ones, and one collector adds them in order of arrival.
	var (
		fresh   = newContents()
		jobs    = make(chan []*store.IndexChunk, 4)
		done    = make(chan []chunk, 4)
		workers sync.WaitGroup
		added   = make(chan struct{})
	)
	for range runtime.GOMAXPROCS(0) {
		workers.Go(func() {
			var sc chunkScratch
			for b := range jobs {
				out := make([]chunk, len(b))
				var dt *docTerms
				for i, c := range b {
					if dt == nil || dt.doc.ID != c.Doc.ID {
						dt = m.newDocTerms(m.newDoc(c.Doc))
					}
					out[i] = m.analyzeChunk(c, dt, &sc)
				}
				done <- out
			}
		})
	}
	go func() {
		for out := range done {
			for i := range out {
				fresh.add(&out[i])
			}
		}
		close(added)
	}()
	var b []*store.IndexChunk
	gen, err := db.ReadIndex(ctx, func(c *store.IndexChunk) error {
		// A document's chunks stay in one batch, so they share its Doc.
		if len(b) >= 256 && b[len(b)-1].Doc != c.Doc {
			jobs <- b
			b = nil
		}
		b = append(b, c)
		return nil
	})
	if len(b) > 0 && err == nil {
		jobs <- b
	}
	close(jobs)
	workers.Wait()
	close(done)
	<-added
	if err != nil {
		return nil, 0, err
	}
	// Lists grown by append hold up to twice their length.
	for _, t := range fresh.terms {
		if cap(t.post) > len(t.post) {
			t.post = bytes.Clone(t.post)
		}
	}
	fresh.slots, fresh.lens = slices.Clip(fresh.slots), slices.Clip(fresh.lens)
	return fresh, gen, nil
}

// applyBufferedLocked applies the commits that landed during a load.
func (m *Index) applyBufferedLocked() {
	for _, c := range m.buffered {
		m.offerLocked(c.Gen, m.analyzeOps(c.Ops))
	}
}

// waitGen waits until the index reflects gen, for at most d.
func (m *Index) waitGen(ctx context.Context, gen int64, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		m.mu.RLock()
		ok, ch := m.gen >= gen, m.applied
		m.mu.RUnlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}
