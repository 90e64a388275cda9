package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/wp"
)

// TestGalera_ThreeHeads runs the usual layout of a big site on Galera:
// three web heads, each with an askwpd in cluster mode talking to a
// Galera node of its own, and the test WordPress (on node 1) saving
// posts with the shim in cluster mode, pinging head 1. The cluster is
// ../shared/tools/galera's (scripts/test.sh galera brings it up, with
// the README's tight failure detection, and names it in
// ASKWPD_TEST_GALERA). One cluster serves four cases in turn, each
// waiting for the nodes and the heads to converge before the next:
//
//   - posts published through WordPress are searchable on every head
//     within 1 s (p95 of 5);
//   - the leader's Galera node paused (SIGSTOP) for 10 s: another head
//     leads, posts still reach the others, and after SIGCONT the node
//     rejoins and its head catches up by themselves;
//   - kill -9 of the leader and its node together: another head leads
//     within 30 s, and a post reaches the survivors within 2 s;
//   - 200 edits while the leader's node is killed: every edit reaches
//     every surviving head, and then the restarted one.
//
// Through the whole run every head's leader flag is sampled every
// 100 ms (never two at once), and a trigger records every changelog row
// ever written, so that none is written twice or lost.
func TestGalera_ThreeHeads(t *testing.T) {
	g := openGalera(t)
	site := wptest.Get(t)
	if site.Env["WP_DB_PORT"] != "3311" {
		t.Fatalf("ASKWPD_TEST_WP_ENV must be the WordPress on Galera node 1 (port 3311), not %s", site.Env["WP_DB_PORT"])
	}
	site.Lock(t)
	bin := buildBinary(t)
	ctx := context.Background()
	h := &clusterHarness{t: t, site: site, bin: bin, name: wptest.Word("g", "")}
	h.args = func(n *clNode) []string {
		e := site.Env
		dsn := fmt.Sprintf("%s:%s@tcp(127.0.0.1:%d)/%s", e["WP_DB_USER"], e["WP_DB_PASSWORD"], 3310+n.db, e["WP_DB_NAME"])
		return []string{"--set", "db_dsn=" + dsn, "--set", "crawl.concurrency=3", "--set", "crawl.rate_per_sec=40"}
	}
	h.open(ctx)
	audit := h.audit(ctx, g.dbs[0])
	// Before the heads start: the first pass indexes them.
	burst := h.createPosts(200)

	heads := &galeraHeads{}
	for i := 1; i <= 3; i++ {
		n := h.newNode(fmt.Sprintf("h%d", i), i)
		h.spawn(n)
		heads.set(n)
	}
	for _, n := range heads.all() {
		h.ready(n)
	}
	leaders := sampleLeaders(heads)
	t.Cleanup(func() {
		// A case that failed ends the run: what the flags showed until then.
		if t.Failed() {
			leaders.stop()
			rounds, doubled, first, _ := leaders.result()
			t.Logf("leader flags until the failure: %d rounds of samples, %d with two leaders (first: %s)", rounds, doubled, first)
		}
	})
	h.waitFor("a head leads", 30*time.Second, func() bool { return heads.leader() != nil })
	h.waitFor("the first pass ends", 5*time.Minute, func() bool {
		l := heads.leader()
		return l != nil && l.metric("askwpd_crawl_running") == 0 && l.metric("askwpd_crawl_last_run_finished_timestamp_seconds") > 0
	})
	h.converged(heads.all())
	t.Logf("galera: first pass: %d changelog rows", h.seq(ctx))
	rep := &galeraReport{}
	h.checkStatus(heads.all(), heads.leader(), "Synced")
	rep.idle = idleStatements(heads.all(), 3*time.Second)

	g.caseConvergence(h, heads, rep)
	g.casePause(h, heads, rep)
	g.caseKill(h, heads, rep)
	g.caseBurst(h, heads, burst, rep)

	leaders.stop()
	rep.rounds, rep.double, rep.first, rep.slowest = leaders.result()
	rep.audit = audit.check(ctx)
	rep.log(t)
	if t.Failed() {
		h.dumpLogs()
	}
	if rep.double > 0 {
		t.Errorf("two heads led at once in %d of %d samples (first: %s)", rep.double, rep.rounds, rep.first)
	}
	if a := rep.audit; a.twice > 0 || a.lost > 0 || a.gaps > 0 {
		t.Errorf("changelog: %d rows written twice, %d lost, %d ids never written (of %d ever written)", a.twice, a.lost, a.gaps, a.rows)
	}
}

