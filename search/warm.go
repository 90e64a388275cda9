package search

import (
	"context"
	"fmt"
	"slices"

	"github.com/askwp/askwpd/store"
)

// Warmed is what Warm read into memory.
type Warmed struct {
	// Texts counts the chunk texts Warm read into the cache, and Lists
	// the lists of their terms it made: none for what the cache held.
	Texts, Lists int
	// Bytes is what those texts and lists cost, as the cache counts.
	Bytes int
	// Full says Warm stopped at the cache's bound or at maxBytes, before
	// the last chunk.
	Full bool
}

// warmBatch is how many chunks' texts one statement reads.
const warmBatch = 256

// Warm reads into memory, before the first visitors, what each of their
// searches would otherwise read on its own time: the vocabulary, and the
// texts of the chunks with the lists of their terms, the newest pages
// first, until the cache is full or maxBytes are used (0: until the
// cache is full).
//
// A search reads the texts of the chunks it reranks from the store, and
// lists a text's terms at its third sighting (listAfterHits), so most of
// a daemon's first questions reached pages no earlier one had: half of
// SciFact's claims, asked after the other half, took 1.8 ms each in
// process, 1.25 ms after a warm-up that took 0.4-0.5 s of CPU once, the
// vocabulary included, and held 14.4 MB for the 5,245 chunks that fit.
func (ix *Index) Warm(ctx context.Context, maxBytes int) (Warmed, error) {
	return ix.warm(ctx, nil, maxBytes)
}

// warm is Warm of the chunks in only, or of all when only is nil.
func (ix *Index) warm(ctx context.Context, only map[int64]bool, maxBytes int) (Warmed, error) {
	var w Warmed
	if err := ix.ready(ctx); err != nil {
		return w, err
	}
	ix.vocabulary()
	order := ix.mem.warmOrder(only)
	ids := make([]int64, 0, warmBatch)
	for i := 0; i < len(order); i += warmBatch {
		if err := ctx.Err(); err != nil {
			return w, fmt.Errorf("search: warm: %w", err)
		}
		part := order[i:min(i+warmBatch, len(order))]
		ids = ids[:0]
		for _, c := range part {
			ids = append(ids, c.id)
		}
		held, missing, epoch := ix.texts.lookup(ids)
		var chunks map[int64]*store.Chunk
		if len(missing) > 0 {
			var err error
			if chunks, err = ix.db.ChunksByID(ctx, missing); err != nil {
				return w, fmt.Errorf("search: warm: %w", err)
			}
		}
		for _, c := range part {
			e := held[c.id]
			if e == nil {
				ch := chunks[c.id]
				if ch == nil { // deleted since
					continue
				}
				var full bool
				if e, full = ix.texts.addWithin(epoch, ch); full {
					w.Full = true
					return w, nil
				}
				if e == nil { // a commit came meanwhile: the chunk may have changed
					continue
				}
				w.Texts++
				w.Bytes += e.cost()
			}
			if e.terms.Load() == nil && ix.texts.list(ix.an, c.id, e, c.lang) != nil {
				w.Lists++
				w.Bytes += e.listCost()
			}
			if maxBytes > 0 && w.Bytes >= maxBytes {
				w.Full = true
				return w, nil
			}
		}
	}
	return w, nil
}

// warmChunk is a live chunk Warm reads, with its page's language.
type warmChunk struct {
	id   int64
	lang string
}

// warmOrder lists the live chunks (those in only, unless it is nil), the
// newest pages first: a site's visitors ask about what it published
// lately more than about its archive.
func (m *memIndex) warmOrder(only map[int64]bool) []warmChunk {
	type at struct {
		warmChunk
		doc *memDoc
	}
	m.mu.RLock()
	all := make([]at, 0, m.live)
	for _, sl := range m.slots {
		if !sl.dead && (only == nil || only[sl.chunkID]) {
			all = append(all, at{warmChunk{sl.chunkID, sl.doc.Lang}, sl.doc})
		}
	}
	m.mu.RUnlock()
	slices.SortStableFunc(all, func(a, b at) int { return b.doc.Modified.Compare(a.doc.Modified) })
	out := make([]warmChunk, len(all))
	for i, a := range all {
		out[i] = a.warmChunk
	}
	return out
}
