// Package store is askwpd's embedded SQLite store: documents, their chunks,
// their vectors, the crawl frontier, webhook events, leases and small
// facts. It
// holds no search index: it tells observers of each committed change to
// the chunks (index.go), and the search package keeps its index from that.
//
// The schema lives in migrations/NNN_name.sql, applied in order inside one
// transaction each; the applied version is kept in PRAGMA user_version.
// Writes go through a single connection (SQLite allows one writer), reads
// through a small pool, both in WAL mode so reads never wait on the crawler.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// ErrNotFound is returned when a document, URL or event does not exist.
var ErrNotFound = fs.ErrNotExist

// DB is the store. It is safe for concurrent use.
type DB struct {
	Path string

	write *sql.DB
	read  *sql.DB
	// chunksByID is ChunksByID's statement, prepared once (per reading
	// connection): compiling it was half of what reading a search's
	// chunks cost.
	chunksByID *sql.Stmt
	// insertEvent is insertEvents' statement, prepared once on the
	// writing connection rather than compiled for every event a webhook
	// brings.
	insertEvent *sql.Stmt
	// readStmts and writeStmts are the pools' other statements of fixed
	// text, prepared at first use (stmts.go).
	readStmts, writeStmts stmtCache

	// Now is the clock, replaceable in tests.
	Now func() time.Time

	obsMu     sync.Mutex
	observers []IndexObserver
	// commitMu guards the tickets that order the deliveries of index
	// commits (commitIndexed): delivered is the last ticket delivered.
	commitMu   sync.Mutex
	commitCond *sync.Cond
	tickets    atomic.Int64
	delivered  int64
	// inflight counts index commits counted but not yet delivered.
	inflight atomic.Int32

	// intake is the group commit of InsertEvents (events.go), started on
	// first use and stopped by Close.
	intakeOnce sync.Once
	intake     chan *intakeReq
	intakeStop chan struct{}
	intakeDone chan struct{}
	// intakeMu and intakeClosed keep calls from queueing once Close
	// has stopped the intake.
	intakeMu     sync.RWMutex
	intakeClosed bool

	// ckMu guards the checkpoint that follows removals (checkpoint.go).
	ckMu      sync.Mutex
	ckTimer   *time.Timer
	ckTries   int
	ckPending bool
	ckClosed  bool

	// opened is the file Open opened, which Watch compares the path's
	// file with; corruptSeen wakes Watch when a query met damage.
	opened      os.FileInfo
	corruptSeen chan struct{}
}

// Open opens (creating when needed) the store at path and migrates it.
func Open(ctx context.Context, path string) (*DB, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil { // the state dir: the web server's group reads its secrets
			return nil, fmt.Errorf("store: create state dir: %w", err)
		}
	}
	pragmas := []string{
		// Pragmas run in this order on each new connection. The busy
		// timeout comes first, so the switch of a new file to WAL, which
		// takes an exclusive lock, waits for other openers' locks.
		"busy_timeout(10000)",
		"journal_mode(WAL)",
		"foreign_keys(1)",
		"synchronous(NORMAL)",
		// A page that leaves the index (made private, trashed, deleted)
		// must leave the file too: freed cells and pages are zeroed
		// rather than left for a later write to cover.
		"secure_delete(1)",
		// No larger page cache or mmap: 64 MiB per connection plus a
		// 256 MiB map cut search CPU by a sixth, but took a 10k-page crawl
		// from 73 MB to 605 MB RSS, on a host whose PHP needs the memory.
	}
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	dsn := "file:" + path + "?" + q.Encode()

	// One writer connection with BEGIN IMMEDIATE, so two writers queue on
	// the Go side instead of failing with SQLITE_BUSY at commit time.
	w, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)

	opened, err := os.Stat(path)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db := &DB{Path: path, write: w, Now: time.Now, opened: opened, corruptSeen: make(chan struct{}, 1)}
	db.commitCond = sync.NewCond(&db.commitMu)
	if err := db.migrateRetrying(ctx); err != nil {
		w.Close()
		return nil, err
	}

	r, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s for reading: %w", path, err)
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	db.read = r
	db.readStmts.pool, db.writeStmts.pool = r, w
	if err := r.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if db.chunksByID, err = r.PrepareContext(ctx, chunksByIDQuery); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: prepare: %w", path, err)
	}
	if db.insertEvent, err = w.PrepareContext(ctx, insertEventQuery); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: prepare: %w", path, err)
	}
	return db, nil
}

// Close closes both pools, after a last checkpoint that leaves nothing in
// the WAL.
func (db *DB) Close() error {
	var errs []error
	if db.chunksByID != nil {
		errs = append(errs, db.chunksByID.Close())
	}
	errs = append(errs, db.readStmts.close())
	if db.read != nil {
		errs = append(errs, db.read.Close())
	}
	if db.write != nil {
		db.stopIntake()
		// After the intake: a group commit under way still stores its
		// events.
		if db.insertEvent != nil {
			errs = append(errs, db.insertEvent.Close())
		}
		errs = append(errs, db.writeStmts.close())
		errs = append(errs, db.stopCheckpoints())
		errs = append(errs, db.write.Close())
	}
	return errors.Join(errs...)
}

