package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// PageRef is a stored page as a listing shows it: no body, no chunks.
type PageRef struct {
	ID          int64
	URL         string
	PostType    string
	Title       string
	Published   time.Time
	Modified    time.Time
	Description string
}

// listPagesQuery pages through the documents in URL order by keyset: each
// page starts after the last URL of the one before, through the UNIQUE
// index on url, so the millionth row costs what the first does (OFFSET
// would step over every row before it). It reads only the columns before
// body: a column after it lies beyond the body's overflow pages, and
// reaching it read the whole page's text. TestListPages_Plan holds it to
// the index, without a sort.
const listPagesQuery = `SELECT id, url, post_type, title, published, modified, description
	FROM documents WHERE url > ? ORDER BY url LIMIT ?`

// ListPages returns up to limit pages whose URL sorts after after ("" for
// the first), in URL order. A short answer is the last.
func (db *DB) ListPages(ctx context.Context, after string, limit int) ([]PageRef, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := db.readRows(ctx, listPagesQuery, after, limit)
	if err != nil {
		return nil, fmt.Errorf("store: list pages: %w", err)
	}
	defer rows.Close()
	ps := make([]PageRef, 0, limit)
	for rows.Next() {
		var p PageRef
		var pub, mod string
		if err := rows.Scan(&p.ID, &p.URL, &p.PostType, &p.Title, &pub, &mod, &p.Description); err != nil {
			return nil, fmt.Errorf("store: list pages: %w", err)
		}
		p.Published, p.Modified = parseTime(pub), parseTime(mod)
		ps = append(ps, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list pages: %w", err)
	}
	return ps, nil
}

// Page is one stored page's Markdown with what a reader cites it by.
type Page struct {
	PageRef
	// Chars is the length of the Markdown in Unicode code points, the
	// unit of chunk offsets.
	Chars int
	// Body is the Markdown; empty when Chars is over the cap ReadPage was
	// given.
	Body string
}

// readPageQuery reads a page's body only when it is within the cap: a
// page too large to send is measured, not copied out of the store, and
// the caller learns both facts from this one query. SQLite's length() of
// TEXT counts characters, as chunk offsets do.
const readPageQuery = `SELECT id, url, post_type, title, published, modified, description,
	length(body), CASE WHEN length(body) <= ? THEN body ELSE '' END
	FROM documents WHERE url = ?`

// ReadPage returns the page stored at url, with its Markdown when it is at
// most maxChars long. A page that is not stored (never public, made
// private, gone) is ErrNotFound.
func (db *DB) ReadPage(ctx context.Context, url string, maxChars int) (*Page, error) {
	var p Page
	var pub, mod string
	err := db.readRow(ctx, readPageQuery, maxChars, url).Scan(&p.ID, &p.URL, &p.PostType, &p.Title, &pub, &mod,
		&p.Description, &p.Chars, &p.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: read page %s: %w", url, err)
	}
	p.Published, p.Modified = parseTime(pub), parseTime(mod)
	return &p, nil
}
