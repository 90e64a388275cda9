package index

import (
	"bytes"
	"context"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/store"
)

// Index is the in-memory index of one store's chunks (doc.go). It is safe
// for concurrent use; its readers take the read lock (RLock) and call the
// accessors that say so.
type Index struct {
	db *store.DB
	// an analyzes everything the index reads, remembering stems.
	an *analysis.Analyzer
	// Texts keeps the chunk texts searches read from the store.
	Texts *Texts
	// unobserve stops the store's commit notifications; stop cancels a
	// load in progress. Both are Close's.
	unobserve func()
	ctx       context.Context
	stop      context.CancelFunc

	mu sync.RWMutex
	contents
	// loading is the load under way; after closed, none starts.
	loading *loadCall
	closed  bool
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
	// renumbered changes whenever slots move (a compaction, a load): a
	// slot number kept from before means another chunk, or none.
	renumbered uint64
	// applied is closed, and replaced, whenever gen moves.
	applied chan struct{}
	loads   int64
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

	// lastReload is when a search last started a reload (unix nanos).
	lastReload atomic.Int64
	// lastLook is when a search last read the store's count of index
	// writes (unix nanos), looking for another process's.
	lastLook atomic.Int64
	reread   atomic.Int64
	// stats is the state Stats last read.
	stats atomic.Pointer[stats]
}

// contents is what a load builds, and swaps in whole.
type contents struct {
	slots []Slot
	// lens is each slot's size, or deadLen once it died: what scoring
	// reads for every posting, four bytes a slot apart, where the slots
	// are 32. Read from the slots, BenchmarkCandidates took 22-27 %
	// longer, and more on a site whose slots do not fit the caches.
	lens     []uint32
	terms    map[string]*Term
	docSlots map[int64][]uint32
	// chunkSlot finds a chunk's slot by its id, for the vectors' nearest
	// chunks. It costs 30 bytes a chunk, so it is made when hybrid search
	// first asks (SlotOfChunk), and kept up from then on.
	chunkSlot map[int64]uint32
	// kinds are the distinct (chunk type, code language) pairs, which
	// slots name by number: a site has a handful (the extractor's chunk
	// types times the code languages its pages name), far from the
	// 65,536 a slot's uint16 can name (add).
	kinds    []Kind
	kindOf   map[Kind]uint16
	live     int
	dead     int
	colTotal [4]int64
	// links are the words around the links between the pages (links.go).
	links *Links
}

func newContents() *contents {
	return &contents{terms: map[string]*Term{}, docSlots: map[int64][]uint32{}, kindOf: map[Kind]uint16{}, links: newLinks()}
}

// Doc is a page in the index, shared by its chunks' slots. Its fields
// are set when it is added and not changed after.
type Doc struct {
	store.IndexDoc
	CatSet, TagSet []string // lowercased, for filters
	// The title and exact columns are the document's, the same in each
	// of its chunks: their lengths are kept once.
	TitleSize, ExactSize uint32
	// Archive is IsArchive's verdict, which every search asks of every
	// candidate page.
	Archive bool
	// words are what the ranking reads of the page's fields, analyzed
	// at its first search (Words); terms are its name words resolved to
	// the index's terms (DocTerms).
	words atomic.Pointer[DocWords]
	terms atomic.Pointer[DocTerms]
}

// Slot is a chunk in the index. Every chunk has one, so it is kept
// small: 32 bytes.
type Slot struct {
	ChunkID int64
	Doc     *Doc
	Size    uint32    // tokens in all columns: BM25's document length
	ColSize [2]uint32 // tokens in keywords and body
	Kind    uint16    // its (type, code language): Index.Kind
	Dead    bool
	Headed  bool // under one of its page's headings
}

// Kind is a chunk's type and code language.
type Kind struct{ Type, CodeLang string }

