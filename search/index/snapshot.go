package index

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/askwp/askwpd/store"
)

// A snapshot is the index written to a file, so that a restart reads it
// back instead of analyzing every stored chunk again: on a site of 100,000
// pages the analysis takes most of a minute on two cores, reading the
// snapshot a few seconds. The store stays the source of truth. A snapshot
// counts only when it was written at the store's current index_writes
// count by the same build (its version); else the index is loaded from
// the store, as without one, and a new snapshot is written.
//
// It holds the live chunks only, with their postings renumbered, so a
// deleted page's title and words do not linger on disk, and the links
// between pages (anchors.go), which would otherwise take a read of every
// stored chunk of their own.
//
// Layout: the magic line; the version; the count; the four column
// totals; the documents; the kinds; the slots; the terms with their packed
// postings; the links: the pages linked to, the terms around links, each
// linking page's links by those two numberings; a CRC-32C of all that.
// Integers are varints. Format 3 added the links; format 4 a slot's
// heading bit, the low bit of its kind. A snapshot of an older format is
// not read, and the index loads from the store.

const snapshotMagic = "askwpd search index snapshot 4\n"

var snapCRC = crc32.MakeTable(crc32.Castagnoli)

// SetSnapshot makes the index keep a snapshot of itself at path: read at
// the next load when it matches the store, written after a load from the
// store and by Close. version names the build (the snapshot of another
// build is not read: its analysis may differ). Call it before Load.
func (m *Index) SetSnapshot(path, version string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snapPath, m.snapVersion = path, version
}

// WriteSnapshot writes the index to the file SetSnapshot named, unless
// it is there already. The snapshot is removed as soon as the index
// follows a commit past it, so a restart after a crash loads from the
// store; a daemon writes it after a load from the store and when it stops.
func (m *Index) WriteSnapshot() error {
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.writeSnapshotLocked()
}

// FromSnapshot reports whether the index was last loaded from its
// snapshot rather than from the store.
func (m *Index) FromSnapshot() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.fromSnap
}

// readSnapshot reads the snapshot into fresh contents when it matches the
// store's count; ok is false when there is none that does.
func (m *Index) readSnapshot(ctx context.Context, db *store.DB) (fresh *contents, gen int64, ok bool, err error) {
	m.mu.RLock()
	path, version := m.snapPath, m.snapVersion
	m.mu.RUnlock()
	if path == "" {
		return nil, 0, false, nil
	}
	cur, err := db.IndexWrites(ctx)
	if err != nil {
		return nil, 0, false, err
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, false, fmt.Errorf("snapshot: %w", err)
	}
	r := &snapReader{r: bufio.NewReaderSize(f, 1<<20), left: fi.Size() - 4}
	if string(r.raw(len(snapshotMagic))) != snapshotMagic || r.str() != version || r.err != nil {
		return nil, 0, false, nil // another layout or another build
	}
	if gen = r.varint(); gen != cur {
		return nil, 0, false, nil // the store moved on
	}
	fresh = newContents()
	for i := range fresh.colTotal {
		fresh.colTotal[i] = r.varint()
	}
	docs := m.readDocs(r)
	fresh.readSlots(r, docs)
	if err := fresh.readTerms(ctx, r); err != nil {
		return nil, 0, false, err
	}
	fresh.links = readLinks(r)
	if r.err != nil {
		return nil, 0, false, nil
	}
	var sum [4]byte
	if _, err := io.ReadFull(r.r, sum[:]); err != nil || binary.LittleEndian.Uint32(sum[:]) != r.crc {
		return nil, 0, false, nil // torn or damaged: the store has it all
	}
	return fresh, gen, true, nil
}

// readDocs reads the documents, in the order the slots number them.
func (m *Index) readDocs(r *snapReader) []*Doc {
	docs := make([]*Doc, r.count())
	for i := range docs {
		d := store.IndexDoc{ID: r.varint(), URL: r.str(), Title: r.str(), Lang: r.str(), PostType: r.str()}
		d.Categories, d.Tags = r.strs(), r.strs()
		d.Published, d.Modified = r.time(), r.time()
		d.Thin = r.uvarint() == 1
		md := m.newDoc(&d)
		md.TitleSize, md.ExactSize = uint32(r.uvarint()), uint32(r.uvarint())
		docs[i] = md
	}
	return docs
}

