package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
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

	"github.com/askwp/askwpd/cluster"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/wp"
)

// TestCluster_ThreeNodes runs three `askwpd serve` processes in cluster
// mode against the one test WordPress, each with its own state dir and
// port, and tables of their own (a cluster name made up for the run,
// dropped at the end). It kills the leader mid-crawl, starts a node late,
// publishes posts through WordPress with the shim's cluster path, wipes a
// node's state dir, and compares search results across the nodes.
func TestCluster_ThreeNodes(t *testing.T) {
	site := wptest.Get(t)
	// Posts are published and deleted: no other test may compare the
	// index with the site meanwhile.
	site.Lock(t)
	bin := buildBinary(t)
	ctx := context.Background()

	h := &clusterHarness{t: t, site: site, bin: bin, name: wptest.Word("t", "")}
	h.open(ctx)

	// A leads; B follows. The crawl is slowed so that it is still running
	// when A is killed.
	a := h.start("a")
	h.waitFor("a leads", 30*time.Second, func() bool { return a.metric("askwpd_cluster_leader") == 1 })
	b := h.start("b")
	h.waitFor("a mid-crawl", 60*time.Second, func() bool {
		return a.metric(`askwpd_cluster_changelog_rows_total{op="published"}`) >= 4 && a.metric("askwpd_crawl_running") == 1
	})

	// An event while A leads: A may take it and die before finishing it.
	word1 := wptest.Word("clua", "")
	p1 := h.publish(a, word1)
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.wait()
	killed := time.Now()
	publishedByA := h.seq(ctx)
	h.waitFor("b takes over", 30*time.Second, func() bool { return b.metric("askwpd_cluster_leader") == 1 })
	failover := time.Since(killed)
	t.Logf("failover: b leads %v after a was killed (lease_ttl %s); a had published %d rows", failover.Round(time.Millisecond), h.ttl, publishedByA)
	if failover > 30*time.Second {
		t.Errorf("failover took %v, want within 30 s", failover)
	}
	h.waitFor("b's pass ends", 90*time.Second, func() bool {
		return b.metric("askwpd_crawl_running") == 0 && b.metric("askwpd_crawl_last_run_finished_timestamp_seconds") > 0
	})
	h.waitFor("the event A left is applied by b", 30*time.Second, func() bool { return b.finds(word1, p1.id) })

	// Nothing indexed twice: every row ever published (the lease's seq)
	// is still in the changelog, so no URL was published a second time
	// (a URL's newer row deletes its older one).
	seq, rows := h.seq(ctx), h.rows(ctx)
	t.Logf("changelog: %d rows published in all, %d live; b sent %.0f requests to the site (sitemaps, feed, and the pages a had not published)", seq, rows, b.metric("askwpd_site_requests_total"))
	if lb, err := os.ReadFile(b.log); err == nil {
		for _, l := range strings.Split(string(lb), "\n") {
			if strings.Contains(l, "pass") || strings.Contains(l, "Pass") {
				t.Log(l)
			}
		}
	}
	if seq != rows {
		t.Errorf("%d rows were published for %d pages: a page was indexed twice across the failover", seq, rows)
	}
	if n := h.pending(ctx); n != 0 {
		t.Errorf("%d events not done after the failover", n)
	}

	// A comes back as a follower; C starts late. Both catch up.
	a = h.restart(a)
	c := h.start("c")
	nodes := []*clNode{a, b, c}
	h.converged(nodes)
	h.checkStatus(nodes, b, "")

	// Published through WordPress: searchable on every node within 1 s of
	// the commit. Each ping goes to another node.
	for i, ping := range nodes {
		word := wptest.Word(fmt.Sprintf("clu%c", 'b'+i), "")
		p, lags := h.publishAndWait(ping, nodes, word, 15*time.Second)
		for _, n := range nodes {
			t.Logf("post %d pinged to %s: searchable on %s after %v", p.id, ping.name, n.name, lags[n.name].Round(time.Millisecond))
			if lags[n.name] > time.Second {
				t.Errorf("post %d searchable on %s %v after its commit, want within 1 s", p.id, n.name, lags[n.name])
			}
		}
	}

	// C's state dir wiped: it rebuilds from the changelog, fetching no page.
	c.stop()
	if err := os.RemoveAll(c.dir); err != nil {
		t.Fatal(err)
	}
	c = h.restart(c)
	nodes = []*clNode{a, b, c}
	h.converged(nodes)
	if n := c.metric("askwpd_site_requests_total"); n != 0 {
		t.Errorf("the rebuilt node sent %v requests to the site, want none", n)
	}

	// Identical search results on every node.
	queries := []string{word1}
	for _, p := range site.Truth(t).Public {
		if f := strings.Fields(p.Title); len(f) > 0 && len(queries) < 10 {
			queries = append(queries, strings.Join(f[:min(2, len(f))], " "))
		}
	}
	for _, q := range queries {
		want := a.search(q)
		for _, n := range nodes[1:] {
			if got := n.search(q); got != want {
				t.Errorf("search %q differs between a and %s:\na: %.600s\n%s: %.600s", q, n.name, want, n.name, got)
			}
		}
	}

	// Deleted through WordPress: gone from every node.
	h.deletePosts(b)
	h.waitFor("deletions reach every node", 15*time.Second, func() bool {
		for _, n := range nodes {
			if n.finds(word1, 0) {
				return false
			}
		}
		return true
	})
}

