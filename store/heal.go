package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	sqlite3 "modernc.org/sqlite/lib"
)

// Heal is what OpenHealing found wrong with a store and did about it. It
// is kept in the fresh store's meta (healMetaKey), so the status tells it
// after any later restart too.
type Heal struct {
	At time.Time `json:"at"`
	// Cause is the damage: corrupt, not a database, deleted, replaced or
	// truncated.
	Cause string `json:"cause"`
	// Detail is SQLite's or the watcher's own words.
	Detail string `json:"detail"`
	// Damaged is where the damaged file was moved ("" when there was
	// none to keep: a store deleted while serving).
	Damaged string `json:"damaged_file,omitempty"`
	// Restored is set when the store was written back whole from the
	// serving daemon's open handle (a deleted file).
	Restored bool `json:"restored,omitempty"`
	// Salvaged counts the rows carried into the fresh store, by table;
	// Unreadable the rows SQLite could not read back.
	Salvaged   map[string]int `json:"salvaged"`
	Unreadable map[string]int `json:"unreadable,omitempty"`
	// Uncounted are the tables whose last rowid could not be read: rows
	// may be lost there that no count tells.
	Uncounted []string `json:"uncounted,omitempty"`
}

// healMetaKey holds the last Heal as JSON.
const healMetaKey = "store_heal"

// LastHeal returns the last heal this store came from, or nil.
func (db *DB) LastHeal(ctx context.Context) (*Heal, error) {
	v, err := db.GetMeta(ctx, healMetaKey)
	if err != nil || v == "" {
		return nil, err
	}
	var h Heal
	if err := json.Unmarshal([]byte(v), &h); err != nil {
		return nil, fmt.Errorf("store: read the last heal: %w", err)
	}
	return &h, nil
}

// IsCorrupt reports whether err is SQLite finding the file damaged
// (SQLITE_CORRUPT) or not a database at all (SQLITE_NOTADB).
func IsCorrupt(err error) bool {
	c := primaryCode(err)
	return c == sqlite3.SQLITE_CORRUPT || c == sqlite3.SQLITE_NOTADB
}

// OpenHealing is Open for a store that may be damaged. When SQLite cannot
// read the file or PRAGMA quick_check fails, the damaged files are moved
// aside as <path>.corrupt-<UTC time> (askwpd never deletes them), what a
// new pass cannot bring back (the question log and its votes, the events
// not yet applied, the chat's day budget) is read out of them row by row
// where SQLite still can, and a fresh store holds it. The pages come back
// with the next full pass; the returned Heal is non-nil when this
// happened. Other failures (a full disk, a file of another owner, a
// read-only filesystem, a newer schema) are returned, their cause named.
func OpenHealing(ctx context.Context, path string, log *slog.Logger) (*DB, *Heal, error) {
	db, err := Open(ctx, path)
	if err == nil {
		if err = db.QuickCheck(ctx); err == nil {
			return db, nil, nil
		}
		db.Close()
	}
	if !IsCorrupt(err) && !errors.Is(err, errCheckFailed) {
		return nil, nil, Explain(err, path)
	}
	// Another process of the same state dir (serve, index, doctor) may
	// heal it too: one at a time, and the later one finds it healed.
	unlock, lerr := lockHeal(path)
	if lerr != nil {
		return nil, nil, Explain(lerr, path)
	}
	defer unlock()
	if db, err2 := Open(ctx, path); err2 == nil {
		if db.QuickCheck(ctx) == nil {
			return db, nil, nil
		}
		db.Close()
	}
	h := &Heal{At: time.Now().UTC(), Cause: causeOf(err), Detail: err.Error()}
	log.Error("The store is damaged; moving it aside and starting a fresh one", "path", path, "error", err)
	return HealAt(ctx, path, h, log)
}

// lockHeal takes an exclusive lock on <path>.heal, waiting for another
// process's heal to end.
func lockHeal(path string) (func(), error) {
	f, err := os.OpenFile(path+".heal", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: lock for the heal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("store: lock for the heal: %w", err)
	}
	return func() { f.Close() }, nil
}

