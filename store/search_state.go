package store

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// searchState is what a DB keeps for searching: configuration set at
// start-up and caches built from the index. It lives beside the DB rather
// than in it so the search code stays in the search files.
type searchState struct {
	mu       sync.Mutex
	synonyms *Synonyms
	ranking  Ranking
	vocab    *vocabulary
	building bool
	count    int
	indexOK  bool
	fields   fieldStats
	countGen int64
	mem      *memIndex
}

var searchStates sync.Map // *DB → *searchState

func (db *DB) search() *searchState {
	if s, ok := searchStates.Load(db); ok {
		return s.(*searchState)
	}
	s, _ := searchStates.LoadOrStore(db, &searchState{ranking: DefaultRanking(), mem: newMemIndex()})
	return s.(*searchState)
}

// SetSynonyms installs the site's synonym rules; nil removes them.
func (db *DB) SetSynonyms(s *Synonyms) {
	st := db.search()
	st.mu.Lock()
	st.synonyms = s
	st.mu.Unlock()
}

// SetRanking replaces the ranking parameters (DefaultRanking is the
// default).
func (db *DB) SetRanking(r Ranking) {
	st := db.search()
	st.mu.Lock()
	st.ranking = r
	st.mu.Unlock()
}

// Ranking returns the ranking parameters in use.
func (db *DB) Ranking() Ranking {
	st := db.search()
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ranking
}

func (st *searchState) config() (*Synonyms, Ranking) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.synonyms, st.ranking
}

