package index

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/askwp/askwpd/analysis"
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

// termListBytes bounds the kept texts' term lists and the numbering of
// their terms, apart from the texts: lists never push texts out, and
// when the lists are full no more are made until entries leave.
const termListBytes = 8 << 20

// textEntryOverhead is what an entry costs besides its strings: the
// struct, its map slots and its place in its page's list.
const textEntryOverhead = 160

// Texts keeps the stored text of chunks a search read, by chunk id.
// The store reuses the id of a deleted chunk for the next one it adds, so
// the cache follows the store's commits (it is an IndexObserver): a
// deleted page's chunks and any chunk added are dropped. A search that
// read the store while a commit dropped entries does not add what it read
// (epoch), since it may have read the text the commit replaced. Another
// process's writes reach the index only by a reload, which empties the
// cache and reads the chunks it held again.
type Texts struct {
	mu    sync.Mutex
	max   int
	size  int // of the texts
	epoch uint64
	byID  map[int64]*CachedText
	byDoc map[int64][]int64
	// termIDs numbers the terms of the kept term lists from 1. It only
	// grows, up to maxTermIDs: a search holds lists and the numbers of its
	// terms while others add to it.
	termIDs  map[string]uint32
	listMax  int
	listSize int // of the lists and termIDs
}

// CachedText is a chunk's stored text as the cache keeps it. Its exported
// fields are not changed once it is made.
type CachedText struct {
	docID             int64
	Start, End        int
	Text, ContentHash string
	HeadingPath       []string
	// terms lists the text's terms where the rerank looks for them
	// (forward); an empty list where analysis.AppendTermsAt cannot make
	// one. Set under the cache's lock.
	terms atomic.Pointer[TermList]
	// hits counts the searches that read the text from the cache.
	hits atomic.Int32
}

// listAfterHits is how many times a text is read from the cache before
// its terms are listed: a list made for a text soon evicted costs more
// than it saves.
const listAfterHits = 2

// TermList lists a text's terms where the rerank looks for them
// (LocateIn).
type TermList []termAt16

// termAt16 is an analysis.TermAt in 8 bytes, the term by its number: a
// list costs about what its text does.
type termAt16 struct {
	id      uint32
	pos, at uint16
}

// maxTermIDs bounds the terms numbered.
const maxTermIDs = 1 << 16

// termIDOverhead is what a numbered term costs besides its bytes.
const termIDOverhead = 48

func newTexts(max, listMax int) *Texts {
	return &Texts{max: max, listMax: listMax, byID: map[int64]*CachedText{}, byDoc: map[int64][]int64{},
		termIDs: map[string]uint32{}}
}

// Fill returns the entries of ids the cache holds (nil for the others),
// each read once more (listAfterHits), with the epoch to hand back to
// Add.
func (tc *Texts) Fill(ids []int64) (entries []*CachedText, epoch uint64) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	entries = make([]*CachedText, len(ids))
	for i, id := range ids {
		if e := tc.byID[id]; e != nil {
			entries[i] = e
			e.hits.Add(1)
		}
	}
	return entries, tc.epoch
}