// galeraReport collects the figures the run measured.
type galeraReport struct {
	convergence                       []time.Duration
	pauseTakeover, pauseLeaderOff     time.Duration
	pauseReach, pauseSynced, pauseAll time.Duration
	pauseUnusable                     bool
	failover, afterKill, rightAfter   time.Duration
	burstFailover                     time.Duration
	burstDrain, burstAll              time.Duration
	rounds, double                    int
	first, slowest                    string
	audit                             auditResult
	// idle is each head's statements a second while nothing happens.
	idle string
}

func (r *galeraReport) log(t *testing.T) {
	c := slices.Clone(r.convergence)
	slices.Sort(c)
	t.Logf("galera: a post on every head: p50 %v, p95 %v (%d posts; each the slowest of the three heads)",
		pct(c, 50).Round(time.Millisecond), pct(c, 95).Round(time.Millisecond), len(c))
	t.Logf("galera: pause: the leader stopped leading %v into it, another led at %v; a post during it reached the others in %v;"+
		" after SIGCONT the node was Synced in %v and every head converged in %v; its head reported its database unusable: %v",
		r.pauseLeaderOff.Round(time.Millisecond), r.pauseTakeover.Round(time.Millisecond), r.pauseReach.Round(time.Millisecond),
		r.pauseSynced.Round(time.Millisecond), r.pauseAll.Round(time.Millisecond), r.pauseUnusable)
	t.Logf("galera: kill -9 of the leader and its node: another led after %v; a post saved right after the kill reached the survivors %v after its commit, one saved once the new leader led %v",
		r.failover.Round(time.Millisecond), r.rightAfter.Round(time.Millisecond), r.afterKill.Round(time.Millisecond))
	t.Logf("galera: 200 edits with the leader's node killed after 50: another led %v after the kill; all on the survivors %v after the last, on the restarted head %v after it",
		r.burstFailover.Round(time.Millisecond), r.burstDrain.Round(time.Millisecond), r.burstAll.Round(time.Millisecond))
	t.Logf("galera: leader flags: %d rounds of samples (every 100 ms, the slowest round %s), %d with two leaders",
		r.rounds, r.slowest, r.double)
	t.Logf("galera: statements a second, idle: %s", r.idle)
	a := r.audit
	t.Logf("galera: changelog: %d rows ever written, %d live; %d written twice, %d lost, %d ids skipped", a.rows, a.live, a.twice, a.lost, a.gaps)
}

// idleStatements is each node's statements a second over d.
func idleStatements(nodes []*clNode, d time.Duration) string {
	q0 := make([]float64, len(nodes))
	for i, n := range nodes {
		q0[i] = n.metric("askwpd_cluster_queries_total")
	}
	time.Sleep(d)
	var out []string
	for i, n := range nodes {
		role := "follower"
		if n.metric("askwpd_cluster_leader") == 1 {
			role = "leader"
		}
		out = append(out, fmt.Sprintf("%s (%s) %.1f", n.name, role, (n.metric("askwpd_cluster_queries_total")-q0[i])/d.Seconds()))
	}
	return strings.Join(out, ", ")
}

// pct is the nearest-rank percentile of sorted durations.
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted) + 99) / 100
	return sorted[max(0, min(len(sorted), i)-1)]
}

// --- the cases ------------------------------------------------------------------

func (g *galera) caseConvergence(h *clusterHarness, heads *galeraHeads, rep *galeraReport) {
	t := h.t
	for i := range 5 {
		p, lags := h.publishAndWait(heads.get(1), heads.all(), wptest.Word(fmt.Sprintf("gc%c", 'a'+i), ""), 15*time.Second)
		worst := time.Duration(0)
		for _, d := range lags {
			worst = max(worst, d)
		}
		t.Logf("post %d on every head after %v (%v)", p.id, worst.Round(time.Millisecond), lags)
		rep.convergence = append(rep.convergence, worst)
	}
	c := slices.Clone(rep.convergence)
	slices.Sort(c)
	if p95 := pct(c, 95); p95 > time.Second {
		t.Errorf("a post on every head: p95 %v, want within 1 s", p95)
	}
}

