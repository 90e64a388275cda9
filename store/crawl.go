package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// URLState is one row of the crawl frontier.
type URLState struct {
	URL          string    `json:"url"`
	Sources      []string  `json:"sources"`
	PostID       int64     `json:"post_id,omitempty"`
	LastMod      time.Time `json:"lastmod"`
	ETag         string    `json:"-"`
	LastModified string    `json:"-"`
	Status       string    `json:"status"` // pending, indexed, unchanged, skipped, gone, error
	HTTPStatus   int       `json:"http_status,omitempty"`
	Error        string    `json:"error,omitempty"`
	ErrorClass   string    `json:"error_class,omitempty"`
	Attempts     int       `json:"attempts"`
	NextTry      time.Time `json:"next_try"`
	FetchedAt    time.Time `json:"fetched_at"`
	SeenRun      int64     `json:"seen_run"`
}

// DiscoverURL records that discovery found u in run, merging sources.
func (db *DB) DiscoverURL(ctx context.Context, run int64, u string, sources []string, postID int64, lastmod time.Time) error {
	_, err := db.write.ExecContext(ctx, `
		INSERT INTO urls (url, sources, post_id, lastmod, discovered_at, seen_run)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT(url) DO UPDATE SET
			sources = (SELECT json_group_array(DISTINCT value) FROM (
				SELECT value FROM json_each(urls.sources) UNION SELECT value FROM json_each(excluded.sources))),
			post_id = CASE WHEN excluded.post_id > 0 THEN excluded.post_id ELSE urls.post_id END,
			lastmod = CASE WHEN excluded.lastmod != '' THEN excluded.lastmod ELSE urls.lastmod END,
			seen_run = excluded.seen_run`,
		u, jsonList(sources), postID, fmtTime(lastmod), fmtTime(db.Now()), run)
	if err != nil {
		return fmt.Errorf("store: discover url %s: %w", u, err)
	}
	return nil
}

// FindURL returns the frontier row for u.
func (db *DB) FindURL(ctx context.Context, u string) (*URLState, error) {
	row := db.read.QueryRowContext(ctx, `SELECT `+urlCols+` FROM urls WHERE url = ?`, u)
	s, err := scanURL(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: find url %s: %w", u, err)
	}
	return s, nil
}

const urlCols = `url, sources, post_id, lastmod, etag, last_modified, status, http_status, error, error_class,
	attempts, next_try, fetched_at, seen_run`

func scanURL(sc interface{ Scan(...any) error }) (*URLState, error) {
	var (
		s                              URLState
		srcs, lastmod, next, fetchedAt string
	)
	err := sc.Scan(&s.URL, &srcs, &s.PostID, &lastmod, &s.ETag, &s.LastModified, &s.Status, &s.HTTPStatus,
		&s.Error, &s.ErrorClass, &s.Attempts, &next, &fetchedAt, &s.SeenRun)
	if err != nil {
		return nil, err
	}
	s.Sources, s.LastMod, s.NextTry, s.FetchedAt = parseList(srcs), parseTime(lastmod), parseTime(next), parseTime(fetchedAt)
	return &s, nil
}

// URLResult is the outcome of fetching one URL.
type URLResult struct {
	Status       string
	HTTPStatus   int
	PostID       int64
	ETag         string
	LastModified string
	Error        string
	ErrorClass   string
	// Retry, when not zero, is when to try again; attempts count up.
	Retry time.Time
}

// RecordFetch stores the outcome of fetching u.
func (db *DB) RecordFetch(ctx context.Context, u string, r URLResult) error {
	attempts := `0`
	if r.ErrorClass != "" {
		attempts = `attempts + 1`
	}
	_, err := db.write.ExecContext(ctx, `
		INSERT INTO urls (url, status, http_status, post_id, etag, last_modified, error, error_class, next_try, fetched_at, discovered_at, attempts)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(url) DO UPDATE SET status = excluded.status, http_status = excluded.http_status,
			post_id = CASE WHEN excluded.post_id > 0 THEN excluded.post_id ELSE urls.post_id END,
			etag = excluded.etag, last_modified = excluded.last_modified, error = excluded.error,
			error_class = excluded.error_class, next_try = excluded.next_try, fetched_at = excluded.fetched_at,
			attempts = `+attempts,
		u, r.Status, r.HTTPStatus, r.PostID, r.ETag, r.LastModified, r.Error, r.ErrorClass, fmtTime(r.Retry),
		fmtTime(db.Now()), fmtTime(db.Now()), boolInt(r.ErrorClass != ""))
	if err != nil {
		return fmt.Errorf("store: record fetch %s: %w", u, err)
	}
	return nil
}

