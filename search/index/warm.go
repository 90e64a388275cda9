package index

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

// Warm reads into the text cache, before the first visitors, what each
// of their searches would otherwise read on its own time: the texts of
// the chunks (those in only, or all when only is nil), with the lists of
// their terms, the newest pages first, until the cache is full or
// maxBytes are used (0: until the cache is full).
func (m *Index) Warm(ctx context.Context, only map[int64]bool, maxBytes int) (Warmed, error) {
	var w Warmed
	if err := m.Ready(ctx); err != nil {
		return w, err
	}
	order := m.warmOrder(only)
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
		held, missing, epoch := m.Texts.lookup(ids)
		var chunks map[int64]*store.Chunk
		if len(missing) > 0 {
			var err error
			if chunks, err = m.db.ChunksByID(ctx, missing); err != nil {
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
				if e, full = m.Texts.addWithin(epoch, ch); full {
					w.Full = true
					return w, nil
				}
				if e == nil { // a commit came meanwhile: the chunk may have changed
					continue
				}
				w.Texts++
				w.Bytes += e.cost()
			}
			if e.terms.Load() == nil && m.Texts.list(m.an, c.id, e, c.lang) != nil {
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
func (m *Index) warmOrder(only map[int64]bool) []warmChunk {
	type at struct {
		warmChunk
		doc *Doc
	}
	m.mu.RLock()
	all := make([]at, 0, m.live)
	for _, sl := range m.slots {
		if !sl.Dead && (only == nil || only[sl.ChunkID]) {
			all = append(all, at{warmChunk{sl.ChunkID, sl.Doc.Lang}, sl.Doc})
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
