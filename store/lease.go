package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Lease is a named right, held by one process at a time, that lapses at
// ExpiresAt unless its holder renews it.
type Lease struct {
	Name string
	// Holder tells one acquisition from another, within a process too.
	Holder     string
	PID        int
	Host       string
	What       string
	AcquiredAt time.Time
	ExpiresAt  time.Time
}

// LeaseHeldError is returned by AcquireLease when another holder has the
// lease and it has not lapsed.
type LeaseHeldError struct{ Held Lease }

func (e *LeaseHeldError) Error() string {
	h := e.Held
	return fmt.Sprintf("%s (pid %d on %s) holds the %s lease since %s; it lapses at %s unless renewed",
		h.What, h.PID, h.Host, h.Name, h.AcquiredAt.UTC().Format(time.RFC3339), h.ExpiresAt.UTC().Format(time.RFC3339))
}

// ErrLeaseLost is returned by RenewLease when the lease is no longer the
// caller's: it lapsed and another holder took it.
var ErrLeaseLost = errors.New("store: lease lost")

// AcquireLease takes lease l.Name for l.Holder until now + ttl. It
// returns a *LeaseHeldError naming the holder when another holder has it
// and it has not lapsed, unless dead says that holder is gone (a process
// of this host that no longer runs), in which case it is taken over.
func (db *DB) AcquireLease(ctx context.Context, l Lease, ttl time.Duration, dead func(Lease) bool) (Lease, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return l, fmt.Errorf("store: acquire lease %s: %w", l.Name, err)
	}
	defer tx.Rollback()
	now := db.Now()
	cur, err := findLease(ctx, tx, l.Name)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return l, fmt.Errorf("store: acquire lease %s: %w", l.Name, err)
	case cur.Holder != l.Holder && now.Before(cur.ExpiresAt) && (dead == nil || !dead(cur)):
		return l, &LeaseHeldError{Held: cur}
	}
	l.AcquiredAt, l.ExpiresAt = now, now.Add(ttl)
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO leases (name, holder, pid, host, what, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, pid = excluded.pid, host = excluded.host,
			what = excluded.what, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at`,
		l.Name, l.Holder, l.PID, l.Host, l.What, fmtTimeNano(l.AcquiredAt), fmtTimeNano(l.ExpiresAt)); err != nil {
		return l, fmt.Errorf("store: acquire lease %s: %w", l.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return l, fmt.Errorf("store: acquire lease %s: %w", l.Name, err)
	}
	return l, nil
}

// RenewLease extends the holder's lease to now + ttl. It returns
// ErrLeaseLost when the lease is no longer the holder's.
func (db *DB) RenewLease(ctx context.Context, name, holder string, ttl time.Duration) (time.Time, error) {
	until := db.Now().Add(ttl)
	res, err := db.write.ExecContext(ctx, `UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ?`,
		fmtTimeNano(until), name, holder)
	if err != nil {
		return time.Time{}, fmt.Errorf("store: renew lease %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return time.Time{}, fmt.Errorf("%w: %s", ErrLeaseLost, name)
	}
	return until, nil
}

// ReleaseLease gives the holder's lease up; a lease another holder has
// taken since is left alone.
func (db *DB) ReleaseLease(ctx context.Context, name, holder string) error {
	if _, err := db.write.ExecContext(ctx, `DELETE FROM leases WHERE name = ? AND holder = ?`, name, holder); err != nil {
		return fmt.Errorf("store: release lease %s: %w", name, err)
	}
	return nil
}

// FindLease returns the lease name as stored, lapsed or not, or
// ErrNotFound.
func (db *DB) FindLease(ctx context.Context, name string) (Lease, error) {
	l, err := findLease(ctx, db.read, name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return l, fmt.Errorf("store: find lease %s: %w", name, err)
	}
	return l, err
}

func findLease(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, name string) (Lease, error) {
	var (
		l        Lease
		acq, exp string
	)
	err := q.QueryRowContext(ctx, `SELECT name, holder, pid, host, what, acquired_at, expires_at FROM leases WHERE name = ?`, name).
		Scan(&l.Name, &l.Holder, &l.PID, &l.Host, &l.What, &acq, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return l, ErrNotFound
	}
	if err != nil {
		return l, err
	}
	l.AcquiredAt, l.ExpiresAt = parseTimeNano(acq), parseTimeNano(exp)
	return l, nil
}
