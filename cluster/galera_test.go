package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/wp"
)

// These tests run against a three-node Galera cluster brought up by
// ../shared/tools/galera/up.sh (scripts/test.sh galera does), named by
// ASKWPD_TEST_GALERA, its GALERA_BASE. Each node is reached on its own
// port as the probe user up.sh creates, as each web head reaches its own
// node.

// galeraDBs opens one pool per node on a database of the tests' own.
func galeraDBs(t *testing.T) []*sql.DB {
	t.Helper()
	base := os.Getenv("ASKWPD_TEST_GALERA")
	if base == "" {
		t.Skip("ASKWPD_TEST_GALERA (the Galera cluster's GALERA_BASE) is not set; scripts/test.sh galera sets it")
	}
	if _, err := os.Stat(filepath.Join(base, "node1", "my.cnf")); err != nil {
		t.Skipf("no Galera cluster at %s: %v", base, err)
	}
	ctx := context.Background()
	root, err := wp.OpenWriter(ctx, "probe:probe@tcp(127.0.0.1:3311)/")
	if err != nil {
		t.Fatalf("Galera node 1: %v", err)
	}
	defer root.Close()
	if _, err := root.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS askwpd_galera_unit"); err != nil {
		t.Fatal(err)
	}
	var dbs []*sql.DB
	for n := 1; n <= 3; n++ {
		db, err := wp.OpenWriter(ctx, fmt.Sprintf("probe:probe@tcp(127.0.0.1:%d)/askwpd_galera_unit", 3310+n))
		if err != nil {
			t.Fatalf("Galera node %d: %v", n, err)
		}
		t.Cleanup(func() { db.Close() })
		dbs = append(dbs, db)
	}
	return dbs
}

