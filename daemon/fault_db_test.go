package daemon

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
)

// The WordPress database's faults, during serve and during a pass: it
// refusing connections, dropping them in the middle of a query's reply,
// and a user that may only read. The faults are made by the relay in
// front of the real MariaDB (faults_test.go) and by a SELECT-only user
// the test creates and drops; the server itself is never stopped. Each
// asserts nothing lost and nothing wrong, as the site's faults do
// (fault_site_test.go).

// MySQL commands that send a query.
const (
	comQuery       = 0x03
	comStmtPrepare = 0x16
	comStmtExecute = 0x17
)

// copyQueries forwards the client's side, noting when it sends a query:
// a packet with sequence number 0 and a query command.
func (p *tcpProxy) copyQueries(dst, src net.Conn, queried *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n >= 5 && buf[3] == 0 && (buf[4] == comQuery || buf[4] == comStmtPrepare || buf[4] == comStmtExecute) {
			queried.Store(true)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// copyReplies forwards the server's side; with cutReplies set, the reply
// to a query is cut half way and both sides are reset.
func (p *tcpProxy) copyReplies(dst, src net.Conn, queried *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && queried.Load() && p.cutReplies.Load() {
			_, _ = dst.Write(buf[:n/2])
			p.cuts.Add(1)
			resetConn(dst)
			resetConn(src)
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// refuse stops the relay listening (connections to it are refused, the
// open ones reset) or has it listen again at the same address.
func (p *tcpProxy) refuse(t *testing.T, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on == p.refusing {
		return
	}
	p.refusing = on
	if on {
		p.cur.Close()
		for c := range p.conns {
			resetConn(c)
		}
		return
	}
	var err error
	for range 50 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", p.addr()); err == nil {
			p.cur = ln
			p.wg.Add(1)
			go p.serve(ln)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the database relay cannot listen again at %s: %v", p.addr(), err)
}

// dbFault switches a database fault on and off and says whether it hit.
type dbFault struct {
	set func(t *testing.T, p *tcpProxy, on bool)
	// hit reports whether the fault reached the daemon since it was set.
	hit func(d *Daemon, p *tcpProxy, logs *faultLog, mark int) bool
}

var (
	dbRefused = dbFault{
		set: func(t *testing.T, p *tcpProxy, on bool) { p.refuse(t, on) },
		hit: func(d *Daemon, _ *tcpProxy, logs *faultLog, mark int) bool {
			return logs.since(mark, "connection refused") || failedOnDatabase(d) > 0
		},
	}
	dbCutMidQuery = dbFault{
		set: func(_ *testing.T, p *tcpProxy, on bool) { p.cutReplies.Store(on) },
		hit: func(_ *Daemon, p *tcpProxy, _ *faultLog, _ int) bool { return p.cuts.Load() > 0 },
	}
)

// failedOnDatabase counts the URLs whose last fetch failed on the
// database.
func failedOnDatabase(d *Daemon) int {
	fc, err := d.Store.CountURLs(context.Background())
	if err != nil {
		return 0
	}
	return fc.ErrorsByClass["database"]
}

// openDBFaulted opens a daemon of site whose database is reached through
// a relay, with dsn's user when set.
func openDBFaulted(t *testing.T, site *wptest.Site, user, password string) (*Daemon, *tcpProxy, *faultLog) {
	t.Helper()
	cfg, dbp := proxiedDBConfig(t, site)
	if user != "" {
		cfg.DBDSN = strings.Replace(cfg.DBDSN, site.Env["WP_DB_USER"]+":"+site.Env["WP_DB_PASSWORD"]+"@", user+":"+password+"@", 1)
	}
	cfg.Crawl.Concurrency = 2
	cfg.Crawl.RatePerSec = 50
	logs := newFaultLog()
	d, err := Open(context.Background(), cfg, logs.logger())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d, dbp, logs
}

// dbFaultPasses runs f during a full pass and during an incremental
// one: it starts once the pass fetched its first page and lasts until
// the pass returns.
func dbFaultPasses(t *testing.T, f dbFault) {
	site := wptest.Get(t)
	site.Lock(t) // compares the index with the site
	for _, kind := range []string{"full", "incremental"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel() // as runSiteFault's
			d, dbp, logs := openDBFaulted(t, site, "", "")
			tr := readSiteTruth(t, site, nil)
			opt, before := faultBaseline(t, d, tr, kind == "incremental")
			if kind == "incremental" {
				// A pass just now: the database names no post as changed,
				// so the pages the sitemaps say changed are looked up in
				// it one by one, during the fault.
				ctx := context.Background()
				id, err := d.Store.StartRunWith(ctx, "incremental", store.RunOptions{Incremental: true})
				if err != nil {
					t.Fatal(err)
				}
				if err := d.Store.FinishRun(ctx, &store.Run{ID: id}); err != nil {
					t.Fatal(err)
				}
			}
			mark := logs.mark()
			var once sync.Once
			opt.Progress = func(done, total int) { once.Do(func() { f.set(t, dbp, true) }) }
			t0 := time.Now()
			run, err := d.Index(context.Background(), opt)
			took := time.Since(t0)
			f.set(t, dbp, false)
			opt.Progress = nil
			if run == nil {
				t.Fatalf("faulted %s pass: no run (%v)", kind, err)
			}
			t.Logf("faulted %s pass: %v; fetched %d, indexed %d, unchanged %d, errors %d, error %q; %d replies cut, %d pages failed on the database",
				kind, took.Round(time.Millisecond), run.Fetched, run.Indexed, run.Unchanged, run.Errors, run.Error, dbp.cuts.Load(), failedOnDatabase(d))
			if !f.hit(d, dbp, logs, mark) {
				t.Fatal("the database fault never reached the pass")
			}
			if l := logs.grep("Fetch failed"); len(l) > 0 {
				t.Logf("log: %.300s", l[len(l)-1])
			}
			faultAftermath(t, d, tr, opt, before, took)
		})
	}
}

// dbFaultServe serves an indexed daemon while f is on: searches keep
// answering from the index, an event sent meanwhile is kept, and once
// the fault is over it is applied and the index is whole.
func dbFaultServe(t *testing.T, f dbFault) {
	site := wptest.Get(t)
	site.Lock(t)
	ctx := context.Background()
	d, dbp, logs := openDBFaulted(t, site, "", "")
	tr := readSiteTruth(t, site, nil)
	faultBaseline(t, d, tr, false)
	c, _ := serveAPI(t, d)
	secret, err := d.WebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	post := pickPost(t, d)
	mark := logs.mark()
	f.set(t, dbp, true)
	evID := fmt.Sprintf("fault-db-serve-%d", time.Now().UnixNano())
	if code, body := c.event(secret, map[string]any{"id": evID, "type": "post_updated", "post_id": post.id, "post_type": "post",
		"url": post.url, "status": "publish", "public": true}); code != 202 {
		t.Fatalf("event during the fault answered %d %s", code, body)
	}
	waitFor(t, freshness.EventTick+20*time.Second, "the fault to reach the event worker", func() bool { return f.hit(d, dbp, logs, mark) })
	var readErrs int
	for range 10 {
		if code, r := c.search(post.title); code != 200 || len(r.Results) == 0 {
			readErrs++
		}
	}
	if readErrs > 0 {
		t.Errorf("%d of 10 searches failed during the fault", readErrs)
	}
	ev, err := d.Store.FindEvent(ctx, evID)
	if err != nil {
		t.Fatalf("the event sent during the fault is not kept: %v", err)
	}
	t.Logf("during the fault: event attempts=%d error=%.200q applied=%v; %d replies cut", ev.Attempts, ev.Error, !ev.AppliedAt.IsZero(), dbp.cuts.Load())

	f.set(t, dbp, false)
	back := time.Now()
	waitFor(t, freshness.EventTick+20*time.Second, "the event to be applied after the fault", func() bool {
		e, err := d.Store.FindEvent(ctx, evID)
		return err == nil && !e.AppliedAt.IsZero()
	})
	t.Logf("event applied %v after the fault ended", time.Since(back).Round(time.Millisecond))
	if st := c.status(); st.Database != "ok" {
		t.Errorf("status database after the fault = %q", st.Database)
	}
	run, err := d.Index(ctx, crawl.IndexOptions{Full: true})
	if err != nil || run.Errors > 0 {
		t.Fatalf("full pass after the fault: %v %+v", err, run)
	}
	checkWhole(t, d, tr, "after the fault ended")
}

// TestFault_DatabaseRefused: the serve subtest is the long-standing
// outage test (the relay resets every connection); the pass subtests
// close the relay's port, so connections are refused.
func TestFault_DatabaseRefused(t *testing.T) {
	t.Run("serve", databaseDownWhileServing)
	t.Run("pass", func(t *testing.T) { dbFaultPasses(t, dbRefused) })
}

func TestFault_DatabaseDropsMidQuery(t *testing.T) {
	t.Run("serve", func(t *testing.T) { dbFaultServe(t, dbCutMidQuery) })
	t.Run("pass", func(t *testing.T) { dbFaultPasses(t, dbCutMidQuery) })
}

// dbRoot runs SQL as the MariaDB administrator, as scripts/lib.sh
// reaches it: over TCP with ASKWPD_DB_ROOT_PASSWORD (or none), else the
// unix socket.
func dbRoot(site *wptest.Site, query string) error {
	var last error
	for _, args := range [][]string{
		{"--protocol=tcp", "-h" + site.Env["WP_DB_HOST"], "-P" + site.Env["WP_DB_PORT"], "-uroot", "-e", query},
		{"--protocol=socket", "-uroot", "-e", query},
	} {
		cmd := exec.Command("mariadb", args...)
		cmd.Env = append(os.Environ(), "MYSQL_PWD="+os.Getenv("ASKWPD_DB_ROOT_PASSWORD"))
		out, err := cmd.CombinedOutput()
		if err == nil {
			return nil
		}
		last = fmt.Errorf("mariadb %s: %w: %s", args[0], err, out)
	}
	return last
}

// readOnlyUser creates a MariaDB user that may only SELECT from the
// site's database, dropped when the test ends.
func readOnlyUser(t *testing.T, site *wptest.Site) (user, password string) {
	t.Helper()
	user = fmt.Sprintf("askwpd_ro_%d", time.Now().UnixNano()%1e9)
	password = fmt.Sprintf("ro-%d", time.Now().UnixNano())
	host := site.Env["WP_DB_HOST"]
	err := dbRoot(site, fmt.Sprintf("CREATE USER '%s'@'%s' IDENTIFIED BY '%s'; GRANT SELECT ON `%s`.* TO '%s'@'%s';",
		user, host, password, site.Env["WP_DB_NAME"], user, host))
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("cannot create a read-only MariaDB user: %v", err)
		}
		t.Skipf("cannot create a read-only MariaDB user here: %v", err)
	}
	t.Cleanup(func() {
		if err := dbRoot(site, fmt.Sprintf("DROP USER IF EXISTS '%s'@'%s';", user, host)); err != nil {
			t.Errorf("dropping the read-only user: %v", err)
		}
	})
	// The fault is real: the user cannot write.
	db, err := sql.Open("mysql", dbDSN(&wptest.Site{Env: map[string]string{"WP_DB_USER": user, "WP_DB_PASSWORD": password,
		"WP_DB_NAME": site.Env["WP_DB_NAME"]}}, net.JoinHostPort(host, site.Env["WP_DB_PORT"])))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec("UPDATE `" + site.Env["WP_TABLE_PREFIX"] + "options` SET option_value = option_value WHERE option_name = 'blogname'")
	if err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("the read-only user could write: %v", err)
	}
	return user, password
}

