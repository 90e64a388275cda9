// Command cluster measures cluster mode on the real test WordPress: three
// `askwpd serve` processes in cluster mode, each with its own state dir
// and port, and tables of their own (a made-up cluster name, dropped at
// the end).
//
// It prints:
//   - convergence under a burst of edits: each edit is a wp_update_post
//     through WordPress with this tree's shim in cluster mode, one request
//     each (the shim's flush is called after each, as at a request's end).
//     An edit has converged when every node has applied a changelog row
//     holding it or a later edit of the same post; its latency runs from
//     the moment wp_update_post returned. Rows are read and decoded as
//     they appear, nodes' applied ids sampled every 10 ms.
//   - the database load: each node's own statements (askwpd_cluster_queries_total)
//     per second, idle and during the burst, and MariaDB's global Questions
//     delta over the same windows (which counts everything on the server,
//     other work and WordPress included).
//   - failover: the leader is killed with SIGKILL; the time until another
//     node holds the lease.
//   - the tables' size: payload bytes per live page and InnoDB's own
//     figures, scaled to 1,000 pages.
//
// It first sizes the changelog documents of real news and blog pages
// (../shared/evaldata/article-extraction-benchmark, skipped when absent).
// It holds the test site lock while it runs and deletes its posts.
//
// Usage: go run ./bench/cluster [-edits 500] [-posts 50] [-idle 10s]
package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"database/sql"
	"flag"
	"fmt"
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
	"time"

	"github.com/askwp/askwpd/cluster"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/wp"
)

func main() {
	edits := flag.Int("edits", 500, "edits in the burst")
	posts := flag.Int("posts", 50, "posts the edits go to, round robin")
	idle := flag.Duration("idle", 10*time.Second, "idle window for the load figures")
	ttl := flag.String("lease-ttl", "10s", "cluster.lease_ttl")
	pages := flag.String("pages", "../shared/evaldata/article-extraction-benchmark/html",
		"real pages (*.html.gz) whose changelog documents are sized, besides the test site's")
	flag.Parse()
	if err := realPages(*pages); err != nil {
		fmt.Fprintln(os.Stderr, "bench/cluster:", err)
		os.Exit(1)
	}
	if err := run(*edits, *posts, *idle, *ttl); err != nil {
		fmt.Fprintln(os.Stderr, "bench/cluster:", err)
		os.Exit(1)
	}
}

type node struct {
	name, dir, listen, log, token string
	cmd                           *exec.Cmd
	done                          chan struct{}
}

type bench struct {
	site    *wptest.Site
	bin     string
	name    string
	ttl     string
	plugins string
	tmp     string
	db      *sql.DB
	cl      *cluster.Cluster
	nodes   []*node
	postIDs []int64
}

