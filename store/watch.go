package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// Watch checks, until ctx ends, that the file at db.Path is still the one
// Open opened and is sound: its stat every statEvery (deleted, replaced
// by another file, cut shorter), PRAGMA quick_check every checkEvery (or
// twenty times as long as the last check took, so that a large store's
// checks stay under a twentieth of a core) and at once when a query met
// SQLITE_CORRUPT. It calls damaged once, with
// what it found, and returns. A file deleted while serving is not an
// error SQLite sees: the open handle reads the unlinked inode on.
func (db *DB) Watch(ctx context.Context, statEvery, checkEvery time.Duration, damaged func(cause string, err error)) {
	st := time.NewTicker(statEvery)
	defer st.Stop()
	qc := time.NewTimer(checkEvery)
	defer qc.Stop()
	size := db.opened.Size()
	for {
		check := false
		select {
		case <-ctx.Done():
			return
		case <-db.corruptSeen:
			check = true
		case <-qc.C:
			check = true
		case <-st.C:
			fi, err := os.Stat(db.Path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				damaged("deleted", fmt.Errorf("store: %s was deleted while serving", db.Path))
				return
			case err != nil:
				continue
			case !os.SameFile(fi, db.opened):
				damaged("replaced", fmt.Errorf("store: %s was replaced by another file while serving", db.Path))
				return
			}
			// SQLite never shrinks this file but by a VACUUM, which
			// askwpd does not run: a shorter file was cut.
			check = fi.Size() < size
			size = fi.Size()
		}
		if !check {
			continue
		}
		t0 := time.Now()
		if err := db.QuickCheck(ctx); err != nil && ctx.Err() == nil && (IsCorrupt(err) || errors.Is(err, errCheckFailed)) {
			damaged(causeOf(err), err)
			return
		}
		qc.Reset(max(checkEvery, 20*time.Since(t0)))
	}
}

// noteErr wakes Watch when a query met a damaged file.
func (db *DB) noteErr(err error) {
	if err != nil && IsCorrupt(err) {
		select {
		case db.corruptSeen <- struct{}{}:
		default:
		}
	}
}

// Restore writes the store, as its open handle still reads it, back to
// db.Path, after the file there was deleted while serving: nothing is
// lost. The copy records the Heal, so the status tells it.
func (db *DB) Restore(ctx context.Context, h *Heal) error {
	if _, err := db.write.ExecContext(ctx, `VACUUM INTO ?`, db.Path); err != nil {
		return Explain(fmt.Errorf("store: restore %s from the open handle: %w", db.Path, err), db.Path)
	}
	if err := os.Chmod(db.Path, 0o600); err != nil {
		return fmt.Errorf("store: restore %s: %w", db.Path, err)
	}
	h.Restored = true
	c, err := sql.Open("sqlite", "file:"+db.Path)
	if err != nil {
		return fmt.Errorf("store: restore %s: %w", db.Path, err)
	}
	defer c.Close()
	b, err := jsonHeal(h)
	if err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, healMetaKey, b); err != nil {
		return fmt.Errorf("store: restore %s: %w", db.Path, err)
	}
	return nil
}
