package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

	// Published through WordPress: searchable on every node within 1 s of
	// the commit. Each ping goes to another node.
	for i, ping := range nodes {
		word := wptest.Word(fmt.Sprintf("clu%c", 'b'+i), "")
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
		deadline := time.After(15 * time.Second)
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
				t.Fatalf("post %d (%s) not searchable on every node within 15 s: %v", p.id, word, found)
			case <-time.After(10 * time.Millisecond):
			}
		}
		close(stop)
		wg.Wait()
		for _, n := range nodes {
			lag := found[n.name].Sub(p.committed)
			t.Logf("post %d pinged to %s: searchable on %s after %v", p.id, ping.name, n.name, lag.Round(time.Millisecond))
			if lag > time.Second {
				t.Errorf("post %d searchable on %s %v after its commit, want within 1 s", p.id, n.name, lag)
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

// clusterHarness holds one run's cluster: its tables and its nodes.
type clusterHarness struct {
	t       *testing.T
	site    *wptest.Site
	bin     string
	name    string
	ttl     string
	plugins string
	cl      *cluster.Cluster

	mu    sync.Mutex
	posts []int64
	logs  []string
}

type clNode struct {
	h           *clusterHarness
	name        string
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
	dsn := fmt.Sprintf("%s:%s@tcp(%s:%s)/%s", env["WP_DB_USER"], env["WP_DB_PASSWORD"], env["WP_DB_HOST"], env["WP_DB_PORT"], env["WP_DB_NAME"])
	db, err := wp.OpenWriter(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
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
	base := h.t.TempDir()
	n := &clNode{h: h, name: name, dir: filepath.Join(base, "state"), log: filepath.Join(base, "log"), listen: freePort(h.t)}
	h.logs = append(h.logs, n.log)
	h.run(n)
	h.t.Cleanup(func() { n.stop() })
	return n
}

func (h *clusterHarness) restart(n *clNode) *clNode {
	n2 := &clNode{h: h, name: n.name, dir: n.dir, log: n.log, listen: n.listen}
	h.run(n2)
	h.t.Cleanup(func() { n2.stop() })
	return n2
}

func (h *clusterHarness) run(n *clNode) {
	t := h.t
	logf, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	n.cmd = exec.Command(h.bin, "serve", "--wp-root", h.site.Root(), "--state-dir", n.dir, "--listen", n.listen,
		"--set", "schedule.disabled=true", "--set", "cluster.mode=mariadb", "--set", "cluster.name="+h.name,
		"--set", "cluster.lease_ttl="+h.ttl, "--set", "crawl.concurrency=1")
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
	h.waitFor(n.name+" answers", 30*time.Second, func() bool {
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
// logs' ends) after limit.
func (h *clusterHarness) waitFor(what string, limit time.Duration, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			for _, l := range h.logs {
				b, _ := os.ReadFile(l)
				h.t.Logf("%s:\n%s", l, b[max(0, len(b)-6000):])
			}
			h.t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// metric reads one sample of the node's /metrics ("name" or
// `name{label="v"}`); -1 when absent or the node does not answer.
func (n *clNode) metric(key string) float64 {
	req, _ := http.NewRequest("GET", "http://"+n.listen+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+n.token)
	resp, err := http.DefaultClient.Do(req)
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

// search runs search_site and returns what must agree across nodes: each
// result's URL, score, passage and offsets.
func (n *clNode) search(q string) string {
	body, _ := json.Marshal(map[string]any{"query": q, "limit": 10})
	req, _ := http.NewRequest("POST", "http://"+n.listen+"/v1/tools/search_site", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+n.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
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
		'post_content' => '<p>The word `+word+` is written once, for the cluster test.</p>'), true);
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
	q := func(s string) string {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
	}
	pre := "define('WP_PLUGIN_DIR', " + q(h.plugins) + "); define('ASKWPD_CLUSTER', " + q(h.name) + ");"
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
	script := pre + `$_SERVER['HTTP_HOST'] = ` + q(h.site.Host()) + `; $_SERVER['REQUEST_URI'] = '/'; define('WP_USE_THEMES', false); require ` +
		q(strings.TrimRight(h.site.Root(), "/")+"/wp-load.php") + "; " + code
	var stderr bytes.Buffer
	cmd := exec.Command("php", "-r", script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		h.t.Fatalf("php: %v: %s %s", err, out, stderr.String())
	}
	return string(out)
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
	h.waitFor("nodes converge", 60*time.Second, func() bool {
		seq := float64(h.seq(ctx))
		var docs []float64
		for _, n := range nodes {
			if n.metric("askwpd_cluster_changelog_applied_id") != seq {
				return false
			}
			pages := n.metric("askwpd_cluster_pages")
			if n.metric("askwpd_index_documents") != pages {
				return false
			}
			docs = append(docs, pages)
		}
		return !slices.ContainsFunc(docs, func(d float64) bool { return d != docs[0] || d <= 0 })
	})
}