// publishAndWait publishes a post with word through WordPress, pinging
// ping, and returns how long after its commit each node found it,
// failing the test when one has not within limit.
func (h *clusterHarness) publishAndWait(ping *clNode, nodes []*clNode, word string, limit time.Duration) (published, map[string]time.Duration) {
	h.t.Helper()
	var (
		mu    sync.Mutex
		found = map[string]time.Time{}
		wg    sync.WaitGroup
	)
	stop := make(chan struct{})
	for _, n := range nodes {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if n.finds(word, 0) {
					mu.Lock()
					found[n.name] = time.Now()
					mu.Unlock()
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	p := h.publish(ping, word)
	deadline := time.After(limit)
	for {
		mu.Lock()
		k := len(found)
		mu.Unlock()
		if k == len(nodes) {
			break
		}
		select {
		case <-deadline:
			close(stop)
			wg.Wait()
			h.dumpLogs()
			h.t.Fatalf("post %d (%s) not searchable on every node within %v: %v", p.id, word, limit, found)
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(stop)
	wg.Wait()
	lags := map[string]time.Duration{}
	for name, at := range found {
		lags[name] = at.Sub(p.committed)
	}
	return p, lags
}

// clusterHarness holds one run's cluster: its tables and its nodes.
type clusterHarness struct {
	t       *testing.T
	site    *wptest.Site
	bin     string
	name    string
	ttl     string
	plugins string
	cl      *cluster.Cluster
	db      *sql.DB
	// args are more flags for each node's serve (its database, its
	// crawl); the default crawls one page at a time.
	args func(n *clNode) []string

	mu    sync.Mutex
	posts []int64
	logs  []string
}

type clNode struct {
	h    *clusterHarness
	name string
	// db is which database the node is given (its Galera node); 0 for
	// the site's own.
	db          int
	dir, listen string
	log         string
	cmd         *exec.Cmd
	done        chan struct{}
	token       string
}

// open creates the run's tables, and a plugin dir whose askwpd-companion
// is this tree's shim, for the PHP that publishes posts.
func (h *clusterHarness) open(ctx context.Context) {
	t := h.t
	env := h.site.Env
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/%s", env["WP_DB_USER"], env["WP_DB_PASSWORD"], net.JoinHostPort(strings.Split(env["WP_DB_HOST"], ":")[0], env["WP_DB_PORT"]), env["WP_DB_NAME"])
	db, err := wp.OpenWriter(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h.db = db
	prefix := env["WP_TABLE_PREFIX"]
	if prefix == "" {
		prefix = "wp_"
	}
	if h.cl, err = cluster.Open(ctx, db, prefix, h.name); err != nil {
		t.Fatal(err)
	}
	// Runs last: the posts are deleted, through the tables, before.
	t.Cleanup(func() {
		if err := h.cl.Drop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	h.ttl = "4s"
	h.plugins = t.TempDir()
	if err := os.Symlink(filepath.Join(wptest.RepoRoot(), "wp-plugin-shim"), filepath.Join(h.plugins, "askwpd-companion")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.deletePosts(nil) })
}

func (h *clusterHarness) start(name string) *clNode {
	n := h.newNode(name, 0)
	h.run(n)
	return n
}

// newNode makes a node that is not started yet, given database db.
func (h *clusterHarness) newNode(name string, db int) *clNode {
	base := h.t.TempDir()
	n := &clNode{h: h, name: name, db: db, dir: filepath.Join(base, "state"), log: filepath.Join(base, "log"), listen: freePort(h.t)}
	h.logs = append(h.logs, n.log)
	h.t.Cleanup(func() { n.stop() })
	return n
}

func (h *clusterHarness) restart(n *clNode) *clNode {
	n2 := &clNode{h: h, name: n.name, db: n.db, dir: n.dir, log: n.log, listen: n.listen}
	h.run(n2)
	h.t.Cleanup(func() { n2.stop() })
	return n2
}

func (h *clusterHarness) run(n *clNode) {
	h.spawn(n)
	h.ready(n)
}

// spawn starts the node's serve process without waiting for it.
func (h *clusterHarness) spawn(n *clNode) {
	t := h.t
	logf, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	n.cmd = exec.Command(h.bin, append([]string{"serve", "--state-dir", n.dir, "--listen", n.listen}, h.config(n)...)...)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.done = make(chan struct{})
	go func() {
		n.cmd.Wait()
		logf.Close()
		close(n.done)
	}()
}

// config is the node's flags but the state dir and the address.
func (h *clusterHarness) config(n *clNode) []string {
	args := []string{"--wp-root", h.site.Root(), "--set", "schedule.disabled=true", "--set", "cluster.mode=mariadb",
		"--set", "cluster.name=" + h.name, "--set", "cluster.lease_ttl=" + h.ttl}
	if h.args != nil {
		return append(args, h.args(n)...)
	}
	return append(args, "--set", "crawl.concurrency=1")
}

// checkStatus checks each node's cluster status: its role, the one
// leader every node names, the changelog applied to its end, and the
// database (galera names the Galera state each must be in, "" for a
// single MariaDB); and doctor's cluster line for a node of the same
// configuration.
func (h *clusterHarness) checkStatus(nodes []*clNode, leader *clNode, galera string) {
	t := h.t
	t.Helper()
	var lead *apiCluster
	var seen []string
	// The status is as each node last read the lease, within a second.
	h.waitFor("every node's status agrees", 10*time.Second, func() bool {
		seq := h.seq(context.Background())
		lead = leader.status().Cluster
		seen = seen[:0]
		if lead == nil || lead.Role != "leader" || lead.Leader != lead.Node {
			seen = append(seen, fmt.Sprintf("the leader %s: %+v", leader.name, lead))
			return false
		}
		for _, n := range nodes {
			c := n.status().Cluster
			switch {
			case c == nil:
				seen = append(seen, n.name+" has no cluster status")
			case (n == leader) != (c.Role == "leader") || c.Leader != lead.Node:
				seen = append(seen, fmt.Sprintf("%s: role %s, leader %s; want led by %s", n.name, c.Role, c.Leader, lead.Node))
			case c.AppliedID != seq || c.NewestID != seq || !c.Database.Usable:
				seen = append(seen, fmt.Sprintf("%s: applied %d of %d, database usable %v; changelog at %d", n.name, c.AppliedID, c.NewestID, c.Database.Usable, seq))
			case galera == "" && c.Database.Galera != nil, galera != "" && (c.Database.Galera == nil || c.Database.Galera.State != galera):
				seen = append(seen, fmt.Sprintf("%s: galera %+v, want %q", n.name, c.Database.Galera, galera))
			}
		}
		return len(seen) == 0
	}, &seen)
	n := nodes[len(nodes)-1]
	out, _ := exec.Command(h.bin, append([]string{"doctor", "--state-dir", t.TempDir()}, h.config(n)...)...).CombinedOutput()
	want := "ok   cluster on a single MariaDB; leader " + lead.Node
	if galera != "" {
		want = "ok   cluster on Galera node node" + strconv.Itoa(n.db) + ": " + galera + ", Primary, 3 nodes"
	}
	if !strings.Contains(string(out), want) {
		t.Errorf("askwpd doctor for %s lacks %q:\n%s", n.name, want, out)
	}
}

// ready waits for a spawned node to answer, and reads its token.
func (h *clusterHarness) ready(n *clNode) {
	t := h.t
	h.waitFor(n.name+" answers", 30*time.Second, func() bool {
		select {
		case <-n.done:
			b, _ := os.ReadFile(n.log)
			t.Fatalf("%s exited at start:\n%s", n.name, b[max(0, len(b)-3000):])
		default:
		}
		resp, err := http.Get("http://" + n.listen + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	tok, err := os.ReadFile(filepath.Join(n.dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	n.token = strings.TrimSpace(string(tok))
}

func (n *clNode) wait() { <-n.done }

func (n *clNode) stop() {
	if n.cmd == nil {
		return
	}
	select {
	case <-n.done:
		return
	default:
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(20 * time.Second):
		n.cmd.Process.Kill()
		<-n.done
	}
}

// waitFor polls cond until it holds, failing the test (with the nodes'
// logs' ends, and what cond last saw when it notes it in state) after
// limit.
func (h *clusterHarness) waitFor(what string, limit time.Duration, cond func() bool, state ...*[]string) {
	h.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			h.dumpLogs()
			for _, s := range state {
				h.t.Logf("%s: last seen: %s", what, strings.Join(*s, "; "))
			}
			h.t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// dumpLogs logs the end of every node's log, less the searches the
// test sent.
func (h *clusterHarness) dumpLogs() {
	for _, l := range h.logs {
		b, _ := os.ReadFile(l)
		lines := slices.DeleteFunc(strings.Split(string(b), "\n"), func(s string) bool { return strings.Contains(s, `"msg":"Tool call"`) })
		h.t.Logf("%s:\n%s", l, strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
}

// metric reads one sample of the node's /metrics ("name" or
// `name{label="v"}`); -1 when absent or the node does not answer.
func (n *clNode) metric(key string) float64 {
	req, _ := http.NewRequest("GET", "http://"+n.listen+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+n.token)
	resp, err := testClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// status reads the node's /v1/status.
func (n *clNode) status() apiStatus {
	var st apiStatus
	if err := json.Unmarshal([]byte(n.get("/v1/status")), &st); err != nil {
		n.h.t.Errorf("%s /v1/status: %v", n.name, err)
	}
	return st
}

type apiStatus struct {
	Cluster *apiCluster `json:"cluster"`
}

// apiCluster is the cluster part of /v1/status, as a client reads it.
type apiCluster struct {
	Node     string `json:"node"`
	Role     string `json:"role"`
	Leader   string `json:"leader"`
	Database struct {
		Usable bool   `json:"usable"`
		Error  string `json:"error"`
		Galera *struct {
			State  string `json:"state"`
			Status string `json:"cluster_status"`
		} `json:"galera"`
	} `json:"database"`
	AppliedID int64 `json:"changelog_applied_id"`
	NewestID  int64 `json:"changelog_newest_id"`
}

// findsAt reports whether a search for word on the node returns the page
// at url.
func (n *clNode) findsAt(word, url string) bool {
	var rs []struct {
		URL string `json:"url"`
	}
	if json.Unmarshal([]byte(n.search(word)), &rs) != nil {
		return false
	}
	return slices.ContainsFunc(rs, func(r struct {
		URL string `json:"url"`
	}) bool {
		return r.URL == url
	})
}

// get returns the body of a GET with the node's token.
func (n *clNode) get(path string) string {
	req, _ := http.NewRequest("GET", "http://"+n.listen+path, nil)
	req.Header.Set("Authorization", "Bearer "+n.token)
	resp, err := testClient.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// testClient bounds each request to a node: one that hangs fails the
// poll that sent it, which tries again, rather than holding it.
var testClient = &http.Client{Timeout: 10 * time.Second}

// search runs search_site and returns what must agree across nodes: each
// result's URL, score, passage and offsets.
func (n *clNode) search(q string) string {
	body, _ := json.Marshal(map[string]any{"query": q, "limit": 10})
	req, _ := http.NewRequest("POST", "http://"+n.listen+"/v1/tools/search_site", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+n.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	var r struct {
		Results []struct {
			URL     string  `json:"url"`
			Score   float64 `json:"score"`
			Passage string  `json:"passage"`
			Start   int     `json:"start"`
			End     int     `json:"end"`
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return "error: " + err.Error()
	}
	out, _ := json.Marshal(r.Results)
	return string(out)
}

// finds reports whether a search for word on the node returns the post
// (or, for id 0, anything).
func (n *clNode) finds(word string, id int64) bool {
	res := n.search(word)
	if strings.HasPrefix(res, "error") || res == "null" || res == "[]" {
		return false
	}
	return id == 0 || strings.Contains(res, "p="+strconv.FormatInt(id, 10)) || strings.Contains(strings.ToLower(res), word)
}

type published struct {
	id        int64
	committed time.Time
}

// publish creates a post through WordPress's PHP API with this tree's
// shim loaded in cluster mode, pinging node ping.
func (h *clusterHarness) publish(ping *clNode, word string) published {
	out := h.php(ping, `$id = wp_insert_post(array('post_title' => 'Cluster check `+word+`', 'post_status' => 'publish', 'post_author' => 1,
		'post_content' => `+postBody("The word "+word+" is written once, for the cluster test.")+`), true);
		if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); }
		echo $id, ' ', sprintf('%.6f', microtime(true));`)
	f := strings.Fields(out)
	if len(f) < 2 {
		h.t.Fatalf("publish: %q", out)
	}
	id, _ := strconv.ParseInt(f[len(f)-2], 10, 64)
	sec, _ := strconv.ParseFloat(f[len(f)-1], 64)
	h.mu.Lock()
	h.posts = append(h.posts, id)
	h.mu.Unlock()
	return published{id: id, committed: time.Unix(0, int64(sec*1e9))}
}

// postBody is a PHP string of a post's content as the block editor saves
// it: three paragraphs, the first one given. A single bare paragraph is
// extracted empty on block themes for now, and these tests are about the
// cluster, not about that page.
func postBody(first string) string {
	return `"<!-- wp:paragraph -->\n<p>` + first + `</p>\n<!-- /wp:paragraph -->\n\n` +
		`<!-- wp:paragraph -->\n<p>A web head saved this post through WordPress; the leader fetched its page, extracted it and published it to the changelog, which every head applies to its own index.</p>\n<!-- /wp:paragraph -->\n\n` +
		`<!-- wp:paragraph -->\n<p>The test searches each head for the word until every one finds it.</p>\n<!-- /wp:paragraph -->"`
}

// deletePosts deletes the posts the test published, through WordPress,
// so the shim writes their events to the tables (never to the outbox
// the other tests share).
func (h *clusterHarness) deletePosts(ping *clNode) {
	h.mu.Lock()
	ids := h.posts
	h.posts = nil
	h.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	var s []string
	for _, id := range ids {
		s = append(s, strconv.FormatInt(id, 10))
	}
	h.php(ping, `foreach (array(`+strings.Join(s, ",")+`) as $id) { wp_delete_post($id, true); }`)
}

// php runs code inside the test WordPress with this tree's shim as the
// active plugin, in cluster mode for this run's tables, pinging ping.
func (h *clusterHarness) php(ping *clNode, code string) string {
	return h.phpIn(h.plugins, ping, code)
}

// phpIn is php with the plugins of dir: an empty one loads no shim, and
// the code's changes send no event.
func (h *clusterHarness) phpIn(dir string, ping *clNode, code string) string {
	var stderr bytes.Buffer
	cmd := exec.Command("php", "-r", h.phpScript(dir, ping, code))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		h.t.Fatalf("php: %v: %s %s", err, out, stderr.String())
	}
	return string(out)
}

// phpScript is the PHP that runs code inside the test WordPress with the
// plugins of dir, in cluster mode for this run's tables, pinging ping.
func (h *clusterHarness) phpScript(dir string, ping *clNode, code string) string {
	q := func(s string) string {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
	}
	pre := "define('WP_PLUGIN_DIR', " + q(dir) + "); define('ASKWPD_CLUSTER', " + q(h.name) + ");"
	if ping != nil {
		secret, err := os.ReadFile(filepath.Join(ping.dir, "webhook.secret"))
		if err != nil {
			h.t.Fatal(err)
		}
		pre += "define('ASKWPD_URL', " + q("http://"+ping.listen) + "); define('ASKWPD_WEBHOOK_SECRET', " + q(strings.TrimSpace(string(secret))) + ");"
	} else {
		// No daemon to ping: a closed port fails at once.
		pre += "define('ASKWPD_URL', 'http://127.0.0.1:9'); define('ASKWPD_WEBHOOK_SECRET', '');"
	}
	return pre + `$_SERVER['HTTP_HOST'] = ` + q(h.site.Host()) + `; $_SERVER['REQUEST_URI'] = '/'; define('WP_USE_THEMES', false); require ` +
		q(strings.TrimRight(h.site.Root(), "/")+"/wp-load.php") + "; " + code
}

// seq is how many changelog rows were ever published.
func (h *clusterHarness) seq(ctx context.Context) int64 {
	l, err := h.cl.Leader(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	return l.Seq
}

func (h *clusterHarness) rows(ctx context.Context) int64 {
	es, err := h.cl.Tail(ctx, 0, 1<<20)
	if err != nil {
		h.t.Fatal(err)
	}
	return int64(len(es))
}

func (h *clusterHarness) pending(ctx context.Context) int {
	evs, err := h.cl.PendingEvents(ctx, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	return len(evs)
}

// converged waits until every node has applied the whole changelog and
// holds as many documents as the changelog's live pages.
func (h *clusterHarness) converged(nodes []*clNode) {
	h.t.Helper()
	ctx := context.Background()
	var state []string
	h.waitFor("nodes converge", 60*time.Second, func() bool {
		seq := float64(h.seq(ctx))
		var docs []float64
		state = []string{fmt.Sprintf("changelog seq %.0f", seq)}
		ok := true
		for _, n := range nodes {
			applied, pages, indexed := n.metric("askwpd_cluster_changelog_applied_id"), n.metric("askwpd_cluster_pages"), n.metric("askwpd_index_documents")
			state = append(state, fmt.Sprintf("%s applied %.0f, %.0f pages, %.0f documents", n.name, applied, pages, indexed))
			ok = ok && applied == seq && indexed == pages
			docs = append(docs, pages)
		}
		return ok && !slices.ContainsFunc(docs, func(d float64) bool { return d != docs[0] || d <= 0 })
	}, &state)
}
