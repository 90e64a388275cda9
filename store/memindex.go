package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// memIndex is an in-memory copy of chunks_fts: per-term postings with
// per-column term frequencies, and each chunk's filter fields. It scores
// exactly as FTS5's bm25() does, without bm25()'s per-row cost (a docsize
// lookup and a poslist walk for every matching row), which was most of a
// search's CPU. SQLite stays the source of truth: the index follows this
// process's commits, and a search uses it only while the store's
// index_writes counter says it is current. Anything else (another
// process writing, a phrase query) takes the FTS5 path.
type memIndex struct {
	mu       sync.RWMutex
	enabled  bool // LoadSearchIndex was called
	ready    bool
	building bool
	gen      int64 // the index_writes value the index reflects
	slots    []memSlot
	terms    map[string]*memTerm
	docSlots map[int64][]uint32
	live     int
	dead     int
	colTotal [4]int64
	// delGen changes whenever slots die or move; cached term counts from
	// another delGen are stale.
	delGen uint64
	// buffered holds this process's commits that landed during a build.
	buffered []memCommit
	// early holds commits that arrived before one with a smaller count:
	// two writers' commits can reach apply in either order.
	early    map[int64]memCommit
	inflight atomic.Int32
	// applied is closed, and replaced, whenever gen moves.
	applied chan struct{}
	// scratch holds the score arrays: 12 bytes a chunk each, so their
	// number, not the number of concurrent searches, bounds the memory.
	scratch chan *memScratch
	// For SearchIndexStats.
	loads, memSearches, ftsSearches atomic.Int64
	// lastReload is when a search last started a reload (unix nanos).
	lastReload atomic.Int64
}

type memDoc struct {
	id                   int64
	url, title, lang     string
	postType, cats, tags string
	catSet, tagSet       []string // lowercased (ASCII), for filters
	published, modified  time.Time
	publishedText        string // as stored: date filters compare text
	thin                 bool
}

type memSlot struct {
	chunkID       int64
	doc           *memDoc
	typ, codeLang string
	colSize       [4]uint32
	size          uint32 // tokens in all columns, bm25()'s D
	dead          bool
}

type memPosting struct {
	slot uint32
	// tf counts the term in title, keywords, body and exact. It stops at
	// 255, where BM25's saturation makes more count for under 0.1%: eight
	// bytes a posting rather than twelve.
	tf [4]uint8
}

type memTerm struct {
	post []memPosting
	cnt  atomic.Pointer[memCount]
}

// memCount caches how many live chunks hold a term in the stemmed columns
// and in the exact column (bm25()'s nHit for the two kinds of phrase), and
// in any column (the vocabulary's count).
type memCount struct {
	delGen           uint64
	n                int // postings counted
	stem, exact, any int
}

// memCommit is one committed transaction's index changes, in the order
// the transaction made them: a batch may add a page and then replace it.
type memCommit struct {
	gen     int64
	ops     []memOp
	rebuilt bool
}

// memOp deletes a document's chunks (add nil) or adds a chunk.
type memOp struct {
	del int64
	add *memChunk
}

// memChunk is an added chunk, tokenized outside the lock.
type memChunk struct {
	chunkID       int64
	doc           *memDoc
	typ, codeLang string
	colSize       [4]uint32
	terms         []string
	tfs           [][4]uint8
}

// indexTx collects a transaction's changes to chunks_fts.
type indexTx struct {
	ops     []memOp
	rebuilt bool
	docs    map[int64]*memDoc
}

func (it *indexTx) empty() bool { return len(it.ops) == 0 && !it.rebuilt }

func (it *indexTx) deleteDoc(docID int64) { it.ops = append(it.ops, memOp{del: docID}) }

func (it *indexTx) addChunk(d *Document, c *Chunk, cols ftsColumns) {
	if it.docs == nil {
		it.docs = map[int64]*memDoc{}
	}
	md := it.docs[d.ID]
	if md == nil {
		md = newMemDoc(d.ID, d.URL, d.Title, d.Lang, d.PostType, jsonList(d.Categories), jsonList(d.Tags),
			fmtTime(d.Published), fmtTime(d.Modified), d.Thin)
		it.docs[d.ID] = md
	}
	mc := tokenizeChunk(c.ID, md, c.Type, c.CodeLang, cols)
	it.ops = append(it.ops, memOp{add: &mc})
}