// TestFault_DatabaseReadOnly runs serve and passes with a database user
// that may only read: askwpd never writes to WordPress's database, so
// everything works as with the site's own user.
func TestFault_DatabaseReadOnly(t *testing.T) {
	site := wptest.Get(t)
	user, password := readOnlyUser(t, site)
	t.Run("pass", func(t *testing.T) {
		site.Lock(t)
		for _, incremental := range []bool{false, true} {
			d, _, _ := openDBFaulted(t, site, user, password)
			tr := readSiteTruth(t, site, nil)
			opt, _ := faultBaseline(t, d, tr, incremental)
			run, err := d.Index(context.Background(), opt)
			if err != nil || run.Errors > 0 || run.Error != "" {
				t.Errorf("%s pass as a read-only user: %v %+v", passKind(incremental), err, run)
			}
			t.Logf("%s pass as a read-only user: fetched %d, errors %d", passKind(incremental), run.Fetched, run.Errors)
			checkWhole(t, d, tr, passKind(incremental)+" pass as a read-only user")
		}
	})
	t.Run("serve", func(t *testing.T) {
		site.Lock(t)
		ctx := context.Background()
		d, _, _ := openDBFaulted(t, site, user, password)
		tr := readSiteTruth(t, site, nil)
		faultBaseline(t, d, tr, false)
		c, _ := serveAPI(t, d)
		secret, err := d.WebhookSecret()
		if err != nil {
			t.Fatal(err)
		}
		post := pickPost(t, d)
		if code, r := c.search(post.title); code != 200 || len(r.Results) == 0 {
			t.Errorf("search as a read-only user: %d, %d results", code, len(r.Results))
		}
		evID := fmt.Sprintf("fault-db-ro-%d", time.Now().UnixNano())
		if code, body := c.event(secret, map[string]any{"id": evID, "type": "post_updated", "post_id": post.id, "post_type": "post",
			"url": post.url, "status": "publish", "public": true}); code != 202 {
			t.Fatalf("event as a read-only user answered %d %s", code, body)
		}
		waitFor(t, freshness.EventTick+20*time.Second, "the event applied as a read-only user", func() bool {
			e, err := d.Store.FindEvent(ctx, evID)
			return err == nil && !e.AppliedAt.IsZero()
		})
		if e, _ := d.Store.FindEvent(ctx, evID); e.Error != "" {
			t.Errorf("event as a read-only user: %q", e.Error)
		}
		if st := c.status(); st.Database != "ok" {
			t.Errorf("status database as a read-only user = %q", st.Database)
		}
		checkWhole(t, d, tr, "serving as a read-only user")
	})
}
