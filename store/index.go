package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The store keeps no search index. Each transaction that changes the
// searchable chunks bumps meta.index_writes and, once committed, is handed
// to the observers (the way Litestream's DB notifies its replicas). An
// observer that loads the chunks with ReadIndex and then follows the
// commits holds the same chunks as the store.

// IndexDoc is the part of a document an index keeps for each chunk.
type IndexDoc struct {
	ID                  int64
	URL, Title, Lang    string
	PostType            string
	Categories, Tags    []string
	Published, Modified time.Time
	Thin                bool
}

// IndexChunk is a searchable chunk with its document. The chunks of one
// document share one *IndexDoc.
type IndexChunk struct {
	ID          int64
	Doc         *IndexDoc
	Type        string
	CodeLang    string
	Text        string
	HeadingPath []string
}

// IndexOp is one change: Add a chunk, or, when Add is nil, delete every
// chunk of document Delete.
type IndexOp struct {
	Delete int64
	Add    *IndexChunk
}

// IndexCommit is one committed transaction's changes, in the order the
// transaction made them: a batch may add a page and then replace it.
type IndexCommit struct {
	// Gen is the store's index_writes count after the commit.
	Gen int64
	Ops []IndexOp
}

// IndexObserver receives the store's index commits. Within a process they
// arrive in Gen order, one at a time; a Gen that skips numbers means
// another process wrote the store in between. IndexCommitted runs while
// the next commit's delivery (and its writer) waits, so it must be quick
// and must not write the store.
type IndexObserver interface {
	IndexCommitted(IndexCommit)
}

// Observe registers o for the commits that follow. The returned func
// unregisters it.
func (db *DB) Observe(o IndexObserver) (cancel func()) {
	db.obsMu.Lock()
	defer db.obsMu.Unlock()
	db.observers = append(db.observers, o)
	return func() {
		db.obsMu.Lock()
		defer db.obsMu.Unlock()
		for i, x := range db.observers {
			if x == o {
				db.observers = append(db.observers[:i:i], db.observers[i+1:]...)
				return
			}
		}
	}
}

// indexTx collects a transaction's changes to the searchable chunks.
type indexTx struct {
	ops  []IndexOp
	docs map[int64]*IndexDoc
}

func (it *indexTx) deleteDoc(docID int64) { it.ops = append(it.ops, IndexOp{Delete: docID}) }

func (it *indexTx) addChunk(d *Document, c *Chunk) {
	if it.docs == nil {
		it.docs = map[int64]*IndexDoc{}
	}
	doc := it.docs[d.ID]
	if doc == nil {
		doc = &IndexDoc{ID: d.ID, URL: d.URL, Title: d.Title, Lang: d.Lang, PostType: d.PostType,
			Categories: d.Categories, Tags: d.Tags, Thin: d.Thin,
			// As a read gives them back: UTC, to the second.
			Published: parseTime(fmtTime(d.Published)), Modified: parseTime(fmtTime(d.Modified))}
		it.docs[d.ID] = doc
	}
	it.ops = append(it.ops, IndexOp{Add: &IndexChunk{ID: c.ID, Doc: doc, Type: c.Type, CodeLang: c.CodeLang,
		Text: c.Text, HeadingPath: c.HeadingPath}})
}

// bumpIndexWrites counts a transaction that changed the searchable chunks.
// An observer compares the count with its own to know it is current.
const bumpIndexWrites = `INSERT INTO meta(key, value) VALUES('index_writes', '1')
	ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1
	RETURNING CAST(value AS INTEGER)`

// commitIndexed commits tx and hands its index changes to the observers.
// Writers share one connection, so their transactions, and their counts,
// are serial; but once a commit returns the connection, the next writer
// may commit before the first one has told the observers. Each commit
// takes a ticket while it still holds the connection, so tickets follow
// commit order, and deliveries wait for their ticket's turn after the
// commit. The connection is not held during that wait: an observer
// analyzing a large commit delays the next delivery, not the next write
// (a webhook's insert used to queue behind it).
func (db *DB) commitIndexed(ctx context.Context, tx *sql.Tx, it *indexTx) error {
	if len(it.ops) == 0 {
		return tx.Commit()
	}
	var gen int64
	if err := tx.QueryRowContext(ctx, bumpIndexWrites).Scan(&gen); err != nil {
		return fmt.Errorf("count index write: %w", err)
	}
	db.inflight.Add(1)
	defer db.inflight.Add(-1)
	// Not under commitMu, which a delivery holds: taking it here would
	// hold the connection through that delivery again.
	ticket := db.tickets.Add(1)
	err := tx.Commit()
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	for db.delivered != ticket-1 {
		db.commitCond.Wait()
	}
	// A failed commit still takes its turn, or every later one would wait
	// for it forever.
	defer func() {
		db.delivered = ticket
		db.commitCond.Broadcast()
	}()
	if err != nil {
		return err
	}
	db.obsMu.Lock()
	obs := append([]IndexObserver(nil), db.observers...)
	db.obsMu.Unlock()
	c := IndexCommit{Gen: gen, Ops: it.ops}
	for _, o := range obs {
		o.IndexCommitted(c)
	}
	return nil
}