func (g *galera) casePause(h *clusterHarness, heads *galeraHeads, rep *galeraReport) {
	t := h.t
	l := g.leaderOffNode1(h, heads)
	others := heads.except(l)
	t.Logf("pause: the leader is %s; SIGSTOP of Galera node %d for 10 s", l.name, l.db)
	g.signal(l.db, syscall.SIGSTOP)
	paused := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			g.signal(l.db, syscall.SIGCONT)
		}
	}()
	h.waitFor("the paused node's head stops leading", 10*time.Second, func() bool { return l.metric("askwpd_cluster_leader") == 0 })
	rep.pauseLeaderOff = time.Since(paused)
	h.waitFor("another head leads", 20*time.Second, func() bool { return heads.leader() != nil })
	rep.pauseTakeover = time.Since(paused)
	_, lags := h.publishAndWait(heads.get(1), others, wptest.Word("gp", ""), 10*time.Second)
	for _, d := range lags {
		rep.pauseReach = max(rep.pauseReach, d)
	}
	// The paused node's head still answers, from its index, and says
	// why it does not lead.
	h.waitFor("the paused node's head reports its database unusable", 10*time.Second, func() bool {
		return l.metric("askwpd_cluster_database_usable") == 0
	})
	rep.pauseUnusable = true
	st := l.status()
	if st.Cluster == nil || st.Cluster.Database.Usable || st.Cluster.Role != "follower" {
		t.Errorf("/v1/status of %s during the pause: %+v, want a follower whose database is not usable", l.name, st.Cluster)
	}
	if adm := l.get("/admin"); !strings.Contains(adm, `id="cluster_database" data-usable="false"`) {
		t.Errorf("/admin of %s during the pause does not say its database is not usable:\n%.2000s", l.name, adm)
	}
	time.Sleep(time.Until(paused.Add(10 * time.Second)))
	g.signal(l.db, syscall.SIGCONT)
	resumed = true
	cont := time.Now()
	g.waitSynced(h, 90*time.Second)
	rep.pauseSynced = time.Since(cont)
	h.waitFor("the resumed node's head finds its database usable", 60*time.Second, func() bool {
		return l.metric("askwpd_cluster_database_usable") == 1
	})
	h.converged(heads.all())
	rep.pauseAll = time.Since(cont)
}

func (g *galera) caseKill(h *clusterHarness, heads *galeraHeads, rep *galeraReport) {
	t := h.t
	l := g.leaderOffNode1(h, heads)
	survivors := heads.except(l)
	t.Logf("kill: kill -9 of the leader %s and Galera node %d", l.name, l.db)
	g.kill(l.db)
	if err := l.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	l.wait()
	killed := time.Now()
	// Saved at once: the cluster stalls until it drops the dead node,
	// and the post waits for a new leader.
	_, lags := h.publishAndWait(heads.get(1), survivors, wptest.Word("gk", ""), 30*time.Second)
	for _, d := range lags {
		rep.rightAfter = max(rep.rightAfter, d)
	}
	h.waitFor("another head leads", 30*time.Second, func() bool { return heads.leader() != nil })
	rep.failover = time.Since(killed)
	_, lags = h.publishAndWait(heads.get(1), survivors, wptest.Word("gl", ""), 10*time.Second)
	for _, d := range lags {
		rep.afterKill = max(rep.afterKill, d)
	}
	if rep.failover > 30*time.Second {
		t.Errorf("failover took %v, want within 30 s", rep.failover)
	}
	if rep.afterKill > 2*time.Second {
		t.Errorf("a post after the failover reached the survivors %v after its commit, want within 2 s", rep.afterKill)
	}
	g.restart(h, l.db)
	heads.set(h.restart(l))
	h.converged(heads.all())
}

