package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"
)

// Read helpers for the tool contract: one document's passages, its links,
// the frontier's counts and the index's history.

// FindDocumentByID returns the document with the store's own id.
func (db *DB) FindDocumentByID(ctx context.Context, id int64, withChunks bool) (*Document, error) {
	row := db.read.QueryRowContext(ctx, `SELECT `+docColumns+` FROM documents WHERE id = ?`, id)
	d, err := scanDocument(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: find document %d: %w", id, err)
	}
	if withChunks {
		if d.Chunks, err = db.documentChunks(ctx, d.ID); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Link is an outgoing link of a stored page.
type Link struct {
	URL  string `json:"url"`
	Text string `json:"text"`
}

// PutLinks replaces the stored outgoing links of a document.
func (db *DB) PutLinks(ctx context.Context, docID int64, links []Link) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: put links: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM links WHERE doc_id = ?`, docID); err != nil {
		return fmt.Errorf("store: put links: %w", err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO links (doc_id, url, text) VALUES (?, ?, ?)
		ON CONFLICT(doc_id, url) DO UPDATE SET text = CASE WHEN length(excluded.text) > length(links.text) THEN excluded.text ELSE links.text END`)
	if err != nil {
		return fmt.Errorf("store: put links: %w", err)
	}
	defer ins.Close()
	for _, l := range links {
		if l.URL == "" {
			continue
		}
		if _, err := ins.ExecContext(ctx, docID, l.URL, l.Text); err != nil {
			return fmt.Errorf("store: put links: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: put links: %w", err)
	}
	return nil
}

// LinkCandidate is a link from a stored page to a page not in the index.
type LinkCandidate struct {
	FromDocID int64
	URL       string
	Text      string
}

// unindexedLinksQuery reads the links of a JSON array of documents
// (TestUnindexedLinks_Plan).
const unindexedLinksQuery = `
	SELECT l.doc_id, l.url, l.text FROM links l
	WHERE l.doc_id IN (SELECT value FROM json_each(?))
		AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.url = l.url)
	ORDER BY l.rowid`

// UnindexedLinks returns the links of the given documents whose target
// is not a stored document, in the order of docIDs, each document's in
// the order they were stored. One query for all of them, of fixed text so
// that it is prepared once: a search whose top pages link to nothing new
// runs this and nothing else of selective expansion, and a query per page,
// then compiling the query at every call, was most of its cost.
func (db *DB) UnindexedLinks(ctx context.Context, docIDs []int64) ([]LinkCandidate, error) {
	if len(docIDs) == 0 {
		return nil, nil
	}
	rows, err := db.readRows(ctx, unindexedLinksQuery, idArray(docIDs))
	if err != nil {
		return nil, fmt.Errorf("store: unindexed links: %w", err)
	}
	defer rows.Close()
	byDoc := map[int64][]LinkCandidate{}
	for rows.Next() {
		var c LinkCandidate
		if err := rows.Scan(&c.FromDocID, &c.URL, &c.Text); err != nil {
			return nil, fmt.Errorf("store: unindexed links: %w", err)
		}
		byDoc[c.FromDocID] = append(byDoc[c.FromDocID], c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: unindexed links: %w", err)
	}
	var out []LinkCandidate
	for _, id := range docIDs {
		out = append(out, byDoc[id]...)
	}
	return out, nil
}

// FrontierCounts are the crawl frontier's rows by status and the rows in
// error by class.
type FrontierCounts struct {
	ByStatus      map[string]int `json:"by_status"`
	ErrorsByClass map[string]int `json:"errors_by_class"`
}

// CountURLs counts the frontier.
func (db *DB) CountURLs(ctx context.Context) (FrontierCounts, error) {
	fc := FrontierCounts{ByStatus: map[string]int{}, ErrorsByClass: map[string]int{}}
	for _, q := range []struct {
		sql string
		m   map[string]int
	}{
		{`SELECT status, count(*) FROM urls GROUP BY status`, fc.ByStatus},
		{`SELECT error_class, count(*) FROM urls WHERE error_class != '' GROUP BY error_class`, fc.ErrorsByClass},
	} {
		rows, err := db.read.QueryContext(ctx, q.sql)
		if err != nil {
			return fc, fmt.Errorf("store: count urls: %w", err)
		}
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				rows.Close()
				return fc, fmt.Errorf("store: count urls: %w", err)
			}
			q.m[k] = n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fc, fmt.Errorf("store: count urls: %w", err)
		}
	}
	return fc, nil
}