// readSlots reads the kinds and the slots, of docs.
func (fresh *contents) readSlots(r *snapReader, docs []*Doc) {
	for range r.count() {
		k := Kind{r.str(), r.str()}
		fresh.kindOf[k] = uint16(len(fresh.kinds))
		fresh.kinds = append(fresh.kinds, k)
	}
	fresh.slots = make([]Slot, r.count())
	for i := range fresh.slots {
		sl := &fresh.slots[i]
		sl.ChunkID = r.varint()
		if di := r.uvarint(); di < uint64(len(docs)) {
			sl.Doc = docs[di]
		} else {
			r.fail()
		}
		sl.Size, sl.ColSize[0], sl.ColSize[1] = uint32(r.uvarint()), uint32(r.uvarint()), uint32(r.uvarint())
		kind := r.uvarint()
		if sl.Kind, sl.Headed = uint16(kind>>1), kind&1 != 0; int(sl.Kind) >= len(fresh.kinds) {
			r.fail()
		}
		if r.err != nil {
			break
		}
		fresh.docSlots[sl.Doc.ID] = append(fresh.docSlots[sl.Doc.ID], uint32(i))
	}
	fresh.live, fresh.lens = len(fresh.slots), slotLens(fresh.slots)
}

// readTerms reads the terms with their postings.
func (fresh *contents) readTerms(ctx context.Context, r *snapReader) error {
	for range r.count() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		term := r.str()
		t := &Term{last: uint32(r.uvarint()), n: uint32(r.uvarint()), stem: uint32(r.uvarint()), exact: uint32(r.uvarint())}
		t.post = r.bytes()
		if t.last >= uint32(len(fresh.slots)) || t.n > uint32(len(fresh.slots)) || t.stem > t.n || t.exact > t.n {
			r.fail()
		}
		fresh.terms[term] = t
	}
	return nil
}

// readLinks reads what writeLinks wrote into a fresh Links.
func readLinks(r *snapReader) *Links {
	a := newLinks()
	keys := make([]string, r.count())
	for i := range keys {
		keys[i] = r.str()
		a.targets[keys[i]] = int32(i)
	}
	// Read once, the terms are shared by every link around which they
	// stand.
	terms := make([]string, r.count())
	for i := range terms {
		terms[i] = r.str()
	}
	for range r.count() {
		source := r.varint()
		for range r.count() {
			l := anchorLink{target: int32(r.uvarint())}
			if l.terms = make([]string, r.count()); len(l.terms) == 0 || uint64(l.target) >= uint64(len(keys)) {
				r.fail()
			}
			for i := range l.terms {
				if ti := r.uvarint(); ti < uint64(len(terms)) {
					l.terms[i] = terms[ti]
				} else {
					r.fail()
				}
			}
			if r.err != nil {
				return nil
			}
			a.addLink(source, l)
		}
	}
	return a
}

// writeLinks writes a's links: the pages linked to, numbered anew (a
// page no link points to any more is left out), the terms around links,
// then each linking page's links. Call with the index's read lock held.
func writeLinks(w *snapWriter, a *Links) {
	target := map[int32]uint64{}
	var keys []string
	if len(a.bySource) > 0 {
		keyOfID := make([]string, len(a.targets))
		for k, id := range a.targets {
			keyOfID[id] = k
		}
		for _, ls := range a.bySource {
			for _, l := range ls {
				if _, ok := target[l.target]; !ok {
					target[l.target] = uint64(len(keys))
					keys = append(keys, keyOfID[l.target])
				}
			}
		}
	}
	w.strs(keys)
	// byTerm holds exactly the terms around some link.
	termIdx := make(map[string]uint64, len(a.byTerm))
	w.uvarint(uint64(len(a.byTerm)))
	for t := range a.byTerm {
		termIdx[t] = uint64(len(termIdx))
		w.str(t)
	}
	w.uvarint(uint64(len(a.bySource)))
	for source, ls := range a.bySource {
		w.varint(source)
		w.uvarint(uint64(len(ls)))
		for _, l := range ls {
			w.uvarint(target[l.target])
			w.uvarint(uint64(len(l.terms)))
			for _, t := range l.terms {
				w.uvarint(termIdx[t])
			}
		}
	}
}