func (g *galera) caseBurst(h *clusterHarness, heads *galeraHeads, posts map[int64]burstPost, rep *galeraReport) {
	t := h.t
	ctx := context.Background()
	l := g.leaderOffNode1(h, heads)
	survivors := heads.except(l)
	edits := map[int64]string{}
	for id := range posts {
		edits[id] = wptest.Word("gb", "")
	}
	t.Logf("burst: 200 edits through WordPress; Galera node %d, the leader %s's, killed after the first 50", l.db, l.name)
	var killed time.Time
	done := h.editPosts(heads.get(1), edits, 50, func() { g.kill(l.db); killed = time.Now() })
	last := time.Now()
	if done != len(edits) {
		t.Fatalf("burst: %d of %d edits saved", done, len(edits))
	}
	h.waitFor("another head leads", 30*time.Second, func() bool { n := heads.leader(); return n != nil && n != l })
	rep.burstFailover = time.Since(killed)
	var missing []string
	reflected := func(nodes []*clNode) func() bool {
		return func() bool {
			missing = missing[:0]
			lacking := 0
			for _, n := range nodes {
				for id, w := range edits {
					if !n.findsAt(w, posts[id].url) {
						if lacking++; lacking <= 5 {
							missing = append(missing, fmt.Sprintf("%s lacks %d's edit", n.name, id))
						}
					}
				}
			}
			if lacking > 5 {
				missing = append(missing, fmt.Sprintf("%d edits missing in all", lacking))
			}
			return lacking == 0
		}
	}
	h.waitFor("every edit on every surviving head", 3*time.Minute, reflected(survivors), &missing)
	rep.burstDrain = time.Since(last)
	for _, n := range survivors {
		for id, p := range posts {
			if n.findsAt(p.word, p.url) {
				t.Errorf("post %d's text before its edit (%s) is still found on %s", id, p.word, n.name)
			}
		}
	}
	h.waitFor("every event done", 30*time.Second, func() bool { return h.pending(ctx) == 0 })
	g.restart(h, l.db)
	h.waitFor("every edit on the head whose node was killed", 3*time.Minute, reflected([]*clNode{l}), &missing)
	rep.burstAll = time.Since(last)
	h.converged(heads.all())
}

// --- the heads ----------------------------------------------------------------

// galeraHeads are the three heads, h1..h3 on nodes 1..3; a restarted
// head replaces its old self.
type galeraHeads struct {
	mu sync.Mutex
	n  [3]*clNode
}

func (hs *galeraHeads) set(n *clNode) {
	hs.mu.Lock()
	hs.n[n.db-1] = n
	hs.mu.Unlock()
}

func (hs *galeraHeads) get(db int) *clNode {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.n[db-1]
}

func (hs *galeraHeads) all() []*clNode {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return slices.Clone(hs.n[:])
}

func (hs *galeraHeads) except(x *clNode) []*clNode {
	return slices.DeleteFunc(hs.all(), func(n *clNode) bool { return n == x })
}

// leader is the head whose flag says it leads; nil when none does.
func (hs *galeraHeads) leader() *clNode {
	for _, n := range hs.all() {
		if n.metric("askwpd_cluster_leader") == 1 {
			return n
		}
	}
	return nil
}

// leaderOffNode1 waits for a leader and, when it is head 1, whose node
// holds the WordPress that the faults must leave alone, restarts it
// (it gives the lease up) until another head leads.
func (g *galera) leaderOffNode1(h *clusterHarness, heads *galeraHeads) *clNode {
	for try := 0; ; try++ {
		var l *clNode
		h.waitFor("a head leads", 30*time.Second, func() bool { l = heads.leader(); return l != nil })
		if l.db != 1 {
			return l
		}
		if try == 5 {
			h.t.Fatal("head 1 took the lease back five times over")
		}
		l.stop()
		h.waitFor("another head leads", 30*time.Second, func() bool { n := heads.leader(); return n != nil && n.db != 1 })
		heads.set(h.restart(l))
		h.converged(heads.all())
	}
}

// leaderSampler reads every head's leader flag every 100 ms.
type leaderSampler struct {
	stopc, done chan struct{}

	mu              sync.Mutex
	rounds, doubled int
	slowest         time.Duration
	slowestAt       string
	first           string
}

