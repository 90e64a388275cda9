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
	if err := tx.Commit(); err != nil {
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
	rows, err := tx.QueryContext(ctx, `
		SELECT d.id, d.title, d.lang, d.categories, d.tags, c.id, c.text, c.heading_path
		FROM chunks c JOIN documents d ON d.id = c.doc_id
		ORDER BY d.id, c.ord`)
	if err != nil {
		return err
	}
	type row struct {
		id   int64
		cols ftsColumns
	}
	// Read everything first: the same connection cannot insert while it
	// steps through a query on the same table set.
	var (
		pending []row
		lastDoc int64 = -1
		di      docIndex
	)
	for rows.Next() {
		var (
			docID, chunkID                    int64
			title, lang, cats, tags, text, hp string
		)
		if err := rows.Scan(&docID, &title, &lang, &cats, &tags, &chunkID, &text, &hp); err != nil {
			rows.Close()
			return err
		}
		if docID != lastDoc {
			di = newDocIndex(title, lang, parseList(cats), parseList(tags))
			lastDoc = docID
		}
		c := Chunk{Text: text, HeadingPath: parseList(hp)}
		pending = append(pending, row{chunkID, di.columns(&c)})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range pending {
		if _, err := ins.ExecContext(ctx, r.id, r.cols.title, r.cols.keywords, r.cols.body, r.cols.exact); err != nil {
			return err
		}
	}
	return nil
}
