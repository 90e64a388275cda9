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
	// BodyHash is the URLResult.BodyHash of the last fetch that indexed
	// the page here.
	BodyHash   string    `json:"-"`
	Status     string    `json:"status"` // pending, indexed, unchanged, skipped, gone, error
	HTTPStatus int       `json:"http_status,omitempty"`
	Error      string    `json:"error,omitempty"`
	ErrorClass string    `json:"error_class,omitempty"`
	Attempts   int       `json:"attempts"`
	NextTry    time.Time `json:"next_try"`
	FetchedAt  time.Time `json:"fetched_at"`
	SeenRun    int64     `json:"seen_run"`
	// RunID is the pass whose frontier the row is in; Queued is true while
	// it waits there, in Priority order. Depth counts link hops from a
	// listing page. DoneRun is the last pass that fetched it.
	RunID    int64 `json:"run_id,omitempty"`
	Queued   bool  `json:"queued,omitempty"`
	Priority int   `json:"-"`
	Depth    int   `json:"-"`
	DoneRun  int64 `json:"-"`
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
	row := db.readRow(ctx, `SELECT `+urlCols+` FROM urls WHERE url = ?`, u)
	s, err := scanURL(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: find url %s: %w", u, err)
	}
	return s, nil
}

const urlCols = `url, sources, post_id, lastmod, etag, last_modified, body_hash, status, http_status, error, error_class,
	attempts, next_try, fetched_at, seen_run, run_id, queued, priority, depth, done_run`

func scanURL(sc interface{ Scan(...any) error }) (*URLState, error) {
	var (
		s                              URLState
		srcs, lastmod, next, fetchedAt string
	)
	err := sc.Scan(&s.URL, &srcs, &s.PostID, &lastmod, &s.ETag, &s.LastModified, &s.BodyHash, &s.Status, &s.HTTPStatus,
		&s.Error, &s.ErrorClass, &s.Attempts, &next, &fetchedAt, &s.SeenRun, &s.RunID, &s.Queued, &s.Priority, &s.Depth, &s.DoneRun)
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
	// BodyHash, when set, says the page at the URL was indexed from this
	// body; empty forgets it.
	BodyHash   string
	Error      string
	ErrorClass string
	// Retry, when not zero, is when to try again; attempts count up.
	Retry time.Time
	// Run, when set, takes the row out of that pass's frontier in the same
	// write, so a restart never fetches it twice.
	Run int64
}

