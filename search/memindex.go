package search

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/store"
)

// memIndex is the search index: per-term postings with per-column term
// frequencies, and each chunk's filter fields. SQLite stays the source of
// truth; the index is loaded from the store and then follows its commits.
//
// A chunk has four columns: title, keywords (categories, tags, headings),
// body, and exact (the unstemmed surface forms of the title, categories
// and tags, for known-term matches).
type memIndex struct {
	mu      sync.RWMutex
	enabled bool // a load started: commits are worth following
	ready   bool
	// building is set while a load reads the store; commits that land
	// meanwhile wait in buffered.
	building bool
	buffered []store.IndexCommit
	// missed is set when a commit's count skipped some: another process
	// wrote the store, and only a reload brings its changes in.
	missed bool
	gen    int64 // the store's index_writes count the index reflects
	slots  []memSlot
	// lens is each slot's size, or deadLen once it died: what scoring
	// reads for every posting, four bytes a slot apart, where the slots
	// are 32 (on a site of 700,000 chunks, reading the slots themselves
	// was most of a search's time, waiting on memory).
	lens     []uint32
	terms    map[string]*memTerm
	docSlots map[int64][]uint32
	// chunkSlot finds a chunk's slot by its id, for the vectors' nearest
	// chunks. It costs 30 bytes a chunk, so it is made when hybrid search
	// first asks (slotOfChunk), and kept up from then on.
	chunkSlot map[int64]uint32
	// kinds are the distinct (chunk type, code language) pairs, which
	// slots name by number: a site has a handful (the extractor's chunk
	// types times the code languages its pages name), far from the
	// 65,536 a slot's uint16 can name (addLocked).
	kinds    []memKind
	kindOf   map[memKind]uint16
	live     int
	dead     int
	colTotal [4]int64
	// delGen changes whenever slots die or move; cached term counts from
	// another delGen are stale.
	delGen uint64
	// renumbered changes whenever slots move (a compaction, a load): a
	// slot number kept from before means another chunk, or none.
	renumbered uint64
	// applied is closed, and replaced, whenever gen moves.
	applied chan struct{}
	// scratch holds the score arrays: 12 bytes a chunk each, so their
	// number, not the number of concurrent searches, bounds the memory.
	scratch chan *memScratch
	loads   int64
	// an analyzes added chunks; it remembers stems across them.
	an *analysis.Analyzer
	// compactMin is the fewest dead slots worth a compaction. Compacting
	// costs a pass over every posting; waiting until the dead are a
	// quarter of the live (compactShare) keeps that cost per deleted
	// chunk bounded, and this floor keeps a small site from compacting at
	// every edit.
	compactMin int
	// strs interns the strings documents repeat (languages, post types,
	// category and tag names): one copy each rather than one a document.
	strs interner
	// The snapshot file (snapshot.go): where, for which build, the count
	// it was last written or read at, and whether it is on disk now.
	snapPath, snapVersion string
	snapGen               int64
	snapOnDisk            bool
	fromSnap              bool
	snapMu                sync.Mutex // one writer at a time
}

type memDoc struct {
	store.IndexDoc
	catSet, tagSet []string // lowercased, for filters
	// The title and exact columns are the document's, the same in each
	// of its chunks: their lengths are kept once.
	titleSize, exactSize uint32
	// archive is isArchive's verdict, which every search asks of every
	// candidate page: its permalink was scanned each time.
	archive bool
	// url is what the whole-page score reads of the page's URL, worked
	// out at the page's first search rather than at every one.
	url atomic.Pointer[docURL]
	// urlTerms are its URL's terms resolved to the index's (urlTerms).
	urlTerms atomic.Pointer[urlTermsAt]
	// names are its name words as associate reads them (namesOf).
	names atomic.Pointer[docNames]
	// title is its title analyzed (analyzedTitle).
	title atomic.Pointer[[]string]
	// meta are the words of its title, categories and tags a hit's
	// evidence matches (metaWords).
	meta atomic.Pointer[[]string]
}

// memSlot is a chunk in the index. Every chunk has one, so it is kept
// small: 32 bytes.
type memSlot struct {
	chunkID int64
	doc     *memDoc
	size    uint32    // tokens in all columns: BM25's document length
	colSize [2]uint32 // tokens in keywords and body
	kind    uint16    // its (type, code language) in memIndex.kinds
	dead    bool
	headed  bool // under one of its page's headings (introBoost)
}

type memKind struct{ typ, codeLang string }

// memTerm holds a term's postings, one per chunk holding it, in slot
// order, packed: each is a uvarint of its slot's distance from the
// previous posting's slot (the first's from 0), shifted left by one; its
// low bit set means the term is once in the body and nowhere else, the
// commonest case, and else its term frequencies follow (appendTF). A
// posting takes one to three bytes where a struct took eight; a chunk
// has a hundred or more.
type memTerm struct {
	post []byte
	last uint32 // the last posting's slot
	// n, stem and exact count the postings: all of them, those in the
	// stemmed columns, those in the exact column. While no slot is dead
	// they are the term's chunk counts, with no scan and no memCount.
	n, stem, exact uint32
	// cnt is filled by whichever search finds it stale, under the read
	// lock: an atomic swap lets concurrent searches share it.
	cnt atomic.Pointer[memCount]
}