// writeSnapshotLocked writes the index to its snapshot file, unless the
// file holds this count already or the index is not the store's (a
// commit of another process was missed). The caller holds snapMu and the
// read lock: commits wait, searches do not.
func (m *Index) writeSnapshotLocked() error {
	if m.snapPath == "" || !m.ready || m.missed || m.building || (m.snapOnDisk && m.gen == m.snapGen) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(m.snapPath), ".snapshot-*")
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	w := &snapWriter{w: bufio.NewWriterSize(tmp, 1<<20)}
	w.raw([]byte(snapshotMagic))
	w.str(m.snapVersion)
	w.varint(m.gen)
	for _, n := range m.colTotal {
		w.varint(n)
	}
	remap := m.writeSlots(w)
	m.writeTerms(w, remap)
	writeLinks(w, m.links)
	if w.err != nil {
		return fmt.Errorf("snapshot: %w", w.err)
	}
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := binary.Write(tmp, binary.LittleEndian, w.crc); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := os.Rename(tmp.Name(), m.snapPath); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	// Under the read lock: other writers of these hold the write lock,
	// and snapMu keeps out another writeSnapshot.
	m.snapGen, m.snapOnDisk = m.gen, true
	return nil
}

// writeSlots writes the documents, the kinds and the live slots,
// renumbered in order, and returns the slots' new numbers (MaxUint32 for
// the dead). Call with the read lock held.
func (m *Index) writeSlots(w *snapWriter) (remap []uint32) {
	remap = make([]uint32, len(m.slots))
	docIdx := map[*Doc]uint64{}
	var docs []*Doc
	live := 0
	for i, sl := range m.slots {
		if sl.Dead {
			remap[i] = math.MaxUint32
			continue
		}
		remap[i] = uint32(live)
		live++
		if _, ok := docIdx[sl.Doc]; !ok {
			docIdx[sl.Doc] = uint64(len(docs))
			docs = append(docs, sl.Doc)
		}
	}
	w.uvarint(uint64(len(docs)))
	for _, d := range docs {
		writeDoc(w, d)
	}
	w.uvarint(uint64(len(m.kinds)))
	for _, k := range m.kinds {
		w.str(k.Type)
		w.str(k.CodeLang)
	}
	w.uvarint(uint64(live))
	for _, sl := range m.slots {
		if sl.Dead {
			continue
		}
		w.varint(sl.ChunkID)
		w.uvarint(docIdx[sl.Doc])
		w.uvarint(uint64(sl.Size))
		w.uvarint(uint64(sl.ColSize[0]))
		w.uvarint(uint64(sl.ColSize[1]))
		headed := uint64(0)
		if sl.Headed {
			headed = 1
		}
		w.uvarint(uint64(sl.Kind)<<1 | headed)
	}
	return remap
}

func writeDoc(w *snapWriter, d *Doc) {
	w.varint(d.ID)
	w.str(d.URL)
	w.str(d.Title)
	w.str(d.Lang)
	w.str(d.PostType)
	w.strs(d.Categories)
	w.strs(d.Tags)
	w.time(d.Published)
	w.time(d.Modified)
	if d.Thin {
		w.uvarint(1)
	} else {
		w.uvarint(0)
	}
	w.uvarint(uint64(d.TitleSize))
	w.uvarint(uint64(d.ExactSize))
}