func newMemDoc(id int64, url, title, lang, postType, cats, tags, pub, mod string, thin bool) *memDoc {
	d := &memDoc{id: id, url: url, title: title, lang: lang, postType: postType, cats: cats, tags: tags,
		published: parseTime(pub), modified: parseTime(mod), publishedText: pub, thin: thin}
	for _, c := range parseList(cats) {
		d.catSet = append(d.catSet, asciiLower(c))
	}
	for _, t := range parseList(tags) {
		d.tagSet = append(d.tagSet, asciiLower(t))
	}
	return d
}

func tokenizeChunk(chunkID int64, doc *memDoc, typ, codeLang string, cols ftsColumns) memChunk {
	mc := memChunk{chunkID: chunkID, doc: doc, typ: typ, codeLang: codeLang}
	at := map[string]int{}
	for col, text := range [4]string{cols.title, cols.keywords, cols.body, cols.exact} {
		ftsTokens(text, func(tok string) {
			mc.colSize[col]++
			i, ok := at[tok]
			if !ok {
				i = len(mc.terms)
				at[tok] = i
				mc.terms = append(mc.terms, strings.Clone(tok))
				mc.tfs = append(mc.tfs, [4]uint8{})
			}
			if mc.tfs[i][col] < math.MaxUint8 {
				mc.tfs[i][col]++
			}
		})
	}
	return mc
}

