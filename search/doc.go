// Package search is askwpd's retrieval engine: it ranks the chunks of the
// in-memory index (search/index) for a search_site query and groups them
// into pages, with evidence and a confidence. It imports analysis, store
// and search/index; the tools, the daemon and the evaluation use it.
//
// A search, in order: the query is parsed and analyzed (query.go); its
// terms are looked up, typos corrected from the vocabulary (vocab.go)
// and quoted phrases checked in the chunks' text (phrase.go); the
// candidate pass scores chunks with BM25 over the postings, first as an
// AND for short queries (candidates.go); long queries, and those with a
// word found nowhere but its variants, are reranked with BM25F and
// proximity (rerank.go, rerankcols.go); chunks that introduce their page
// are raised; a query vector is fused in (hybrid.go); the chunks are
// grouped into pages, which get the whole-page score and its name ties
// (docscore.go, assoc.go) and the page-level factors (rank.go); the
// shown hits get their matched terms and snippet (evidence.go); the
// result gets its action and confidence (decide.go).
//
// # Invariants
//
// A candidate remembers the slot it was found at, and the index's read
// lock is let go between the candidate pass and the rerank: whoever reads
// the slot again (the rerank's counts, the intro boost) checks that it
// still holds the candidate's chunk, and reads the chunk's text instead
// when it does not.
//
// The rerank reads a chunk's term counts from the postings rather than
// from its text (rerankcols.go) only where the postings stand for the
// text: the slot is the chunk's, no count is at the postings' cap, and,
// when variants count, the chunk was in the index when the vocabulary
// was read (its slot mark, with the same renumbering). Otherwise the text
// is analyzed, as it always may be: both give the same counts.
//
// # Locks, pools and generations
//
// Index.mu guards the ranking parameters, the synonyms and the
// vocabulary; it is never held while the index's locks are taken. The
// vocabulary records the index's count (gen) it was read at: a search
// answers from it for up to vocabMaxAge after the index moved on, while
// a new one is read in the background; searches that want the first one
// wait for it.
//
// The candidate pass's score arrays (12 bytes a chunk) come from a
// channel of 2×GOMAXPROCS: their number, not the number of searches,
// bounds the memory; a search takes one before the index's read lock, so
// that waiting for one never holds up a commit. Three sync.Pools hold
// the rest of a search's scratch: the whole-page score's marks by slot
// (slotBufs, cleared as they were set), and the evidence's words and
// surfaces of a passage (spanBufs, lowerBufs). Each names the benchmark
// that keeps it.
package search