// openAll opens one cluster's tables from every node at once, as heads
// started together do, and drops them at the end.
func openAll(t *testing.T, dbs []*sql.DB, name string) []*Cluster {
	t.Helper()
	cs := make([]*Cluster, len(dbs))
	errs := make([]error, len(dbs))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, db := range dbs {
		wg.Go(func() {
			<-start
			cs[i], errs[i] = Open(context.Background(), db, "wp_", name)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: Open: %v", i+1, err)
		}
	}
	t.Cleanup(func() { cs[0].Drop(context.Background()) })
	return cs
}

// Three nodes creating the tables and the lease row at once: on Galera
// all but one lose the race at certification (1213); Open retries and
// every node ends with the same row.
func TestGalera_OpenTogether(t *testing.T) {
	dbs := galeraDBs(t)
	ctx := context.Background()
	for round := range 8 {
		cs := openAll(t, dbs, wptest.Word("g", ""))
		var epochs []string
		for i, c := range cs {
			if !c.IsGalera() {
				t.Fatalf("node %d is not seen as a Galera node", i+1)
			}
			l, err := c.Leader(ctx)
			if err != nil {
				t.Fatalf("round %d node %d: %v", round, i+1, err)
			}
			epochs = append(epochs, l.Epoch)
		}
		if epochs[0] != epochs[1] || epochs[1] != epochs[2] {
			t.Fatalf("round %d: the nodes see different lease rows: %v", round, epochs)
		}
	}
}

// Three nodes taking a free lease at once: exactly one wins each time.
func TestGalera_LeaseRace(t *testing.T) {
	dbs := galeraDBs(t)
	cs := openAll(t, dbs, wptest.Word("g", ""))
	ctx := context.Background()
	for round := range 40 {
		won := make([]bool, len(cs))
		errs := make([]error, len(cs))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, c := range cs {
			wg.Go(func() {
				<-start
				won[i], errs[i] = c.TryLead(ctx, fmt.Sprintf("n%d", i+1), "h", 5*time.Second)
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		holder := ""
		for i := range cs {
			if errs[i] != nil {
				t.Fatalf("round %d node %d: %v", round, i+1, errs[i])
			}
			if won[i] {
				winners++
				holder = fmt.Sprintf("n%d", i+1)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d nodes took the lease, want 1", round, winners)
		}
		for i, c := range cs {
			l, err := c.Leader(ctx)
			if err != nil || l.Holder != holder {
				t.Fatalf("round %d: node %d reads holder %q (%v), the winner was %s", round, i+1, l.Holder, err, holder)
			}
		}
		if err := cs[0].Release(ctx, holder); err != nil {
			t.Fatal(err)
		}
	}
}

// A leader publishing on its node while another node takes the lease
// the moment it runs out, round after round: no publish commits once
// the other node holds the lease (each would show as a row or an event
// done after the taker acquired it, by the one machine's clock), and
// every publish that reported success is in the tables.
func TestGalera_PublishAgainstTakeover(t *testing.T) {
	dbs := galeraDBs(t)
	cs := openAll(t, dbs, wptest.Word("g", ""))
	ctx := context.Background()
	c1, c2 := cs[0], cs[1]
	const ttl = 300 * time.Millisecond
	okRows, okDone := 0, 0
	for round := range 20 {
		if ok, err := c1.TryLead(ctx, "n1", "h", ttl); err != nil || !ok {
			t.Fatalf("round %d: n1 TryLead = %v, %v", round, ok, err)
		}
		evID := fmt.Sprintf("r%d", round)
		if err := c1.InsertEvents(ctx, []EventRow{{EventID: evID, JSON: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		var ev int64
		if err := c1.db.QueryRowContext(ctx, c1.causal("SELECT id FROM `"+c1.t.Events+"` WHERE event_id = ?"), evID).Scan(&ev); err != nil {
			t.Fatal(err)
		}
		// n1 stops renewing and publishes once, a row or (odd rounds) a
		// done mark alone, at about the moment its lease runs out, while
		// n2 takes the lease as soon as it can.
		var (
			wg          sync.WaitGroup
			rowErr      error
			doneErr     error
			acquiredErr error
		)
		wg.Go(func() {
			time.Sleep(ttl - 30*time.Millisecond + rand.N(60*time.Millisecond))
			if round%2 == 1 {
				rowErr = ErrLeaseLost
				doneErr = c1.Publish(ctx, "n1", ttl, nil, []int64{ev})
				return
			}
			doneErr = ErrLeaseLost
			u := fmt.Sprintf("http://x/%d/", round)
			_, v, _ := Encode(&store.Document{URL: u, Body: "x"})
			rowErr = c1.Publish(ctx, "n1", ttl, []Entry{{URL: u, Op: OpPut, Version: v, Doc: []byte("x"), Node: "n1"}}, nil)
		})
		// What n2 reads right after it took the lease: commits ordered
		// before the takeover. A publish of n1 that succeeded and is not
		// among them committed after it.
		var seenSeq int64
		seenDone := -1
		wg.Go(func() {
			for {
				ok, err := c2.TryLead(ctx, "n2", "h", time.Minute)
				if err != nil || ok {
					acquiredErr = err
					if err == nil {
						acquiredErr = c2.db.QueryRowContext(ctx, c2.causal("SELECT (SELECT seq FROM `"+c2.t.Lease+"`), done FROM `"+c2.t.Events+"` WHERE id = ?"), ev).Scan(&seenSeq, &seenDone)
					}
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
		wg.Wait()
		if acquiredErr != nil {
			t.Fatal(acquiredErr)
		}
		for _, err := range []error{rowErr, doneErr} {
			if err != nil && !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("round %d: n1's publish failed otherwise than ErrLeaseLost: %v", round, err)
			}
		}
		l, err := c2.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var late int
		if err := c2.db.QueryRowContext(ctx, c2.causal("SELECT COUNT(*) FROM `"+c2.t.Changelog+"` WHERE node = 'n1' AND created_at > ?"), l.Acquired).Scan(&late); err != nil {
			t.Fatal(err)
		}
		var lateDone int
		if err := c2.db.QueryRowContext(ctx, c2.causal("SELECT COUNT(*) FROM `"+c2.t.Events+"` WHERE id = ? AND done = 1 AND done_at > ?"), ev, l.Acquired).Scan(&lateDone); err != nil {
			t.Fatal(err)
		}
		if rowErr == nil && l.Seq > seenSeq || doneErr == nil && seenDone == 0 {
			t.Fatalf("round %d: n1's publish succeeded but was not committed when n2 took the lease (seq %d then, %d now; done %d then)",
				round, seenSeq, l.Seq, seenDone)
		}
		if late+lateDone > 0 {
			t.Fatalf("round %d: n1 committed %d rows and %d done marks after n2 took the lease at %v", round, late, lateDone, l.Acquired)
		}
		var rows, done int
		_ = c2.db.QueryRowContext(ctx, c2.causal("SELECT COUNT(*) FROM `"+c2.t.Changelog+"` WHERE url = ?"), fmt.Sprintf("http://x/%d/", round)).Scan(&rows)
		_ = c2.db.QueryRowContext(ctx, c2.causal("SELECT done FROM `"+c2.t.Events+"` WHERE id = ?"), ev).Scan(&done)
		if (rowErr == nil) != (rows == 1) || (doneErr == nil) != (done == 1) {
			t.Fatalf("round %d: publish of a row returned %v and %d rows are there; of a done mark %v and done=%d", round, rowErr, rows, doneErr, done)
		}
		if rowErr == nil {
			okRows++
		}
		if doneErr == nil {
			okDone++
		}
		if l.Seq != int64(okRows) {
			t.Fatalf("round %d: seq %d after %d published rows", round, l.Seq, okRows)
		}
		if err := c2.Release(ctx, "n2"); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("of 10 races each, n1 published its row before the takeover in %d and its done mark in %d; the rest were refused", okRows, okDone)
}

// A row published on one node is read at once on another: every time,
// since the reads that decide wait for causality. The same read without
// it is counted, to show what it guards against here.
func TestGalera_CausalReads(t *testing.T) {
	dbs := galeraDBs(t)
	cs := openAll(t, dbs, wptest.Word("g", ""))
	ctx := context.Background()
	c1, c2 := cs[0], cs[1]
	if ok, err := c1.TryLead(ctx, "n1", "h", time.Minute); err != nil || !ok {
		t.Fatalf("TryLead = %v, %v", ok, err)
	}
	const n = 200
	missed, missedPlain := 0, 0
	for i := range n {
		u := fmt.Sprintf("http://x/%d/", i)
		_, v, _ := Encode(&store.Document{URL: u, Body: "x"})
		if err := c1.Publish(ctx, "n1", time.Minute, []Entry{{URL: u, Op: OpPut, Version: v, Doc: []byte("x"), Node: "n1"}}, nil); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			var id int64
			err := c2.db.QueryRowContext(ctx, "SELECT id FROM `"+c2.t.Changelog+"` WHERE id = ?", i+1).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				missedPlain++
			} else if err != nil {
				t.Fatal(err)
			}
			continue
		}
		es, err := c2.Tail(ctx, int64(i), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 || es[0].ID != int64(i+1) {
			missed++
		}
	}
	t.Logf("a row read on another node right after its commit: %d of %d missed with wsrep_sync_wait, %d of %d without", missed, n/2, missedPlain, n/2)
	if missed > 0 {
		t.Fatalf("%d of %d causal reads missed the row just committed on another node", missed, n/2)
	}
}

// A certification conflict reaches the client as 1213, which this
// package reads from the driver's error as a lost race.
func TestGalera_ConflictIsLostRace(t *testing.T) {
	dbs := galeraDBs(t)
	cs := openAll(t, dbs, wptest.Word("g", ""))
	ctx := context.Background()
	var lost error
	for try := 0; try < 20 && lost == nil; try++ {
		tx1, err := dbs[0].BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		tx2, err := dbs[1].BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		q := "UPDATE `" + cs[0].t.Lease + "` SET seq = seq + 1 WHERE name = 'leader'"
		_, err1 := tx1.ExecContext(ctx, q)
		_, err2 := tx2.ExecContext(ctx, q)
		if err1 == nil {
			err1 = tx1.Commit()
		}
		if err2 == nil {
			err2 = tx2.Commit()
		}
		tx1.Rollback()
		tx2.Rollback()
		for _, err := range []error{err1, err2} {
			if err != nil {
				if !lostRace(err) {
					t.Fatalf("a conflict failed with %v, not read as a lost race (errno %d)", err, errno(err))
				}
				lost = err
			}
		}
	}
	if lost == nil {
		t.Fatal("20 conflicting transactions on two nodes all committed")
	}
	if Unusable(lost) {
		t.Fatalf("a lost race (%v) was read as an unusable database", lost)
	}
}