// ftsTokens splits s as the chunks_fts tokenizer does (unicode61 with
// categories 'L* N* Co M*' and tokenchars '_.', folding case), so terms
// here and in FTS5 are the same strings.
func ftsTokens(s string, yield func(string)) {
	start := -1
	for i, r := range s {
		if ftsTokenRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			yield(ftsFold(s[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		yield(ftsFold(s[start:]))
	}
}

func ftsTokenRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || 'A' <= r && r <= 'Z' || r == '_' || r == '.'
	}
	return unicode.In(r, unicode.L, unicode.N, unicode.Co, unicode.M)
}

// ftsFold lowercases; the analyzer's output is lowercase already, so the
// common case allocates nothing.
func ftsFold(s string) string {
	for _, r := range s {
		if unicode.IsUpper(r) {
			return strings.ToLower(s)
		}
	}
	return s
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// bumpIndexWrites counts a transaction that changed chunks_fts. A search
// compares the count with the in-memory index's to know it is current.
const bumpIndexWrites = `INSERT INTO meta(key, value) VALUES('index_writes', '1')
	ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1
	RETURNING CAST(value AS INTEGER)`

// commitIndexed commits tx and hands its index changes to the in-memory
// index.
func (db *DB) commitIndexed(ctx context.Context, tx *sql.Tx, it *indexTx) error {
	if it.empty() {
		return tx.Commit()
	}
	var gen int64
	if err := tx.QueryRowContext(ctx, bumpIndexWrites).Scan(&gen); err != nil {
		return fmt.Errorf("count index write: %w", err)
	}
	m := db.search().mem
	m.inflight.Add(1)
	defer m.inflight.Add(-1)
	if err := tx.Commit(); err != nil {
		return err
	}
	m.apply(memCommit{gen: gen, ops: it.ops, rebuilt: it.rebuilt})
	return nil
}

func newMemIndex() *memIndex {
	m := &memIndex{terms: map[string]*memTerm{}, docSlots: map[int64][]uint32{}, applied: make(chan struct{}),
		scratch: make(chan *memScratch, 2*runtime.GOMAXPROCS(0))}
	for range cap(m.scratch) {
		m.scratch <- &memScratch{}
	}
	return m
}

// apply brings a commit into the index, in the order of the store's
// index_writes count. A count that never arrives is another process's
// write: currentMem sees the gap and rebuilds (searches use FTS5 meanwhile).
func (m *memIndex) apply(c memCommit) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.enabled {
		return
	}
	if m.building {
		m.buffered = append(m.buffered, c)
		return
	}
	if m.ready {
		m.offerLocked(c)
	}
}

func (m *memIndex) offerLocked(c memCommit) {
	switch {
	case c.rebuilt:
		m.ready = false
		m.early = nil
		return
	case c.gen <= m.gen:
		return // in the snapshot already
	case c.gen > m.gen+1:
		if m.early == nil {
			m.early = map[int64]memCommit{}
		}
		m.early[c.gen] = c
		return
	}
	m.applyLocked(c)
	for {
		next, ok := m.early[m.gen+1]
		if !ok {
			return
		}
		delete(m.early, next.gen)
		m.applyLocked(next)
	}
}

func (m *memIndex) applyLocked(c memCommit) {
	for _, op := range c.ops {
		if op.add != nil {
			m.addLocked(op.add)
			continue
		}
		for _, s := range m.docSlots[op.del] {
			sl := &m.slots[s]
			if sl.dead {
				continue
			}
			sl.dead = true
			m.live--
			m.dead++
			for i, n := range sl.colSize {
				m.colTotal[i] -= int64(n)
			}
		}
		delete(m.docSlots, op.del)
		m.delGen++
	}
	m.setGenLocked(c.gen)
	if m.dead > memCompactMin && m.dead > m.live {
		m.compactLocked()
	}
}

func (m *memIndex) setGenLocked(gen int64) {
	m.gen = gen
	close(m.applied)
	m.applied = make(chan struct{})
}

func (m *memIndex) addLocked(mc *memChunk) {
	s := uint32(len(m.slots))
	sl := memSlot{chunkID: mc.chunkID, doc: mc.doc, typ: mc.typ, codeLang: mc.codeLang, colSize: mc.colSize}
	for i, n := range mc.colSize {
		sl.size += n
		m.colTotal[i] += int64(n)
	}
	m.slots = append(m.slots, sl)
	m.docSlots[mc.doc.id] = append(m.docSlots[mc.doc.id], s)
	m.live++
	for i, term := range mc.terms {
		t := m.terms[term]
		if t == nil {
			t = &memTerm{}
			m.terms[term] = t
		}
		t.post = append(t.post, memPosting{slot: s, tf: mc.tfs[i]})
	}
}

// memCompactMin is the fewest dead slots worth a compaction. Compacting
// costs a pass over every posting; waiting until the dead outnumber the
// live keeps that cost per deleted chunk bounded, and this floor keeps a
// small site from compacting at every edit.
var memCompactMin = 256

// compactLocked drops dead slots and their postings. It runs when more
// slots are dead than live, so its cost per deleted chunk stays bounded.
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
	for term, t := range m.terms {
		out := t.post[:0]
		for _, p := range t.post {
			if s := remap[p.slot]; s != math.MaxUint32 {
				p.slot = s
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			delete(m.terms, term)
			continue
		}
		// Give back the memory of lists that shrank a lot.
		if cap(out) > 2*len(out)+16 {
			out = append([]memPosting(nil), out...)
		}
		t.post = out
		t.cnt.Store(nil)
	}
	for id, ss := range m.docSlots {
		for i, s := range ss {
			ss[i] = remap[s]
		}
		m.docSlots[id] = ss
	}
	m.slots = slots
	m.dead = 0
	m.delGen++
}

// LoadSearchIndex builds the in-memory search index from the store and
// keeps it following this process's writes. Searches use FTS5 until it is
// ready. A daemon calls it once at start-up; one-shot commands need not.
func (db *DB) LoadSearchIndex(ctx context.Context) error {
	m := db.search().mem
	m.mu.Lock()
	m.enabled = true
	if m.building {
		m.mu.Unlock()
		return nil
	}
	m.building = true
	m.buffered = nil
	m.mu.Unlock()
	err := db.buildMem(ctx, m)
	if err != nil {
		m.mu.Lock()
		m.building = false
		m.buffered = nil
		m.mu.Unlock()
		return fmt.Errorf("store: load search index: %w", err)
	}
	return nil
}

func (db *DB) buildMem(ctx context.Context, m *memIndex) error {
	// One read transaction: the counter and the rows come from the same
	// snapshot, so commits after it are exactly those with a larger count.
	tx, err := db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	gen, err := readIndexWrites(ctx, tx)
	if err != nil {
		return err
	}
	// Analysis is most of the work: workers analyze batches of rows while
	// this goroutine reads the next ones, and one collector adds them.
	type batch struct {
		rows []indexRow
		docs []*memDoc
	}
	var (
		fresh   = newMemIndex()
		jobs    = make(chan batch, 4)
		done    = make(chan []memChunk, 4)
		workers sync.WaitGroup
		added   = make(chan struct{})
	)
	for range runtime.GOMAXPROCS(0) {
		workers.Go(func() {
			for b := range jobs {
				analyzeRows(b.rows)
				out := make([]memChunk, len(b.rows))
				for i, r := range b.rows {
					out[i] = tokenizeChunk(r.chunkID, b.docs[i], r.typ, r.codeLang, r.cols)
				}
				done <- out
			}
		})
	}
	go func() {
		for out := range done {
			for i := range out {
				fresh.addLocked(&out[i])
			}
		}
		close(added)
	}()
	docs := map[int64]*memDoc{}
	var b batch
	err = scanIndexRows(ctx, tx, func(r indexRow) error {
		d := docs[r.docID]
		if d == nil {
			d = newMemDoc(r.docID, r.url, r.title, r.lang, r.postType, r.cats, r.tags, r.published, r.modified, r.thin)
			docs[r.docID] = d
		}
		b.rows, b.docs = append(b.rows, r), append(b.docs, d)
		if len(b.rows) == 256 {
			jobs <- b
			b = batch{}
		}
		return nil
	})
	if len(b.rows) > 0 && err == nil {
		jobs <- b
	}
	close(jobs)
	workers.Wait()
	close(done)
	<-added
	if err != nil {
		return err
	}
	tx.Rollback()
	// Lists grown by append hold up to twice their length.
	for _, t := range fresh.terms {
		if cap(t.post) > len(t.post) {
			t.post = append(make([]memPosting, 0, len(t.post)), t.post...)
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	m.slots, m.terms, m.docSlots = fresh.slots, fresh.terms, fresh.docSlots
	m.live, m.dead, m.colTotal = fresh.live, 0, fresh.colTotal
	m.delGen++
	m.setGenLocked(gen)
	m.ready = true
	m.loads.Add(1)
	m.building = false
	m.early = nil
	for _, c := range m.buffered {
		if m.ready {
			m.offerLocked(c)
		}
	}
	m.buffered = nil
	return nil
}

func readIndexWrites(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int64, error) {
	var gen int64
	err := q.QueryRowContext(ctx, `SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'index_writes'`).Scan(&gen)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return gen, err
}

// current returns the in-memory index when it reflects the store, else
// nil. When it has fallen behind with none of this process's commits in
// flight (another process wrote), it starts a rebuild.
func (db *DB) currentMem(ctx context.Context) *memIndex {
	m := db.search().mem
	m.mu.RLock()
	enabled, ready, gen, building := m.enabled, m.ready, m.gen, m.building
	m.mu.RUnlock()
	if !enabled {
		return nil
	}
	cur, err := readIndexWrites(ctx, db.read)
	if err != nil {
		return nil
	}
	if ready && gen >= cur {
		return m
	}
	if ready && cur > gen && m.inflight.Load() > 0 && m.waitGen(ctx, cur, memWaitMax) {
		// This process's commit landed and is being applied: a moment's
		// wait beats a search on FTS5.
		return m
	}
	if !building && m.inflight.Load() == 0 {
		m.mu.RLock()
		caughtUp := m.ready && m.gen >= cur
		m.mu.RUnlock()
		if caughtUp {
			return m
		}
		// Another process writing for minutes (askwpd index beside serve)
		// would otherwise have each reload followed by the next.
		now, last := time.Now().UnixNano(), m.lastReload.Load()
		if now-last >= int64(memReloadEvery) && m.lastReload.CompareAndSwap(last, now) {
			go db.LoadSearchIndex(context.WithoutCancel(ctx)) //nolint:errcheck // the next search retries
		}
	}
	return nil
}

// memReloadEvery spaces the reloads searches start.
var memReloadEvery = 10 * time.Second

// CheckSearchIndex compares the in-memory index's chunks with the store's.
// On a difference (a bug in following writes; nothing else should cause
// one) it reloads the index and reports the two counts. A cheap check:
// one count over the chunks table.
func (db *DB) CheckSearchIndex(ctx context.Context) (ok bool, inMemory, stored int, err error) {
	m := db.search().mem
	tx, err := db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return false, 0, 0, fmt.Errorf("store: check search index: %w", err)
	}
	defer tx.Rollback()
	gen, err := readIndexWrites(ctx, tx)
	if err != nil {
		return false, 0, 0, fmt.Errorf("store: check search index: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM chunks`).Scan(&stored); err != nil {
		return false, 0, 0, fmt.Errorf("store: check search index: %w", err)
	}
	m.mu.RLock()
	current := m.enabled && m.ready && !m.building && m.gen == gen
	inMemory = m.live
	m.mu.RUnlock()
	if !current || inMemory == stored {
		// Not loaded, or moving: nothing to compare this time.
		return true, inMemory, stored, nil
	}
	if err := db.LoadSearchIndex(ctx); err != nil {
		return false, inMemory, stored, err
	}
	return false, inMemory, stored, nil
}

// SearchIndexStats tells how searches were served.
type SearchIndexStats struct {
	Enabled bool `json:"enabled"`
	Ready   bool `json:"ready"`
	Chunks  int  `json:"chunks"`
	// Loads counts builds of the in-memory index: the first, and one
	// after each write it could not follow (another process's).
	Loads int64 `json:"loads"`
	// Memory and FTS count searches by the index they ran on.
	Memory int64 `json:"memory_searches"`
	FTS    int64 `json:"fts5_searches"`
}

// SearchIndexStats reports on the in-memory search index.
func (db *DB) SearchIndexStats() SearchIndexStats {
	m := db.search().mem
	m.mu.RLock()
	defer m.mu.RUnlock()
	return SearchIndexStats{Enabled: m.enabled, Ready: m.ready, Chunks: m.live, Loads: m.loads.Load(),
		Memory: m.memSearches.Load(), FTS: m.ftsSearches.Load()}
}

// memWaitMax bounds how long a search waits for a commit to reach the
// in-memory index before it searches FTS5 instead.
const memWaitMax = 20 * time.Millisecond

// waitGen waits until the index reflects gen, for at most d.
func (m *memIndex) waitGen(ctx context.Context, gen int64, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		m.mu.RLock()
		ok, ready, ch := m.gen >= gen, m.ready, m.applied
		m.mu.RUnlock()
		if !ready {
			return false
		}
		if ok {
			// Later commits of this process may be in too: newer still.
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

// counts returns a term's live chunk counts. Call with m.mu read-locked.
func (m *memIndex) counts(t *memTerm) memCount {
	c := t.cnt.Load()
	if c != nil && c.delGen == m.delGen && c.n == len(t.post) {
		return *c
	}
	nc := memCount{delGen: m.delGen}
	if c != nil && c.delGen == m.delGen && c.n <= len(t.post) {
		// Only appended since: count the new postings.
		nc = *c
	}
	for _, p := range t.post[nc.n:] {
		if m.slots[p.slot].dead {
			continue
		}
		nc.any++
		if p.tf[0]|p.tf[1]|p.tf[2] != 0 {
			nc.stem++
		}
		if p.tf[3] != 0 {
			nc.exact++
		}
	}
	nc.n = len(t.post)
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
			fn(term, n)
		}
	}
}

// termDocs is termDocs from memory: chunks holding each term in any column.
func (m *memIndex) termDocs(terms []string) map[string]int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]int, len(terms))
	for _, term := range terms {
		if t := m.terms[term]; t != nil {
			if n := m.counts(t).any; n > 0 {
				out[term] = n
			}
		}
	}
	return out
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

// memPhrase is one phrase of the FTS5 query: a term in the stemmed
// columns or in the exact column.
type memPhrase struct {
	term  string
	exact bool
	group int // for an AND query: the phrases of a group are OR-ed
}

// memPhrases turns the query into the phrases matchExpr would send FTS5,
// or ok=false when only FTS5 can run it (quoted phrases, bigrams, a term
// the tokenizer splits).
func (pq *parsedQuery) memPhrases(bigrams, exact bool) (ps []memPhrase, groups int, ok bool) {
	if bigrams || len(pq.Phrases) > 0 {
		return nil, 0, false
	}
	single := func(s string) bool {
		n, same := 0, false
		ftsTokens(s, func(tok string) { n++; same = tok == s })
		return n == 1 && same
	}
	if pq.requireAll {
		idx := map[string]int{}
		for _, t := range pq.Terms {
			if t.Weight <= 0 {
				continue
			}
			g, seen := idx[t.group()]
			if !seen {
				g = len(idx)
				idx[t.group()] = g
			}
			if !single(t.Term) {
				return nil, 0, false
			}
			ps = append(ps, memPhrase{term: t.Term, group: g})
		}
		return ps, len(idx), len(ps) > 0 && len(idx) <= 32
	}
	for _, t := range pq.Terms {
		if t.Weight <= 0 {
			continue
		}
		if !single(t.Term) {
			return nil, 0, false
		}
		for i := 0; i < t.Weight; i++ {
			ps = append(ps, memPhrase{term: t.Term})
		}
		if exact && t.Surface != "" && t.Source != "feedback" {
			if !single(t.Surface) {
				return nil, 0, false
			}
			ps = append(ps, memPhrase{term: t.Surface, exact: true})
		}
	}
	return ps, 0, len(ps) > 0
}

type memScratch struct {
	score   []float64
	mask    []uint32
	touched []uint32
}

type memHit struct {
	slot  uint32
	score float64
}

// candidates is candidates() in memory: bm25() as FTS5 computes it (k1
// 1.2, b 0.75, one length over all columns, a phrase's IDF from the rows
// holding it), the filters as strict conditions, the best k.
func (m *memIndex) candidates(ps []memPhrase, groups int, q SearchQuery, rk Ranking, k int) []*candidate {
	const k1, b = 1.2, 0.75
	weights := [4]float64{rk.TitleWeight, rk.KeywordWeight, rk.BodyWeight, rk.ExactWeight}
	// A free scratch first, the lock second: a search waiting for
	// scratch space must not hold up a writer.
	sc := <-m.scratch
	defer func() { m.scratch <- sc }()
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.live == 0 {
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
		idf := math.Log((nRow - nHit + 0.5) / (nHit + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		bit := uint32(1) << uint(p.group)
		for _, post := range t.post {
			sl := &m.slots[post.slot]
			if sl.dead {
				continue
			}
			var freq float64
			in := false
			for c := lo; c < hi; c++ {
				freq += weights[c] * float64(post.tf[c])
				in = in || post.tf[c] != 0
			}
			if !in {
				continue
			}
			if mask[post.slot] == 0 {
				touched = append(touched, post.slot)
			}
			mask[post.slot] |= bit
			score[post.slot] += idf * (freq * (k1 + 1)) / (freq + k1*(1-b+b*float64(sl.size)/avgdl))
		}
	}

	need := uint32(1)<<uint(groups) - 1
	if groups == 0 {
		need = 1
	}
	byDate := q.Sort == "date"
	var hits []memHit
	for _, s := range touched {
		if groups > 0 && mask[s] != need {
			continue
		}
		if !q.Filters.empty() && !q.Filters.match(&m.slots[s]) {
			continue
		}
		hits = append(hits, memHit{s, score[s]})
	}
	less := func(a, b memHit) bool {
		if byDate {
			pa, pb := m.slots[a.slot].doc.publishedText, m.slots[b.slot].doc.publishedText
			if pa != pb {
				return pa > pb
			}
		}
		if a.score != b.score {
			return a.score > b.score
		}
		return m.slots[a.slot].chunkID < m.slots[b.slot].chunkID
	}
	hits = bestK(hits, k, less)
	out := make([]*candidate, len(hits))
	for i, h := range hits {
		sl := &m.slots[h.slot]
		d := sl.doc
		out[i] = &candidate{chunkID: sl.chunkID, docID: d.id, score: h.score, chunkType: sl.typ, codeLang: sl.codeLang,
			url: d.url, title: d.title, lang: d.lang, postType: d.postType, cats: d.cats, tags: d.tags,
			published: d.published, modified: d.modified, thin: d.thin}
	}
	return out
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

// match is Filters.sql as a predicate on one chunk.
func (f Filters) match(sl *memSlot) bool {
	d := sl.doc
	if len(f.PostType) > 0 {
		ok := false
		for _, t := range f.PostType {
			if d.postType == t {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if f.ChunkType != "" && sl.typ != f.ChunkType {
		return false
	}
	if f.CodeLang != "" && sl.codeLang != strings.ToLower(f.CodeLang) {
		return false
	}
	if f.Lang != "" && d.lang != f.Lang &&
		!(len(d.lang) > len(f.Lang) && d.lang[len(f.Lang)] == '-' && strings.EqualFold(d.lang[:len(f.Lang)], f.Lang)) {
		return false
	}
	if f.Category != "" && !containsString(d.catSet, asciiLower(f.Category)) {
		return false
	}
	if f.Tag != "" && !containsString(d.tagSet, asciiLower(f.Tag)) {
		return false
	}
	if !f.After.IsZero() && d.publishedText < fmtTime(f.After) {
		return false
	}
	if !f.Before.IsZero() && (d.publishedText == "" || d.publishedText >= fmtTime(f.Before)) {
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