func sampleLeaders(heads *galeraHeads) *leaderSampler {
	s := &leaderSampler{stopc: make(chan struct{}), done: make(chan struct{})}
	client := &http.Client{Timeout: 2 * time.Second}
	read := func(n *clNode) float64 {
		req, _ := http.NewRequest("GET", "http://"+n.listen+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+n.token)
		resp, err := client.Do(req)
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "askwpd_cluster_leader "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		return -1
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stopc:
				return
			case <-t.C:
			}
			start := time.Now()
			nodes := heads.all()
			flags := make([]float64, len(nodes))
			took := make([]time.Duration, len(nodes))
			var wg sync.WaitGroup
			for i, n := range nodes {
				wg.Go(func() {
					t0 := time.Now()
					flags[i] = read(n)
					took[i] = time.Since(t0)
				})
			}
			wg.Wait()
			var leading []string
			for i, f := range flags {
				if f == 1 {
					leading = append(leading, nodes[i].name)
				}
			}
			s.mu.Lock()
			s.rounds++
			if d := time.Since(start); d > s.slowest {
				s.slowest = d
				s.slowestAt = start.Format("15:04:05.000")
				for i, n := range nodes {
					s.slowestAt += fmt.Sprintf(" %s %v", n.name, took[i].Round(time.Millisecond))
				}
			}
			if len(leading) > 1 {
				s.doubled++
				if s.first == "" {
					s.first = start.Format("15:04:05.000") + " " + strings.Join(leading, "+")
				}
			}
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *leaderSampler) stop() {
	select {
	case <-s.stopc:
	default:
		close(s.stopc)
	}
	<-s.done
}

// result is how many rounds were sampled, in how many two heads led
// (the first of them), and the slowest round (when, each head's time).
func (s *leaderSampler) result() (rounds, doubled int, first, slowest string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rounds, s.doubled, s.first, s.slowest.Round(time.Millisecond).String() + " at " + s.slowestAt
}

// --- WordPress ----------------------------------------------------------------

// burstPost is a post of the burst: its word, and its page's URL.
type burstPost struct{ word, url string }

// createPosts publishes n posts with a word each, without the shim (no
// event: the first pass finds them).
func (h *clusterHarness) createPosts(n int) map[int64]burstPost {
	words := make([]string, n)
	for i := range words {
		words[i] = wptest.Word("gs", "")
	}
	out := h.phpIn(h.t.TempDir(), nil, `foreach (array('`+strings.Join(words, "','")+`') as $i => $w) {
		$id = wp_insert_post(array('post_title' => 'Galera burst post '.$i, 'post_status' => 'publish', 'post_author' => 1,
			'post_content' => str_replace('WORD', $w, `+postBody("Before its edit this post says WORD once.")+`)), true);
		if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); }
		echo $id, ' ', $w, ' ', get_permalink($id), "\n";
	}`)
	posts := map[int64]burstPost{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		id, _ := strconv.ParseInt(f[0], 10, 64)
		posts[id] = burstPost{word: f[1], url: f[2]}
	}
	if len(posts) != n {
		h.t.Fatalf("createPosts: %d of %d posts", len(posts), n)
	}
	h.mu.Lock()
	for id := range posts {
		h.posts = append(h.posts, id)
	}
	h.mu.Unlock()
	return posts
}