// writeTerms writes the terms with their postings, renumbered by remap.
// Terms whose chunks all died are left out, as compaction drops them.
// Call with the read lock held.
func (m *Index) writeTerms(w *snapWriter, remap []uint32) {
	var (
		buf   []byte
		terms int
	)
	for _, t := range m.terms {
		if m.liveIn(t) {
			terms++
		}
	}
	w.uvarint(uint64(terms))
	for term, t := range m.terms {
		if !m.liveIn(t) {
			continue
		}
		nt := Term{post: t.post, last: t.last, n: t.n, stem: t.stem, exact: t.exact}
		if m.dead > 0 {
			nt = Term{post: buf[:0]}
			t.remapInto(&nt, remap)
			buf = nt.post
		}
		w.str(term)
		w.uvarint(uint64(nt.last))
		w.uvarint(uint64(nt.n))
		w.uvarint(uint64(nt.stem))
		w.uvarint(uint64(nt.exact))
		w.bytes(nt.post)
	}
}

// liveIn reports whether a live chunk holds t. Call with m.mu held.
func (m *Index) liveIn(t *Term) bool {
	if m.dead == 0 {
		return len(t.post) > 0
	}
	return m.counts(t).any > 0
}

type snapWriter struct {
	w   *bufio.Writer
	crc uint32
	b   [binary.MaxVarintLen64]byte
	err error
}

func (w *snapWriter) raw(b []byte) {
	if w.err != nil {
		return
	}
	w.crc = crc32.Update(w.crc, snapCRC, b)
	_, w.err = w.w.Write(b)
}

func (w *snapWriter) uvarint(x uint64) { w.raw(binary.AppendUvarint(w.b[:0], x)) }
func (w *snapWriter) varint(x int64)   { w.raw(binary.AppendVarint(w.b[:0], x)) }

func (w *snapWriter) bytes(b []byte) {
	w.uvarint(uint64(len(b)))
	w.raw(b)
}

func (w *snapWriter) str(s string) { w.bytes([]byte(s)) }

func (w *snapWriter) strs(xs []string) {
	w.uvarint(uint64(len(xs)))
	for _, x := range xs {
		w.str(x)
	}
}

// time writes a time to the second, as the store keeps them; the zero
// time as the smallest number.
func (w *snapWriter) time(t time.Time) {
	if t.IsZero() {
		w.varint(math.MinInt64)
		return
	}
	w.varint(t.Unix())
}

// snapReader reads what snapWriter wrote. The first error sticks: every
// read after it returns zero values.
type snapReader struct {
	r    *bufio.Reader
	left int64 // bytes before the checksum
	crc  uint32
	err  error
}

func (r *snapReader) fail() {
	if r.err == nil {
		r.err = errors.New("snapshot: damaged")
	}
}

func (r *snapReader) raw(n int) []byte {
	if r.err != nil || int64(n) > r.left || n < 0 {
		r.fail()
		return nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.err = err
		return nil
	}
	r.left -= int64(n)
	r.crc = crc32.Update(r.crc, snapCRC, b)
	return b
}

func (r *snapReader) byte() byte {
	if r.err != nil || r.left < 1 {
		r.fail()
		return 0
	}
	c, err := r.r.ReadByte()
	if err != nil {
		r.err = err
		return 0
	}
	r.left--
	r.crc = crc32.Update(r.crc, snapCRC, []byte{c})
	return c
}

func (r *snapReader) uvarint() uint64 {
	var x uint64
	for shift := 0; shift < 64; shift += 7 {
		c := r.byte()
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
	r.fail()
	return 0
}

func (r *snapReader) varint() int64 {
	u := r.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

// count reads a number of items, each at least a byte long.
func (r *snapReader) count() int {
	n := r.uvarint()
	if n > uint64(r.left) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *snapReader) bytes() []byte { return r.raw(r.count()) }
func (r *snapReader) str() string   { return string(r.bytes()) }

func (r *snapReader) strs() []string {
	n := r.count()
	if n == 0 {
		return nil
	}
	xs := make([]string, n)
	for i := range xs {
		xs[i] = r.str()
	}
	return xs
}

func (r *snapReader) time() time.Time {
	s := r.varint()
	if s == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}
