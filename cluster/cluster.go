// Package cluster runs several askwpd daemons, one per web head, against
// the site's one MariaDB (or Galera cluster): the shim's events, the
// right to crawl and the extracted documents all pass through tables in
// the WordPress database, so one node fetches pages and every node serves
// the same index. It imports store and crawl; only daemon imports it. It
// speaks database/sql and never names the MySQL driver, which stays in
// wp (wp.OpenWriter opens the pool it is given).
package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// Cluster is the SQL of one cluster's tables.
type Cluster struct {
	db *sql.DB
	t  Tables
	// queries counts the statements this process sent, for the benchmark
	// and /metrics: the load cluster mode adds to the site's database.
	queries atomic.Int64
	// galera is whether the database is a Galera node (galera.go), as
	// Open read it, and galeraNode its name.
	galera     atomic.Bool
	galeraRead bool
	galeraNode string
}

// Open creates the cluster's tables in the WordPress database when they
// are missing. db must allow writes to them, on a primary: a read-only
// server (a replica) is refused, since what one node writes there would
// never reach the others.
func Open(ctx context.Context, db *sql.DB, prefix, name string) (*Cluster, error) {
	t, err := TablesFor(prefix, name)
	if err != nil {
		return nil, err
	}
	c := &Cluster{db: db, t: t}
	g, err := c.Galera(ctx)
	if err != nil {
		return nil, err
	}
	if !g.Usable() {
		return nil, fmt.Errorf("cluster: the database is not usable: %s", g)
	}
	var ro bool
	if err := db.QueryRowContext(ctx, "SELECT @@read_only").Scan(&ro); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if ro {
		return nil, errors.New("cluster: the database is read-only (a replica?): cluster mode writes its tables, so every node's db_dsn (or DB_HOST) must be the primary")
	}
	if err := c.create(ctx); err != nil {
		if grantMissing(err) {
			return nil, fmt.Errorf("cluster: %w (the database user needs CREATE, INSERT, UPDATE and DELETE on %s*)", err, prefix)
		}
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return c, nil
}

// Tables names the cluster's tables.
func (c *Cluster) Tables() Tables { return c.t }

// Queries returns how many statements this process has sent.
func (c *Cluster) Queries() int64 { return c.queries.Load() }

// ErrLeaseLost is returned by Publish when this node no longer holds the
// lease: another node leads, and what this one indexed is not published.
var ErrLeaseLost = errors.New("cluster: the lease is held by another node")

// TryLead takes the lease for holder, or renews it when holder has it,
// for ttl by the database's clock. It reports whether holder leads.
//
// One conditional UPDATE: on Galera it changes the row on at most one
// node (certification), where a read followed by a write would let two
// nodes both see the lease free. A lost race is run again, and then
// finds the row the winner wrote.
func (c *Cluster) TryLead(ctx context.Context, holder, host string, ttl time.Duration) (bool, error) {
	var n int64
	err := retryRace(ctx, func() error {
		c.queries.Add(1)
		// acquired_at is assigned before holder: MariaDB evaluates SET
		// left to right, and the IF must see the old holder.
		res, err := c.db.ExecContext(ctx, c.causalWrite("UPDATE `"+c.t.Lease+"`"+`
			SET acquired_at = IF(holder = ?, acquired_at, NOW(6)),
				holder = ?, host = ?, expires_at = NOW(6) + INTERVAL ? MICROSECOND
			WHERE name = ? AND (holder = ? OR holder = '' OR expires_at < NOW(6))`),
			holder, holder, host, ttl.Microseconds(), leaseName, holder)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("cluster: lease: %w", err)
	}
	return n == 1, nil
}

// Release gives the lease up, so another node takes it at once rather
// than when it expires.
func (c *Cluster) Release(ctx context.Context, holder string) error {
	err := retryRace(ctx, func() error {
		c.queries.Add(1)
		_, err := c.db.ExecContext(ctx, "UPDATE `"+c.t.Lease+"` SET holder = '', expires_at = '1970-01-02' WHERE name = ? AND holder = ?",
			leaseName, holder)
		return err
	})
	if err != nil {
		return fmt.Errorf("cluster: release lease: %w", err)
	}
	return nil
}

// Leader is the lease row as a status page shows it.
type Leader struct {
	Holder, Host string
	// Valid is whether the lease has not expired, by the database's clock.
	Valid bool
	// Expires is when it does, and Acquired when its holder took it, by
	// the database's clock.
	Expires, Acquired time.Time
	// Seq is the newest changelog id.
	Seq   int64
	Epoch string
}

// Leader reads the lease row, as the cluster has it.
func (c *Cluster) Leader(ctx context.Context) (Leader, error) {
	c.queries.Add(1)
	var l Leader
	err := c.db.QueryRowContext(ctx, c.causal("SELECT holder, host, expires_at > NOW(6), expires_at, acquired_at, seq, epoch FROM `"+c.t.Lease+"` WHERE name = ?"), leaseName).
		Scan(&l.Holder, &l.Host, &l.Valid, &l.Expires, &l.Acquired, &l.Seq, &l.Epoch)
	if err != nil {
		return l, fmt.Errorf("cluster: read lease: %w", err)
	}
	return l, nil
}

// EventRow is one row of the events table: the shim's wire event, whole.
type EventRow struct {
	ID      int64
	EventID string
	JSON    []byte
}

// InsertEvents adds events to the table, skipping ids already there: a
// webhook that follows the shim's own row for the same event is a no-op.
func (c *Cluster) InsertEvents(ctx context.Context, evs []EventRow) error {
	if len(evs) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(evs))
	for _, e := range evs {
		args = append(args, e.EventID, string(e.JSON))
	}
	// Two nodes inserting one event id at once (the shim's row on one,
	// a webhook on another) conflict on Galera; the retry is a no-op.
	err := retryRace(ctx, func() error {
		c.queries.Add(1)
		_, err := c.db.ExecContext(ctx, "INSERT IGNORE INTO `"+c.t.Events+"` (event_id, event) VALUES "+rowsOf("(?, ?)", len(evs)), args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("cluster: insert events: %w", err)
	}
	return nil
}

// PendingEvents returns up to limit events no leader has finished, oldest
// first.
func (c *Cluster) PendingEvents(ctx context.Context, limit int) ([]EventRow, error) {
	c.queries.Add(1)
	rows, err := c.db.QueryContext(ctx, c.causal("SELECT id, event_id, event FROM `"+c.t.Events+"` WHERE done = 0 ORDER BY id LIMIT ?"), limit)
	if err != nil {
		return nil, fmt.Errorf("cluster: pending events: %w", err)
	}
	defer rows.Close()
	var out []EventRow
	for rows.Next() {
		var e EventRow
		if err := rows.Scan(&e.ID, &e.EventID, &e.JSON); err != nil {
			return nil, fmt.Errorf("cluster: pending events: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cluster: pending events: %w", err)
	}
	return out, nil
}

// PruneEvents deletes events finished before the retention, a batch at a
// time.
func (c *Cluster) PruneEvents(ctx context.Context, keep time.Duration) (int64, error) {
	var n int64
	err := retryRace(ctx, func() error {
		c.queries.Add(1)
		res, err := c.db.ExecContext(ctx, "DELETE FROM `"+c.t.Events+"` WHERE done = 1 AND done_at < NOW(6) - INTERVAL ? SECOND LIMIT 1000",
			int64(keep.Seconds()))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("cluster: prune events: %w", err)
	}
	return n, nil
}

// Op is what a changelog row does to its URL.
type Op string

// The changelog's ops.
const (
	OpPut    Op = "P"
	OpDelete Op = "D"
)

// Entry is one changelog row.
type Entry struct {
	ID  int64
	URL string
	Op  Op
	// Version is the SHA-256 of the document's encoding (Encode), or of
	// the URL for a tombstone.
	Version [32]byte
	// Doc is the gzipped JSON document; nil for a tombstone.
	Doc  []byte
	Node string
	// Written is when the leader wrote the row, by the database's clock.
	Written time.Time
}

// Publish writes entries to the changelog and marks events done, in one
// transaction that holds only while holder leads. Entries get the ids
// after the lease row's seq, in order; older rows of the same URLs go.
// It returns ErrLeaseLost, writing nothing, when holder does not lead.
// A transaction that lost a race (1213: on Galera, another node changed
// the lease row first) wrote nothing and is run again from the start.
func (c *Cluster) Publish(ctx context.Context, holder string, ttl time.Duration, entries []Entry, done []int64) error {
	entries = lastPerURL(entries)
	if len(entries) == 0 && len(done) == 0 {
		return nil
	}
	return retryRace(ctx, func() error { return c.publish(ctx, holder, ttl, entries, done) })
}

func (c *Cluster) publish(ctx context.Context, holder string, ttl time.Duration, entries []Entry, done []int64) error {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cluster: publish: %w", err)
	}
	defer tx.Rollback()
	// The lease is checked by writing it: a row lock would hold on this
	// node only, but a write is certified, so on Galera this transaction
	// and one that took the lease on another node cannot both commit.
	// The write always changes the row (the expiry moves on, a renewal),
	// since an UPDATE that changes nothing is not certified. seq gives
	// the entries their ids, so ids commit in order and a reader tailing
	// id > n misses none.
	c.queries.Add(2)
	res, err := tx.ExecContext(ctx, c.causalWrite("UPDATE `"+c.t.Lease+"` SET seq = seq + ?, expires_at = NOW(6) + INTERVAL ? MICROSECOND"+
		" WHERE name = ? AND holder = ? AND expires_at > NOW(6)"), len(entries), ttl.Microseconds(), leaseName, holder)
	if err != nil {
		return fmt.Errorf("cluster: publish: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		if err != nil {
			return fmt.Errorf("cluster: publish: %w", err)
		}
		return ErrLeaseLost
	}
	var seq int64
	if err := tx.QueryRowContext(ctx, "SELECT seq FROM `"+c.t.Lease+"` WHERE name = ?", leaseName).Scan(&seq); err != nil {
		return fmt.Errorf("cluster: publish: %w", err)
	}
	seq -= int64(len(entries))
	if len(entries) > 0 {
		hashes := make([]any, 0, len(entries)+1)
		hashes = append(hashes, seq)
		ins := make([]any, 0, 7*len(entries))
		for i := range entries {
			e := &entries[i]
			e.ID = seq + int64(i) + 1
			h := URLHash(e.URL)
			hashes = append(hashes, h[:])
			var doc any
			if e.Op == OpPut {
				doc = e.Doc
			}
			ins = append(ins, e.ID, h[:], e.URL, string(e.Op), e.Version[:], doc, e.Node)
		}
		c.queries.Add(2)
		// Compaction as it goes: a URL's older rows are superseded.
		if _, err := tx.ExecContext(ctx, "DELETE FROM `"+c.t.Changelog+"` WHERE id <= ? AND url_hash IN ("+marks(len(entries))+")",
			hashes...); err != nil {
			return fmt.Errorf("cluster: publish: compact: %w", err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO `"+c.t.Changelog+"` (id, url_hash, url, op, version, doc, node) VALUES "+
			rowsOf("(?, ?, ?, ?, ?, ?, ?)", len(entries)), ins...); err != nil {
			return fmt.Errorf("cluster: publish: insert: %w", err)
		}
	}
	if len(done) > 0 {
		args := make([]any, len(done))
		for i, id := range done {
			args[i] = id
		}
		c.queries.Add(1)
		if _, err := tx.ExecContext(ctx, "UPDATE `"+c.t.Events+"` SET done = 1, done_at = NOW(6) WHERE id IN ("+marks(len(done))+")",
			args...); err != nil {
			return fmt.Errorf("cluster: publish: mark events: %w", err)
		}
	}
	c.queries.Add(1)
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cluster: publish: commit: %w", err)
	}
	return nil
}

// Tail returns up to limit changelog rows after id, in id order.
func (c *Cluster) Tail(ctx context.Context, after int64, limit int) ([]Entry, error) {
	c.queries.Add(1)
	rows, err := c.db.QueryContext(ctx, c.causal("SELECT id, url, op, version, doc, node, created_at FROM `"+c.t.Changelog+"` WHERE id > ? ORDER BY id LIMIT ?"),
		after, limit)
	if err != nil {
		return nil, fmt.Errorf("cluster: tail: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var (
			e  Entry
			op string
			v  []byte
		)
		if err := rows.Scan(&e.ID, &e.URL, &op, &v, &e.Doc, &e.Node, &e.Written); err != nil {
			return nil, fmt.Errorf("cluster: tail: %w", err)
		}
		e.Op = Op(op)
		copy(e.Version[:], v)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cluster: tail: %w", err)
	}
	return out, nil
}

// AgeAfter returns how long ago the oldest changelog row after id was
// written, by the database's clock: how far behind a node that applied
// up to id is. It is 0 when there is no such row.
func (c *Cluster) AgeAfter(ctx context.Context, id int64) (time.Duration, error) {
	c.queries.Add(1)
	var us int64
	err := c.db.QueryRowContext(ctx, c.causal("SELECT TIMESTAMPDIFF(MICROSECOND, created_at, NOW(6)) FROM `"+c.t.Changelog+"` WHERE id > ? ORDER BY id LIMIT 1"), id).Scan(&us)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: changelog: %w", err)
	}
	return time.Duration(max(0, us)) * time.Microsecond, nil
}

// URLHash keys a URL in the changelog: TEXT cannot be indexed whole.
func URLHash(u string) [32]byte { return sha256.Sum256([]byte(u)) }

// lastPerURL keeps each URL's last entry, in order.
func lastPerURL(es []Entry) []Entry {
	last := make(map[string]int, len(es))
	for i, e := range es {
		last[e.URL] = i
	}
	out := es[:0:0]
	for i, e := range es {
		if last[e.URL] == i {
			out = append(out, e)
		}
	}
	return out
}

func marks(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

func rowsOf(row string, n int) string {
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Versions returns the version of each live URL in the changelog up to
// id upTo: what a node that applied that far has. It reads no documents.
func (c *Cluster) Versions(ctx context.Context, upTo int64) (map[string][32]byte, error) {
	c.queries.Add(1)
	rows, err := c.db.QueryContext(ctx, c.causal("SELECT url, version FROM `"+c.t.Changelog+"` WHERE id <= ? AND op = 'P'"), upTo)
	if err != nil {
		return nil, fmt.Errorf("cluster: versions: %w", err)
	}
	defer rows.Close()
	m := map[string][32]byte{}
	for rows.Next() {
		var (
			u string
			v []byte
		)
		if err := rows.Scan(&u, &v); err != nil {
			return nil, fmt.Errorf("cluster: versions: %w", err)
		}
		var ver [32]byte
		copy(ver[:], v)
		m[u] = ver
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cluster: versions: %w", err)
	}
	return m, nil
}
