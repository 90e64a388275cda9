package index

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sync/atomic"
)

// Term holds a term's postings, one per chunk holding it, in slot
// order, packed: each is a uvarint of its slot's distance from the
// previous posting's slot (the first's from 0), shifted left by one; its
// low bit set means the term is once in the body and nowhere else, the
// commonest case, and else its term frequencies follow (appendTF). A
// posting takes one to three bytes where a struct took eight; a chunk
// has a hundred or more.
type Term struct {
	post []byte
	last uint32 // the last posting's slot
	// n, stem and exact count the postings: all of them, those in the
	// stemmed columns, those in the exact column. While no slot is dead
	// they are the term's chunk counts, with no scan and no count.
	n, stem, exact uint32
	// cnt is filled by whichever search finds it stale, under the read
	// lock: an atomic swap lets concurrent searches share it.
	cnt atomic.Pointer[count]
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

func (t *Term) add(slot uint32, tf [4]uint8) {
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

// Posting is a term's posting, decoded: its chunk's slot, the columns
// holding the term (a bit each: title 1, keywords 2, body 4, exact 8) and
// the term's frequency in each (at most 255: see appendTF).
type Posting struct {
	Slot uint32
	Mask uint8
	TF   [4]uint8
}

// Stemmed and Exact are Posting.Mask's bits of the stemmed columns
// (title, keywords, body) and of the exact column.
const (
	Stemmed = 7
	Exact   = 8
)

// postingBlock is how many postings the iterator decodes at a time: the
// loops over postings call it once a block rather than once a posting, a
// call the compiler could not inline (BenchmarkCandidates and
// BenchmarkRerank took a third longer with a call per posting).
const postingBlock = 64

// Postings iterates a term's packed postings, a block at a time:
//
//	it := t.Postings()
//	for ps := it.Next(); len(ps) > 0; ps = it.Next() {
//		for _, p := range ps {
//
// It is the one reader of the packed format (Term).
type Postings struct {
	b    []byte
	off  int
	slot uint32 // the last posting's
	buf  [postingBlock]Posting
}

// Postings returns an iterator over t's postings, in slot order.
func (t *Term) Postings() Postings { return Postings{b: t.post} }

// remapInto adds t's postings to nt with each slot s renumbered to
// remap[s], leaving out those of the slots remap drops (math.MaxUint32).
func (t *Term) remapInto(nt *Term, remap []uint32) {
	it := t.Postings()
	for ps := it.Next(); len(ps) > 0; ps = it.Next() {
		for _, p := range ps {
			if s := remap[p.Slot]; s != math.MaxUint32 {
				nt.add(s, p.TF)
			}
		}
	}
}

// Chunks is how many chunks hold t, the dead among them.
func (t *Term) Chunks() int { return int(t.n) }

// Bytes is the size of t's packed postings: what reading them costs.
func (t *Term) Bytes() int { return len(t.post) }

// Next decodes the next block of postings; none at the end. The block is
// the iterator's until the next call.
func (p *Postings) Next() []Posting {
	n := 0
	for ; n < len(p.buf) && p.off < len(p.b); n++ {
		var d uint64
		d, p.off = uvarint(p.b, p.off)
		p.slot += uint32(d >> 1)
		q := &p.buf[n]
		q.Slot = p.slot
		if d&1 != 0 {
			q.Mask, q.TF = 4, onceInBody
			continue
		}
		h := p.b[p.off]
		p.off++
		q.Mask, q.TF = h&15, [4]uint8{}
		if v := h >> 4; v != 0 {
			q.TF[bits.TrailingZeros8(q.Mask)] = v
			continue
		}
		for c := range 4 {
			if q.Mask&(1<<c) != 0 {
				q.TF[c] = p.b[p.off]
				p.off++
			}
		}
	}
	return p.buf[:n]
}

// uvarint decodes the varint at b[k:] and returns it with the offset
// after it. It is small enough to be inlined into the decoder, which
// calls it for every posting: with binary.Uvarint, which is not,
// BenchmarkRerank took 15-30 % longer.
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

// count caches how many live chunks hold a term in the stemmed columns
// and in the exact column (the document frequencies of the two kinds of
// match), and in any column (the vocabulary's count).
type count struct {
	// renumbered and dead are the index's when counted: a slot that dies
	// or moves changes one of them, and the counts with it.
	renumbered       uint64
	dead             int
	off              int    // bytes of postings counted
	slot             uint32 // the slot of the last posting counted
	stem, exact, any int32
}

// Counts returns how many live chunks hold t in the stemmed columns and
// in the exact column: the document frequencies of the two kinds of
// match. Call with the read lock held.
func (m *Index) Counts(t *Term) (stem, exact int) {
	c := m.counts(t)
	return int(c.stem), int(c.exact)
}

// counts returns a term's live chunk counts. Call with m.mu held.
func (m *Index) counts(t *Term) count {
	if m.dead == 0 {
		return count{any: int32(t.n), stem: int32(t.stem), exact: int32(t.exact)}
	}
	c := t.cnt.Load()
	if c != nil && m.current(c) && c.off == len(t.post) {
		return *c
	}
	nc := count{renumbered: m.renumbered, dead: m.dead}
	if c != nil && m.current(c) && c.off <= len(t.post) {
		// Only appended since: count the new postings.
		nc = *c
	}
	it := Postings{b: t.post, off: nc.off, slot: nc.slot}
	for ps := it.Next(); len(ps) > 0; ps = it.Next() {
		for _, p := range ps {
			if m.lens[p.Slot] == deadLen {
				continue
			}
			nc.any++
			if p.Mask&7 != 0 {
				nc.stem++
			}
			if p.Mask&8 != 0 {
				nc.exact++
			}
		}
	}
	nc.off, nc.slot = len(t.post), it.slot
	t.cnt.Store(&nc)
	return nc
}

// current reports whether c was counted with the slots as they are.
func (m *Index) current(c *count) bool { return c.renumbered == m.renumbered && c.dead == m.dead }

// deadLen marks a dead slot in Index.lens.
const deadLen = math.MaxUint32