// appendTF appends tf, the term's counts in title, keywords, body and
// exact (each stopping at 255, where BM25's saturation makes more count
// for under 0.1%). One byte says which columns hold the term; when one
// does, fewer than 16 times, its count shares that byte, else the counts
// of the columns that hold it follow.
func appendTF(b []byte, tf [4]uint8) []byte {
	var mask, n, v uint8
	for c, x := range tf {
		if x != 0 {
			mask |= 1 << c
			n++
			v = x
		}
	}
	if n == 1 && v < 16 {
		return append(b, mask|v<<4)
	}
	b = append(b, mask)
	for _, x := range tf {
		if x != 0 {
			b = append(b, x)
		}
	}
	return b
}

// onceInBody is the term frequencies of a term once in the body only.
var onceInBody = [4]uint8{0, 0, 1, 0}

func (t *memTerm) add(slot uint32, tf [4]uint8) {
	d := uint64(slot-t.last) << 1
	if tf == onceInBody {
		t.post = binary.AppendUvarint(t.post, d|1)
	} else {
		t.post = appendTF(binary.AppendUvarint(t.post, d), tf)
	}
	t.last = slot
	t.n++
	if tf[0]|tf[1]|tf[2] != 0 {
		t.stem++
	}
	if tf[3] != 0 {
		t.exact++
	}
}

// posting is a term's posting, decoded: its chunk's slot, the columns
// holding the term (a bit each) and the term's frequency in each.
type posting struct {
	slot uint32
	mask uint8
	tf   [4]uint8
}

// postingBlock is how many postings the iterator decodes at a time: the
// loops over postings call it once a block rather than once a posting, a
// call the compiler could not inline (BenchmarkCandidates and
// BenchmarkRerank took a third longer with a call per posting).
const postingBlock = 64

// postings iterates a term's packed postings, a block at a time:
//
//	it := t.iter()
//	for ps := it.next(); len(ps) > 0; ps = it.next() {
//		for _, p := range ps {
//
// It is the one reader of the packed format (memTerm).
type postings struct {
	b    []byte
	off  int
	slot uint32 // the last posting's
	buf  [postingBlock]posting
}

func (t *memTerm) iter() postings { return postings{b: t.post} }

// next decodes the next block of postings; none at the end. The block is
// the iterator's until the next call.
func (p *postings) next() []posting {
	n := 0
	for ; n < len(p.buf) && p.off < len(p.b); n++ {
		var d uint64
		d, p.off = uvarint(p.b, p.off)
		p.slot += uint32(d >> 1)
		q := &p.buf[n]
		q.slot = p.slot
		if d&1 != 0 {
			q.mask, q.tf = 4, onceInBody
			continue
		}
		h := p.b[p.off]
		p.off++
		q.mask, q.tf = h&15, [4]uint8{}
		if v := h >> 4; v != 0 {
			q.tf[bits.TrailingZeros8(q.mask)] = v
			continue
		}
		for c := range 4 {
			if q.mask&(1<<c) != 0 {
				q.tf[c] = p.b[p.off]
				p.off++
			}
		}
	}
	return p.buf[:n]
}

// uvarint decodes the varint at b[k:] and returns it with the offset
// after it. Small enough to be inlined: the loops over postings call it
// for every posting, where a call that was not inlined showed.
func uvarint(b []byte, k int) (uint64, int) {
	x := uint64(b[k])
	k++
	if x < 0x80 {
		return x, k
	}
	x &= 0x7f
	for shift := 7; ; shift += 7 {
		c := b[k]
		k++
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, k
		}
	}
}

// memCount caches how many live chunks hold a term in the stemmed columns
// and in the exact column (the document frequencies of the two kinds of
// match), and in any column (the vocabulary's count).
type memCount struct {
	delGen           uint64
	off              int    // bytes of postings counted
	slot             uint32 // the slot of the last posting counted
	stem, exact, any int32
	// pages is how many live pages hold the term in the stemmed columns,
	// counted over pagesOff bytes of postings (pageCount).
	pagesOff int
	pages    int32
}

// pageCount returns how many live pages hold t in the stemmed columns, as
// counted at this delGen over its postings as they are now; ok is false
// when no count is. Call with m.mu held.
func (m *memIndex) pageCount(t *memTerm) (n int, ok bool) {
	if c := t.cnt.Load(); c != nil && c.delGen == m.delGen && c.pagesOff == len(t.post) && len(t.post) > 0 {
		return int(c.pages), true
	}
	return 0, false
}

// setPageCount keeps n, counted over t's postings as they are now, beside
// whatever chunk counts are cached. Call with m.mu held.
func (m *memIndex) setPageCount(t *memTerm, n int) {
	var nc memCount
	if c := t.cnt.Load(); c != nil && c.delGen == m.delGen && c.off <= len(t.post) {
		nc = *c
	} else {
		// Chunk counts from nothing: counts starts again at the first
		// posting.
		nc = memCount{delGen: m.delGen}
	}
	nc.pagesOff, nc.pages = len(t.post), int32(n)
	t.cnt.Store(&nc)
}

