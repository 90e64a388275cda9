// Package search is askwpd's retrieval engine: an in-memory index of the
// store's chunks, query parsing, BM25 scoring, a rerank, confidence, and
// hybrid fusion with the store's vectors. One Index owns all of its state.
package search

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/store"
)

// Index searches one store. It is safe for concurrent use.
type Index struct {
	db  *store.DB
	mem *memIndex
	// anchors holds the words around the links to each page (anchors.go).
	anchors *anchorIndex
	// an analyzes everything the index reads, remembering stems.
	an *analysis.Analyzer
	// texts keeps chunk texts searches read from the store.
	texts *textCache
	// unobserve stops the store's commit notifications; stop cancels a
	// load in progress. Both are Close's.
	unobserve func()
	ctx       context.Context
	stop      context.CancelFunc

	mu       sync.Mutex
	synonyms *analysis.Synonyms
	ranking  Ranking
	vocab    *vocabulary
	// vocabBuilding is set while a vocabulary is read in the background.
	vocabBuilding bool
	// vocabFirst is closed when the first vocabulary is built: the
	// searches that want one meanwhile wait for it.
	vocabFirst chan struct{}
	loading    *loadCall
	closed     bool

	// lastReload is when a search last started a reload (unix nanos).
	lastReload atomic.Int64
	// lastLook is when a search last read the store's count of index
	// writes (unix nanos), looking for another process's.
	lastLook atomic.Int64
	searches atomic.Int64
	reread   atomic.Int64
	// stats is the state Stats last read (memStats).
	stats atomic.Pointer[memStats]
}

// memStats is the in-memory index's state as Stats reports it.
type memStats struct {
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
	// Memory counts searches.
	Memory int64 `json:"memory_searches"`
	// Reread counts the chunk texts reloads read again into the cache:
	// what following another process's writes cost beyond the load.
	Reread int64 `json:"reread_texts"`
}

// ErrClosed is returned by a search on a closed Index.
var ErrClosed = errors.New("search: index closed")

// New returns the search index of db, following db's commits from now on.
// Load fills it; a search before then waits for a load it starts itself.
func New(db *store.DB) *Index {
	ctx, stop := context.WithCancel(context.Background())
	an := analysis.NewAnalyzer()
	ix := &Index{db: db, mem: newMemIndex(an), anchors: newAnchorIndex(an), an: an, texts: newTextCache(textCacheBytes, termListBytes),
		ranking: DefaultRanking(), ctx: ctx, stop: stop}
	unMem, unAnchors, unTexts := db.Observe(ix.mem), db.Observe(ix.anchors), db.Observe(ix.texts)
	ix.unobserve = func() { unMem(); unAnchors(); unTexts() }
	return ix
}

// Load reads the store into memory, or waits for the load in progress.
// Searches wait for the first load to finish; later loads (after another
// process wrote the store) run while searches use the index they have.
func (ix *Index) Load(ctx context.Context) error {
	c, err := ix.startLoad()
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
func (ix *Index) startLoad() (*loadCall, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return nil, ErrClosed
	}
	if ix.loading != nil {
		return ix.loading, nil
	}
	m := ix.mem
	m.mu.Lock()
	reload := m.ready
	m.enabled, m.building, m.buffered = true, true, nil
	m.mu.Unlock()
	ix.anchors.beginLoad()
	c := &loadCall{done: make(chan struct{})}
	ix.loading = c
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
			held = ix.texts.held()
		}
		ix.texts.clear()
		if err := m.build(ix.ctx, ix.db, ix.anchors); err != nil {
			c.err = fmt.Errorf("search: load: %w", err)
		}
		ix.texts.clear()
		if c.err == nil && len(held) > 0 {
			w, _ := ix.warm(ix.ctx, held, 0) // closed, or the store failed: searches read what they need
			ix.reread.Add(int64(w.Texts))
		}
		ix.mu.Lock()
		ix.loading = nil
		ix.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

// ready waits until the index has been loaded once, starting the load
// when nobody did. Only ctx bounds the wait: a search during start-up is
// slow, not an error.
func (ix *Index) ready(ctx context.Context) error {
	for {
		ix.mem.mu.RLock()
		ok := ix.mem.ready
		ix.mem.mu.RUnlock()
		if ok {
			return nil
		}
		c, err := ix.startLoad()
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

// catchUp brings the index up to the store as far as a search can afford.
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
func (ix *Index) catchUp(ctx context.Context) {
	m := ix.mem
	if !ix.db.Delivering() {
		now, last := time.Now().UnixNano(), ix.lastLook.Load()
		if now-last < int64(lookEvery) || !ix.lastLook.CompareAndSwap(last, now) {
			return
		}
	}
	cur, err := ix.db.IndexWrites(ctx)
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
	if ix.db.Delivering() {
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
	now, last := time.Now().UnixNano(), ix.lastReload.Load()
	if now-last >= int64(reloadEvery) && ix.lastReload.CompareAndSwap(last, now) {
		ix.startLoad() //nolint:errcheck // closed: nothing to reload; a failed load is retried by a later search
	}
}

// Stats reports the index's state. While a commit holds the index, or
// waits for the searches under way to let it in, it reports the state
// read last: /metrics and /v1/status ask for it on every scrape, and
// under load a scrape waited for the lock for 26-28 ms, where the state
// of one commit ago is as good an answer.
func (ix *Index) Stats() Stats {
	m := ix.mem
	s := ix.stats.Load()
	if s == nil {
		m.mu.RLock()
	} else if !m.mu.TryRLock() {
		return s.public(ix)
	}
	s = &memStats{enabled: m.enabled, ready: m.ready, live: m.live, loads: m.loads}
	m.mu.RUnlock()
	ix.stats.Store(s)
	return s.public(ix)
}

func (s *memStats) public(ix *Index) Stats {
	return Stats{Enabled: s.enabled, Ready: s.ready, Chunks: s.live, Loads: s.loads, Memory: ix.searches.Load(),
		Reread: ix.reread.Load()}
}

// Gen is the store's count of index writes the index reflects: it moves
// with every commit the index follows.
func (ix *Index) Gen() int64 {
	m := ix.mem
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.gen
}

// SetSynonyms installs the site's synonym rules; nil removes them.
func (ix *Index) SetSynonyms(s *Synonyms) {
	ix.mu.Lock()
	ix.synonyms = s
	ix.mu.Unlock()
}

// SetRanking replaces the ranking parameters (DefaultRanking is the
// default).
func (ix *Index) SetRanking(r Ranking) {
	ix.mu.Lock()
	ix.ranking = r
	ix.mu.Unlock()
}

// Ranking returns the ranking parameters in use.
func (ix *Index) Ranking() Ranking {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.ranking
}

func (ix *Index) config() (*Synonyms, Ranking) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.synonyms, ix.ranking
}

// Close stops following the store and frees the index's memory. Searches
// after Close fail with ErrClosed.
func (ix *Index) Close() {
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return
	}
	ix.closed = true
	loading := ix.loading
	ix.vocab = nil
	ix.mu.Unlock()
	ix.unobserve()
	ix.stop()
	if loading != nil {
		<-loading.done
	}
	ix.an.Forget()
	m := ix.mem
	m.mu.Lock()
	m.resetLocked()
	m.enabled, m.ready, m.buffered = false, false, nil
	m.mu.Unlock()
	// The score arrays are a chunk's 12 bytes each, per concurrent search.
	for range cap(m.scratch) {
		sc := <-m.scratch
		*sc = memScratch{}
		m.scratch <- sc
	}
}
