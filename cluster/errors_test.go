package cluster

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
)

// The driver's error text, as it reaches this package wrapped.
type serverError string

func (e serverError) Error() string { return string(e) }

func TestErrno(t *testing.T) {
	deadlock := fmt.Errorf("cluster: publish: commit: %w", serverError("Error 1213 (40001): Deadlock found when trying to get lock; try restarting transaction"))
	notReady := fmt.Errorf("cluster: tail: %w", serverError("Error 1047 (08S01): WSREP has not yet prepared node for application use"))
	for _, tc := range []struct {
		name               string
		err                error
		no                 int
		race, unusable, gr bool
	}{
		{"Deadlock", deadlock, 1213, true, false, false},
		{"NotReady", notReady, 1047, false, true, false},
		{"SyncWaitTimeout", serverError("Error 1205 (HY000): Lock wait timeout exceeded; try restarting transaction"), 1205, false, true, false},
		{"ReadOnly", serverError("Error 1290 (HY000): The MariaDB server is running with the --read-only option"), 1290, false, true, false},
		{"Grant", fmt.Errorf("create tables: %w", serverError("Error 1142 (42000): CREATE command denied to user 'u'@'localhost' for table 'x'")), 1142, false, false, true},
		{"NoTable", serverError("Error 1146 (42S02): Table 'db.x' doesn't exist"), 1146, false, false, false},
		{"Joined", errors.Join(errors.New("a"), deadlock), 1213, true, false, false},
		{"Timeout", fmt.Errorf("cluster: lease: %w", context.DeadlineExceeded), 0, false, true, false},
		{"NetTimeout", &net.OpError{Op: "read", Err: timeoutErr{}}, 0, false, true, false},
		{"BadConn", driver.ErrBadConn, 0, false, true, false},
		{"Net", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, 0, false, true, false},
		{"EOF", fmt.Errorf("x: %w", io.ErrUnexpectedEOF), 0, false, true, false},
		{"Text", errors.New("an Error 1213 in a message is not the server's"), 0, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := errno(tc.err); n != tc.no {
				t.Errorf("errno = %d, want %d", n, tc.no)
			}
			if lostRace(tc.err) != tc.race || Unusable(tc.err) != tc.unusable || grantMissing(tc.err) != tc.gr {
				t.Errorf("lostRace %v, Unusable %v, grantMissing %v; want %v, %v, %v", lostRace(tc.err), Unusable(tc.err), grantMissing(tc.err), tc.race, tc.unusable, tc.gr)
			}
			// A statement that only took too long is not a refusal.
			slow := tc.name == "Timeout" || tc.name == "NetTimeout"
			if refused(tc.err) != (tc.unusable && !slow) {
				t.Errorf("refused %v, want %v", refused(tc.err), tc.unusable && !slow)
			}
		})
	}
	if Unusable(nil) || lostRace(nil) || refused(nil) {
		t.Error("nil is an error")
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// retryRace runs a lost race again, and nothing else.
func TestRetryRace(t *testing.T) {
	ctx := context.Background()
	n := 0
	err := retryRace(ctx, func() error {
		if n++; n < 3 {
			return serverError("Error 1213 (40001): Deadlock found")
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("retryRace = %v after %d runs, want nil after 3", err, n)
	}
	n = 0
	other := serverError("Error 1146 (42S02): Table 'db.x' doesn't exist")
	if err := retryRace(ctx, func() error { n++; return other }); err != other || n != 1 {
		t.Fatalf("retryRace = %v after %d runs, want the error after 1", err, n)
	}
	n = 0
	if err := retryRace(ctx, func() error { n++; return serverError("Error 1213 (40001): Deadlock found") }); !lostRace(err) || n != raceTries {
		t.Fatalf("retryRace = %v after %d runs, want a lost race after %d", err, n, raceTries)
	}
}

// A real error from the driver, on the single MariaDB, is read by number.
func TestCluster_ServerErrorNumber(t *testing.T) {
	c := openTest(t)
	_, err := c.db.ExecContext(context.Background(), "SELECT 1 FROM `"+c.t.Lease+"_missing`")
	if errno(err) != 1146 || Unusable(err) || lostRace(err) {
		t.Fatalf("a missing table: %v read as errno %d, unusable %v", err, errno(err), Unusable(err))
	}
	if c.IsGalera() {
		t.Log("the test database is a Galera node")
	}
}
