package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
)

// indexGen counts writes to chunks_fts in this process, so caches built
// from the index (vocabulary, statistics) know when they are stale.
var indexGen atomic.Int64

// ftsColumns are the analyzed texts of one chunk's row in chunks_fts.
type ftsColumns struct {
	title, keywords, body, exact string
}

// docIndex holds the per-document part of the index rows, analyzed once.
type docIndex struct {
	lang, title, exact, docKeywords string
}

func newDocIndex(title, lang string, categories, tags []string) docIndex {
	known := strings.Join(append(append([]string{}, categories...), tags...), " ")
	return docIndex{
		lang:        lang,
		title:       indexTerms(title, lang),
		exact:       exactTerms(title+" "+known, lang),
		docKeywords: known,
	}
}

func (di docIndex) columns(c *Chunk) ftsColumns {
	return ftsColumns{
		title:    di.title,
		keywords: indexTerms(di.docKeywords+" "+strings.Join(c.HeadingPath, " "), di.lang),
		body:     indexTerms(c.Text, di.lang),
		exact:    di.exact,
	}
}

const insertFTS = `INSERT INTO chunks_fts (rowid, title, keywords, body, exact) VALUES (?, ?, ?, ?, ?)`

// EnsureIndex rebuilds the full-text index from the stored chunks when it
// was built by another analyzer version (or not at all). Call it once at
// start-up, after Open; it is a no-op when the index is current.
func (db *DB) EnsureIndex(ctx context.Context) error {
	v, err := db.GetMeta(ctx, "analyzer_version")
	if err != nil {
		return err
	}
	if v == analyzerVersion {
		return nil
	}
	var has int
	if err := db.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM chunks)`).Scan(&has); err != nil {
		return fmt.Errorf("store: ensure index: %w", err)
	}
	if has == 0 {
		// Nothing indexed yet: everything PutDocument adds from now on is
		// analyzed by this version.
		return db.SetMeta(ctx, "analyzer_version", analyzerVersion)
	}
	return db.RebuildIndex(ctx)
}

// RebuildIndex re-analyzes every chunk into chunks_fts in one transaction.
func (db *DB) RebuildIndex(ctx context.Context) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: rebuild index: %w", err)
	}
	defer tx.Rollback()
	if err := rebuildIndex(ctx, tx); err != nil {
		return fmt.Errorf("store: rebuild index: %w", err)
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO meta(key, value) VALUES('analyzer_version', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
		analyzerVersion); err != nil {
		return fmt.Errorf("store: rebuild index: %w", err)
	}
	if err := db.commitIndexed(ctx, tx, &indexTx{rebuilt: true}); err != nil {
		return fmt.Errorf("store: rebuild index: %w", err)
	}
	indexGen.Add(1)
	return nil
}

func rebuildIndex(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO chunks_fts(chunks_fts) VALUES('delete-all')`); err != nil {
		return err
	}
	ins, err := tx.PrepareContext(ctx, insertFTS)
	if err != nil {
		return err
	}
	defer ins.Close()
	// Read everything first: the same connection cannot insert while it
	// steps through a query on the same table set.
	var pending []indexRow
	if err := scanIndexRows(ctx, tx, func(r indexRow) error {
		pending = append(pending, r)
		return nil
	}); err != nil {
		return err
	}
	analyzeRows(pending)
	for _, r := range pending {
		if _, err := ins.ExecContext(ctx, r.chunkID, r.cols.title, r.cols.keywords, r.cols.body, r.cols.exact); err != nil {
			return err
		}
	}
	return nil
}

// indexRow is one chunk's full-text row with its document's fields.
type indexRow struct {
	docID, chunkID                   int64
	url, title, lang, postType       string
	cats, tags, published, modified  string
	thin                             bool
	typ, codeLang, text, headingPath string
	cols                             ftsColumns // filled by analyzeRows
}

// analyzeRows fills in the rows' full-text columns, analyzing a
// document's own fields once for its run of chunks.
func analyzeRows(rs []indexRow) {
	var (
		lastDoc int64 = -1
		di      docIndex
	)
	for i := range rs {
		r := &rs[i]
		if r.docID != lastDoc {
			di = newDocIndex(r.title, r.lang, parseList(r.cats), parseList(r.tags))
			lastDoc = r.docID
		}
		c := Chunk{Text: r.text, HeadingPath: parseList(r.headingPath)}
		r.cols = di.columns(&c)
	}
}

// scanIndexRows reads every stored chunk with the document fields its
// full-text row and search's filters need, a document's chunks together.
func scanIndexRows(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, fn func(indexRow) error) error {
	rows, err := q.QueryContext(ctx, `
		SELECT d.id, d.title, d.lang, d.categories, d.tags, c.id, c.text, c.heading_path,
			d.url, d.post_type, d.published, d.modified, d.thin, c.type, c.code_lang
		FROM chunks c JOIN documents d ON d.id = c.doc_id
		ORDER BY d.id, c.ord`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r indexRow
		if err := rows.Scan(&r.docID, &r.title, &r.lang, &r.cats, &r.tags, &r.chunkID, &r.text, &r.headingPath,
			&r.url, &r.postType, &r.published, &r.modified, &r.thin, &r.typ, &r.codeLang); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}
