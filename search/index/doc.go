// Package index is askwpd's in-memory index of one store's chunks: per
// term, a packed list of postings with each column's term frequency;
// per chunk, a slot with its filter fields and lengths; per page, the
// words around the links other pages make to it; and a cache of the
// chunk texts searches read. The store (SQLite) stays the source of
// truth: the index is loaded from it, or from a snapshot of itself
// written at the store's current count, and then follows the store's
// commits. It imports analysis and store; search ranks over it.
//
// # Slots and renumbering
//
// Every chunk has a slot, a number into the index's slots; postings name
// chunks by slot, in slot order, and a page's slots are in its chunks'
// order. An added chunk takes the next slot. Slots move only when they
// are renumbered: by a compaction, or by a load, which swaps in new
// contents whole. Renumbered counts those times. A slot number, a *Term
// or a *Doc read under the read lock is good while the lock is held; a
// reader that keeps a slot number past it (the rerank, after the
// candidate pass) must check, under the lock again, that the slot still
// holds its chunk (Slot.ChunkID and Slot.Doc), or that Renumbered has
// not moved.
//
// # Dead slots and compaction
//
// A commit that deletes or replaces a page kills its slots: Slot.Dead is
// set and the slot's length (Len) reads as dead, but its postings stay
// where they are until a compaction. Every reader of postings skips the
// dead (Len's live flag, checked per posting). The column totals and
// Live count the live slots only. Once the dead are more than compactMin
// and more than a compactShare-th of the live, the commit that killed
// them compacts: every posting list is written anew without them, terms
// left with no posting go, and the slots are renumbered. A term's live
// chunk counts (Counts) are cached on the term and keyed by
// Renumbered and the number of dead slots, which together change
// whenever a slot dies or moves; with no dead slot they are the term's
// own counts and need no scan.
//
// # Commits, loads and other processes
//
// The index is a store.IndexObserver. Before a load started (enabled),
// commits are ignored: the load will read their rows. While a load reads
// the store or the snapshot (building), commits wait in buffered; once
// the new contents are swapped in, they are applied, and those at or
// below the load's count are skipped (offerLocked). A commit's chunks
// and links are analyzed before the write lock is taken. A load that
// fails keeps the contents the index had, which go on following this
// process's commits. The store delivers one process's commits in count
// order, so a commit whose count skips numbers follows another
// process's write (askwpd index beside serve): it is applied, and missed
// asks for a reload, the only way that write comes in.
//
// CatchUp is how a search finds another process's writes: it reads the
// store's count at most once per lookEvery, unless a commit of this
// process is on its way (store.DB.Delivering), then waits up to
// memWaitMax for such a commit to land, and starts a reload in the
// background at most once per reloadEvery. Meanwhile searches answer
// from the index as it is.
//
// # The snapshot
//
// A snapshot counts only when its magic line (the format), its build
// version and its count match the store's current index_writes count and
// this build; anything else, and any damage (its CRC-32C), and the index
// loads from the store. It holds the live slots only, renumbered, so a
// deleted page's words do not linger on disk. It is removed as soon as
// the index applies a commit past it, so a restart after a crash loads
// from the store; it is written only by a ready index that missed no
// commit and is not loading.
//
// # Locks, in order
//
//   - snapMu, held by WriteSnapshot around the read lock: one writer of
//     the file at a time (it sets snapGen and snapOnDisk under the read
//     lock).
//   - mu, an RWMutex, guards the contents (slots, terms, documents'
//     slots, kinds, links, totals), the load's state (enabled, ready,
//     building, buffered, missed, loading, closed), gen and renumbered.
//     Commits, loads, compaction and Close take it to write; readers (the
//     read API, RLock) to read.
//   - Texts.mu and the interner's mutex are leaves: nothing is locked
//     while they are held, and neither is held with mu.
//
// The per-term counts (Term.cnt), a page's DocWords and DocTerms, and the
// Stats read last are atomics, filled by whichever reader finds them
// stale, under the read lock for the first two.
//
// # Generation counters
//
//   - gen is the store's count of index writes the index reflects: it
//     moves with every commit applied and every load (applied is closed
//     and replaced each time, for waitGen).
//   - renumbered counts the times slots moved (compactions and loads).
//   - Texts' epoch moves with every commit the cache sees: a text read
//     from the store across one may be the text the commit replaced, and
//     is not kept.
package index