// Add keeps chunks read from the store, unless a commit dropped entries
// since epoch.
func (tc *Texts) Add(epoch uint64, chunks map[int64]*store.Chunk) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if epoch != tc.epoch {
		return
	}
	for id, ch := range chunks {
		if tc.byID[id] == nil {
			tc.put(id, entryOf(ch))
		}
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

// addWithin keeps a chunk read from the store if its text fits the cache
// whole, evicting none, and returns its entry: nil when a commit dropped
// entries since epoch, or when it does not fit (full).
func (tc *Texts) addWithin(epoch uint64, ch *store.Chunk) (e *CachedText, full bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if epoch != tc.epoch {
		return nil, false
	}
	if e := tc.byID[ch.ID]; e != nil { // a search added it meanwhile
		return e, false
	}
	e = entryOf(ch)
	if tc.size+e.cost() > tc.max {
		return nil, true
	}
	tc.put(ch.ID, e)
	return e, false
}

func entryOf(ch *store.Chunk) *CachedText {
	return &CachedText{docID: ch.DocID, Start: ch.Start, End: ch.End, Text: ch.Text, ContentHash: ch.ContentHash,
		HeadingPath: ch.HeadingPath}
}

// put keeps e as chunk id's entry. The caller holds mu.
func (tc *Texts) put(id int64, e *CachedText) {
	tc.byID[id] = e
	tc.byDoc[e.docID] = append(tc.byDoc[e.docID], id)
	tc.size += e.cost()
}

func (e *CachedText) cost() int {
	n := textEntryOverhead + len(e.Text) + len(e.ContentHash)
	for _, h := range e.HeadingPath {
		n += 16 + len(h)
	}
	return n
}

func (e *CachedText) listCost() int {
	if l := e.terms.Load(); l != nil {
		return 8 * cap(*l)
	}
	return 0
}

// drop removes chunk id. The caller holds mu.
func (tc *Texts) drop(id int64) {
	e := tc.byID[id]
	if e == nil {
		return
	}
	tc.forget(id, e)
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

// forget removes entry e of chunk id, but from its page's list. The
// caller holds mu.
func (tc *Texts) forget(id int64, e *CachedText) {
	delete(tc.byID, id)
	tc.size -= e.cost()
	tc.listSize -= e.listCost()
}

// Forward returns the list of the terms of e's text (chunk chunkID's, in
// lang), making it if the text came from the cache often enough
// (listAfterHits) and the lists have room: nil when there is none.
// Analyzing the whole text once costs a few times what one look for a
// query's terms does, and saves it every time after: without the lists,
// BenchmarkRerank took 8 % longer.
func (tc *Texts) Forward(an *analysis.Analyzer, e *CachedText, chunkID int64, lang string) TermList {
	if e == nil {
		return nil
	}
	if l := e.terms.Load(); l != nil {
		return *l
	}
	if e.hits.Load() < listAfterHits {
		return nil
	}
	return tc.list(an, chunkID, e, lang)
}

// list makes the list of e's text terms, unless the lists are full or e
// left the cache: nil then.
func (tc *Texts) list(an *analysis.Analyzer, chunkID int64, e *CachedText, lang string) TermList {
	if !tc.listRoom(0) {
		return nil
	}
	list, ok := an.AppendTermsAt(nil, e.Text, lang)
	if len(e.Text) > math.MaxUint16 || len(list) > 0 && list[len(list)-1].Pos > math.MaxUint16 {
		ok = false
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if l := e.terms.Load(); l != nil { // another search made it meanwhile
		return *l
	}
	if tc.byID[chunkID] != e || tc.listSize+8*len(list) > tc.listMax {
		return nil // evicted meanwhile, or no room
	}
	var terms TermList
	if ok {
		terms = make(TermList, len(list))
		for i, x := range list {
			id := tc.termIDs[x.Term]
			if id == 0 {
				if len(tc.termIDs) == maxTermIDs {
					terms = nil
					break
				}
				id = uint32(len(tc.termIDs) + 1)
				tc.termIDs[x.Term] = id
				tc.listSize += termIDOverhead + len(x.Term)
			}
			terms[i] = termAt16{id, uint16(x.Pos), uint16(x.At)}
		}
	}
	if terms == nil {
		terms = TermList{}
	}
	e.terms.Store(&terms)
	tc.listSize += 8 * cap(terms)
	return terms
}

// Get returns chunk id's entry, nil when the cache does not hold it.
func (tc *Texts) Get(id int64) *CachedText {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.byID[id]
}

// Size returns the bytes the kept texts and the term lists cost, as the
// cache counts them against its bounds.
func (tc *Texts) Size() (texts, lists int) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.size, tc.listSize
}

// Listed reports whether e's text has a list of its terms that is not
// empty.
func (e *CachedText) Listed() bool {
	l := e.terms.Load()
	return l != nil && len(*l) > 0
}

// lookup returns the entries of ids the cache holds, the ids it lacks,
// and the epoch to add those under (addWithin).
func (tc *Texts) lookup(ids []int64) (held map[int64]*CachedText, missing []int64, epoch uint64) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	held = make(map[int64]*CachedText, len(ids))
	for _, id := range ids {
		if e := tc.byID[id]; e != nil {
			held[id] = e
		} else {
			missing = append(missing, id)
		}
	}
	return held, missing, tc.epoch
}

// listRoom reports whether the lists have room for n more bytes.
func (tc *Texts) listRoom(n int) bool {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.listSize+n <= tc.listMax
}

// IDs returns the numbers of terms in the lists, 0 for a term no list
// holds.
func (tc *Texts) IDs(terms []string) []uint32 {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	out := make([]uint32, len(terms))
	for i, t := range terms {
		out[i] = tc.termIDs[t]
	}
	return out
}

// LocateIn is analysis.LocateIndexTerms over a list of the text's terms,
// the terms given by number (IDs). As there, count must be how many times
// each term is in the index's list of the text's terms, and their sum
// above 0.
func LocateIn(list TermList, ids []uint32, count []int, fn func(i, pos, at int)) {
	left := 0
	for _, n := range count {
		left += n
	}
	stop := -1
	for _, x := range list {
		if stop >= 0 && int(x.at) != stop {
			return
		}
		for i, id := range ids {
			if id == x.id {
				fn(i, int(x.pos), int(x.at))
				if left--; left == 0 {
					stop = int(x.at)
				}
				break
			}
		}
	}
}

// IndexCommitted drops the chunks a commit deleted or whose id it gave to
// a new chunk. Any commit ends the epoch: a search reading the store
// meanwhile may have read a chunk before the commit replaced it, under an
// id the cache did not hold yet.
func (tc *Texts) IndexCommitted(c store.IndexCommit) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for _, op := range c.Ops {
		if op.Add != nil {
			tc.drop(op.Add.ID)
			continue
		}
		for _, id := range tc.byDoc[op.Delete] {
			tc.forget(id, tc.byID[id])
		}
		delete(tc.byDoc, op.Delete)
	}
	tc.epoch++
}

// Held returns the ids of the chunks the cache holds.
func (tc *Texts) Held() map[int64]bool {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	out := make(map[int64]bool, len(tc.byID))
	for id := range tc.byID {
		out[id] = true
	}
	return out
}

// clear empties the cache, for a reload of the index. The term numbers
// stay, with their cost.
func (tc *Texts) clear() {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for id, e := range tc.byID {
		tc.forget(id, e)
	}
	clear(tc.byDoc)
	tc.epoch++
}
