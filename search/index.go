package search

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/search/index"
	"github.com/askwp/askwpd/store"
)

// Index searches one store. It is safe for concurrent use.
type Index struct {
	db *store.DB
	// mem is the in-memory index of the store's chunks, which owns their
	// state (search/index).
	mem *index.Index
	// an analyzes everything the index reads, remembering stems; mem
	// shares it.
	an *analysis.Analyzer
	// scratch holds the candidate pass's score arrays: 12 bytes a chunk
	// each, so their number, not the number of concurrent searches,
	// bounds the memory.
	scratch chan *memScratch

	mu       sync.Mutex
	synonyms *analysis.Synonyms
	ranking  Ranking
	vocab    *vocabulary
	// vocabBuilding is set while a vocabulary is read in the background.
	vocabBuilding bool
	// vocabFirst is closed when the first vocabulary is built: the
	// searches that want one meanwhile wait for it.
	vocabFirst chan struct{}
	closed     bool

	searches atomic.Int64
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

// Warmed is what Warm read into memory.
type Warmed = index.Warmed

// ErrClosed is returned by a search on a closed Index.
var ErrClosed = index.ErrClosed

// New returns the search index of db, following db's commits from now on.
// Load fills it; a search before then waits for a load it starts itself.
func New(db *store.DB) *Index {
	an := analysis.NewAnalyzer()
	ix := &Index{db: db, mem: index.New(db, an), an: an, ranking: DefaultRanking(),
		scratch: make(chan *memScratch, 2*runtime.GOMAXPROCS(0))}
	for range cap(ix.scratch) {
		ix.scratch <- &memScratch{}
	}
	return ix
}

// Load reads the store into memory, or waits for the load in progress.
// Searches wait for the first load to finish; later loads (after another
// process wrote the store) run while searches use the index they have.
func (ix *Index) Load(ctx context.Context) error { return ix.mem.Load(ctx) }

// Warm reads into memory, before the first visitors, what each of their
// searches would otherwise read on its own time: the vocabulary, and the
// texts of the chunks with the lists of their terms, the newest pages
// first, until the cache is full or maxBytes are used (0: until the
// cache is full).
//
// A search reads the texts of the chunks it reranks from the store, and
// lists a text's terms at its third sighting: without a warm-up, most of
// a daemon's first questions reach pages no earlier one had, and pay for
// both (bench/search tool -cold).
func (ix *Index) Warm(ctx context.Context, maxBytes int) (Warmed, error) {
	if err := ix.mem.Ready(ctx); err != nil {
		return Warmed{}, err
	}
	ix.vocabulary()
	return ix.mem.Warm(ctx, nil, maxBytes)
}

// SetSnapshot makes the index keep a snapshot of itself at path: read at
// the next load when it matches the store, written after a load from the
// store and by Close. version names the build (the snapshot of another
// build is not read: its analysis may differ). Call it before Load.
func (ix *Index) SetSnapshot(path, version string) { ix.mem.SetSnapshot(path, version) }

// WriteSnapshot writes the index to the file SetSnapshot named, unless
// it is there already. The snapshot is removed as soon as the index
// follows a commit past it, so a restart after a crash loads from the
// store; a daemon writes it after a load from the store and when it stops.
func (ix *Index) WriteSnapshot() error { return ix.mem.WriteSnapshot() }

// FromSnapshot reports whether the index was last loaded from its
// snapshot rather than from the store.
func (ix *Index) FromSnapshot() bool { return ix.mem.FromSnapshot() }

// Stats reports the index's state.
func (ix *Index) Stats() Stats {
	s := ix.mem.Stats()
	return Stats{Enabled: s.Enabled, Ready: s.Ready, Chunks: s.Chunks, Loads: s.Loads, Memory: ix.searches.Load(),
		Reread: s.Reread}
}

// Gen is the store's count of index writes the index reflects: it moves
// with every commit the index follows.
func (ix *Index) Gen() int64 { return ix.mem.Gen() }

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

// ready waits until the index has been loaded once (index.Index.Ready).
func (ix *Index) ready(ctx context.Context) error { return ix.mem.Ready(ctx) }

// catchUp brings the index up to the store as far as a search can afford
// (index.Index.CatchUp).
func (ix *Index) catchUp(ctx context.Context) { ix.mem.CatchUp(ctx) }

// Close stops following the store and frees the index's memory. Searches
// after Close fail with ErrClosed.
func (ix *Index) Close() {
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return
	}
	ix.closed = true
	ix.vocab = nil
	ix.mu.Unlock()
	ix.mem.Close()
	// The score arrays are a chunk's 12 bytes each, per concurrent search.
	for range cap(ix.scratch) {
		sc := <-ix.scratch
		*sc = memScratch{}
		ix.scratch <- sc
	}
}