// chunk is an added chunk, analyzed outside the lock.
type chunk struct {
	chunkID       int64
	doc           *Doc
	typ, codeLang string
	colSize       [4]uint32
	headed        bool
	terms         []string
	tfs           [][4]uint8
	links         []foundLink // to the site's other pages
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

func newIndex(an *analysis.Analyzer) *Index {
	m := &Index{applied: make(chan struct{}), compactMin: 256, an: an, contents: *newContents()}
	return m
}

// resetLocked empties the index.
func (m *Index) resetLocked() {
	m.contents = *newContents()
}

func (m *Index) newDoc(d *store.IndexDoc) *Doc {
	md := &Doc{IndexDoc: *d, Archive: isArchive(d.URL, d.PostType)}
	in := &m.strs
	md.Lang, md.PostType = in.get(d.Lang), in.get(d.PostType)
	// A site has a few combinations of categories, shared; tags vary
	// more, and a shared list of each would cost more than it saves.
	md.Categories, md.CatSet = in.list(d.Categories, nil), in.list(d.Categories, strings.ToLower)
	md.Tags, md.TagSet = in.strs(d.Tags, nil), in.strs(d.Tags, strings.ToLower)
	if slices.Equal(md.Tags, md.TagSet) {
		md.TagSet = md.Tags
	}
	return md
}

// docTerms holds the analyzed fields shared by a document's chunks.
type docTerms struct {
	doc          *Doc
	title, exact []string
	known        string // categories and tags, for each chunk's keywords
}

func (m *Index) newDocTerms(d *Doc) *docTerms {
	known := strings.Join(append(append([]string{}, d.Categories...), d.Tags...), " ")
	dt := &docTerms{
		doc:   d,
		title: m.an.IndexTerms(d.Title, d.Lang, nil),
		exact: analysis.ExactTerms(d.Title+" "+known, d.Lang),
		known: known,
	}
	d.TitleSize, d.ExactSize = uint32(len(dt.title)), uint32(len(dt.exact))
	return dt
}

// chunkScratch is what analyzeChunk reuses from one chunk to the next,
// one per goroutine: a load analyzes every stored chunk, and with the
// maps and slices made anew for each (and every URL parsed, mayBeArchive)
// BenchmarkLoad took 23 % longer.
type chunkScratch struct {
	at    map[string]int
	terms []string // the keyword and body columns' terms
	uniq  []string
	tfs   [][4]uint8
}

// analyzeChunk turns a stored chunk into its postings.
func (m *Index) analyzeChunk(c *store.IndexChunk, dt *docTerms, sc *chunkScratch) chunk {
	lang := dt.doc.Lang
	sc.terms = m.an.AppendIndexTerms(sc.terms[:0], dt.known+" "+strings.Join(c.HeadingPath, " "), lang, nil)
	kw := len(sc.terms)
	sc.terms = m.an.AppendIndexTerms(sc.terms, c.Text, lang, nil)
	cols := [4][]string{dt.title, sc.terms[:kw], sc.terms[kw:], dt.exact}
	mc := chunk{chunkID: c.ID, doc: dt.doc, typ: c.Type, codeLang: c.CodeLang, headed: len(c.HeadingPath) > 0}
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
	mc.links = chunkLinks(m.an, c)
	return mc
}

// commitOp is a store.IndexOp with its chunk analyzed.
type commitOp struct {
	del int64
	add *chunk
}

// IndexCommitted follows the store's commits (store.IndexObserver). The
// chunks are analyzed before the lock is taken, so searches wait only for
// the postings to be appended.
func (m *Index) IndexCommitted(c store.IndexCommit) {
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

func (m *Index) analyzeOps(ops []store.IndexOp) []commitOp {
	out := make([]commitOp, len(ops))
	docs := map[*store.IndexDoc]*docTerms{}
	var sc chunkScratch
	for i, op := range ops {
		if op.Add == nil {
			out[i] = commitOp{del: op.Delete}
			continue
		}
		dt := docs[op.Add.Doc]
		if dt == nil {
			dt = m.newDocTerms(m.newDoc(op.Add.Doc))
			docs[op.Add.Doc] = dt
		}
		mc := m.analyzeChunk(op.Add, dt, &sc)
		out[i] = commitOp{add: &mc}
	}
	return out
}

// offerLocked applies a commit unless the index holds it already. The
// store delivers a process's commits in count order, so a count that
// skips numbers is another process's write: the commit is applied, and
// missed asks for a reload to bring the rest in.
func (m *Index) offerLocked(gen int64, ops []commitOp) {
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
			m.add(op.add)
			continue
		}
		m.deleteDocLocked(op.del)
		m.links.drop(op.del)
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

func (m *Index) deleteDocLocked(docID int64) {
	for _, s := range m.docSlots[docID] {
		sl := &m.slots[s]
		if sl.Dead {
			continue
		}
		sl.Dead = true
		m.lens[s] = deadLen
		m.live--
		m.dead++
		m.colTotal[0] -= int64(sl.Doc.TitleSize)
		m.colTotal[1] -= int64(sl.ColSize[0])
		m.colTotal[2] -= int64(sl.ColSize[1])
		m.colTotal[3] -= int64(sl.Doc.ExactSize)
		if m.chunkSlot != nil {
			delete(m.chunkSlot, sl.ChunkID)
		}
	}
	delete(m.docSlots, docID)
}

func (m *Index) setGenLocked(gen int64) {
	m.gen = gen
	close(m.applied)
	m.applied = make(chan struct{})
}

// add adds a chunk in a new slot, with its links.
func (m *contents) add(mc *chunk) {
	s := uint32(len(m.slots))
	k := Kind{mc.typ, mc.codeLang}
	kind, ok := m.kindOf[k]
	if !ok && len(m.kinds) > math.MaxUint16 {
		// Pages naming ever new code languages must not wrap the numbers
		// around: past the table's end, a chunk keeps its type only.
		kind, ok = m.kindOf[Kind{Type: k.Type}], true
	}
	if !ok {
		kind = uint16(len(m.kinds))
		k = Kind{strings.Clone(k.Type), strings.Clone(k.CodeLang)}
		m.kinds = append(m.kinds, k)
		m.kindOf[k] = kind
	}
	sl := Slot{ChunkID: mc.chunkID, Doc: mc.doc, ColSize: [2]uint32{mc.colSize[1], mc.colSize[2]}, Kind: kind, Headed: mc.headed}
	for i, n := range mc.colSize {
		sl.Size += n
		m.colTotal[i] += int64(n)
	}
	m.slots = append(m.slots, sl)
	m.lens = append(m.lens, sl.Size)
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
			t = &Term{}
			m.terms[strings.Clone(term)] = t
		}
		t.add(s, mc.tfs[i])
	}
	if len(mc.links) > 0 {
		m.links.add(mc.doc.ID, mc.links)
	}
}

// compactLocked drops dead slots and their postings.
func (m *Index) compactLocked() {
	remap := make([]uint32, len(m.slots))
	var slots []Slot
	for i, sl := range m.slots {
		if sl.Dead {
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
		nt := Term{post: buf[:0]}
		t.remapInto(&nt, remap)
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
	m.renumbered++
}

func slotLens(slots []Slot) []uint32 {
	lens := make([]uint32, len(slots))
	for i, sl := range slots {
		lens[i] = sl.Size
		if sl.Dead {
			lens[i] = deadLen
		}
	}
	return lens
}
