package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/internal/wptest"
)

// TestStatus_SlowDatabase stalls the WordPress database under a daemon:
// /v1/status and /metrics answer at once with the last ping's answer
// while the ping waits, then report the database unreachable when the
// ping gives up, and ok again once it answers.
func TestStatus_SlowDatabase(t *testing.T) {
	cfg, dbp := proxiedDBConfig(t, wptest.Get(t))
	d, err := Open(context.Background(), cfg, newFaultLog().logger())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	c, _ := serveAPI(t, d)
	if st := c.status(); st.Database != "ok" {
		t.Fatalf("status database before the stall = %q", st.Database)
	}

	// The pool's connections are cut, and the new ones hang.
	dbp.stall.Store(true)
	dbp.setDown(true)
	dbp.setDown(false)
	stalled := time.Now()
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		st := c.status()
		took := time.Since(t0)
		if took > 500*time.Millisecond || st.Database != "ok" {
			t.Errorf("status %d with the database stalled: %v, database %q; want at once, the last answer (ok)", i, took, st.Database)
		}
		t0 = time.Now()
		code, b := c.do("GET", "/metrics", nil)
		if took := time.Since(t0); code != 200 || took > 500*time.Millisecond || !strings.Contains(string(b), "askwpd_wp_database_up 1") {
			t.Errorf("/metrics %d with the database stalled: %d in %v", i, code, took)
		}
	}
	// The ping gives up after 2 s.
	var st string
	for time.Since(stalled) < 10*time.Second {
		if st = c.status().Database; strings.HasPrefix(st, "unreachable") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("stalled: status says %q after %v", st, time.Since(stalled).Round(time.Millisecond))
	if !strings.HasPrefix(st, "unreachable") {
		t.Errorf("status database 10 s into the stall = %q, want unreachable: …", st)
	}

	dbp.stall.Store(false)
	dbp.setDown(true) // the held connections go
	dbp.setDown(false)
	back := time.Now()
	for time.Since(back) < 10*time.Second {
		if st = c.status().Database; st == "ok" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("back: status says %q after %v", st, time.Since(back).Round(time.Millisecond))
	if st != "ok" {
		t.Errorf("status database 10 s after the stall ended = %q", st)
	}
}