// AgeBucket counts documents fetched within an age.
type AgeBucket struct {
	Label     string `json:"label"`
	Documents int    `json:"documents"`
}

// The counts by fetch age read the index documents_fetched alone
// (migration 010).
const (
	fetchedBetweenQuery = `SELECT count(*) FROM documents WHERE fetched_at >= ? AND fetched_at < ?`
	fetchedBeforeQuery  = `SELECT count(*) FROM documents WHERE fetched_at < ?`
)

// FetchAges groups documents by how long ago they were fetched.
func (db *DB) FetchAges(ctx context.Context) ([]AgeBucket, error) {
	now := db.Now()
	bounds := []struct {
		label string
		age   time.Duration
	}{{"< 1 h", time.Hour}, {"< 1 day", 24 * time.Hour}, {"< 1 week", 7 * 24 * time.Hour}, {"< 30 days", 30 * 24 * time.Hour}}
	out := make([]AgeBucket, 0, len(bounds)+1)
	prev := fmtTime(now.Add(time.Minute))
	for _, b := range bounds {
		cut := fmtTime(now.Add(-b.age))
		var n int
		if err := db.read.QueryRowContext(ctx, fetchedBetweenQuery, cut, prev).
			Scan(&n); err != nil {
			return nil, fmt.Errorf("store: fetch ages: %w", err)
		}
		out = append(out, AgeBucket{Label: b.label, Documents: n})
		prev = cut
	}
	var n int
	if err := db.read.QueryRowContext(ctx, fetchedBeforeQuery, prev).Scan(&n); err != nil {
		return nil, fmt.Errorf("store: fetch ages: %w", err)
	}
	return append(out, AgeBucket{Label: "older", Documents: n}), nil
}

// StatsSample is the index's size and freshness at one time.
type StatsSample struct {
	At         time.Time `json:"at"`
	Documents  int       `json:"documents"`
	Chunks     int       `json:"chunks"`
	Thin       int       `json:"thin"`
	LagSeconds int64     `json:"lag_seconds"`
}

// AddStatsSample records a sample and keeps the newest keep samples.
func (db *DB) AddStatsSample(ctx context.Context, s StatsSample, keep int) error {
	_, err := db.write.ExecContext(ctx, `
		INSERT INTO stats_samples (at, documents, chunks, thin, lag_seconds) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(at) DO UPDATE SET documents = excluded.documents, chunks = excluded.chunks,
			thin = excluded.thin, lag_seconds = excluded.lag_seconds`,
		fmtTime(s.At), s.Documents, s.Chunks, s.Thin, s.LagSeconds)
	if err != nil {
		return fmt.Errorf("store: add stats sample: %w", err)
	}
	if _, err := db.write.ExecContext(ctx, `
		DELETE FROM stats_samples WHERE at NOT IN (SELECT at FROM stats_samples ORDER BY at DESC LIMIT ?)`, keep); err != nil {
		return fmt.Errorf("store: add stats sample: %w", err)
	}
	return nil
}

// StatsSamples returns the newest samples, oldest first.
func (db *DB) StatsSamples(ctx context.Context, limit int) ([]StatsSample, error) {
	rows, err := db.read.QueryContext(ctx, `
		SELECT at, documents, chunks, thin, lag_seconds FROM
			(SELECT * FROM stats_samples ORDER BY at DESC LIMIT ?) ORDER BY at`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: stats samples: %w", err)
	}
	defer rows.Close()
	var out []StatsSample
	for rows.Next() {
		var s StatsSample
		var at string
		if err := rows.Scan(&at, &s.Documents, &s.Chunks, &s.Thin, &s.LagSeconds); err != nil {
			return nil, fmt.Errorf("store: stats samples: %w", err)
		}
		s.At = parseTime(at)
		out = append(out, s)
	}
	return out, rows.Err()
}

// Size is the store's size on disk in bytes, WAL included.
func (db *DB) Size() int64 {
	var n int64
	for _, p := range []string{db.Path, db.Path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}
