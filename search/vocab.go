package search

import (
	"math/bits"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/askwp/askwpd/analysis"
)

// vocabulary is the index's term list, for typo tolerance. It is rebuilt
// at most every vocabMaxAge after the index changed: a term added a few
// seconds ago is not yet a typo target, which is fine.
type vocabulary struct {
	gen   int64 // the index's gen when built
	built time.Time
	// byKey groups the typo targets by length and first rune.
	byKey    map[vocabKey][]vocabTerm
	docCount map[string]int
	// prefixDocs sums docCount by the terms' first prefixLen runes, for
	// Ranking.VariantPrefix. A chunk holding two such terms counts twice:
	// the IDF it gives is a little low, never high.
	prefixLen  int
	prefixDocs map[string]int
	// sorted holds the terms of at least prefixLen runes in order, for
	// the rerank's variant counts (rerankcols.go): a prefix's terms are a
	// run of it, without a list per prefix. They are the terms of every
	// chunk in the index's first slots slots, while it renumbered them
	// renumbered times: a chunk added since may hold a term they lack.
	sorted     []string
	slots      int
	renumbered uint64
}

// prefixTerms returns the terms that start with p, a prefix of
// prefixLen runes.
func (v *vocabulary) prefixTerms(p string) []string {
	i := sort.SearchStrings(v.sorted, p)
	j := i
	for j < len(v.sorted) && strings.HasPrefix(v.sorted[j], p) {
		j++
	}
	return v.sorted[i:j]
}

// prefixCount is the summed chunk count of the terms that start with p,
// a prefix of n runes.
func (v *vocabulary) prefixCount(p string, n int) int {
	if n == v.prefixLen {
		return v.prefixDocs[p]
	}
	// A ranking changed since the build (bench/search sweeps).
	var c int
	for t, d := range v.docCount {
		if strings.HasPrefix(t, p) {
			c += d
		}
	}
	return c
}

// runePrefix returns s's first n runes, and whether s has that many.
func runePrefix(s string, n int) (string, bool) {
	i := 0
	for k := range s {
		if i == n {
			return s[:k], true
		}
		i++
	}
	return s, i == n
}

type vocabKey struct {
	n     int
	first rune
}

func (v *vocabulary) add(term string, docs int) {
	r, _ := utf8.DecodeRuneInString(term)
	k := vocabKey{utf8.RuneCountInString(term), r}
	v.byKey[k] = append(v.byKey[k], vocabTerm{term, docs, runeSet(term)})
}

type vocabTerm struct {
	term string
	docs int
	set  uint64 // runeSet(term)
}

// runeSet is the set of s's runes, each a bit (its value modulo 64). An
// edit removes at most one rune from a word and adds at most one, so two
// words are at least as many edits apart as the runes either set holds
// and the other lacks: a word's distance to most of the vocabulary is
// known to exceed the limit without being worked out.
func runeSet(s string) uint64 {
	var set uint64
	for _, r := range s {
		set |= 1 << (uint32(r) % 64)
	}
	return set
}

const vocabMaxAge = 10 * time.Second

// vocabulary returns the index's term list. A stale one is answered while
// a new one is read in the background: a search should not wait for a
// walk over every term.
func (ix *Index) vocabulary() *vocabulary {
	gen := ix.mem.Gen()
	ix.mu.Lock()
	v := ix.vocab
	fresh := v != nil && (v.gen == gen || time.Since(v.built) < vocabMaxAge) && v.prefixLen == ix.ranking.VariantPrefix
	if fresh || (v != nil && ix.vocabBuilding) {
		ix.mu.Unlock()
		return v
	}
	if first := ix.vocabFirst; v == nil && first != nil {
		// The first one is being read: the searches that come meanwhile
		// wait for it rather than each read their own, which on a daemon
		// started under load doubled the longest wait.
		ix.mu.Unlock()
		<-first
		return ix.vocabulary()
	}
	ix.vocabBuilding = true
	prefixLen := ix.ranking.VariantPrefix
	if v != nil {
		ix.mu.Unlock()
		go ix.buildVocabulary(gen, prefixLen)
		return v
	}
	ix.vocabFirst = make(chan struct{})
	ix.mu.Unlock()
	return ix.buildVocabulary(gen, prefixLen)
}