// RecordFetch stores the outcome of fetching u.
func (db *DB) RecordFetch(ctx context.Context, u string, r URLResult) error {
	attempts := `0`
	if r.ErrorClass != "" {
		attempts = `attempts + 1`
	}
	_, err := db.writeExec(ctx, `
		INSERT INTO urls (url, status, http_status, post_id, etag, last_modified, body_hash, error, error_class, next_try, fetched_at, discovered_at, attempts, done_run)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(url) DO UPDATE SET status = excluded.status, http_status = excluded.http_status,
			post_id = CASE WHEN excluded.post_id > 0 THEN excluded.post_id ELSE urls.post_id END,
			etag = excluded.etag, last_modified = excluded.last_modified, body_hash = excluded.body_hash, error = excluded.error,
			error_class = excluded.error_class, next_try = excluded.next_try, fetched_at = excluded.fetched_at,
			queued = CASE WHEN excluded.done_run > 0 AND urls.run_id <= excluded.done_run THEN 0 ELSE urls.queued END,
			done_run = CASE WHEN excluded.done_run > 0 THEN excluded.done_run ELSE urls.done_run END,
			attempts = `+attempts,
		u, r.Status, r.HTTPStatus, r.PostID, r.ETag, r.LastModified, r.BodyHash, r.Error, r.ErrorClass, fmtTime(r.Retry),
		fmtTime(db.Now()), fmtTime(db.Now()), boolInt(r.ErrorClass != ""), r.Run)
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

// InterruptedRun is the error recorded on a pass that never finished.
const InterruptedRun = "interrupted: askwpd stopped before the pass finished"

// CloseInterruptedRuns gives every pass but keep that has no finish record
// one, with InterruptedRun as its error, and returns how many it closed. A
// pass killed during discovery, when nothing is queued to resume, or
// between its last page and its run record, is never resumed; without
// this, status would list it as started and never ended. A pass another
// process is running is closed too, and its own FinishRun later puts its
// real counts and error back.
func (db *DB) CloseInterruptedRuns(ctx context.Context, keep int64) (int64, error) {
	res, err := db.write.ExecContext(ctx, `UPDATE crawl_runs SET finished_at = ?, error = ? WHERE finished_at = '' AND id != ?`,
		fmtTime(db.Now()), InterruptedRun, keep)
	if err != nil {
		return 0, fmt.Errorf("store: close interrupted runs: %w", err)
	}
	return res.RowsAffected()
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

// FrontierItem is a URL put in a pass's frontier.
type FrontierItem struct {
	URL      string
	Sources  []string
	PostID   int64
	LastMod  time.Time
	Priority int
	Depth    int
}

// Enqueue puts items in run's frontier, in one transaction. A URL already
// fetched in this run stays done; sources merge with what earlier passes
// found.
func (db *DB) Enqueue(ctx context.Context, run int64, items []FrontierItem) error {
	if len(items) == 0 {
		return nil
	}
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: enqueue: %w", err)
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, `
		INSERT INTO urls (url, sources, post_id, lastmod, discovered_at, seen_run, run_id, queued, priority, depth)
		VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
		ON CONFLICT(url) DO UPDATE SET
			sources = (SELECT json_group_array(DISTINCT value) FROM (
				SELECT value FROM json_each(urls.sources) UNION SELECT value FROM json_each(excluded.sources))),
			post_id = CASE WHEN excluded.post_id > 0 THEN excluded.post_id ELSE urls.post_id END,
			lastmod = CASE WHEN excluded.lastmod != '' THEN excluded.lastmod ELSE urls.lastmod END,
			seen_run = excluded.seen_run,
			queued = CASE WHEN urls.done_run = excluded.run_id THEN 0 ELSE 1 END,
			priority = CASE WHEN urls.run_id = excluded.run_id AND urls.queued = 1 THEN min(urls.priority, excluded.priority) ELSE excluded.priority END,
			depth = CASE WHEN urls.run_id = excluded.run_id AND urls.queued = 1 THEN min(urls.depth, excluded.depth) ELSE excluded.depth END,
			run_id = excluded.run_id`)
	if err != nil {
		return fmt.Errorf("store: enqueue: %w", err)
	}
	defer st.Close()
	now := fmtTime(db.Now())
	for _, it := range items {
		if _, err := st.ExecContext(ctx, it.URL, jsonList(it.Sources), it.PostID, fmtTime(it.LastMod), now, run, run,
			it.Priority, it.Depth); err != nil {
			return fmt.Errorf("store: enqueue %s: %w", it.URL, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: enqueue: %w", err)
	}
	return nil
}

// Frontier returns run's queued rows in the order they are to be fetched.
func (db *DB) Frontier(ctx context.Context, run int64) ([]*URLState, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT `+urlCols+` FROM urls
		WHERE queued = 1 AND run_id = ? ORDER BY priority, rowid`, run)
	if err != nil {
		return nil, fmt.Errorf("store: frontier: %w", err)
	}
	defer rows.Close()
	var out []*URLState
	for rows.Next() {
		s, err := scanURL(rows)
		if err != nil {
			return nil, fmt.Errorf("store: frontier: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Dequeue takes u out of run's frontier without a fetch (it was covered
// another way).
func (db *DB) Dequeue(ctx context.Context, run int64, u string) error {
	if _, err := db.write.ExecContext(ctx, `UPDATE urls SET queued = 0, done_run = ? WHERE url = ? AND run_id = ?`, run, u, run); err != nil {
		return fmt.Errorf("store: dequeue %s: %w", u, err)
	}
	return nil
}

// DropFrontier empties every frontier but keep's: a new pass replaces an
// abandoned one.
func (db *DB) DropFrontier(ctx context.Context, keep int64) error {
	if _, err := db.write.ExecContext(ctx, `UPDATE urls SET queued = 0 WHERE queued = 1 AND run_id != ?`, keep); err != nil {
		return fmt.Errorf("store: drop frontier: %w", err)
	}
	return nil
}

// FrontierPending counts queued rows of every pass.
func (db *DB) FrontierPending(ctx context.Context) (int, error) {
	var n int
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM urls WHERE queued = 1`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: frontier pending: %w", err)
	}
	return n, nil
}

// RunProgress is what a pass already did, read back when it resumes.
type RunProgress struct {
	Fetched int
	// Posts are the post IDs the pass has fetched a page for.
	Posts map[int64]bool
	// URLs are the URLs it fetched.
	URLs map[string]bool
}

// Progress reads back run's completed rows.
func (db *DB) Progress(ctx context.Context, run int64) (*RunProgress, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT url, post_id, status FROM urls WHERE done_run = ?`, run)
	if err != nil {
		return nil, fmt.Errorf("store: run progress: %w", err)
	}
	defer rows.Close()
	p := &RunProgress{Posts: map[int64]bool{}, URLs: map[string]bool{}}
	for rows.Next() {
		var (
			u, status string
			id        int64
		)
		if err := rows.Scan(&u, &id, &status); err != nil {
			return nil, fmt.Errorf("store: run progress: %w", err)
		}
		p.Fetched++
		p.URLs[u] = true
		if id > 0 && (status == "indexed" || status == "unchanged") {
			p.Posts[id] = true
		}
	}
	return p, rows.Err()
}

// RunOptions are how a pass was asked for.
type RunOptions struct {
	Full, Incremental bool
}

// StartRunWith records the start of a pass with its options.
func (db *DB) StartRunWith(ctx context.Context, kind string, o RunOptions) (int64, error) {
	res, err := db.write.ExecContext(ctx, `INSERT INTO crawl_runs (kind, started_at, opt_full, opt_incremental) VALUES (?, ?, ?, ?)`,
		kind, fmtTime(db.Now()), boolInt(o.Full), boolInt(o.Incremental))
	if err != nil {
		return 0, fmt.Errorf("store: start run: %w", err)
	}
	return res.LastInsertId()
}

// ResumableRun returns the latest pass that still has a frontier, with
// its options and whether its discovery was complete, or ErrNotFound.
func (db *DB) ResumableRun(ctx context.Context) (*Run, RunOptions, bool, error) {
	var (
		r       Run
		o       RunOptions
		ok      bool
		started string
	)
	err := db.read.QueryRowContext(ctx, `
		SELECT r.id, r.kind, r.started_at, r.discovered, r.opt_full, r.opt_incremental, r.discovery_ok
		FROM crawl_runs r WHERE r.id = (SELECT max(run_id) FROM urls WHERE queued = 1)`).
		Scan(&r.ID, &r.Kind, &started, &r.Discovered, &o.Full, &o.Incremental, &ok)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, o, false, ErrNotFound
	}
	if err != nil {
		return nil, o, false, fmt.Errorf("store: resumable run: %w", err)
	}
	r.StartedAt = parseTime(started)
	return &r, o, ok, nil
}

// MarkResumed counts a restart of run.
func (db *DB) MarkResumed(ctx context.Context, run int64) error {
	if _, err := db.write.ExecContext(ctx, `UPDATE crawl_runs SET resumed = resumed + 1, finished_at = '' WHERE id = ?`, run); err != nil {
		return fmt.Errorf("store: mark resumed: %w", err)
	}
	return nil
}

// SetDiscovery records what a pass's discovery found.
func (db *DB) SetDiscovery(ctx context.Context, run int64, discovered int, ok bool) error {
	if _, err := db.write.ExecContext(ctx, `UPDATE crawl_runs SET discovered = ?, discovery_ok = ? WHERE id = ?`,
		discovered, boolInt(ok), run); err != nil {
		return fmt.Errorf("store: set discovery: %w", err)
	}
	return nil
}

// LastRunStart is when the latest finished pass of one of kinds started,
// or zero.
func (db *DB) LastRunStart(ctx context.Context, kinds ...string) (time.Time, error) {
	if len(kinds) == 0 {
		return time.Time{}, nil
	}
	args := make([]any, len(kinds))
	for i, k := range kinds {
		args[i] = k
	}
	var s sql.NullString
	err := db.read.QueryRowContext(ctx, `SELECT max(started_at) FROM crawl_runs
		WHERE finished_at != '' AND error = '' AND kind IN (`+qmarks(len(kinds))+`)`, args...).Scan(&s)
	if err != nil {
		return time.Time{}, fmt.Errorf("store: last run: %w", err)
	}
	return parseTime(s.String), nil
}

// DueURLs returns rows whose retry time has come.
func (db *DB) DueURLs(ctx context.Context, now time.Time, limit int) ([]*URLState, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT `+urlCols+` FROM urls
		WHERE next_try != '' AND next_try <= ? AND queued = 0 ORDER BY next_try LIMIT ?`, fmtTime(now), limit)
	if err != nil {
		return nil, fmt.Errorf("store: due urls: %w", err)
	}
	defer rows.Close()
	var out []*URLState
	for rows.Next() {
		s, err := scanURL(rows)
		if err != nil {
			return nil, fmt.Errorf("store: due urls: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// DocumentByHash returns another stored page with the same content hash:
// the same content under two URLs is indexed once.
func (db *DB) DocumentByHash(ctx context.Context, hash, exceptURL string) (url string, postID int64, err error) {
	err = db.readRow(ctx, `SELECT url, post_id FROM documents WHERE content_hash = ? AND url != ? LIMIT 1`,
		hash, exceptURL).Scan(&url, &postID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, ErrNotFound
	}
	if err != nil {
		return "", 0, fmt.Errorf("store: document by hash: %w", err)
	}
	return url, postID, nil
}

// PostDocuments returns the URLs of stored pages of a post.
func (db *DB) PostDocuments(ctx context.Context, postID int64) ([]string, error) {
	rows, err := db.readRows(ctx, `SELECT url FROM documents WHERE `+byPost, postID)
	if err != nil {
		return nil, fmt.Errorf("store: post documents: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return nil, fmt.Errorf("store: post documents: %w", err)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}
