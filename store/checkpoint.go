package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// checkpointDelay is how long after a removal the WAL is copied into the
// database and truncated. Until then the WAL still holds the removed
// pages' text, in the frames written before the removal; removals in a
// burst share one checkpoint.
const checkpointDelay = time.Second

// checkpointTries bounds the retries of a checkpoint that readers kept
// from finishing; the next removal, or Close, tries again.
const checkpointTries = 5

var errCheckpointBusy = errors.New("store: checkpoint: readers kept the WAL busy")

// Checkpoint copies every frame of the WAL into the database file and
// truncates the WAL to zero bytes. With secure_delete on, no byte of a
// removed page is left in either file afterwards.
func (db *DB) Checkpoint(ctx context.Context) error {
	var busy, logFrames, done int
	if err := db.write.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done); err != nil {
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	if busy != 0 {
		return errCheckpointBusy
	}
	return nil
}

// removed arranges a checkpoint soon after a commit that took pages out
// of the index.
func (db *DB) removed() {
	db.ckMu.Lock()
	defer db.ckMu.Unlock()
	db.ckTries, db.ckPending = 0, true
	if db.ckClosed || db.ckTimer != nil {
		return
	}
	db.ckTimer = time.AfterFunc(checkpointDelay, db.checkpointLater)
}

func (db *DB) checkpointLater() {
	db.ckMu.Lock()
	defer db.ckMu.Unlock()
	db.ckTimer = nil
	if db.ckClosed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := db.Checkpoint(ctx)
	if err == nil {
		db.ckPending = false
		return
	}
	if db.ckTries++; db.ckTries < checkpointTries {
		db.ckTimer = time.AfterFunc(checkpointDelay, db.checkpointLater)
		return
	}
	slog.Warn("Unable to checkpoint the store after a removal; removed text stays in the WAL until the next checkpoint",
		"path", db.Path, "error", err)
}

// stopCheckpoints cancels a pending checkpoint, waits for a running one,
// and runs the one a removal still owes. Without removals it leaves the
// WAL to SQLite, which checkpoints it when the last connection closes:
// a one-shot command closing beside a busy daemon need not wait for it.
func (db *DB) stopCheckpoints() error {
	db.ckMu.Lock()
	defer db.ckMu.Unlock()
	if db.ckTimer != nil {
		db.ckTimer.Stop()
		db.ckTimer = nil
	}
	if db.ckClosed || !db.ckPending {
		db.ckClosed = true
		return nil
	}
	db.ckClosed = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return db.Checkpoint(ctx)
}