// editPosts saves each post with its new word through WordPress and the
// shim, one save at a time, each sending its event as its own request
// would; after the first `at` it calls fault, while the rest go on. It
// returns how many saves succeeded.
func (h *clusterHarness) editPosts(ping *clNode, edits map[int64]string, at int, fault func()) int {
	var arr []string
	for id, w := range edits {
		arr = append(arr, fmt.Sprintf("%d => '%s'", id, w))
	}
	code := `foreach (array(` + strings.Join(arr, ", ") + `) as $id => $w) {
		$r = wp_update_post(array('ID' => $id, 'post_content' => str_replace('WORD', $w, ` + postBody("After its edit this post says WORD once.") + `)), true);
		if (is_wp_error($r)) { fwrite(STDERR, $r->get_error_message()); exit(1); }
		Askwpd_Webhooks::flush();
		echo $id, "\n";
	}`
	cmd, stdout := h.phpCmd(ping, code)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	n := 0
	for sc.Scan() {
		if _, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64); err == nil {
			n++
			if n == at {
				fault()
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		h.t.Fatalf("editPosts: %v: %s", err, stderr.String())
	}
	return n
}

// --- the Galera cluster ---------------------------------------------------------

// galera is the three-node cluster of ../shared/tools/galera under
// GALERA_BASE, which the test faults: the nodes' processes are the ones
// up.sh started (their pid files), restarted with its lib.sh.
type galera struct {
	t     *testing.T
	base  string
	tools string
	dbs   [3]*sql.DB
	// killed are the nodes this test killed and has not restarted.
	killed map[int]bool
}

func openGalera(t *testing.T) *galera {
	base := os.Getenv("ASKWPD_TEST_GALERA")
	if base == "" {
		t.Skip("ASKWPD_TEST_GALERA (the Galera cluster's GALERA_BASE) is not set; scripts/test.sh galera sets it")
	}
	tools := filepath.Join(wptest.RepoRoot(), "..", "shared", "tools", "galera")
	if _, err := os.Stat(filepath.Join(tools, "lib.sh")); err != nil {
		t.Skipf("no ../shared/tools/galera: %v", err)
	}
	g := &galera{t: t, base: base, tools: tools, killed: map[int]bool{}}
	for i := range g.dbs {
		db, err := wp.OpenWriter(context.Background(), fmt.Sprintf("probe:probe@tcp(127.0.0.1:%d)/", 3311+i))
		if err != nil {
			t.Fatalf("Galera node %d: %v", i+1, err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		g.dbs[i] = db
	}
	for n := 1; n <= 3; n++ {
		if st, _, size := g.state(n); st != "Synced" || size != 3 {
			t.Fatalf("Galera node %d is %s in a cluster of %d; want Synced, 3 (run scripts/test.sh galera)", n, st, size)
		}
	}
	// A failed run leaves the cluster whole for the next.
	t.Cleanup(func() {
		for n := 1; n <= 3; n++ {
			g.signal(n, syscall.SIGCONT)
			if g.killed[n] {
				g.restart(nil, n)
			}
		}
	})
	return g
}

func (g *galera) pid(n int) int {
	b, err := os.ReadFile(filepath.Join(g.base, fmt.Sprintf("node%d", n), "mariadbd.pid.launched"))
	if err != nil {
		g.t.Fatalf("Galera node %d: %v", n, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func (g *galera) signal(n int, sig syscall.Signal) {
	if err := syscall.Kill(g.pid(n), sig); err != nil && sig != syscall.SIGCONT {
		g.t.Fatalf("signal %v to Galera node %d: %v", sig, n, err)
	}
}

// kill sends SIGKILL to node n and waits for it to be gone (or a zombie:
// its parent is gone, and nobody may reap it).
func (g *galera) kill(n int) {
	pid := g.pid(n)
	g.signal(n, syscall.SIGKILL)
	g.killed[n] = true
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.t.Fatalf("Galera node %d (pid %d) still runs 10 s after SIGKILL", n, pid)
}

// restart starts a killed node with lib.sh's restart_node (its position
// recovered first, so it rejoins by IST) and waits for the cluster to
// be whole. h is nil in the cleanup.
func (g *galera) restart(h *clusterHarness, n int) {
	cmd := exec.Command("bash", "-c", `. ./lib.sh && restart_node "$1" && wait_synced "$1" 120`, "restart", strconv.Itoa(n))
	cmd.Dir = g.tools
	cmd.Env = append(os.Environ(), "GALERA_BASE="+g.base)
	out, err := cmd.CombinedOutput()
	if err != nil {
		g.t.Errorf("restart Galera node %d: %v\n%s", n, err, out)
		return
	}
	delete(g.killed, n)
	if h != nil {
		g.waitSynced(h, 60*time.Second)
	}
}

// state is node n's wsrep_local_state_comment, wsrep_cluster_status and
// wsrep_cluster_size, or "unreachable".
func (g *galera) state(n int) (state, status string, size int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rows, err := g.dbs[n-1].QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment', 'wsrep_cluster_status', 'wsrep_cluster_size')")
	if err != nil {
		return "unreachable", "", 0
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if rows.Scan(&k, &v) != nil {
			break
		}
		switch k {
		case "wsrep_local_state_comment":
			state = v
		case "wsrep_cluster_status":
			status = v
		case "wsrep_cluster_size":
			size, _ = strconv.Atoi(v)
		}
	}
	return state, status, size
}

// waitSynced waits until every node is Synced in a primary component of
// three.
func (g *galera) waitSynced(h *clusterHarness, limit time.Duration) {
	var last string
	h.waitFor("every Galera node Synced", limit, func() bool {
		last = ""
		ok := true
		for n := 1; n <= 3; n++ {
			st, status, size := g.state(n)
			last += fmt.Sprintf(" node%d=%s/%s/%d", n, st, status, size)
			ok = ok && st == "Synced" && status == "Primary" && size == 3
		}
		return ok
	})
	h.t.Logf("galera:%s", last)
}

// --- the changelog's history ---------------------------------------------------

// changelogAudit is a table that a trigger fills with every changelog
// row as it is written, on the node that writes it (the trigger does not
// run again where the row is replicated): the changelog itself keeps a
// URL's last row only.
type changelogAudit struct {
	h     *clusterHarness
	table string
}

type auditResult struct {
	rows, live, twice, lost, gaps int
}

// admin creates the trigger: with binary logging on (Galera), that takes
// SUPER, which the WordPress user lacks.
func (h *clusterHarness) audit(ctx context.Context, admin *sql.DB) *changelogAudit {
	t := h.t
	cl := h.cl.Tables().Changelog
	a := &changelogAudit{h: h, table: cl + "_audit"}
	db := "`" + h.site.Env["WP_DB_NAME"] + "`."
	for _, q := range []string{
		"CREATE TABLE " + db + "`" + a.table + "` (seq BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, id BIGINT UNSIGNED NOT NULL," +
			" url_hash BINARY(32) NOT NULL, version BINARY(32) NOT NULL, op CHAR(1) NOT NULL, node VARCHAR(64) NOT NULL) ENGINE=InnoDB",
		"CREATE TRIGGER " + db + "`" + a.table + "_ins` AFTER INSERT ON " + db + "`" + cl + "` FOR EACH ROW INSERT INTO " + db + "`" + a.table +
			"` (id, url_hash, version, op, node) VALUES (NEW.id, NEW.url_hash, NEW.version, NEW.op, NEW.node)",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("audit: %v", err)
		}
	}
	t.Cleanup(func() { h.db.ExecContext(context.Background(), "DROP TABLE IF EXISTS `"+a.table+"`") })
	return a
}

// check counts rows written twice (a URL's row with the version of the
// URL's row before it), rows lost (gone from the changelog with no newer
// row for their URL) and ids never written (seq counts every id given).
func (a *changelogAudit) check(ctx context.Context) auditResult {
	t := a.h.t
	db := a.h.db
	var r auditResult
	rows, err := db.QueryContext(ctx, "SET STATEMENT wsrep_sync_wait = 1 FOR SELECT id, url_hash, version FROM `"+a.table+"` ORDER BY url_hash, id")
	if err != nil {
		t.Fatal(err)
	}
	var prevHash, prevVersion []byte
	ids := map[int64]int{}
	for rows.Next() {
		var (
			id         int64
			hash, vers []byte
		)
		if err := rows.Scan(&id, &hash, &vers); err != nil {
			t.Fatal(err)
		}
		r.rows++
		ids[id]++
		if bytes.Equal(hash, prevHash) && bytes.Equal(vers, prevVersion) {
			r.twice++
		}
		prevHash, prevVersion = hash, vers
	}
	rows.Close()
	for _, c := range ids {
		if c > 1 {
			r.twice += c - 1
		}
	}
	seq := a.h.seq(ctx)
	for id := int64(1); id <= seq; id++ {
		if ids[id] == 0 {
			r.gaps++
		}
	}
	cl := a.h.cl.Tables().Changelog
	if err := db.QueryRowContext(ctx, "SET STATEMENT wsrep_sync_wait = 1 FOR SELECT COUNT(*) FROM `"+a.table+"` a WHERE"+
		" NOT EXISTS (SELECT 1 FROM `"+cl+"` c WHERE c.id = a.id) AND NOT EXISTS (SELECT 1 FROM `"+a.table+"` b WHERE b.url_hash = a.url_hash AND b.id > a.id)").
		Scan(&r.lost); err != nil {
		t.Fatal(err)
	}
	r.live = int(a.h.rows(ctx))
	return r
}

// phpCmd is php's command, for code whose output is read as it runs.
func (h *clusterHarness) phpCmd(ping *clNode, code string) (*exec.Cmd, io.Reader) {
	script := h.phpScript(h.plugins, ping, code)
	cmd := exec.Command("php", "-r", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	return cmd, out
}