// HealAt moves the files at path aside, salvages them into a fresh store
// at path and records h there. A caller that found the damage itself (the
// serving daemon's watcher) gives its cause in h.
func HealAt(ctx context.Context, path string, h *Heal, log *slog.Logger) (*DB, *Heal, error) {
	if h.Salvaged == nil {
		h.Salvaged = map[string]int{}
	}
	if _, err := os.Stat(path); err == nil {
		moved, err := moveAside(path, h.At)
		if err != nil {
			return nil, nil, Explain(err, path)
		}
		h.Damaged = moved
	}
	fresh, err := Open(ctx, path)
	if err != nil {
		return nil, nil, Explain(err, path)
	}
	if h.Damaged != "" {
		if err := salvage(ctx, h.Damaged, fresh, h); err != nil {
			// What was salvaged so far stays; the rest is in the kept file.
			log.Warn("Salvage of the damaged store stopped early", "file", h.Damaged, "error", err)
		}
	}
	b, err := jsonHeal(h)
	if err != nil {
		fresh.Close()
		return nil, nil, err
	}
	if err := fresh.SetMeta(ctx, healMetaKey, b); err != nil {
		fresh.Close()
		return nil, nil, Explain(err, path)
	}
	log.Warn("Fresh store started; a full pass re-indexes the site", "damaged_file", h.Damaged,
		"cause", h.Cause, "salvaged", h.Salvaged, "unreadable", h.Unreadable)
	return fresh, h, nil
}

func jsonHeal(h *Heal) (string, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return "", fmt.Errorf("store: record the heal: %w", err)
	}
	return string(b), nil
}

// moveAside renames path and its -wal and -shm to <path>.corrupt-<time>,
// keeping SQLite's suffixes, so the kept file opens with its WAL.
func moveAside(path string, at time.Time) (string, error) {
	base := path + ".corrupt-" + at.UTC().Format("20060102T150405Z")
	for _, sfx := range []string{"-wal", "-shm", ""} {
		err := os.Rename(path+sfx, base+sfx)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("store: move the damaged %s aside: %w", path+sfx, err)
		}
	}
	return base, nil
}

// errCheckFailed marks a quick_check that answered but did not say ok.
var errCheckFailed = errors.New("quick_check failed")

// QuickCheck runs PRAGMA quick_check on a connection of its own, which
// reads the file rather than pages the pools keep, and returns nil when
// it says ok.
func (db *DB) QuickCheck(ctx context.Context) error {
	c, err := sql.Open("sqlite", "file:"+db.Path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("store: quick check: %w", err)
	}
	defer c.Close()
	rows, err := c.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return fmt.Errorf("store: quick check: %w", err)
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return fmt.Errorf("store: quick check: %w", err)
		}
		msgs = append(msgs, s)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: quick check: %w", err)
	}
	if len(msgs) == 1 && msgs[0] == "ok" {
		return nil
	}
	return fmt.Errorf("store: %w: %s", errCheckFailed, strings.Join(msgs, "; "))
}

func causeOf(err error) string {
	if primaryCode(err) == sqlite3.SQLITE_NOTADB {
		return "not a database"
	}
	return "corrupt"
}

// Explain names the real cause of a store that does not open or write:
// a full disk, a file or dir of another owner, a read-only filesystem,
// damage; err is kept, wrapped.
func Explain(err error, path string) error {
	if err == nil {
		return nil
	}
	switch {
	case IsDiskFull(err):
		return fmt.Errorf("%w (the disk holding %s is full: free space there)", err, path)
	case IsCorrupt(err):
		return fmt.Errorf("%w (the store %s is damaged)", err, path)
	}
	if hint := accessHint(path); hint != "" {
		return fmt.Errorf("%w (%s)", err, hint)
	}
	return err
}

// accessHint tells why path cannot be written, from the file system's
// answer rather than a guess; "" when it can be.
func accessHint(path string) string {
	dir := path[:max(strings.LastIndexByte(path, '/'), 0)]
	if dir == "" {
		dir = "."
	}
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) == nil && st.Flags&stRdonly != 0 {
		return dir + " is on a read-only filesystem"
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", dir} {
		err := syscall.Access(p, 2) // W_OK
		if err == nil || errors.Is(err, syscall.ENOENT) {
			continue
		}
		var fi syscall.Stat_t
		if syscall.Stat(p, &fi) == nil && int(fi.Uid) != os.Geteuid() {
			return fmt.Sprintf("%s belongs to uid %d, not to uid %d running askwpd: chown it", p, fi.Uid, os.Geteuid())
		}
		if errors.Is(err, syscall.EROFS) {
			return p + " is on a read-only filesystem"
		}
		return fmt.Sprintf("%s is not writable: %v", p, err)
	}
	return ""
}

// stRdonly is ST_RDONLY, statfs's flag of a read-only mount.
const stRdonly = 1

// salvageTables are the rows a pass cannot fetch again, with the filter
// that picks the ones worth keeping.
var salvageTables = []struct{ table, where string }{
	{"questions", ""},
	{"events", "applied_at = ''"},
	{"meta", "key = 'chat_model_calls'"},
}