// URLFilter selects frontier rows.
type URLFilter struct {
	Status     string
	NotSeenRun int64 // rows whose seen_run is older than this run
	WithErrors bool
	Limit      int
}

// ListURLs returns frontier rows, most recently fetched first.
func (db *DB) ListURLs(ctx context.Context, f URLFilter) ([]*URLState, error) {
	q := `SELECT ` + urlCols + ` FROM urls WHERE 1 = 1`
	var args []any
	if f.Status != "" {
		q += ` AND status = ?`
		args = append(args, f.Status)
	}
	if f.NotSeenRun > 0 {
		q += ` AND seen_run < ?`
		args = append(args, f.NotSeenRun)
	}
	if f.WithErrors {
		q += ` AND error_class != ''`
	}
	q += ` ORDER BY fetched_at DESC, url`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	rows, err := db.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list urls: %w", err)
	}
	defer rows.Close()
	var out []*URLState
	for rows.Next() {
		s, err := scanURL(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list urls: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// DeleteURL forgets a frontier row.
func (db *DB) DeleteURL(ctx context.Context, u string) error {
	if _, err := db.write.ExecContext(ctx, `DELETE FROM urls WHERE url = ?`, u); err != nil {
		return fmt.Errorf("store: delete url %s: %w", u, err)
	}
	return nil
}

// Run is one crawl or index pass.
type Run struct {
	ID         int64     `json:"id"`
	Kind       string    `json:"kind"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Discovered int       `json:"discovered"`
	Fetched    int       `json:"fetched"`
	Indexed    int       `json:"indexed"`
	Unchanged  int       `json:"unchanged"`
	Removed    int       `json:"removed"`
	Errors     int       `json:"errors"`
	Error      string    `json:"error,omitempty"`
}

// StartRun records the start of a pass and returns its id.
func (db *DB) StartRun(ctx context.Context, kind string) (int64, error) {
	res, err := db.write.ExecContext(ctx, `INSERT INTO crawl_runs (kind, started_at) VALUES (?, ?)`, kind, fmtTime(db.Now()))
	if err != nil {
		return 0, fmt.Errorf("store: start run: %w", err)
	}
	return res.LastInsertId()
}

// FinishRun records a pass's counts.
func (db *DB) FinishRun(ctx context.Context, r *Run) error {
	_, err := db.write.ExecContext(ctx, `
		UPDATE crawl_runs SET finished_at = ?, discovered = ?, fetched = ?, indexed = ?, unchanged = ?,
			removed = ?, errors = ?, error = ? WHERE id = ?`,
		fmtTime(db.Now()), r.Discovered, r.Fetched, r.Indexed, r.Unchanged, r.Removed, r.Errors, r.Error, r.ID)
	if err != nil {
		return fmt.Errorf("store: finish run: %w", err)
	}
	return nil
}

// Runs returns the latest passes, newest first.
func (db *DB) Runs(ctx context.Context, limit int) ([]Run, error) {
	rows, err := db.read.QueryContext(ctx, `
		SELECT id, kind, started_at, finished_at, discovered, fetched, indexed, unchanged, removed, errors, error
		FROM crawl_runs ORDER BY id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var s, f string
		if err := rows.Scan(&r.ID, &r.Kind, &s, &f, &r.Discovered, &r.Fetched, &r.Indexed, &r.Unchanged,
			&r.Removed, &r.Errors, &r.Error); err != nil {
			return nil, fmt.Errorf("store: runs: %w", err)
		}
		r.StartedAt, r.FinishedAt = parseTime(s), parseTime(f)
		out = append(out, r)
	}
	return out, rows.Err()
}