func run(edits, posts int, idle time.Duration, ttl string) error {
	ctx := context.Background()
	site, err := wptest.Open()
	if err != nil {
		return err
	}
	release, err := site.Acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	tmp, err := os.MkdirTemp("", "askwpd-bench-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b := &bench{site: site, name: wptest.Word("bench", ""), ttl: ttl, tmp: tmp}
	if err := b.open(ctx); err != nil {
		return err
	}
	defer b.close(ctx)

	fmt.Printf("askwpd cluster benchmark: 3 nodes, cluster %q, lease_ttl %s, %s\n", b.name, ttl, time.Now().UTC().Format(time.RFC3339))
	for _, n := range []string{"a", "b", "c"} {
		nd, err := b.start(n)
		if err != nil {
			return err
		}
		b.nodes = append(b.nodes, nd)
	}
	// The first pass, by whichever node leads, then the bench's posts.
	if err := waitFor(120*time.Second, func() bool {
		l := b.leader()
		return l != nil && l.metric("askwpd_crawl_running") == 0 && l.metric("askwpd_crawl_last_run_finished_timestamp_seconds") > 0
	}); err != nil {
		return fmt.Errorf("initial pass: %w", err)
	}
	t0 := time.Now()
	out, err := b.php(b.nodes[0], `for ($i = 0; $i < `+strconv.Itoa(posts)+`; $i++) {
		$id = wp_insert_post(array('post_title' => 'Cluster bench post '.$i, 'post_status' => 'publish', 'post_author' => 1,
			'post_content' => '<p>Cluster bench post '.$i.', before any edit.</p>'), true);
		if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); }
		echo $id, "\n";
	}`)
	if err != nil {
		return err
	}
	for _, f := range strings.Fields(out) {
		id, _ := strconv.ParseInt(f, 10, 64)
		b.postIDs = append(b.postIDs, id)
	}
	if err := b.converged(ctx, 120*time.Second); err != nil {
		return fmt.Errorf("bench posts: %w", err)
	}
	fmt.Printf("setup: %d posts published and on every node in %v\n", len(b.postIDs), time.Since(t0).Round(time.Millisecond))

	// Idle load.
	qs0, qq0 := b.queries(), b.questions(ctx)
	time.Sleep(idle)
	qs1, qq1 := b.queries(), b.questions(ctx)
	fmt.Printf("idle (%v): cluster statements/s per node:", idle)
	for i, n := range b.nodes {
		fmt.Printf(" %s=%.1f", n.name, (qs1[i]-qs0[i])/idle.Seconds())
	}
	fmt.Printf("; MariaDB Questions/s (whole server) %.1f\n", (qq1-qq0)/idle.Seconds())

	if err := b.burst(ctx, edits); err != nil {
		return err
	}
	if err := b.sizes(ctx); err != nil {
		return err
	}
	return b.failover()
}

func (b *bench) open(ctx context.Context) error {
	e := b.site.Env
	dsn := fmt.Sprintf("%s:%s@tcp(%s:%s)/%s", e["WP_DB_USER"], e["WP_DB_PASSWORD"], e["WP_DB_HOST"], e["WP_DB_PORT"], e["WP_DB_NAME"])
	db, err := wp.OpenWriter(ctx, dsn)
	if err != nil {
		return err
	}
	b.db = db
	prefix := e["WP_TABLE_PREFIX"]
	if prefix == "" {
		prefix = "wp_"
	}
	if b.cl, err = cluster.Open(ctx, db, prefix, b.name); err != nil {
		return err
	}
	b.plugins = filepath.Join(b.tmp, "plugins")
	if err := os.MkdirAll(b.plugins, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(filepath.Join(wptest.RepoRoot(), "wp-plugin-shim"), filepath.Join(b.plugins, "askwpd-companion")); err != nil {
		return err
	}
	b.bin = filepath.Join(b.tmp, "askwpd")
	cmd := exec.Command("go", "build", "-o", b.bin, "./cmd/askwpd")
	cmd.Dir = wptest.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v: %s", err, out)
	}
	return nil
}

// close deletes the posts (their events go to the tables, never to the
// outbox other work shares), stops the nodes and drops the tables.
func (b *bench) close(ctx context.Context) {
	if len(b.postIDs) > 0 {
		var s []string
		for _, id := range b.postIDs {
			s = append(s, strconv.FormatInt(id, 10))
		}
		var ping *node
		if l := b.leader(); l != nil {
			ping = l
		}
		if _, err := b.php(ping, `foreach (array(`+strings.Join(s, ",")+`) as $id) { wp_delete_post($id, true); }`); err != nil {
			fmt.Fprintln(os.Stderr, "bench/cluster: delete posts:", err)
		}
	}
	for _, n := range b.nodes {
		n.stop()
	}
	if err := b.cl.Drop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench/cluster:", err)
	}
	b.db.Close()
}