func (ix *Index) buildVocabulary(gen int64, prefixLen int) *vocabulary {
	nv := &vocabulary{gen: gen, built: time.Now(), byKey: map[vocabKey][]vocabTerm{}, docCount: map[string]int{},
		prefixLen: prefixLen, prefixDocs: map[string]int{}}
	// Marked before the walk: every chunk in these slots is in it.
	nv.slots, nv.renumbered = ix.mem.SlotMark()
	ix.mem.EachTerm(func(term string, docs int) {
		nv.docCount[term] = docs
		if p, ok := runePrefix(term, nv.prefixLen); ok && nv.prefixLen > 0 {
			nv.prefixDocs[p] += docs
			nv.sorted = append(nv.sorted, term)
		}
		if utf8.RuneCountInString(term) < 3 || analysis.Literal(term) {
			return
		}
		nv.add(term, docs)
	})
	// Grown by append, the list holds up to twice its length.
	nv.sorted = slices.Clone(nv.sorted)
	sort.Strings(nv.sorted)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.vocabBuilding = false
	if !ix.closed {
		ix.vocab = nv
	}
	if ix.vocabFirst != nil {
		close(ix.vocabFirst)
		ix.vocabFirst = nil
	}
	return nv
}

// correct returns the vocabulary term closest to word: within edit
// distance 1 for words of 4–5 letters, 2 for longer ones (a transposition
// counts 1), most frequent first on ties, then alphabetical. ok is false
// when none is close. Candidates share the word's first letter, or have its first two swapped:
// a wrong first letter is the rarest typo, and the restriction keeps a
// lookup under a millisecond on a large site's vocabulary.
func (v *vocabulary) correct(word string) (string, bool) {
	w := []rune(word)
	n := len(w)
	if n < 4 || n >= 40 {
		return "", false
	}
	k := 1
	if n >= 6 {
		k = 2
	}
	best, bestD, bestDocs := "", k+1, 0
	set := runeSet(word)
	var buf []rune
	firsts := []rune{w[0]}
	if w[1] != w[0] {
		firsts = append(firsts, w[1])
	}
	for l := n - k; l <= n+k; l++ {
		for fi, first := range firsts {
			for _, c := range v.byKey[vocabKey{l, first}] {
				if fi == 1 {
					// Only the swap of the first two letters.
					_, s0 := utf8.DecodeRuneInString(c.term)
					if c1, _ := utf8.DecodeRuneInString(c.term[s0:]); c1 != w[0] {
						continue
					}
				}
				if bits.OnesCount64(set&^c.set) > bestD || bits.OnesCount64(c.set&^set) > bestD {
					continue
				}
				var d int
				if isASCII(c.term) && isASCII(word) {
					d = osaBytes(word, c.term, bestD)
				} else {
					buf = append(buf[:0], []rune(c.term)...)
					d = osaDistance(w, buf, bestD)
				}
				// Ties go to the more frequent term, then the first in
				// order: the lists are built from a map, and the same
				// query must correct the same way every time.
				if d < bestD || (d == bestD && (c.docs > bestDocs || c.docs == bestDocs && c.term < best)) {
					best, bestD, bestDocs = c.term, d, c.docs
				}
			}
		}
	}
	if bestD > k {
		return "", false
	}
	return best, true
}

// osaBytes is osaDistance for ASCII strings. []byte(a) of a short,
// non-escaping string needs no allocation.
func osaBytes(a, b string, limit int) int { return analysis.Distance([]byte(a), []byte(b), limit) }

// osaDistance is the optimal string alignment distance (Levenshtein plus
// adjacent transpositions), giving up with limit+1 once it exceeds limit.
func osaDistance(a, b []rune, limit int) int { return analysis.Distance(a, b, limit) }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
