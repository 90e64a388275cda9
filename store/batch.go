package store

import (
	"context"
	"errors"
	"fmt"
)

// PutDocuments stores many documents in one transaction: a bulk load
// (evaluation corpora, a first crawl) without a commit per page. Each
// document replaces any stored one with the same URL, chunks included.
// Unlike PutDocument it does not skip unchanged documents.
func (db *DB) PutDocuments(ctx context.Context, docs []*Document) error {
	now := db.Now()
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: put documents: %w", err)
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, `
		INSERT INTO documents (url, post_id, post_type, title, lang, published, modified,
			description, author, categories, tags, body, text,
			thin, thin_reason, source, word_count, content_hash,
			fetched_at, indexed_at, sources, product, translations)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("store: put documents: %w", err)
	}
	defer ins.Close()
	var it indexTx
	for _, d := range docs {
		if d.URL == "" {
			return errors.New("store: put documents: empty URL")
		}
		var old int64
		if err := tx.QueryRowContext(ctx, `SELECT id FROM documents WHERE url = ?`, d.URL).Scan(&old); err == nil {
			if err := deleteChunks(ctx, tx, old, &it); err != nil {
				return fmt.Errorf("store: put document %s: %w", d.URL, err)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM documents WHERE id = ?`, old); err != nil {
				return fmt.Errorf("store: put document %s: %w", d.URL, err)
			}
		}
		res, err := ins.ExecContext(ctx,
			d.URL, d.PostID, d.PostType, d.Title, d.Lang, fmtTime(d.Published), fmtTime(d.Modified),
			d.Description, d.Author, jsonList(d.Categories), jsonList(d.Tags), d.Body, d.Text,
			boolInt(d.Thin), d.ThinReason, d.Source, d.WordCount, d.ContentHash,
			fmtTime(d.FetchedAt), fmtTime(now), jsonList(d.Sources), string(d.Product), jsonTranslations(d.Translations))
		if err != nil {
			return fmt.Errorf("store: put document %s: %w", d.URL, err)
		}
		if d.ID, err = res.LastInsertId(); err != nil {
			return fmt.Errorf("store: put document %s: %w", d.URL, err)
		}
		d.IndexedAt = now
		if err := insertChunks(ctx, tx, d, &it); err != nil {
			return fmt.Errorf("store: put document %s: %w", d.URL, err)
		}
	}
	if err := db.commitIndexed(ctx, tx, &it); err != nil {
		return fmt.Errorf("store: put documents: %w", err)
	}
	return nil
}