func (b *bench) start(name string) (*node, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	listen := ln.Addr().String()
	ln.Close()
	n := &node{name: name, dir: filepath.Join(b.tmp, name), listen: listen, log: filepath.Join(b.tmp, name+".log")}
	logf, err := os.Create(n.log)
	if err != nil {
		return nil, err
	}
	n.cmd = exec.Command(b.bin, "serve", "--wp-root", b.site.Root(), "--state-dir", n.dir, "--listen", listen,
		"--set", "schedule.disabled=true", "--set", "cluster.mode=mariadb", "--set", "cluster.name="+b.name,
		"--set", "cluster.lease_ttl="+b.ttl)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := n.cmd.Start(); err != nil {
		return nil, err
	}
	n.done = make(chan struct{})
	go func() {
		n.cmd.Wait()
		logf.Close()
		close(n.done)
	}()
	if err := waitFor(30*time.Second, func() bool {
		resp, err := http.Get("http://" + listen + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	tok, err := os.ReadFile(filepath.Join(n.dir, "token"))
	if err != nil {
		return nil, err
	}
	n.token = strings.TrimSpace(string(tok))
	return n, nil
}

func (n *node) stop() {
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

func (n *node) alive() bool {
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// metric reads one sample of the node's /metrics; -1 when absent.
func (n *node) metric(key string) float64 {
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
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

func (b *bench) leader() *node {
	for _, n := range b.nodes {
		if n.alive() && n.metric("askwpd_cluster_leader") == 1 {
			return n
		}
	}
	return nil
}

func (b *bench) queries() []float64 {
	out := make([]float64, len(b.nodes))
	for i, n := range b.nodes {
		out[i] = n.metric("askwpd_cluster_queries_total")
	}
	return out
}

func (b *bench) questions(ctx context.Context) float64 {
	var name string
	var v float64
	if err := b.db.QueryRowContext(ctx, `SHOW GLOBAL STATUS LIKE 'Questions'`).Scan(&name, &v); err != nil {
		return -1
	}
	return v
}

func (b *bench) converged(ctx context.Context, limit time.Duration) error {
	return waitFor(limit, func() bool {
		l, err := b.cl.Leader(ctx)
		if err != nil {
			return false
		}
		for _, n := range b.nodes {
			if n.alive() && n.metric("askwpd_cluster_changelog_applied_id") != float64(l.Seq) {
				return false
			}
		}
		p, err := b.cl.PendingEvents(ctx, 1)
		return err == nil && len(p) == 0
	})
}

// edit is one wp_update_post of the burst.
type edit struct {
	post int64
	at   time.Time
}

// burst edits the bench's posts round robin, one request each, and
// measures each edit's convergence on every node.
func (b *bench) burst(ctx context.Context, n int) error {
	startID := float64(0)
	if l, err := b.cl.Leader(ctx); err == nil {
		startID = float64(l.Seq)
	}
	type sample struct {
		at      time.Time
		applied []float64
	}
	var (
		mu      sync.Mutex
		samples []sample
		rows    []cluster.Entry
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	// Rows are decoded as they appear: a later row for the same page
	// deletes an earlier one.
	wg.Go(func() {
		after := int64(startID)
		for {
			es, err := b.cl.Tail(ctx, after, 500)
			if err == nil && len(es) > 0 {
				mu.Lock()
				rows = append(rows, es...)
				mu.Unlock()
				after = es[len(es)-1].ID
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	wg.Go(func() {
		for {
			s := sample{at: time.Now(), applied: make([]float64, len(b.nodes))}
			var sw sync.WaitGroup
			for i, nd := range b.nodes {
				sw.Go(func() { s.applied[i] = nd.metric("askwpd_cluster_changelog_applied_id") })
			}
			sw.Wait()
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})

	qs0, qq0 := b.queries(), b.questions(ctx)
	t0 := time.Now()
	ids := make([]string, len(b.postIDs))
	for i, id := range b.postIDs {
		ids[i] = strconv.FormatInt(id, 10)
	}
	// Each edit writes its number into the post ("cluedit N"), which the
	// changelog row's document then shows.
	out, err := b.php(b.nodes[1], `$ids = array(`+strings.Join(ids, ",")+`);
		for ($i = 0; $i < `+strconv.Itoa(n)+`; $i++) {
			$id = $ids[$i % count($ids)];
			$r = wp_update_post(array('ID' => $id, 'post_content' => '<p>Cluster bench post, cluedit '.$i.' of the burst.</p>'), true);
			if (is_wp_error($r)) { fwrite(STDERR, $r->get_error_message()); exit(1); }
			$t = microtime(true);
			Askwpd_Webhooks::flush();
			echo $i, ' ', $id, ' ', sprintf('%.6f', $t), "\n";
		}`)
	if err != nil {
		close(stop)
		wg.Wait()
		return err
	}
	sent := time.Since(t0)
	var eds []edit
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		id, _ := strconv.ParseInt(f[1], 10, 64)
		sec, _ := strconv.ParseFloat(f[2], 64)
		eds = append(eds, edit{post: id, at: time.Unix(0, int64(sec*1e9))})
	}
	err = b.converged(ctx, 5*time.Minute)
	took := time.Since(t0)
	qs1, qq1 := b.queries(), b.questions(ctx)
	close(stop)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("burst: %w", err)
	}

	// Each row: its post and the last edit it holds.
	type rowEdit struct {
		id      int64
		post    int64
		edit    int
		written time.Time
	}
	var res []rowEdit
	for _, r := range rows {
		if r.Op != cluster.OpPut {
			continue
		}
		d, err := cluster.Decode(r.Doc)
		if err != nil {
			continue
		}
		_, after, ok := strings.Cut(d.Body, "cluedit ")
		if !ok {
			continue
		}
		k, err := strconv.Atoi(strings.Fields(after)[0])
		if err != nil {
			continue
		}
		res = append(res, rowEdit{id: r.ID, post: d.PostID, edit: k, written: r.Written})
	}
	// When every node had applied row id.
	everywhere := func(id int64) (time.Time, bool) {
		for _, s := range samples {
			ok := true
			for _, a := range s.applied {
				ok = ok && a >= float64(id)
			}
			if ok {
				return s.at, true
			}
		}
		return time.Time{}, false
	}
	// The changelog's own latency: a row written by the leader, then
	// applied by every node.
	var rowLat []time.Duration
	for _, r := range res {
		if at, ok := everywhere(r.id); ok {
			rowLat = append(rowLat, at.Sub(r.written))
		}
	}
	var lat []time.Duration
	missing := 0
	for k, e := range eds {
		found := false
		for _, r := range res {
			if r.post == e.post && r.edit >= k {
				if at, ok := everywhere(r.id); ok {
					lat = append(lat, at.Sub(e.at))
					found = true
				}
				break
			}
		}
		if !found {
			missing++
		}
	}
	pct := func(xs []time.Duration, p float64) time.Duration {
		if len(xs) == 0 {
			return 0
		}
		slices.Sort(xs)
		return xs[min(len(xs)-1, int(p*float64(len(xs))))].Round(time.Millisecond)
	}
	fmt.Printf("burst: %d edits to %d posts sent in %v (one request each); all nodes converged %v after the first\n",
		len(eds), len(b.postIDs), sent.Round(time.Millisecond), took.Round(time.Millisecond))
	fmt.Printf("burst: changelog row written by the leader -> applied on all 3 nodes: p50 %v, p95 %v, max %v over %d rows\n",
		pct(rowLat, 0.50), pct(rowLat, 0.95), pct(rowLat, 1), len(rowLat))
	fmt.Printf("burst: edit committed in WordPress -> on all 3 nodes: p50 %v, p95 %v, max %v over %d edits (%d not matched to a row);"+
		" the leader re-renders at crawl.rate_per_sec/2 pages a second\n",
		pct(lat, 0.50), pct(lat, 0.95), pct(lat, 1), len(lat), missing)
	fmt.Printf("burst: %d changelog rows for %d edits (edits of one post that land between two publishes share a row)\n", len(res), len(eds))
	fmt.Printf("burst (%v): cluster statements/s per node:", took.Round(time.Millisecond))
	for i, nd := range b.nodes {
		fmt.Printf(" %s=%.1f", nd.name, (qs1[i]-qs0[i])/took.Seconds())
	}
	fmt.Printf("; MariaDB Questions/s (whole server, WordPress's own saves included) %.1f\n", (qq1-qq0)/took.Seconds())
	return nil
}

// sizes prints the tables' size, per live page and scaled to 1,000 pages.
func (b *bench) sizes(ctx context.Context) error {
	t := b.cl.Tables()
	var pages, docBytes, urlBytes, tomb int64
	if err := b.db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(LENGTH(doc)), 0), COALESCE(SUM(LENGTH(url)), 0) FROM `"+t.Changelog+"` WHERE op = 'P'").
		Scan(&pages, &docBytes, &urlBytes); err != nil {
		return err
	}
	if err := b.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+t.Changelog+"` WHERE op = 'D'").Scan(&tomb); err != nil {
		return err
	}
	var events, eventBytes int64
	if err := b.db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(LENGTH(event)), 0) FROM `"+t.Events+"`").Scan(&events, &eventBytes); err != nil {
		return err
	}
	if pages == 0 {
		return fmt.Errorf("no pages in the changelog")
	}
	// Row overhead besides doc and url: id, url_hash, op, version, node,
	// created_at and the url_hash index entry: about 130 bytes.
	perPage := float64(docBytes+urlBytes)/float64(pages) + 130
	fmt.Printf("tables: changelog %d live pages + %d tombstones; doc (gzip JSON) %.1f KB per page on average; about %.1f MB per 1,000 pages before InnoDB's page overhead\n",
		pages, tomb, float64(docBytes)/float64(pages)/1024, perPage*1000/1e6)
	// What a page's size depends on: its extracted text.
	es, err := b.cl.Tail(ctx, 0, 1<<20)
	if err != nil {
		return err
	}
	var text, gz int64
	for _, e := range es {
		if e.Op != cluster.OpPut {
			continue
		}
		if d, err := cluster.Decode(e.Doc); err == nil {
			text += int64(len(d.Text))
			gz += int64(len(e.Doc))
		}
	}
	if text > 0 {
		fmt.Printf("tables: extracted text %.1f KB per page on average; the gzipped document is %.2f bytes per byte of text\n",
			float64(text)/float64(pages)/1024, float64(gz)/float64(text))
	}
	if _, err := b.db.ExecContext(ctx, "ANALYZE TABLE `"+t.Changelog+"`, `"+t.Events+"`"); err != nil {
		return err
	}
	rows, err := b.db.QueryContext(ctx, `SELECT table_name, data_length + index_length FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name IN (?, ?, ?)`, t.Events, t.Changelog, t.Lease)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return err
		}
		line := fmt.Sprintf("tables: %s: InnoDB %.2f MB", name, float64(n)/1e6)
		if name == t.Changelog {
			line += fmt.Sprintf(" (%.2f MB per 1,000 pages at this site's page size)", float64(n)/float64(pages)*1000/1e6)
		}
		if name == t.Events && events > 0 {
			line += fmt.Sprintf(" for %d events (%.0f bytes of JSON each; done events are pruned after a day)", events, float64(eventBytes)/float64(events))
		}
		fmt.Println(line)
	}
	return rows.Err()
}

// failover kills the leader and times the takeover.
func (b *bench) failover() error {
	l := b.leader()
	if l == nil {
		return fmt.Errorf("failover: no leader")
	}
	if err := l.cmd.Process.Kill(); err != nil {
		return err
	}
	<-l.done
	killed := time.Now()
	if err := waitFor(60*time.Second, func() bool { return b.leader() != nil }); err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	nl := b.leader()
	fmt.Printf("failover: %s killed (SIGKILL); %s leads %v later (lease_ttl %s, followers try every %v)\n",
		l.name, nl.name, time.Since(killed).Round(time.Millisecond), b.ttl, cluster.FollowerTry)
	return nil
}

// php runs code in the test WordPress with this tree's shim active in
// cluster mode for the bench's tables, pinging ping (none: nil).
func (b *bench) php(ping *node, code string) (string, error) {
	q := func(s string) string {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
	}
	pre := "define('WP_PLUGIN_DIR', " + q(b.plugins) + "); define('ASKWPD_CLUSTER', " + q(b.name) + ");"
	if ping != nil {
		secret, err := os.ReadFile(filepath.Join(ping.dir, "webhook.secret"))
		if err != nil {
			return "", err
		}
		pre += "define('ASKWPD_URL', " + q("http://"+ping.listen) + "); define('ASKWPD_WEBHOOK_SECRET', " + q(strings.TrimSpace(string(secret))) + ");"
	} else {
		pre += "define('ASKWPD_URL', 'http://127.0.0.1:9'); define('ASKWPD_WEBHOOK_SECRET', '');"
	}
	script := pre + `$_SERVER['HTTP_HOST'] = ` + q(b.site.Host()) + `; $_SERVER['REQUEST_URI'] = '/'; define('WP_USE_THEMES', false); require ` +
		q(strings.TrimRight(b.site.Root(), "/")+"/wp-load.php") + "; " + code
	cmd := exec.Command("php", "-r", script)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("php: %v: %s", err, stderr.String())
	}
	return string(out), nil
}

// realPages sizes the changelog document of real news and blog pages
// (the article extraction benchmark's), extracted as the crawler does:
// the test site's posts are short, and a document's size follows its
// text. It skips when the pages are absent.
func realPages(dir string) error {
	files, _ := filepath.Glob(filepath.Join(wptest.RepoRoot(), dir, "*.html.gz"))
	if len(files) == 0 {
		fmt.Printf("real pages: none in %s; skipped\n", dir)
		return nil
	}
	var n, text, gz int64
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return err
		}
		zr, err := gzip.NewReader(fh)
		if err != nil {
			fh.Close()
			return fmt.Errorf("%s: %w", f, err)
		}
		res, err := extract.Extract(context.Background(), zr, extract.Options{URL: "https://example.org/" + filepath.Base(f)})
		fh.Close()
		if err != nil {
			continue
		}
		doc, _, err := cluster.Encode(&store.Document{URL: "https://example.org/" + filepath.Base(f), Title: res.Title,
			Body: res.Markdown, Text: res.Text, Lang: res.Lang, Description: res.Description, ContentHash: res.ContentHash,
			WordCount: res.WordCount, Chunks: crawl.StoreChunks(res.Chunks)})
		if err != nil {
			return err
		}
		n++
		text += int64(len(res.Text))
		gz += int64(len(doc))
	}
	if n == 0 {
		return fmt.Errorf("real pages: none extracted from %s", dir)
	}
	fmt.Printf("real pages: %d news/blog pages, %.1f KB of text each on average; their changelog document %.1f KB gzipped (%.2f bytes per byte of text): about %.1f MB per 1,000 such pages\n",
		n, float64(text)/float64(n)/1024, float64(gz)/float64(n)/1024, float64(gz)/float64(text), float64(gz+130*n)/float64(n)*1000/1e6)
	return nil
}

func waitFor(limit time.Duration, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", limit)
		}
		time.Sleep(25 * time.Millisecond)
	}
	return nil
}