// salvage copies salvageTables' rows from the damaged file at src into
// fresh, reading by rowid so that a damaged page loses only its own rows.
func salvage(ctx context.Context, src string, fresh *DB, h *Heal) error {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	old, err := sql.Open("sqlite", "file:"+src+"?mode=ro&"+q.Encode())
	if err != nil {
		return fmt.Errorf("store: salvage: %w", err)
	}
	defer old.Close()
	old.SetMaxOpenConns(1)
	var errs []error
	for _, t := range salvageTables {
		n, lost, err := salvageTable(ctx, old, fresh, t.table, t.where)
		h.Salvaged[t.table] = n
		if lost < 0 {
			h.Uncounted = append(h.Uncounted, t.table)
		} else if lost > 0 {
			if h.Unreadable == nil {
				h.Unreadable = map[string]int{}
			}
			h.Unreadable[t.table] = lost
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.table, err))
		}
	}
	return errors.Join(errs...)
}

// salvageWindow is how many rowids are read at once; a window that fails
// is read again one rowid at a time.
const salvageWindow = 256

// salvageTable reads table's rows from old and inserts them into fresh:
// the rows read, and a count of rowids that could not be read, -1 when
// max(rowid) could not be read either.
func salvageTable(ctx context.Context, old *sql.DB, fresh *DB, table, where string) (int, int, error) {
	cols, err := commonColumns(ctx, old, fresh, table)
	if err != nil {
		return 0, -1, err
	}
	if len(cols) == 0 {
		return 0, 0, nil
	}
	// max(rowid) reads the table's rightmost pages; when they are
	// unreadable the scan goes on while rows are still found, and how
	// many were lost is not known.
	var top int64
	known := old.QueryRowContext(ctx, `SELECT coalesce(max(rowid), 0) FROM `+table).Scan(&top) == nil
	list := strings.Join(cols, ", ")
	filter := ""
	if where != "" {
		filter = " AND " + where
	}
	ranged := `SELECT rowid, ` + list + ` FROM ` + table + ` WHERE rowid > ? AND rowid <= ?` + filter + ` ORDER BY rowid`
	single := `SELECT rowid, ` + list + ` FROM ` + table + ` WHERE rowid = ?` + filter
	insert := `INSERT OR IGNORE INTO ` + table + `(` + list + `) VALUES(?` + strings.Repeat(", ?", len(cols)-1) + `)`
	var rows [][]any
	lost, found := 0, int64(0)
	more := func(lo int64) bool {
		if known {
			return lo < top
		}
		return lo < found+64*salvageWindow && lo < 1<<20
	}
	for lo := int64(0); more(lo); lo += salvageWindow {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		got, err := readRows(ctx, old, ranged, len(cols), lo, lo+salvageWindow)
		if err == nil {
			rows = append(rows, got...)
			if len(got) > 0 {
				found = lo + salvageWindow
			}
			continue
		}
		for id := lo + 1; id <= lo+salvageWindow && (!known || id <= top); id++ {
			got, err := readRows(ctx, old, single, len(cols), id)
			if err != nil {
				if known {
					lost++
				}
				continue
			}
			rows = append(rows, got...)
			found = lo + salvageWindow
		}
	}
	n, err := insertSalvage(ctx, fresh, insert, rows)
	if !known {
		lost = -1
	}
	return n, lost, err
}

// commonColumns lists table's columns that both the damaged store and the
// fresh one have, in the fresh one's order.
func commonColumns(ctx context.Context, old *sql.DB, fresh *DB, table string) ([]string, error) {
	have := map[string]bool{}
	oc, err := columnsOf(ctx, old, table)
	if err != nil {
		return nil, err
	}
	for _, c := range oc {
		have[c] = true
	}
	fc, err := columnsOf(ctx, fresh.write, table)
	if err != nil {
		return nil, err
	}
	var cols []string
	for _, c := range fc {
		if have[c] {
			cols = append(cols, c)
		}
	}
	return cols, nil
}

func columnsOf(ctx context.Context, c *sql.DB, table string) ([]string, error) {
	rows, err := c.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		cols = append(cols, n)
	}
	return cols, rows.Err()
}

// readRows runs query and returns its rows without the leading rowid;
// any error, even after some rows, fails the whole read, so the caller
// reads that part again row by row.
func readRows(ctx context.Context, c *sql.DB, query string, ncols int, args ...any) ([][]any, error) {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals := make([]any, ncols+1)
		ptrs := make([]any, ncols+1)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, vals[1:])
	}
	return out, rows.Err()
}

func insertSalvage(ctx context.Context, fresh *DB, insert string, rows [][]any) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	tx, err := fresh.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	n := 0
	for _, r := range rows {
		res, err := tx.ExecContext(ctx, insert, r...)
		if err != nil {
			// A row whose values the damage changed (a NOT NULL gone
			// null, say) is left in the kept file.
			continue
		}
		if k, _ := res.RowsAffected(); k > 0 {
			n++
		}
	}
	return n, tx.Commit()
}