// memChunk is an added chunk, analyzed outside the lock.
type memChunk struct {
	chunkID       int64
	doc           *memDoc
	typ, codeLang string
	colSize       [4]uint32
	headed        bool
	terms         []string
	tfs           [][4]uint8
}

// interner keeps one copy of each string, and of each list of strings,
// it is given: pages share their category and tag lists.
type interner struct {
	mu    sync.Mutex
	m     map[string]string
	lists map[string][]string
}

func (in *interner) get(s string) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.getLocked(s)
}

func (in *interner) getLocked(s string) string {
	if v, ok := in.m[s]; ok {
		return v
	}
	if in.m == nil {
		in.m = map[string]string{}
	}
	s = strings.Clone(s)
	in.m[s] = s
	return s
}

// strs returns xs, or f of each of xs, each string interned.
func (in *interner) strs(xs []string, f func(string) string) []string {
	if len(xs) == 0 {
		return nil
	}
	out := make([]string, len(xs))
	in.mu.Lock()
	defer in.mu.Unlock()
	for i, x := range xs {
		if f != nil {
			x = f(x)
		}
		out[i] = in.getLocked(x)
	}
	return out
}

// list returns xs, or f of each of xs, as a shared slice: callers must
// not change it.
func (in *interner) list(xs []string, f func(string) string) []string {
	if len(xs) == 0 {
		return nil
	}
	var key strings.Builder
	for _, x := range xs {
		if f != nil {
			x = f(x)
		}
		key.WriteString(x)
		key.WriteByte(0)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if l, ok := in.lists[key.String()]; ok {
		return l
	}
	if in.lists == nil {
		in.lists = map[string][]string{}
	}
	out := make([]string, len(xs))
	for i, x := range xs {
		if f != nil {
			x = f(x)
		}
		out[i] = in.getLocked(x)
	}
	in.lists[key.String()] = out
	return out
}

func newMemIndex(an *analysis.Analyzer) *memIndex {
	m := &memIndex{applied: make(chan struct{}), scratch: make(chan *memScratch, 2*runtime.GOMAXPROCS(0)), compactMin: 256, an: an}
	m.resetLocked()
	for range cap(m.scratch) {
		m.scratch <- &memScratch{}
	}
	return m
}

// resetLocked empties the index.
func (m *memIndex) resetLocked() {
	m.slots, m.lens, m.terms = nil, nil, map[string]*memTerm{}
	m.docSlots, m.chunkSlot = map[int64][]uint32{}, nil
	m.kinds, m.kindOf = nil, map[memKind]uint16{}
	m.live, m.dead, m.colTotal = 0, 0, [4]int64{}
	m.delGen++
}

func (m *memIndex) newMemDoc(d *store.IndexDoc) *memDoc {
	md := &memDoc{IndexDoc: *d, archive: isArchive(d.URL, d.PostType)}
	in := &m.strs
	md.Lang, md.PostType = in.get(d.Lang), in.get(d.PostType)
	// A site has a few combinations of categories, shared; tags vary
	// more, and a shared list of each would cost more than it saves.
	md.Categories, md.catSet = in.list(d.Categories, nil), in.list(d.Categories, strings.ToLower)
	md.Tags, md.tagSet = in.strs(d.Tags, nil), in.strs(d.Tags, strings.ToLower)
	if slices.Equal(md.Tags, md.tagSet) {
		md.tagSet = md.Tags
	}
	return md
}

// docTerms holds the analyzed fields shared by a document's chunks.
type docTerms struct {
	doc          *memDoc
	title, exact []string
	known        string // categories and tags, for each chunk's keywords
}

func (m *memIndex) newDocTerms(d *memDoc) *docTerms {
	known := strings.Join(append(append([]string{}, d.Categories...), d.Tags...), " ")
	dt := &docTerms{
		doc:   d,
		title: m.an.IndexTerms(d.Title, d.Lang, nil),
		exact: analysis.ExactTerms(d.Title+" "+known, d.Lang),
		known: known,
	}
	d.titleSize, d.exactSize = uint32(len(dt.title)), uint32(len(dt.exact))
	return dt
}

// chunkScratch is what analyzeChunk reuses from one chunk to the next,
// one per goroutine: a load analyzes every stored chunk, and the maps
// and slices made anew for each, grown from nothing, were a fifth of its
// CPU between their growth and the collections they caused.
type chunkScratch struct {
	at    map[string]int
	terms []string // the keyword and body columns' terms
	uniq  []string
	tfs   [][4]uint8
}

// analyzeChunk turns a stored chunk into its postings.
func (m *memIndex) analyzeChunk(c *store.IndexChunk, dt *docTerms, sc *chunkScratch) memChunk {
	lang := dt.doc.Lang
	sc.terms = m.an.AppendIndexTerms(sc.terms[:0], dt.known+" "+strings.Join(c.HeadingPath, " "), lang, nil)
	kw := len(sc.terms)
	sc.terms = m.an.AppendIndexTerms(sc.terms, c.Text, lang, nil)
	cols := [4][]string{dt.title, sc.terms[:kw], sc.terms[kw:], dt.exact}
	mc := memChunk{chunkID: c.ID, doc: dt.doc, typ: c.Type, codeLang: c.CodeLang, headed: len(c.HeadingPath) > 0}
	if sc.at == nil {
		sc.at = map[string]int{}
	}
	clear(sc.at)
	uniq, tfs := sc.uniq[:0], sc.tfs[:0]
	for col, terms := range cols {
		for _, tok := range terms {
			mc.colSize[col]++
			i, ok := sc.at[tok]
			if !ok {
				i = len(uniq)
				sc.at[tok] = i
				uniq = append(uniq, tok)
				tfs = append(tfs, [4]uint8{})
			}
			if tfs[i][col] < math.MaxUint8 {
				tfs[i][col]++
			}
		}
	}
	mc.terms, mc.tfs = slices.Clone(uniq), slices.Clone(tfs)
	// The scratch must not keep the chunk's text (its terms are slices
	// of it) alive past the next chunk: clear what this one wrote.
	clear(sc.terms)
	clear(uniq)
	sc.uniq, sc.tfs = uniq[:0], tfs[:0]
	return mc
}

// memOp is a store.IndexOp with its chunk analyzed.
type memOp struct {
	del int64
	add *memChunk
}

// IndexCommitted follows the store's commits (store.IndexObserver). The
// chunks are analyzed before the lock is taken, so searches wait only for
// the postings to be appended.
func (m *memIndex) IndexCommitted(c store.IndexCommit) {
	m.mu.RLock()
	enabled := m.enabled
	m.mu.RUnlock()
	if !enabled {
		return // nothing loaded yet: the load will read these rows
	}
	ops := m.analyzeOps(c.Ops)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.building {
		m.buffered = append(m.buffered, c)
		return
	}
	if m.ready {
		m.offerLocked(c.Gen, ops)
	}
}

func (m *memIndex) analyzeOps(ops []store.IndexOp) []memOp {
	out := make([]memOp, len(ops))
	docs := map[*store.IndexDoc]*docTerms{}
	var sc chunkScratch
	for i, op := range ops {
		if op.Add == nil {
			out[i] = memOp{del: op.Delete}
			continue
		}
		dt := docs[op.Add.Doc]
		if dt == nil {
			dt = m.newDocTerms(m.newMemDoc(op.Add.Doc))
			docs[op.Add.Doc] = dt
		}
		mc := m.analyzeChunk(op.Add, dt, &sc)
		out[i] = memOp{add: &mc}
	}
	return out
}

// offerLocked applies a commit unless the index holds it already. The
// store delivers a process's commits in count order, so a count that
// skips numbers is another process's write: the commit is applied, and
// missed asks for a reload to bring the rest in.
func (m *memIndex) offerLocked(gen int64, ops []memOp) {
	if gen <= m.gen {
		return // in the loaded snapshot already
	}
	if gen > m.gen+1 {
		m.missed = true
	}
	if m.snapOnDisk {
		// The snapshot no longer matches the store: a restart would not
		// read it, and a page deleted now must not linger in it.
		os.Remove(m.snapPath)
		m.snapOnDisk = false
	}
	for _, op := range ops {
		if op.add != nil {
			m.addLocked(op.add)
			continue
		}
		m.deleteDocLocked(op.del)
	}
	m.setGenLocked(gen)
	if m.dead > m.compactMin && m.dead*compactShare > m.live {
		m.compactLocked()
	}
}

// compactShare: a compaction comes once the dead slots are 1/compactShare
// of the live. The dead hold their postings and pages until then, and a
// pass that re-renders every page kills a slot for each one it adds: at
// 1 (until the dead outnumbered the live), a full re-index of the SciFact
// site under 200 searches a second held nearly twice the postings until
// its last pages and took RSS from 184 to 211 MB. Each compaction of its
// 5,349 slots holds the write lock for about 16 ms.
const compactShare = 4

func (m *memIndex) deleteDocLocked(docID int64) {
	for _, s := range m.docSlots[docID] {
		sl := &m.slots[s]
		if sl.dead {
			continue
		}
		sl.dead = true
		m.lens[s] = deadLen
		m.live--
		m.dead++
		m.colTotal[0] -= int64(sl.doc.titleSize)
		m.colTotal[1] -= int64(sl.colSize[0])
		m.colTotal[2] -= int64(sl.colSize[1])
		m.colTotal[3] -= int64(sl.doc.exactSize)
		if m.chunkSlot != nil {
			delete(m.chunkSlot, sl.chunkID)
		}
	}
	delete(m.docSlots, docID)
	m.delGen++
}

func (m *memIndex) setGenLocked(gen int64) {
	m.gen = gen
	close(m.applied)
	m.applied = make(chan struct{})
}

func (m *memIndex) addLocked(mc *memChunk) {
	s := uint32(len(m.slots))
	k := memKind{mc.typ, mc.codeLang}
	kind, ok := m.kindOf[k]
	if !ok && len(m.kinds) > math.MaxUint16 {
		// Pages naming ever new code languages must not wrap the numbers
		// around: past the table's end, a chunk keeps its type only.
		kind, ok = m.kindOf[memKind{typ: k.typ}], true
	}
	if !ok {
		kind = uint16(len(m.kinds))
		k = memKind{strings.Clone(k.typ), strings.Clone(k.codeLang)}
		m.kinds = append(m.kinds, k)
		m.kindOf[k] = kind
	}
	sl := memSlot{chunkID: mc.chunkID, doc: mc.doc, colSize: [2]uint32{mc.colSize[1], mc.colSize[2]}, kind: kind, headed: mc.headed}
	for i, n := range mc.colSize {
		sl.size += n
		m.colTotal[i] += int64(n)
	}
	m.slots = append(m.slots, sl)
	m.lens = append(m.lens, sl.size)
	m.docSlots[mc.doc.ID] = append(m.docSlots[mc.doc.ID], s)
	if m.chunkSlot != nil {
		m.chunkSlot[mc.chunkID] = s
	}
	m.live++
	for i, term := range mc.terms {
		t := m.terms[term]
		if t == nil {
			// The analyzer's terms may be slices of the chunk's text:
			// a key of its own keeps that text collectable.
			t = &memTerm{}
			m.terms[strings.Clone(term)] = t
		}
		t.add(s, mc.tfs[i])
	}
}

// introduces says whether the first of a page's slots, ss, is its
// introduction: under no heading, where a later one is under one. The
// caller holds m's read lock.
func (m *memIndex) introduces(ss []uint32) bool {
	if m.slots[ss[0]].headed {
		return false
	}
	for _, s := range ss[1:] {
		if m.slots[s].headed {
			return true
		}
	}
	return false
}

// compactLocked drops dead slots and their postings.
func (m *memIndex) compactLocked() {
	remap := make([]uint32, len(m.slots))
	var slots []memSlot
	for i, sl := range m.slots {
		if sl.dead {
			remap[i] = math.MaxUint32
			continue
		}
		remap[i] = uint32(len(slots))
		slots = append(slots, sl)
	}
	var buf []byte
	for term, t := range m.terms {
		// Each list is written anew: slot distances change, and an
		// in-place rewrite could outgrow what it has read.
		nt := memTerm{post: buf[:0]}
		it := t.iter()
		for ps := it.next(); len(ps) > 0; ps = it.next() {
			for _, p := range ps {
				if s := remap[p.slot]; s != math.MaxUint32 {
					nt.add(s, p.tf)
				}
			}
		}
		buf = nt.post
		if len(nt.post) == 0 {
			delete(m.terms, term)
			continue
		}
		t.post, t.last, t.n, t.stem, t.exact = bytes.Clone(nt.post), nt.last, nt.n, nt.stem, nt.exact
		t.cnt.Store(nil)
	}
	for id, ss := range m.docSlots {
		for i, s := range ss {
			ss[i] = remap[s]
		}
		m.docSlots[id] = ss
	}
	for id, s := range m.chunkSlot {
		m.chunkSlot[id] = remap[s]
	}
	m.slots = slots
	m.lens = slotLens(slots)
	m.dead = 0
	m.delGen++
	m.renumbered++
}

// build reads the whole store (or the snapshot of it, when there is one
// at the store's count) into a fresh index, with the links between its
// pages for a, and swaps both in, then applies the commits that landed
// meanwhile. The caller has set building here and in a (beginLoad).
func (m *memIndex) build(ctx context.Context, db *store.DB, a *anchorIndex) error {
	fresh, links, gen, fromSnap, err := m.readSnapshot(ctx, db)
	if err == nil && !fromSnap {
		fresh, links, gen, err = m.readStore(ctx, db, a)
	}
	if err != nil {
		a.loadFailed()
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
	// The links first, under their own lock: a search takes theirs
	// before the postings' (docScores), so no lock is held here while
	// the other is taken.
	a.loaded(links, gen)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.slots, m.lens, m.terms, m.docSlots, m.chunkSlot = fresh.slots, fresh.lens, fresh.terms, fresh.docSlots, fresh.chunkSlot
	m.kinds, m.kindOf = fresh.kinds, fresh.kindOf
	m.live, m.dead, m.colTotal = fresh.live, 0, fresh.colTotal
	m.delGen++
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

// analyzedBatch is a batch of stored chunks as a load's worker returns
// them: their postings, and the links each chunk makes (nil for most).
type analyzedBatch struct {
	chunks []memChunk
	links  [][]foundLink
}

// readStore reads every stored chunk into a fresh index, and their links
// into a fresh anchorIndex, in one pass over the store.
func (m *memIndex) readStore(ctx context.Context, db *store.DB, a *anchorIndex) (*memIndex, *anchorIndex, int64, error) {
	// Analysis is most of the work: a worker per core analyzes batches
	// of chunks (postings and links) while this goroutine reads the next
	// ones, and one collector adds them in order of arrival.
	var (
		fresh   = &memIndex{}
		links   = newAnchorIndex(a.an)
		jobs    = make(chan []*store.IndexChunk, 4)
		done    = make(chan analyzedBatch, 4)
		workers sync.WaitGroup
		added   = make(chan struct{})
	)
	fresh.resetLocked()
	for range runtime.GOMAXPROCS(0) {
		workers.Go(func() {
			var sc chunkScratch
			for b := range jobs {
				out := analyzedBatch{chunks: make([]memChunk, len(b)), links: make([][]foundLink, len(b))}
				var dt *docTerms
				for i, c := range b {
					if dt == nil || dt.doc.ID != c.Doc.ID {
						dt = m.newDocTerms(m.newMemDoc(c.Doc))
					}
					out.chunks[i] = m.analyzeChunk(c, dt, &sc)
					out.links[i] = a.chunkLinks(c)
				}
				done <- out
			}
		})
	}
	go func() {
		for out := range done {
			for i := range out.chunks {
				mc := &out.chunks[i]
				fresh.addLocked(mc)
				if len(out.links[i]) > 0 {
					links.addLocked(mc.doc.ID, out.links[i])
				}
			}
		}
		close(added)
	}()
	var b []*store.IndexChunk
	gen, err := db.ReadIndex(ctx, func(c *store.IndexChunk) error {
		// A document's chunks stay in one batch, so they share its memDoc.
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
		return nil, nil, 0, err
	}
	// Lists grown by append hold up to twice their length.
	for _, t := range fresh.terms {
		if cap(t.post) > len(t.post) {
			t.post = bytes.Clone(t.post)
		}
	}
	fresh.slots, fresh.lens = slices.Clip(fresh.slots), slices.Clip(fresh.lens)
	return fresh, links, gen, nil
}

// applyBufferedLocked applies the commits that landed during a load.
func (m *memIndex) applyBufferedLocked() {
	for _, c := range m.buffered {
		m.offerLocked(c.Gen, m.analyzeOps(c.Ops))
	}
}

// waitGen waits until the index reflects gen, for at most d.
func (m *memIndex) waitGen(ctx context.Context, gen int64, d time.Duration) bool {
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

// counts returns a term's live chunk counts. Call with m.mu held.
func (m *memIndex) counts(t *memTerm) memCount {
	if m.dead == 0 {
		return memCount{any: int32(t.n), stem: int32(t.stem), exact: int32(t.exact)}
	}
	c := t.cnt.Load()
	if c != nil && c.delGen == m.delGen && c.off == len(t.post) {
		return *c
	}
	nc := memCount{delGen: m.delGen}
	if c != nil && c.delGen == m.delGen && c.off <= len(t.post) {
		// Only appended since: count the new postings.
		nc = *c
	}
	it := postings{b: t.post, off: nc.off, slot: nc.slot}
	for ps := it.next(); len(ps) > 0; ps = it.next() {
		for _, p := range ps {
			if m.lens[p.slot] == deadLen {
				continue
			}
			nc.any++
			if p.mask&7 != 0 {
				nc.stem++
			}
			if p.mask&8 != 0 {
				nc.exact++
			}
		}
	}
	nc.off, nc.slot = len(t.post), it.slot
	t.cnt.Store(&nc)
	return nc
}

// eachTerm calls fn with every term and the number of live chunks holding
// it, in any column.
func (m *memIndex) eachTerm(fn func(term string, docs int)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for term, t := range m.terms {
		if n := m.counts(t).any; n > 0 {
			fn(term, int(n))
		}
	}
}

// termDocs returns how many chunks hold each term in any column (stems
// and exact surfaces share one vocabulary).
func (m *memIndex) termDocs(terms []string) map[string]int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]int, len(terms))
	for _, term := range terms {
		if t := m.terms[term]; t != nil {
			if n := m.counts(t).any; n > 0 {
				out[term] = int(n)
			}
		}
	}
	return out
}

// fieldStats are the index's average column lengths, for BM25F.
type fieldStats struct {
	n                              int
	avgTitle, avgKeywords, avgBody float64
}

func (m *memIndex) fieldStats() fieldStats {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := max(m.live, 1)
	return fieldStats{n: n,
		avgTitle:    float64(m.colTotal[0]) / float64(n),
		avgKeywords: float64(m.colTotal[1]) / float64(n),
		avgBody:     float64(m.colTotal[2]) / float64(n)}
}

// memPhrase is one scored clause of a query: a term in the stemmed
// columns or in the exact column.
type memPhrase struct {
	term  string
	exact bool
	group int // for an AND query: the phrases of a group are OR-ed
}

// memPhrases turns the query into its scored clauses: each live term in
// the stemmed columns (repeated by its weight), and its surface form in
// the exact column when exact is set. For an AND query, groups numbers
// the terms a chunk must all match (a synonym joins its word's group).
func (pq *parsedQuery) memPhrases(exact bool) (ps []memPhrase, groups int) {
	if pq.requireAll {
		idx := map[string]int{}
		for _, t := range pq.Terms {
			if t.Weight <= 0 {
				continue
			}
			g, seen := idx[t.group()]
			if !seen {
				if len(idx) == 32 {
					// A mask of 32 bits: more groups cannot all be required.
					return nil, 0
				}
				g = len(idx)
				idx[t.group()] = g
			}
			ps = append(ps, memPhrase{term: t.Term, group: g})
		}
		return ps, len(idx)
	}
	for _, t := range pq.Terms {
		if t.Weight <= 0 {
			continue
		}
		for i := 0; i < t.Weight; i++ {
			ps = append(ps, memPhrase{term: t.Term})
		}
		if exact && t.Surface != "" {
			ps = append(ps, memPhrase{term: t.Surface, exact: true})
		}
	}
	return ps, 0
}

type memScratch struct {
	score   []float64
	mask    []uint32
	touched []uint32
	hits    []memHit // the touched chunks that pass, a tenth of a search's allocated bytes when made anew
}

type memHit struct {
	slot  uint32
	score float64
}

// bm25 constants: the classic k1 and b, with one length over all columns.
const bm25K1, bm25B = 1.2, 0.75

// candidates scores the chunks matching ps with BM25 (k1 1.2, b 0.75, one
// length over all columns, each column's term frequency weighted), keeps
// those that pass the filters strictly (and, when allow is set, are in
// it), and returns the best k.
func (m *memIndex) candidates(ps []memPhrase, groups int, q Query, rk Ranking, k int, allow map[uint32]bool) []*candidate {
	weights := [4]float64{rk.TitleWeight, rk.KeywordWeight, rk.BodyWeight, rk.ExactWeight}
	// A free scratch first, the lock second: a search waiting for
	// scratch space must not hold up a writer.
	sc := <-m.scratch
	defer func() { m.scratch <- sc }()
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.live == 0 || len(ps) == 0 {
		return nil
	}
	if len(sc.score) < len(m.slots) {
		sc.score = make([]float64, len(m.slots)+len(m.slots)/4)
		sc.mask = make([]uint32, len(sc.score))
	}
	score, mask := sc.score, sc.mask
	touched := sc.touched[:0]
	defer func() {
		for _, s := range touched {
			score[s], mask[s] = 0, 0
		}
		sc.touched = touched[:0]
	}()

	var total int64
	for _, n := range m.colTotal {
		total += n
	}
	nRow := float64(m.live)
	avgdl := float64(total) / nRow
	for _, p := range ps {
		t := m.terms[p.term]
		if t == nil {
			continue
		}
		cnt := m.counts(t)
		nHit := float64(cnt.stem)
		lo, hi := 0, 3
		if p.exact {
			nHit, lo, hi = float64(cnt.exact), 3, 4
		}
		if nHit == 0 {
			continue
		}
		idf := bm25IDF(nRow, nHit)
		bit := uint32(1) << uint(p.group)
		cols := uint8(7) // title, keywords, body
		if p.exact {
			cols = 8
		}
		it := t.iter()
		for ps := it.next(); len(ps) > 0; ps = it.next() {
			for _, p := range ps {
				if p.mask&cols == 0 {
					continue
				}
				slot, tf := p.slot, p.tf
				size := m.lens[slot]
				if size == deadLen {
					continue
				}
				var freq float64
				for c := lo; c < hi; c++ {
					freq += weights[c] * float64(tf[c])
				}
				if mask[slot] == 0 {
					touched = append(touched, slot)
				}
				mask[slot] |= bit
				score[slot] += idf * (freq * (bm25K1 + 1)) / (freq + bm25K1*(1-bm25B+bm25B*float64(size)/avgdl))
			}
		}
	}

	need := uint32(1)<<uint(groups) - 1
	if groups == 0 {
		need = 1
	}
	byDate := q.Sort == "date"
	hits := sc.hits[:0]
	for _, s := range touched {
		if groups > 0 && mask[s] != need {
			continue
		}
		if allow != nil && !allow[s] {
			continue
		}
		if !q.Filters.empty() && !q.Filters.match(m.slots[s].doc, m.kinds[m.slots[s].kind]) {
			continue
		}
		hits = append(hits, memHit{s, score[s]})
	}
	less := func(a, b memHit) bool {
		if byDate {
			pa, pb := m.slots[a.slot].doc.Published, m.slots[b.slot].doc.Published
			if !pa.Equal(pb) {
				return pa.After(pb)
			}
		}
		if a.score != b.score {
			return a.score > b.score
		}
		// Ties go by URL, which every cluster node shares, where chunk
		// ids are each store's own; a page's chunks are stored in order,
		// so within a page the ids order them the same on every node.
		sa, sb := &m.slots[a.slot], &m.slots[b.slot]
		if sa.doc != sb.doc && sa.doc.URL != sb.doc.URL {
			return sa.doc.URL < sb.doc.URL
		}
		return sa.chunkID < sb.chunkID
	}
	if cap(hits) <= 1<<16 {
		// A query of common words only may touch most of a big site's
		// chunks: that slice is not kept.
		sc.hits = hits[:0]
	}
	hits = bestK(hits, k, less)
	out := make([]*candidate, len(hits))
	// One allocation for the candidates: a search makes a hundred.
	all := make([]candidate, len(hits))
	for i, h := range hits {
		all[i] = m.candidate(h.slot, h.score)
		out[i] = &all[i]
	}
	return out
}

// bm25IDF is the inverse document frequency of a term held by nHit of n
// chunks, floored just above 0 so a term in most chunks still counts.
func bm25IDF(n, nHit float64) float64 {
	idf := math.Log((n - nHit + 0.5) / (nHit + 0.5))
	if idf <= 0 {
		idf = 1e-6
	}
	return idf
}

// candidate returns slot s's chunk with a score. Call with m.mu held.
func (m *memIndex) candidate(s uint32, score float64) candidate {
	sl := &m.slots[s]
	c := newCandidate(sl, m.kinds[sl.kind], score)
	c.slot = s
	return c
}

func newCandidate(sl *memSlot, k memKind, score float64) candidate {
	return candidate{chunkID: sl.chunkID, doc: sl.doc, score: score, chunkType: k.typ, codeLang: k.codeLang}
}

// bestK returns the k best of hs, best first. A common word matches tens
// of thousands of chunks; a heap of k keeps the selection O(n log k).
func bestK(hs []memHit, k int, better func(a, b memHit) bool) []memHit {
	if len(hs) > k && k > 0 {
		// A heap with the worst of the best k at its root.
		h := hs[:k]
		worse := func(i, j int) bool { return better(h[j], h[i]) }
		down := func(i int) {
			for {
				w, l, r := i, 2*i+1, 2*i+2
				if l < len(h) && worse(l, w) {
					w = l
				}
				if r < len(h) && worse(r, w) {
					w = r
				}
				if w == i {
					return
				}
				h[i], h[w] = h[w], h[i]
				i = w
			}
		}
		for i := len(h)/2 - 1; i >= 0; i-- {
			down(i)
		}
		for _, x := range hs[k:] {
			if better(x, h[0]) {
				h[0] = x
				down(0)
			}
		}
		hs = h
	} else if k <= 0 {
		return nil
	}
	sort.Slice(hs, func(i, j int) bool { return better(hs[i], hs[j]) })
	return hs
}

// match reports whether a chunk of document d, of kind k, passes the
// filters.
func (f Filters) match(d *memDoc, k memKind) bool {
	if len(f.PostType) > 0 && !containsString(f.PostType, d.PostType) {
		return false
	}
	if f.ChunkType != "" && k.typ != f.ChunkType {
		return false
	}
	if f.CodeLang != "" && k.codeLang != strings.ToLower(f.CodeLang) {
		return false
	}
	// A language filter matches its regional variants: "en" is "en-GB".
	if f.Lang != "" && d.Lang != f.Lang &&
		!(len(d.Lang) > len(f.Lang) && d.Lang[len(f.Lang)] == '-' && strings.EqualFold(d.Lang[:len(f.Lang)], f.Lang)) {
		return false
	}
	// Category and tag names match whatever their case: "news" is "News",
	// "ünïcode" is "ÜNÏCODE".
	if f.Category != "" && !containsString(d.catSet, strings.ToLower(f.Category)) {
		return false
	}
	if f.Tag != "" && !containsString(d.tagSet, strings.ToLower(f.Tag)) {
		return false
	}
	// Dates compare to the second, as stored; an undated page is neither
	// after nor before anything.
	if !f.After.IsZero() && (d.Published.IsZero() || d.Published.Before(f.After.Truncate(time.Second))) {
		return false
	}
	if !f.Before.IsZero() && (d.Published.IsZero() || !d.Published.Before(f.Before.Truncate(time.Second))) {
		return false
	}
	return true
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// slotOfChunk returns the live slot of a chunk. Call with m.mu read
// locked; the first call makes chunkSlot, under the write lock.
func (m *memIndex) slotOfChunk(id int64) (uint32, bool) {
	if m.chunkSlot == nil {
		m.mu.RUnlock()
		m.mu.Lock()
		if m.chunkSlot == nil {
			cs := make(map[int64]uint32, m.live)
			for i, sl := range m.slots {
				if !sl.dead {
					cs[sl.chunkID] = uint32(i)
				}
			}
			m.chunkSlot = cs
		}
		m.mu.Unlock()
		m.mu.RLock()
	}
	s, ok := m.chunkSlot[id]
	return s, ok
}

// deadLen marks a dead slot in memIndex.lens.
const deadLen = math.MaxUint32

func slotLens(slots []memSlot) []uint32 {
	lens := make([]uint32, len(slots))
	for i, sl := range slots {
		lens[i] = sl.size
		if sl.dead {
			lens[i] = deadLen
		}
	}
	return lens
}