// vocabulary is the index's term list, for typo tolerance. It is rebuilt
// at most every vocabMaxAge after the index changed: a term added a few
// seconds ago is not yet a typo target, which is fine.
type vocabulary struct {
	gen   int64
	built time.Time
	// byKey groups the typo targets by length and first rune.
	byKey    map[vocabKey][]vocabTerm
	docCount map[string]int
	// prefixDocs sums docCount by the terms' first prefixLen runes, for
	// Ranking.VariantPrefix. A chunk holding two such terms counts twice:
	// the IDF it gives is a little low, never high.
	prefixLen  int
	prefixDocs map[string]int
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

func (v *vocabulary) add(t vocabTerm) {
	r, _ := utf8.DecodeRuneInString(t.term)
	k := vocabKey{utf8.RuneCountInString(t.term), r}
	v.byKey[k] = append(v.byKey[k], t)
}

type vocabTerm struct {
	term string
	docs int
}

const vocabMaxAge = 10 * time.Second

func (db *DB) vocabulary(ctx context.Context) (*vocabulary, error) {
	st := db.search()
	st.mu.Lock()
	v := st.vocab
	gen := indexGen.Load()
	fresh := v != nil && (v.gen == gen || time.Since(v.built) < vocabMaxAge) && v.prefixLen == st.ranking.VariantPrefix
	if fresh || (v != nil && st.building) {
		st.mu.Unlock()
		return v, nil
	}
	st.building = true
	st.mu.Unlock()
	if v != nil {
		// Stale: answer from the old list while a new one is read; a
		// search should not wait for a scan of the whole vocabulary.
		go db.buildVocabulary(context.WithoutCancel(ctx), gen) //nolint:errcheck // the next search retries
		return v, nil
	}
	return db.buildVocabulary(ctx, gen)
}

func (db *DB) buildVocabulary(ctx context.Context, gen int64) (*vocabulary, error) {
	st := db.search()
	defer func() {
		st.mu.Lock()
		st.building = false
		st.mu.Unlock()
	}()
	_, rk := st.config()
	nv := &vocabulary{gen: gen, built: time.Now(), byKey: map[vocabKey][]vocabTerm{}, docCount: map[string]int{},
		prefixLen: rk.VariantPrefix, prefixDocs: map[string]int{}}
	add := func(t vocabTerm) {
		nv.docCount[t.term] = t.docs
		if p, ok := runePrefix(t.term, nv.prefixLen); ok && nv.prefixLen > 0 {
			nv.prefixDocs[p] += t.docs
		}
		n := utf8.RuneCountInString(t.term)
		if n < 3 || literalTerm(t.term) {
			return
		}
		nv.add(t)
	}
	if m := db.currentMem(ctx); m != nil {
		m.eachTerm(func(term string, docs int) { add(vocabTerm{term, docs}) })
	} else {
		rows, err := db.read.QueryContext(ctx, `SELECT term, doc FROM chunks_vocab`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var t vocabTerm
			if err := rows.Scan(&t.term, &t.docs); err != nil {
				return nil, err
			}
			add(t)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	st.mu.Lock()
	st.vocab = nv
	st.mu.Unlock()
	return nv, nil
}

// correct returns the vocabulary term closest to word: within edit
// distance 1 for words of 4–5 letters, 2 for longer ones (a transposition
// counts 1), most frequent first on ties. ok is false when none is close.
// Candidates share the word's first letter, or have its first two swapped:
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
				var d int
				if isASCII(c.term) && isASCII(word) {
					d = osaBytes(word, c.term, bestD)
				} else {
					buf = append(buf[:0], []rune(c.term)...)
					d = osaDistance(w, buf, bestD)
				}
				if d < bestD || (d == bestD && c.docs > bestDocs) {
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
func osaBytes(a, b string, limit int) int { return osa([]byte(a), []byte(b), limit) }

// osaDistance is the optimal string alignment distance (Levenshtein plus
// adjacent transpositions), giving up with limit+1 once it exceeds limit.
func osaDistance(a, b []rune, limit int) int { return osa(a, b, limit) }

func osa[E byte | rune](a, b []E, limit int) int {
	if abs(len(a)-len(b)) > limit || len(a) >= 40 || len(b) >= 40 {
		return limit + 1
	}
	var rows [3][41]int
	prev2, prev, cur := rows[0][:len(b)+1], rows[1][:len(b)+1], rows[2][:len(b)+1]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, prev2[j-2]+1)
			}
			cur[j] = d
			rowMin = min(rowMin, d)
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// termDocs returns how many chunks hold each term (stems and exact
// surfaces share one vocabulary), from the cached vocabulary when it is
// current, else from the index.
func (db *DB) termDocs(ctx context.Context, mem *memIndex, terms []string) (map[string]int, error) {
	out := map[string]int{}
	if len(terms) == 0 {
		return out, nil
	}
	if mem != nil {
		return mem.termDocs(terms), nil
	}
	if v, err := db.vocabulary(ctx); err == nil && v.gen == indexGen.Load() {
		for _, t := range terms {
			if n, ok := v.docCount[t]; ok {
				out[t] = n
			}
		}
		return out, nil
	}
	return db.vocabCounts(ctx, "doc", terms)
}

// chunkCount is the number of chunks, cached until the index changes.
func (db *DB) chunkCount(ctx context.Context, mem *memIndex) (int, error) {
	st := db.search()
	if mem != nil {
		return mem.fieldStats().n, nil
	}
	gen := indexGen.Load()
	st.mu.Lock()
	if st.countGen == gen && st.count > 0 {
		n := st.count
		st.mu.Unlock()
		return n, nil
	}
	st.mu.Unlock()
	var n int
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM chunks`).Scan(&n); err != nil {
		return 0, err
	}
	st.mu.Lock()
	st.count, st.countGen = n, gen
	st.mu.Unlock()
	return n, nil
}

// ensureIndexOnce runs EnsureIndex on a DB's first search, for callers
// that did not at start-up.
func (db *DB) ensureIndexOnce(ctx context.Context) error {
	st := db.search()
	st.mu.Lock()
	ok := st.indexOK
	st.mu.Unlock()
	if ok {
		return nil
	}
	if err := db.EnsureIndex(ctx); err != nil {
		return err
	}
	st.mu.Lock()
	st.indexOK = true
	st.mu.Unlock()
	return nil
}
