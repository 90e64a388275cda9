package search

import (
	"encoding/binary"
	"math"
	"slices"
)

// variantPostings are the postings of a variant prefix's terms summed
// into one list, by chunk: what the rerank reads for the prefix in place
// of its terms' own lists. A SciFact question has eight or so prefixes
// and a hundred terms under them, 112 of the rerank's 122 lists: each a
// map lookup, a term and a list in memory gone cold between visitors.
type variantPostings struct {
	// post holds, for each chunk in the vocabulary's slots whose title,
	// keywords or body hold a term of the prefix (or where a count of
	// one reached the cap), uvarint(slot delta << 1 | capped) and the
	// three columns' summed counts as uvarints. Empty when bytes is over
	// maxRerankPostings: it was not merged.
	post []byte
	// bytes is the length of the terms' own postings when merged: the
	// rerank's bound still counts what reading their lists would cost (a
	// query's own term under the prefix now twice, a few KB against the
	// bound's 256).
	bytes int
}

// variantIter reads a variantPostings' list, one chunk at a time.
type variantIter struct {
	b      []byte
	off    int
	slot   uint32
	capped bool
	tf     [3]uint64 // the title, keywords and body sums
}

func (vp *variantPostings) iter() variantIter { return variantIter{b: vp.post} }

// next reads the next chunk's entry into slot, capped and tf.
func (it *variantIter) next() bool {
	if it.off >= len(it.b) {
		return false
	}
	var x uint64
	x, it.off = uvarint(it.b, it.off)
	it.slot += uint32(x >> 1)
	it.capped = x&1 != 0
	for c := range it.tf {
		it.tf[c], it.off = uvarint(it.b, it.off)
	}
	return true
}

// maxVariantCache bounds the bytes of merged postings a vocabulary keeps;
// past it a prefix is merged at each search, as its terms were read
// before. The vocabulary is rebuilt after the index changes, and the
// cache with it.
const maxVariantCache = 4 << 20

// variantPostings returns the merged postings of prefix p's terms. The
// caller holds m's read lock, and v's slots were numbered as m's are
// (v.renumbered == m.renumbered): the chunks in them are those the list
// covers, and none of them change until the slots are renumbered.
func (v *vocabulary) variantPostings(m *memIndex, p string) *variantPostings {
	v.variantMu.Lock()
	vp := v.variants[p]
	v.variantMu.Unlock()
	if vp != nil {
		return vp
	}
	vp = v.mergeVariants(m, p)
	v.variantMu.Lock()
	defer v.variantMu.Unlock()
	if v.variantBytes+len(vp.post) <= maxVariantCache {
		if v.variants == nil {
			v.variants = map[string]*variantPostings{}
		}
		if v.variants[p] == nil {
			v.variants[p] = vp
			v.variantBytes += len(vp.post)
		}
	}
	return vp
}

// mergeVariants sums the postings of p's terms by slot, for the slots
// the vocabulary covers.
func (v *vocabulary) mergeVariants(m *memIndex, p string) *variantPostings {
	terms := v.prefixTerms(p)
	mts := make([]*memTerm, 0, len(terms))
	vp := &variantPostings{}
	for _, t := range terms {
		if mt := m.terms[t]; mt != nil {
			mts = append(mts, mt)
			vp.bytes += len(mt.post)
		}
	}
	if vp.bytes > maxRerankPostings {
		return vp
	}
	type posting struct {
		slot   uint32
		capped bool
		tf     [3]uint32
	}
	var ps []posting
	for _, mt := range mts {
		for it := mt.iter(); it.next(); {
			if int(it.slot) >= v.slots {
				break
			}
			tf := it.tf
			capped := tf[0] == math.MaxUint8 || tf[1] == math.MaxUint8 || tf[2] == math.MaxUint8 || tf[3] == math.MaxUint8
			if tf[0]|tf[1]|tf[2] == 0 && !capped {
				continue // in the exact column alone
			}
			ps = append(ps, posting{it.slot, capped, [3]uint32{uint32(tf[0]), uint32(tf[1]), uint32(tf[2])}})
		}
	}
	slices.SortFunc(ps, func(a, b posting) int { return int(a.slot) - int(b.slot) })
	var last uint32
	for i := 0; i < len(ps); {
		sum := ps[i]
		j := i + 1
		for ; j < len(ps) && ps[j].slot == sum.slot; j++ {
			sum.capped = sum.capped || ps[j].capped
			for c := range sum.tf {
				sum.tf[c] += ps[j].tf[c]
			}
		}
		x := uint64(sum.slot-last) << 1
		if sum.capped {
			x |= 1
		}
		vp.post = binary.AppendUvarint(vp.post, x)
		for _, n := range sum.tf {
			vp.post = binary.AppendUvarint(vp.post, uint64(n))
		}
		last = sum.slot
		i = j
	}
	vp.post = slices.Clip(vp.post)
	return vp
}
