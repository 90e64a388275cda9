package index

// The read API. A reader takes the read lock (RLock), calls the accessors
// that say "call with the read lock held", and lets go. What it reads is
// good while it holds the lock; a slot number it keeps past that is good
// only while Renumbered is unchanged (doc.go).

// RLock takes the index's read lock: commits wait, other readers do not.
func (m *Index) RLock() { m.mu.RLock() }

// RUnlock lets go of the read lock.
func (m *Index) RUnlock() { m.mu.RUnlock() }

// Term returns the postings of term, nil when no chunk holds it. Call
// with the read lock held.
func (m *Index) Term(term string) *Term { return m.terms[term] }

// NumTerms is how many terms the index holds. Call with the read lock
// held.
func (m *Index) NumTerms() int { return len(m.terms) }

// Slot returns slot s, which must be below NumSlots. Call with the read
// lock held.
func (m *Index) Slot(s uint32) *Slot { return &m.slots[s] }

// NumSlots is how many slots there are, the dead among them. Call with
// the read lock held.
func (m *Index) NumSlots() int { return len(m.slots) }

// Len returns slot s's length in tokens, all columns, and whether it is
// live: the one read of a slot that scoring does per posting, from an
// array apart from the slots'. Call with the read lock held.
func (m *Index) Len(s uint32) (n uint32, live bool) {
	n = m.lens[s]
	return n, n != deadLen
}

// Live is how many chunks the index holds. Call with the read lock held.
func (m *Index) Live() int { return m.live }

// HasDead reports whether some slots are dead (doc.go). Call with the
// read lock held.
func (m *Index) HasDead() bool { return m.dead > 0 }

// ColTotal is the live chunks' total length in each column: title,
// keywords, body, exact. Call with the read lock held.
func (m *Index) ColTotal() [4]int64 { return m.colTotal }

// DocSlots returns the slots of document id's chunks, in their order; the
// caller must not change it. Call with the read lock held.
func (m *Index) DocSlots(id int64) []uint32 { return m.docSlots[id] }

// NumDocs is how many documents the index holds. Call with the read lock
// held.
func (m *Index) NumDocs() int { return len(m.docSlots) }

// Kind returns sl's chunk type and code language. Call with the read lock
// held.
func (m *Index) Kind(sl *Slot) Kind { return m.kinds[sl.Kind] }

// Renumbered counts the times the slots were renumbered (doc.go). Call
// with the read lock held.
func (m *Index) Renumbered() uint64 { return m.renumbered }

// Links returns the links between the index's pages. Call with the read
// lock held, and use them under it.
func (m *Index) Links() *Links { return m.links }

// Introduces says whether the first of a page's slots, ss, is its
// introduction: under no heading, where a later one is under one. Call
// with the read lock held.
func (m *Index) Introduces(ss []uint32) bool {
	if m.slots[ss[0]].Headed {
		return false
	}
	for _, s := range ss[1:] {
		if m.slots[s].Headed {
			return true
		}
	}
	return false
}

// SlotOfChunk returns the live slot of a chunk. Call with the read lock
// held; the first call makes chunkSlot, under the write lock, letting go
// of the read lock meanwhile.
func (m *Index) SlotOfChunk(id int64) (uint32, bool) {
	if m.chunkSlot == nil {
		m.mu.RUnlock()
		m.mu.Lock()
		if m.chunkSlot == nil {
			cs := make(map[int64]uint32, m.live)
			for i, sl := range m.slots {
				if !sl.Dead {
					cs[sl.ChunkID] = uint32(i)
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

// The calls below take the read lock themselves.

// EachTerm calls fn with every term and the number of live chunks holding
// it, in any column.
func (m *Index) EachTerm(fn func(term string, docs int)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for term, t := range m.terms {
		if n := m.counts(t).any; n > 0 {
			fn(term, int(n))
		}
	}
}

// TermDocs returns how many chunks hold each term in any column (stems
// and exact surfaces share one vocabulary).
func (m *Index) TermDocs(terms []string) map[string]int {
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

// FieldStats are the index's average column lengths, for BM25F.
type FieldStats struct {
	N                              int // live chunks, at least 1
	AvgTitle, AvgKeywords, AvgBody float64
}

// FieldStats returns the index's average column lengths.
func (m *Index) FieldStats() FieldStats {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := max(m.live, 1)
	return FieldStats{N: n,
		AvgTitle:    float64(m.colTotal[0]) / float64(n),
		AvgKeywords: float64(m.colTotal[1]) / float64(n),
		AvgBody:     float64(m.colTotal[2]) / float64(n)}
}

// SlotMark returns how many slots the index has, and how many times they
// were renumbered: every chunk in the first slots is in the index as
// long as Renumbered is unchanged.
func (m *Index) SlotMark() (slots int, renumbered uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.slots), m.renumbered
}

// Shape is the index's slot accounting, for tests and diagnostics.
type Shape struct {
	Gen               int64 // the store's count of index writes it reflects
	Live, Dead, Slots int
	Missed            bool // a commit of another process was missed: a reload is due
	Renumbered        uint64
	LastReload        int64 // when CatchUp last started a reload (unix nanos), 0 if never
}

// Shape returns the index's slot accounting.
func (m *Index) Shape() Shape {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return Shape{Gen: m.gen, Live: m.live, Dead: m.dead, Slots: len(m.slots), Missed: m.missed, Renumbered: m.renumbered,
		LastReload: m.lastReload.Load()}
}

// SetCompactMin sets the fewest dead slots worth a compaction (256 by
// default; compactShare says when). Call it before Load.
func (m *Index) SetCompactMin(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.compactMin = n
}

// CompactShare is the share of the live slots past which the dead are
// compacted away: once dead*CompactShare > live.
const CompactShare = compactShare