// IndexWrites returns the store's count of committed index changes, by
// any process.
func (db *DB) IndexWrites(ctx context.Context) (int64, error) {
	n, err := readIndexWrites(ctx, db.read)
	if err != nil {
		return 0, fmt.Errorf("store: index writes: %w", err)
	}
	return n, nil
}

// Delivering reports whether this process has committed index changes
// that its observers have not received yet. Read after IndexWrites, it
// tells a count that is ahead because of this process (the commit is on
// its way) from one that is ahead because another process wrote.
func (db *DB) Delivering() bool { return db.inflight.Load() > 0 }

func readIndexWrites(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int64, error) {
	var gen int64
	err := q.QueryRowContext(ctx, `SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'index_writes'`).Scan(&gen)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return gen, err
}

// ReadIndex calls fn with every stored chunk and its document, a
// document's chunks together and in order, and returns the index_writes
// count they reflect. Rows and count come from one read transaction, so
// the commits after it are exactly those with a larger count.
func (db *DB) ReadIndex(ctx context.Context, fn func(*IndexChunk) error) (gen int64, err error) {
	tx, err := db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("store: read index: %w", err)
	}
	defer tx.Rollback()
	if gen, err = readIndexWrites(ctx, tx); err != nil {
		return 0, fmt.Errorf("store: read index: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `
		SELECT d.id, d.url, d.title, d.lang, d.post_type, d.categories, d.tags, d.published, d.modified, d.thin,
			c.id, c.type, c.code_lang, c.text, c.heading_path
		FROM chunks c JOIN documents d ON d.id = c.doc_id
		ORDER BY d.id, c.ord`)
	if err != nil {
		return 0, fmt.Errorf("store: read index: %w", err)
	}
	defer rows.Close()
	var doc *IndexDoc
	for rows.Next() {
		var (
			d                   IndexDoc
			cats, tags, pub, md string
			c                   IndexChunk
			hp                  string
		)
		if err := rows.Scan(&d.ID, &d.URL, &d.Title, &d.Lang, &d.PostType, &cats, &tags, &pub, &md, &d.Thin,
			&c.ID, &c.Type, &c.CodeLang, &c.Text, &hp); err != nil {
			return 0, fmt.Errorf("store: read index: %w", err)
		}
		if doc == nil || doc.ID != d.ID {
			d.Categories, d.Tags = parseList(cats), parseList(tags)
			d.Published, d.Modified = parseTime(pub), parseTime(md)
			doc = &d
		}
		c.Doc, c.HeadingPath = doc, parseList(hp)
		if err := fn(&c); err != nil {
			return 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("store: read index: %w", err)
	}
	return gen, nil
}

// ChunksByID returns the stored chunks with the given ids; ids not stored
// (deleted since) are left out.
func (db *DB) ChunksByID(ctx context.Context, ids []int64) (map[int64]*Chunk, error) {
	out := make(map[int64]*Chunk, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.chunksByID.QueryContext(ctx, idArray(ids))
	if err != nil {
		return nil, fmt.Errorf("store: chunks by id: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c Chunk
		var hp string
		if err := rows.Scan(&c.ID, &c.DocID, &c.Ord, &c.Start, &c.End, &c.Text, &hp, &c.Type, &c.CodeLang,
			&c.ContentHash, &c.Tokens); err != nil {
			return nil, fmt.Errorf("store: chunks by id: %w", err)
		}
		c.HeadingPath = parseList(hp)
		out[c.ID] = &c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: chunks by id: %w", err)
	}
	return out, nil
}

// idArray writes ids as a JSON array, for a statement that reads them with
// json_each: one statement, prepared once, whatever the number of ids.
func idArray(ids []int64) string {
	b := make([]byte, 0, 2+8*len(ids))
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

// chunksByIDQuery reads chunks by id from a JSON array of ids; each is a
// lookup of the table's rowid (TestChunksByID_Plan).
const chunksByIDQuery = `
	SELECT id, doc_id, ord, start, end, text, heading_path, type, code_lang, content_hash, tokens
	FROM chunks WHERE id IN (SELECT value FROM json_each(?))`
