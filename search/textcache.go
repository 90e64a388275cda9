package search

import (
	"sync"

	"github.com/askwp/askwpd/store"
)

// textCacheBytes bounds the chunk texts kept in memory. Each search reads
// the texts of the chunks it reranks and shows (30 or so), and reading
// them from SQLite was a tenth of a search's CPU through the daemon,
// mostly modernc's statement execution rather than I/O (a larger SQLite
// page cache did not help). A site's questions keep coming back to the
// same pages, so a few megabytes of their texts save most of those reads;
// the index's per-chunk memory is not touched, whatever the site's size.
const textCacheBytes = 8 << 20

// textEntryOverhead is what an entry costs besides its strings: the
// struct, its map slots and its place in its page's list.
const textEntryOverhead = 160

// textCache keeps the stored text of chunks a search read, by chunk id.
// The store reuses the id of a deleted chunk for the next one it adds, so
// the cache follows the store's commits (it is an IndexObserver): a
// deleted page's chunks and any chunk added are dropped. A search that
// read the store while a commit dropped entries does not add what it read
// (epoch), since it may have read the text the commit replaced. Another
// process's writes reach the index only by a reload, which empties the
// cache.
type textCache struct {
	mu    sync.Mutex
	max   int
	size  int
	epoch uint64
	byID  map[int64]*cachedText
	byDoc map[int64][]int64
}

type cachedText struct {
	docID             int64
	start, end        int
	text, contentHash string
	headingPath       []string
}

func newTextCache(max int) *textCache {
	return &textCache{max: max, byID: map[int64]*cachedText{}, byDoc: map[int64][]int64{}}
}

// fill sets the text of the candidates the cache holds and returns the
// ids of the others, with the epoch to hand back to add.
func (tc *textCache) fill(cs []*candidate) (missing []int64, epoch uint64) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for _, c := range cs {
		if c.loaded {
			continue
		}
		if e := tc.byID[c.chunkID]; e != nil {
			c.loaded = true
			c.start, c.end, c.text, c.headingPath, c.contentHash = e.start, e.end, e.text, e.headingPath, e.contentHash
			continue
		}
		missing = append(missing, c.chunkID)
	}
	return missing, tc.epoch
}

// add keeps chunks read from the store, unless a commit dropped entries
// since epoch.
func (tc *textCache) add(epoch uint64, chunks map[int64]*store.Chunk) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if epoch != tc.epoch {
		return
	}
	for id, ch := range chunks {
		if tc.byID[id] != nil {
			continue
		}
		e := &cachedText{docID: ch.DocID, start: ch.Start, end: ch.End, text: ch.Text, contentHash: ch.ContentHash,
			headingPath: ch.HeadingPath}
		tc.byID[id] = e
		tc.byDoc[e.docID] = append(tc.byDoc[e.docID], id)
		tc.size += e.cost()
	}
	// Map order is random enough for an eviction: the pages asked for
	// again and again are read back soon after.
	for id := range tc.byID {
		if tc.size <= tc.max {
			break
		}
		tc.drop(id)
	}
}

func (e *cachedText) cost() int {
	n := textEntryOverhead + len(e.text) + len(e.contentHash)
	for _, h := range e.headingPath {
		n += 16 + len(h)
	}
	return n
}

// drop removes chunk id. The caller holds mu.
func (tc *textCache) drop(id int64) {
	e := tc.byID[id]
	if e == nil {
		return
	}
	delete(tc.byID, id)
	tc.size -= e.cost()
	ids := tc.byDoc[e.docID]
	for i, x := range ids {
		if x == id {
			ids[i] = ids[len(ids)-1]
			ids = ids[:len(ids)-1]
			break
		}
	}
	if len(ids) == 0 {
		delete(tc.byDoc, e.docID)
	} else {
		tc.byDoc[e.docID] = ids
	}
}

// IndexCommitted drops the chunks a commit deleted or whose id it gave to
// a new chunk. Any commit ends the epoch: a search reading the store
// meanwhile may have read a chunk before the commit replaced it, under an
// id the cache did not hold yet.
func (tc *textCache) IndexCommitted(c store.IndexCommit) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for _, op := range c.Ops {
		if op.Add != nil {
			tc.drop(op.Add.ID)
			continue
		}
		for _, id := range tc.byDoc[op.Delete] {
			tc.size -= tc.byID[id].cost()
			delete(tc.byID, id)
		}
		delete(tc.byDoc, op.Delete)
	}
	tc.epoch++
}

// clear empties the cache, for a reload of the index.
func (tc *textCache) clear() {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	clear(tc.byID)
	clear(tc.byDoc)
	tc.size = 0
	tc.epoch++
}