// createPrivate creates the database file readable and writable by its
// owner alone, whatever the umask: it holds the site's text and the event
// queue. SQLite creates -wal and -shm with the database file's mode. Files
// an older version created with a wider mode are narrowed.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		// A umask such as 0277 could have left the new file read-only.
		err = f.Chmod(0o600)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("store: create %s: %w", path, err)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("store: create %s: %w", path, err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		// Another user (root running a one-shot command, say) may not own
		// the file; it opens the store as it is.
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("store: narrow the mode of %s: %w", p, err)
		}
	}
	return nil
}

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("store: bad migration file name %q", name)
		}
		b, err := migrationFS.ReadFile("migrations/" + name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("store: migrations must be numbered 1..n, found %s at position %d", m.name, i+1)
		}
	}
	return ms, nil
}

// migrateRetrying is migrate, tried again while SQLite answers SQLITE_BUSY.
// Processes opening a new file together can deadlock on its switch to
// WAL; SQLite then fails one of them at once, without calling the busy
// handler, since waiting could never help. A moment later the file is in
// WAL and the open succeeds.
func (db *DB) migrateRetrying(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		err := db.migrate(ctx)
		if err == nil || !isBusy(err) || attempt == 20 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt) * 10 * time.Millisecond):
		}
	}
}

func isBusy(err error) bool { return primaryCode(err) == sqlite3.SQLITE_BUSY }

func (db *DB) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	var cur int
	if err := db.write.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&cur); err != nil {
		return fmt.Errorf("store: read schema version: %w", err)
	}
	if cur > len(ms) {
		return fmt.Errorf("store: schema version %d is newer than this askwpd knows (%d); upgrade askwpd", cur, len(ms))
	}
	for _, m := range ms[cur:] {
		tx, err := db.write.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("store: migrate %s: %w", m.name, err)
		}
		// Another process opening the same new store may have migrated
		// since the version was read; the transaction's write lock makes
		// this second reading the one that counts.
		var now int
		if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&now); err != nil {
			tx.Rollback()
			return fmt.Errorf("store: migrate %s: %w", m.name, err)
		}
		if now >= m.version {
			tx.Rollback()
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			tx.Rollback()
			return fmt.Errorf("store: migrate %s: %w", m.name, err)
		}
		// PRAGMA takes no bound parameters; the version is our own integer.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, m.version)); err != nil {
			tx.Rollback()
			return fmt.Errorf("store: migrate %s: %w", m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("store: migrate %s: %w", m.name, err)
		}
	}
	return nil
}

// IntegrityCheck runs PRAGMA integrity_check and returns nil when it says ok.
func (db *DB) IntegrityCheck(ctx context.Context) error {
	rows, err := db.read.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("store: integrity check: %w", err)
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return fmt.Errorf("store: integrity check: %w", err)
		}
		msgs = append(msgs, s)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: integrity check: %w", err)
	}
	if len(msgs) == 1 && msgs[0] == "ok" {
		return nil
	}
	return fmt.Errorf("store: integrity check failed: %s", strings.Join(msgs, "; "))
}

// GetMeta returns a stored fact, or "" when unset.
func (db *DB) GetMeta(ctx context.Context, key string) (string, error) {
	var v string
	err := db.readRow(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: get meta %s: %w", key, err)
	}
	return v, nil
}

// SetMeta stores a fact.
func (db *DB) SetMeta(ctx context.Context, key, value string) error {
	_, err := db.writeExec(ctx,
		`INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
		key, value)
	if err != nil {
		return fmt.Errorf("store: set meta %s: %w", key, err)
	}
	return nil
}

// Times are stored as RFC 3339 UTC text so they sort and read well in SQL.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// IsDiskFull reports whether err is a write refused because the state
// dir's filesystem is full (SQLITE_FULL or ENOSPC). The write was rolled
// back; reads still work and writes do again once there is room.
func IsDiskFull(err error) bool {
	return primaryCode(err) == sqlite3.SQLITE_FULL || errors.Is(err, syscall.ENOSPC)
}

// primaryCode is the primary result code of the SQLite error in err's
// chain (its extended code's low byte), or -1 when there is none.
func primaryCode(err error) int {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return -1
	}
	return coded.Code() & 0xff
}

// Ping checks that the store answers a query (the systemd watchdog).
func (db *DB) Ping(ctx context.Context) error {
	var n int
	return db.read.QueryRowContext(ctx, `SELECT count(*) FROM meta`).Scan(&n)
}
