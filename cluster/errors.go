package cluster

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The server's error numbers this package acts on. The driver is not
// named here (wp holds it), so the number is read from the error's text,
// which the driver spells "Error 1213 (40001): …".
const (
	// errDeadlock is a lost race: on Galera, a transaction that failed
	// certification, or was aborted by a conflicting one replicated from
	// another node. Nothing was written; re-read and retry.
	errDeadlock = 1213
	// errNotReady is Galera's "WSREP has not yet prepared node for
	// application use": the node is not in the primary component.
	errNotReady = 1047
	// errLockWait is a lock wait, or a causal read (wsrep_sync_wait),
	// that timed out: on Galera, a node cut off from the others.
	errLockWait = 1205
	// errReadOnly is a server started read-only: a replica.
	errReadOnly = 1290
	// errConnKilled is a connection the server ended (shutting down).
	errConnKilled = 1927
)

// errGrant are the numbers of a missing privilege.
var errGrant = []int{1044, 1045, 1142, 1143, 1227}

var errnoRe = regexp.MustCompile(`^Error (\d{4,5})\b`)

// errno returns the server's error number from err's chain, 0 when none
// of its errors is one the server sent.
func errno(err error) int {
	for err != nil {
		if m := errnoRe.FindStringSubmatch(err.Error()); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if n := errno(e); n != 0 {
					return n
				}
			}
			return 0
		default:
			return 0
		}
	}
	return 0
}

// lostRace reports whether err is a deadlock or a failed certification:
// the statement or transaction wrote nothing and may be run again.
func lostRace(err error) bool { return errno(err) == errDeadlock }

// Unusable reports whether err says the database cannot be used now,
// rather than anything about the statement: the server does not answer,
// is cut off from its Galera cluster (1047, or 1205 on a causal read),
// or is read-only. A node keeps serving from its store and stops leading
// until a statement succeeds again.
func Unusable(err error) bool {
	var ne net.Error
	return err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() || refused(err))
}

// refused reports whether the database said it cannot be used, or its
// connection failed, as opposed to a statement that took too long (which
// a whole Galera cluster does for a second or two while it drops a node
// that stopped answering): a leader steps down at once on the first, and
// keeps its lease on the second until the lease runs out unrenewed.
func refused(err error) bool {
	if err == nil {
		return false
	}
	switch errno(err) {
	case errNotReady, errLockWait, errReadOnly, errConnKilled:
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, driver.ErrBadConn) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		// The driver's ErrInvalidConn, named by its text.
		strings.Contains(err.Error(), "invalid connection")
}

// grantMissing reports whether err is a missing privilege.
func grantMissing(err error) bool {
	n := errno(err)
	for _, g := range errGrant {
		if n == g {
			return true
		}
	}
	return false
}

// raceTries is how many times a statement that lost a race is run: two
// or three nodes contend at most for the same row.
const raceTries = 6

// retryRace runs f until it does not lose a race (errno 1213), at most
// raceTries times, waiting a little longer each time, with jitter so two
// nodes that collided do not collide again.
func retryRace(ctx context.Context, f func() error) error {
	var err error
	for i := range raceTries {
		if err = f(); !lostRace(err) {
			return err
		}
		d := time.Duration(5<<i)*time.Millisecond + rand.N(10*time.Millisecond)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(d):
		}
	}
	return err
}
