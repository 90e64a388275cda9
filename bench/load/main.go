// Command load puts the real daemon under load on loopback and checks it
// holds (issue #9 "Load").
//
// Load mode (the default) builds cmd/askwpd, grows the test WordPress by
// -generate posts (scripts/wp/gen-posts.php, under the test site lock,
// removed afterwards even on Ctrl-C), indexes it once with `askwpd index`,
// starts `askwpd serve` on a free loopback port and, for -duration, runs
// -clients search_site clients over HTTP while a crawl started through
// POST /admin/reindex runs and -events signed events arrive in -burst,
// a -dup share of them replays of ids already accepted (the daemon must
// answer "replayed event id") and the rest distinct events for -hot posts.
// It then waits, bounded by -drain, for the event queue to empty, stops the
// daemon and checks in its database that every accepted event id is there
// and applied. It exits 1 when a search failed, the search p99 exceeds
// -p99, an event got any answer but 202 or the duplicate answer, or an
// accepted event was not applied.
//
// Soak mode (-soak 30m) runs the same daemon, on the site as it is (no
// posts generated unless -generate is set, so no lock is held for half an
// hour), under a steady moderate load: -clients searchers, -event-rate
// events a second (same duplication), a crawl every -crawl-every and the
// daemon's own schedule. It samples RSS and goroutines every -sample and
// prints the curve and its slope; it fails unless both are flat: after
// -warmup, the last third's mean RSS is within -flat of the first third's,
// and so is the last third's lowest goroutine count (+5) — the lowest,
// since a sample also counts the requests in flight, which a slow spell
// multiplies without a leak — and the daemon, once the queue is drained
// and idle connections are closed, is back within 5 goroutines of its
// count before the load.
//
// Client-side latency includes the client's own scheduling: the load
// generator shares the machine's cores with the daemon and WordPress.
// The server-side share under 50 ms (from /metrics) is printed alongside.
//
// Usage:
//
//	go run ./bench/load                       # 60 s, 200 clients, 10k events in 10 s, 1500 generated posts
//	go run ./bench/load -duration 15s -clients 50 -events 2000 -generate 0
//	go run ./bench/load -soak 30m
package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "modernc.org/sqlite"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/internal/wptest"
)

type options struct {
	duration, burst, think, drain, soak, sample, warmup, crawlEvery time.Duration
	clients, events, hot, generate                                  int
	dup, eventRate, flat                                            float64
	p99                                                             time.Duration
	bin, crawl, reuse                                               string
	keepState                                                       bool
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "load mode: how long the search clients run")
	flag.IntVar(&o.clients, "clients", 200, "concurrent search clients")
	flag.DurationVar(&o.think, "think", time.Second, "mean pause of a client between searches (uniform 0..2×); 0: back to back")
	flag.IntVar(&o.events, "events", 10000, "load mode: events sent")
	flag.DurationVar(&o.burst, "burst", 10*time.Second, "load mode: the time the events are spread over")
	flag.Float64Var(&o.dup, "dup", 0.3, "share of event requests that replay an already accepted id")
	flag.IntVar(&o.hot, "hot", 10, "distinct posts the fresh events are about")
	flag.IntVar(&o.generate, "generate", 1500, "generated posts to add for the run (0: the site as it is); removed afterwards")
	flag.StringVar(&o.crawl, "crawl", "admin", "crawl started during the load: admin (POST /admin/reindex) or none")
	flag.DurationVar(&o.p99, "p99", 50*time.Millisecond, "load mode: search p99 must not exceed this")
	flag.DurationVar(&o.drain, "drain", 5*time.Minute, "longest wait for the event queue to empty")
	flag.DurationVar(&o.soak, "soak", 0, "soak for this long instead of the load run")
	flag.DurationVar(&o.sample, "sample", 30*time.Second, "soak: RSS and goroutine sampling interval")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Minute, "soak: samples before this are left out of the flatness check")
	flag.Float64Var(&o.flat, "flat", 0.10, "soak: allowed growth of the last third's mean over the first third's")
	flag.Float64Var(&o.eventRate, "event-rate", 5, "soak: events a second")
	flag.DurationVar(&o.crawlEvery, "crawl-every", 5*time.Minute, "soak: start a crawl this often")
	flag.StringVar(&o.bin, "bin", "", "askwpd binary (default: go build ./cmd/askwpd into a temp dir)")
	flag.BoolVar(&o.keepState, "keep-state", false, "keep the daemon's state dir (its log and database)")
	flag.StringVar(&o.reuse, "state", "", "serve this existing state dir (a kept one) instead of indexing a fresh one")
	flag.Parse()
	if o.soak > 0 && !flagSet("generate") {
		o.generate = 0
	}
	if o.soak > 0 && !flagSet("clients") {
		o.clients = 20
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/load:", err)
		os.Exit(2)
	}
	if !ok {
		fmt.Println("RESULT: FAIL")
		os.Exit(1)
	}
	fmt.Println("RESULT: PASS")
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// ---- the test site --------------------------------------------------------

func siteEnv() (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(wptest.RepoRoot(), ".wp-test", "env"))
	if err != nil {
		return nil, fmt.Errorf("the test WordPress is not up: %w", err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = strings.Trim(v, `"'`)
		}
	}
	return m, nil
}

// lockSite takes the test site lock (internal/wptest Lock's file). The
// fd is close-on-exec, so neither the daemon nor PHP inherits it.
func lockSite(ctx context.Context, e map[string]string) (func(), error) {
	dir := e["WP_STATE_DIR"]
	if dir == "" {
		dir = filepath.Join(wptest.RepoRoot(), ".wp-test")
	}
	f, err := os.OpenFile(filepath.Join(dir, "test.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	got := time.Now()
	fmt.Printf("site lock taken after waiting %.1fs\n", got.Sub(t0).Seconds())
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		fmt.Printf("site lock held for %.1fs\n", time.Since(got).Seconds())
	}, nil
}

func genPosts(e map[string]string, args ...string) error {
	cmd := exec.Command("php", append([]string{"-d", "display_errors=stderr", "-d", "memory_limit=1024M",
		filepath.Join(wptest.RepoRoot(), "scripts", "wp", "gen-posts.php"), "--url=" + e["SITE_URL"]}, args...)...)
	cmd.Env = append(os.Environ(), "WP_ROOT="+e["WP_ROOT"], "SITE_URL="+e["SITE_URL"])
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// Its own process group: a Ctrl-C meant for the bench must not kill
	// the removal of the posts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Run()
}

type hotPost struct {
	ID  int64  `json:"id"`
	URL string `json:"url"`
}

// hotPosts asks WordPress for n public posts and pages, generated ones
// included when there are any, with their permalinks.
func hotPosts(e map[string]string, n int) ([]hotPost, error) {
	u := strings.TrimPrefix(strings.TrimPrefix(e["SITE_URL"], "http://"), "https://")
	host, _, _ := strings.Cut(u, ":")
	code := fmt.Sprintf(`$gen = get_posts(array('post_type' => 'post', 'post_status' => 'publish', 'numberposts' => %[1]d, 'fields' => 'ids', 'meta_key' => '_askwpd_generated', 'orderby' => 'ID', 'order' => 'ASC'));
		$seed = get_posts(array('post_type' => array('post', 'page'), 'post_status' => 'publish', 'numberposts' => %[1]d, 'fields' => 'ids', 'has_password' => false, 'orderby' => 'ID', 'order' => 'ASC'));
		$ids = array_slice(array_values(array_unique(array_merge(array_slice($seed, 0, (int) ceil(%[1]d * 0.7)), $gen, $seed))), 0, %[1]d);
		$out = array(); foreach ($ids as $id) { $out[] = array('id' => $id, 'url' => get_permalink($id)); }
		echo json_encode($out);`, n)
	script := `$_SERVER['HTTP_HOST'] = '` + host + `'; $_SERVER['REQUEST_URI'] = '/'; define('WP_USE_THEMES', false); require '` +
		strings.TrimRight(e["WP_ROOT"], "/") + `/wp-load.php'; ` + code
	out, err := exec.Command("php", "-r", script).Output()
	if err != nil {
		return nil, fmt.Errorf("php: %w", err)
	}
	i := bytes.IndexByte(out, '[')
	if i < 0 {
		return nil, fmt.Errorf("php: %.200s", out)
	}
	var hp []hotPost
	if err := json.Unmarshal(out[i:], &hp); err != nil {
		return nil, fmt.Errorf("php: %w: %.200s", err, out)
	}
	if len(hp) == 0 {
		return nil, errors.New("the site has no public posts")
	}
	return hp, nil
}

// ---- the daemon -------------------------------------------------------------

type daemonProc struct {
	cmd       *exec.Cmd
	base      string
	token     string
	secret    []byte
	state     string
	exited    chan struct{}
	exitErr   error
	logPath   string
	client    *http.Client
	noRedir   *http.Client
	startedAt time.Time
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func buildDaemon(dir string) (string, error) {
	bin := filepath.Join(dir, "askwpd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/askwpd")
	cmd.Dir = wptest.RepoRoot()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build: %w", err)
	}
	return bin, nil
}

// indexOnce fills the state dir with `askwpd index`, unthrottled, so the
// served daemon starts with the whole site indexed.
func indexOnce(ctx context.Context, bin, state string, e map[string]string) error {
	cmd := exec.CommandContext(ctx, bin, "index", "--wp-root", e["WP_ROOT"], "--state-dir", state,
		"--set", "crawl.rate_per_sec=100000", "--set", "crawl.budget=1000000")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("askwpd index: %w: %s", err, out.String())
	}
	fmt.Printf("initial index: %.1fs: %s", time.Since(t0).Seconds(), out.String())
	return nil
}

func startDaemon(ctx context.Context, bin, state string, e map[string]string, schedule bool) (*daemonProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(state, "serve.log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--wp-root", e["WP_ROOT"], "--state-dir", state, "--listen", addr}
	if !schedule {
		args = append(args, "--set", "schedule.disabled=true")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	p := &daemonProc{cmd: cmd, base: "http://" + addr, state: state, exited: make(chan struct{}), logPath: logPath, startedAt: time.Now()}
	go func() {
		p.exitErr = cmd.Wait()
		lf.Close()
		close(p.exited)
	}()
	for i := 0; ; i++ {
		if r, err := http.Get(p.base + "/healthz"); err == nil {
			r.Body.Close()
			break
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("askwpd serve exited: %v (log: %s)", p.exitErr, tail(logPath))
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if i > 400 {
			p.stop()
			return nil, fmt.Errorf("askwpd serve did not come up (log: %s)", tail(logPath))
		}
	}
	tok, err := os.ReadFile(filepath.Join(state, "token"))
	if err != nil {
		p.stop()
		return nil, err
	}
	sec, err := os.ReadFile(filepath.Join(state, "webhook.secret"))
	if err != nil {
		p.stop()
		return nil, err
	}
	p.token, p.secret = strings.TrimSpace(string(tok)), []byte(strings.TrimSpace(string(sec)))
	tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second}
	p.client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	p.noRedir = &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return p, nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return string(b)
}

// stop sends SIGTERM (a graceful shutdown) and, after 20 s, SIGKILL.
func (p *daemonProc) stop() error {
	select {
	case <-p.exited:
		return p.exitErr
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.exitErr
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("askwpd serve did not stop in 20 s; killed")
	}
}

// rssKB reads VmRSS from /proc.
func (p *daemonProc) rssKB() int64 {
	rss, _, _ := p.memKB()
	return rss
}

// memKB reads VmRSS and its split, RssAnon (heaps, stacks: what a leak
// grows) and RssFile (mostly the binary's own pages, faulted in as code
// paths first run, reclaimable), from /proc.
func (p *daemonProc) memKB() (rss, anon, file int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var n int64
		fmt.Sscan(v, &n)
		switch k {
		case "VmRSS":
			rss = n
		case "RssAnon":
			anon = n
		case "RssFile":
			file = n
		}
	}
	return rss, anon, file
}

// cpuSeconds reads the process's user + system CPU time from /proc.
func (p *daemonProc) cpuSeconds() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are
	// the 14th and 15th of the whole line.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// metrics reads /metrics into name{labels} → value.
func (p *daemonProc) metrics(ctx context.Context) (map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", p.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err == nil {
			m[l[:i]] = v
		}
	}
	return m, sc.Err()
}

type statusView struct {
	Crawling bool `json:"crawling"`
	Runs     []struct {
		ID         int64  `json:"id"`
		Kind       string `json:"kind"`
		Discovered int    `json:"discovered"`
		Fetched    int    `json:"fetched"`
		Indexed    int    `json:"indexed"`
		Unchanged  int    `json:"unchanged"`
		Errors     int    `json:"errors"`
		Error      string `json:"error"`
		StartedAt  string `json:"started_at"`
		FinishedAt string `json:"finished_at"`
	} `json:"runs"`
	Index struct {
		Documents int `json:"documents"`
		Chunks    int `json:"chunks"`
	} `json:"index"`
	Freshness struct {
		PendingEvents   int   `json:"pending_events"`
		FailedEvents    int   `json:"failed_events"`
		LastEventLagMS  int64 `json:"last_event_lag_ms"`
		FrontierPending int   `json:"frontier_pending"`
	} `json:"freshness"`
}

func (p *daemonProc) status(ctx context.Context) (*statusView, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", p.base+"/v1/status", nil)
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("/v1/status: %s: %.200s", resp.Status, b)
	}
	var s statusView
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil, fmt.Errorf("/v1/status: %w", err)
	}
	return &s, nil
}

// reindex presses the admin page's "reindex now" with the bearer token.
func (p *daemonProc) reindex(ctx context.Context) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", p.base+"/admin/reindex", nil)
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.noRedir.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther {
		return "", fmt.Errorf("/admin/reindex: %s", resp.Status)
	}
	_, flash, _ := strings.Cut(loc, "reindex=")
	return flash, nil
}

// ---- searches ---------------------------------------------------------------

// queryMix is what a chatbot in front of the test site would send: 2–6
// distinctive words about the seeded posts and the generated ledger posts,
// some misspelt, some questions, some with filters or date sorting, some
// the site cannot answer.
type queryMix struct {
	seed, gen, miss, none []string
	adj, noun             []string
}

func newQueryMix() *queryMix {
	return &queryMix{
		seed: []string{"espresso grinder retention", "kitchen scale grinder", "roasting yirgacheffe popcorn popper",
			"sourdough starter hooch", "sluggish rise starter", "php-fpm pool unix user", "harden php-fpm",
			"gofmt tabs spaces", "mastodon vps migration", "cheaper vps mastodon", "caddy reverse proxy wordpress",
			"caddy json config", "mariadb backup restic", "nightly mariabackup", "token bucket rate limiter go",
			"worm farm coffee grounds", "bicycle commuter lighting", "slow wp_query meta query", "lantern search relaunch",
			"pricing frequently asked questions", "visiting hours contact", "workshops", "roasting and repair crew", "about workshop journal"},
		miss: []string{"expresso grindr retension", "sourdogh startr", "mariadb bakup", "cady reverse proxi", "tokn bucket limitter",
			"mastadon vps", "wormfarm cofee"},
		gen: []string{"ledger archive", "generated archive ledger", "copper kettle", "lighthouse keeper", "windmill restores", "granary harbor",
			"weathered wharf", "quiet orchard"},
		none: []string{"refund policy", "quantum chromodynamics lattice", "cryptocurrency staking rewards", "zzyzx qwfp"},
		adj: strings.Fields(`amber ancient autumn brass brisk bright calm careful cedar clever coastal copper crisp curious distant dusty
			early eastern faded gentle gilded granite hidden hollow humble iron ivory juniper lantern linen maple marble misty
			northern oaken olive pale quiet rapid rustic saffron silver slate smoky southern steady stone timber velvet warm wild willow`),
		noun: strings.Fields(`anchor archive attic badger barrel basket beacon bellows bicycle bridge brook cabinet canal candle canyon
			cellar chapel chimney clock compass cottage courtyard crane creek ferry fiddle forge fountain furnace garden gate glacier
			granary harbor hearth heron island journal kettle kiln ladder ledger lighthouse loom market meadow mill mirror orchard
			pantry pavilion pier quarry raft reservoir river saddle sextant shed stable staircase stove tannery telescope tower
			tunnel valley vineyard wagon warehouse weir wharf windmill workshop`),
	}
}

func (m *queryMix) next(r *rand.Rand) (map[string]any, string) {
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	args := map[string]any{}
	kind := ""
	switch x := r.IntN(100); {
	case x < 40:
		args["query"], kind = pick(m.seed), "seed"
	case x < 50:
		args["query"], kind = "how do I "+pick(m.seed)+"?", "question"
	case x < 58:
		args["query"], kind = pick(m.miss), "misspelt"
	case x < 78:
		args["query"], kind = pick(m.adj)+" "+pick(m.noun), "generated"
	case x < 86:
		args["query"], kind = pick(m.gen), "generated"
	case x < 90:
		args["query"], kind = fmt.Sprintf("ledger %05d", 1+r.IntN(1500)), "number"
	default:
		args["query"], kind = pick(m.none), "no_answer"
	}
	switch x := r.IntN(100); {
	case x < 10:
		args["filters"] = map[string]any{"type": "post"}
	case x < 15:
		args["sort"] = "date"
	case x < 20:
		args["passages"] = true
	}
	if r.IntN(3) == 0 {
		args["limit"] = 5 + r.IntN(6)
	}
	return args, kind
}

type searchStats struct {
	mu        sync.Mutex
	lat       []time.Duration // every search
	latNoExp  []time.Duration // searches without live expansion
	errs      map[string]int
	expanded  int
	byAction  map[string]int
	intervalN int
	interval  []time.Duration // since the last soak sample
}

func newSearchStats() *searchStats {
	return &searchStats{errs: map[string]int{}, byAction: map[string]int{}}
}

// searchClient searches until ctx is done, pausing think (uniform 0..2×)
// between searches.
func searchClient(ctx context.Context, p *daemonProc, mix *queryMix, seed uint64, think time.Duration, st *searchStats) {
	r := rand.New(rand.NewPCG(seed, seed*7+1))
	if think > 0 {
		// Clients do not all start in the same millisecond.
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(r.Int64N(int64(2 * think)))):
		}
	}
	for ctx.Err() == nil {
		args, _ := mix.next(r)
		body, _ := json.Marshal(args)
		req, _ := http.NewRequest("POST", p.base+"/v1/tools/search_site", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+p.token)
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		resp, err := p.client.Do(req)
		var (
			kind   string
			action string
			exp    bool
		)
		if err != nil {
			kind = "transport"
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				kind = "timeout"
			}
		} else {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			var sr struct {
				Action        string `json:"action"`
				ExpansionStop string `json:"expansion_stop"`
			}
			switch {
			case rerr != nil:
				kind = "read"
			case resp.StatusCode != 200:
				kind = "status_" + strconv.Itoa(resp.StatusCode)
			case json.Unmarshal(b, &sr) != nil:
				kind = "decode"
			}
			action, exp = sr.Action, sr.ExpansionStop != ""
		}
		d := time.Since(t0)
		st.mu.Lock()
		if kind != "" {
			st.errs[kind]++
		} else {
			st.lat = append(st.lat, d)
			st.interval = append(st.interval, d)
			st.byAction[action]++
			if exp {
				st.expanded++
			} else {
				st.latNoExp = append(st.latNoExp, d)
			}
		}
		st.mu.Unlock()
		if think > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(r.Int64N(int64(2 * think)))):
			}
		}
	}
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ---- events -----------------------------------------------------------------

// shimTimeout is the PHP shim's webhook timeout (askwpd_webhook_timeout_ms
// in wp-plugin-shim/includes/class-askwpd-webhooks.php). A slower answer
// is a lost event there, and trips its 30 s breaker.
const shimTimeout = 750 * time.Millisecond

type eventStats struct {
	mu         sync.Mutex
	sent       int
	fresh      int
	replays    int
	accepted   int
	duplicate  int
	other      map[string]int
	acceptedID []string
	lat        []time.Duration
}

func newEventStats() *eventStats { return &eventStats{other: map[string]int{}} }

type eventSender struct {
	p    *daemonProc
	hot  []hotPost
	dup  float64
	st   *eventStats
	seq  atomic.Int64
	tag  string
	rmu  sync.Mutex
	rand *rand.Rand
}

// one sends one event: a replay of an accepted id with probability dup,
// else a fresh post_updated or post_published event for a hot post.
func (s *eventSender) one(ctx context.Context) {
	s.rmu.Lock()
	replay := s.rand.Float64() < s.dup
	hp := s.hot[s.rand.IntN(len(s.hot))]
	published := s.rand.IntN(5) == 0
	s.st.mu.Lock()
	var id string
	if replay && len(s.st.acceptedID) > 0 {
		id = s.st.acceptedID[s.rand.IntN(len(s.st.acceptedID))]
	} else {
		replay = false
	}
	s.st.mu.Unlock()
	s.rmu.Unlock()
	if id == "" {
		id = fmt.Sprintf("load-%s-%d", s.tag, s.seq.Add(1))
	}
	typ := "post_updated"
	if published {
		typ = "post_published"
	}
	ev := map[string]any{"id": id, "type": typ, "post_id": hp.ID, "post_type": "post", "status": "publish", "public": true, "url": hp.URL}
	body, _ := json.Marshal(map[string]any{"events": []any{ev}})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequestWithContext(ctx, "POST", s.p.base+"/v1/events", bytes.NewReader(body))
	req.Header.Set(api.HeaderTimestamp, ts)
	req.Header.Set(api.HeaderSignature, api.Sign(s.p.secret, ts, body))
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := s.p.client.Do(req)
	d := time.Since(t0)
	outcome := ""
	if err != nil {
		if ctx.Err() != nil {
			return // the run is over: not sent
		}
		outcome = "transport"
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusAccepted:
			outcome = "accepted"
		case resp.StatusCode == http.StatusUnauthorized && bytes.Contains(b, []byte("replayed event id")):
			outcome = "duplicate"
		default:
			outcome = "status_" + strconv.Itoa(resp.StatusCode)
		}
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.sent++
	s.st.lat = append(s.st.lat, d)
	if replay {
		s.st.replays++
	} else {
		s.st.fresh++
	}
	switch outcome {
	case "accepted":
		s.st.accepted++
		s.st.acceptedID = append(s.st.acceptedID, id)
		if replay {
			s.st.other["replay_accepted"]++
		}
	case "duplicate":
		s.st.duplicate++
		if !replay {
			s.st.other["fresh_called_duplicate"]++
		}
	default:
		s.st.other[outcome]++
	}
}

// sendPaced sends n events spread evenly over window, from a pool of
// workers, and returns how long the sending took.
func (s *eventSender) sendPaced(ctx context.Context, n int, window time.Duration, workers int) time.Duration {
	jobs := make(chan struct{}, n)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				if ctx.Err() != nil {
					continue
				}
				s.one(ctx)
			}
		}()
	}
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(int64(window) * int64(i) / int64(n)))
		if w := time.Until(at); w > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(w):
			}
		}
		if ctx.Err() != nil {
			break
		}
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	return time.Since(start)
}

// drain polls /v1/status until no event is pending or failed, bounded.
// drainAndSample waits for the event queue to empty, then samples the
// daemon. The clients' idle keep-alive connections each hold a server
// goroutine; they are closed first so the sample counts the daemon's own.
func drainAndSample(ctx context.Context, p *daemonProc, limit time.Duration) (time.Duration, *statusView, sample, error) {
	drained, st, err := drain(ctx, p, limit)
	p.client.Transport.(*http.Transport).CloseIdleConnections()
	time.Sleep(time.Second)
	return drained, st, p.sampleNow(ctx), err
}

func drain(ctx context.Context, p *daemonProc, limit time.Duration) (time.Duration, *statusView, error) {
	t0 := time.Now()
	for {
		st, err := p.status(ctx)
		if err != nil {
			return time.Since(t0), nil, err
		}
		if st.Freshness.PendingEvents == 0 && st.Freshness.FailedEvents == 0 {
			return time.Since(t0), st, nil
		}
		if time.Since(t0) > limit {
			return time.Since(t0), st, fmt.Errorf("%d events pending, %d failed after %s", st.Freshness.PendingEvents,
				st.Freshness.FailedEvents, limit)
		}
		select {
		case <-ctx.Done():
			return time.Since(t0), st, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// verifyEvents opens the stopped daemon's database and checks that every
// accepted event id is stored once and applied without error.
func verifyEvents(state string, accepted []string) (stored, applied int, missing, unapplied []string, err error) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(state, "askwpd.db")+"?mode=ro")
	if err != nil {
		return 0, 0, nil, nil, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT event_id, applied_at, error FROM events WHERE event_id LIKE 'load-%'`)
	if err != nil {
		return 0, 0, nil, nil, err
	}
	defer rows.Close()
	type row struct{ applied, errMsg string }
	got := map[string]row{}
	for rows.Next() {
		var id string
		var r row
		if err := rows.Scan(&id, &r.applied, &r.errMsg); err != nil {
			return 0, 0, nil, nil, err
		}
		got[id] = r
	}
	if err := rows.Err(); err != nil {
		return 0, 0, nil, nil, err
	}
	for _, id := range accepted {
		r, ok := got[id]
		switch {
		case !ok:
			missing = append(missing, id)
		case r.applied == "" || r.errMsg != "":
			unapplied = append(unapplied, id+" "+r.errMsg)
		default:
			applied++
		}
	}
	return len(got), applied, missing, unapplied, nil
}

// ---- the run ------------------------------------------------------------------

type sample struct {
	at         time.Duration
	rssKB      int64
	anonKB     int64
	fileKB     int64
	goroutines float64
	heapMB     float64
	searches   int
	p99        time.Duration
	pending    int
	crawling   bool
}

func (p *daemonProc) sampleNow(ctx context.Context) sample {
	s := sample{at: time.Since(p.startedAt)}
	s.rssKB, s.anonKB, s.fileKB = p.memKB()
	if m, err := p.metrics(ctx); err == nil {
		s.goroutines = m["go_goroutines"]
		s.heapMB = m["go_memstats_heap_inuse_bytes"] / (1 << 20)
	}
	return s
}

// serverShare returns, from the tool latency histogram, how many
// search_site calls there were and how many took at most 50 ms.
func serverShare(m map[string]float64) (n, le50 float64) {
	return m[`askwpd_tool_latency_seconds_count{tool="search_site"}`],
		m[`askwpd_tool_latency_seconds_bucket{tool="search_site",le="0.05"}`]
}

func uptime() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func run(ctx context.Context, o options) (bool, error) {
	e, err := siteEnv()
	if err != nil {
		return false, err
	}
	fmt.Printf("load average at start: %s (%d CPUs)\n", uptime(), numCPU())
	tmp, err := os.MkdirTemp("", "askwpd-bench-load-")
	if err != nil {
		return false, err
	}
	defer func() {
		if o.keepState {
			fmt.Println("state kept in", tmp)
			return
		}
		os.RemoveAll(tmp)
	}()
	bin := o.bin
	if bin == "" {
		if bin, err = buildDaemon(tmp); err != nil {
			return false, err
		}
	}
	if o.generate > 0 {
		unlock, err := lockSite(ctx, e)
		if err != nil {
			return false, err
		}
		defer unlock()
		// Removal runs even when ctx is cancelled (Ctrl-C).
		defer func() {
			t0 := time.Now()
			if err := genPosts(e, "--remove"); err != nil {
				fmt.Fprintln(os.Stderr, "removing generated posts:", err, "(run: bash scripts/wp-up.sh --remove-generated)")
				return
			}
			fmt.Printf("removed generated posts in %.1fs\n", time.Since(t0).Seconds())
		}()
		t0 := time.Now()
		if err := genPosts(e, "--count="+strconv.Itoa(o.generate)); err != nil {
			return false, err
		}
		fmt.Printf("generated %d posts in %.1fs\n", o.generate, time.Since(t0).Seconds())
	}
	hot, err := hotPosts(e, o.hot)
	if err != nil {
		return false, err
	}
	state := o.reuse
	if state == "" {
		state = filepath.Join(tmp, "state")
		if err := os.MkdirAll(state, 0o700); err != nil {
			return false, err
		}
		if err := indexOnce(ctx, bin, state, e); err != nil {
			return false, err
		}
	}
	p, err := startDaemon(ctx, bin, state, e, o.soak > 0)
	if err != nil {
		return false, err
	}
	defer func() {
		if err := p.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping askwpd:", err)
		}
	}()
	fmt.Printf("askwpd serve pid %d on %s, state %s\n", p.cmd.Process.Pid, p.base, state)
	// Until its search index is loaded, the daemon's searches wait for it;
	// the run measures the daemon as it serves, after that.
	t0 := time.Now()
	for {
		m, err := p.metrics(ctx)
		if err == nil && m["askwpd_search_index_ready"] == 1 {
			fmt.Printf("in-memory search index ready %.1f s after the daemon answered\n", time.Since(t0).Seconds())
			break
		}
		if time.Since(t0) > 2*time.Minute {
			return false, fmt.Errorf("the in-memory search index was not ready after %s", time.Since(t0).Round(time.Second))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if o.soak > 0 {
		return soak(ctx, o, p, hot)
	}
	return load(ctx, o, p, hot)
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

func load(ctx context.Context, o options, p *daemonProc, hot []hotPost) (bool, error) {
	st0, err := p.status(ctx)
	if err != nil {
		return false, err
	}
	before := p.sampleNow(ctx)
	m0, _ := p.metrics(ctx)
	fmt.Printf("index: %d documents, %d chunks; daemon before: RSS %.1f MB, %.0f goroutines, heap in use %.1f MB\n",
		st0.Index.Documents, st0.Index.Chunks, float64(before.rssKB)/1024, before.goroutines, before.heapMB)
	fmt.Printf("load: %d search clients for %s (think %s mean), crawl %q, %d events in %s (%.0f%% replays, %d hot posts)\n",
		o.clients, o.duration, o.think, o.crawl, o.events, o.burst, o.dup*100, len(hot))

	lctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	ss := newSearchStats()
	es := newEventStats()
	var wg sync.WaitGroup
	startSearchClients(lctx, &wg, p, o.clients, o.think, ss)
	// RSS and goroutines every 5 s, for the peak (/metrics reads the
	// index stats, so more often would add load of its own).
	var (
		peak    sample
		peakMu  sync.Mutex
		sampled = make(chan struct{})
	)
	go func() {
		defer close(sampled)
		for lctx.Err() == nil {
			s := p.sampleNow(lctx)
			peakMu.Lock()
			peak.rssKB = max(peak.rssKB, s.rssKB)
			peak.goroutines = max(peak.goroutines, s.goroutines)
			peakMu.Unlock()
			select {
			case <-lctx.Done():
			case <-time.After(5 * time.Second):
			}
		}
	}()
	var crawlFlash string
	var burstTook time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-lctx.Done():
			return
		case <-time.After(min(2*time.Second, o.duration/10)):
		}
		if o.crawl == "admin" {
			f, err := p.reindex(lctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, "reindex:", err)
				crawlFlash = "error: " + err.Error()
			} else {
				crawlFlash = f
			}
		}
		select {
		case <-lctx.Done():
			return
		case <-time.After(min(3*time.Second, o.duration/10)):
		}
		s := &eventSender{p: p, hot: hot, dup: o.dup, st: es, tag: strconv.FormatInt(time.Now().UnixNano(), 36), rand: rand.New(rand.NewPCG(42, 43))}
		burstTook = s.sendPaced(ctx, o.events, o.burst, 64)
	}()
	loadStart := time.Now()
	cpu0 := p.cpuSeconds()
	<-lctx.Done()
	loadWall := time.Since(loadStart)
	cpuLoad := p.cpuSeconds() - cpu0
	wg.Wait()
	<-sampled
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	mid, _ := p.status(ctx)
	m1, _ := p.metrics(ctx)
	fmt.Printf("load average at end of load: %s; daemon CPU during the load: %.1f s in %.1f s (%.0f%% of one core)\n",
		uptime(), cpuLoad, loadWall.Seconds(), 100*cpuLoad/loadWall.Seconds())

	drained, stEnd, after, derr := drainAndSample(ctx, p, o.drain)

	v := &verdict{ok: true}
	check := v.check

	// Searches.
	ss.mu.Lock()
	sort.Slice(ss.lat, func(i, j int) bool { return ss.lat[i] < ss.lat[j] })
	sort.Slice(ss.latNoExp, func(i, j int) bool { return ss.latNoExp[i] < ss.latNoExp[j] })
	nErr := 0
	for _, v := range ss.errs {
		nErr += v
	}
	total := len(ss.lat) + nErr
	fmt.Printf("\nsearches: %d requests in %.1fs (%.0f/s), %d errors %v, %d with live expansion; actions %v\n",
		total, loadWall.Seconds(), float64(total)/loadWall.Seconds(), nErr, ss.errs, ss.expanded, ss.byAction)
	p99 := quantile(ss.lat, 0.99)
	fmt.Printf("search latency (client side): p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		ms(quantile(ss.lat, 0.5)), ms(quantile(ss.lat, 0.95)), ms(p99), ms(quantile(ss.lat, 1)))
	fmt.Printf("  without live expansion (%d): p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms\n", len(ss.latNoExp),
		ms(quantile(ss.latNoExp, 0.5)), ms(quantile(ss.latNoExp, 0.95)), ms(quantile(ss.latNoExp, 0.99)), ms(quantile(ss.latNoExp, 1)))
	if m0 != nil && m1 != nil {
		n0, l0 := serverShare(m0)
		n1, l1 := serverShare(m1)
		if n1 > n0 {
			fmt.Printf("  server side (askwpd_tool_latency_seconds): %.0f search_site calls, %.2f%% took <= 50 ms\n", n1-n0, 100*(l1-l0)/(n1-n0))
		}
		mem := m1[`askwpd_searches_total{index="memory"}`] - m0[`askwpd_searches_total{index="memory"}`]
		fmt.Printf("  searches %.0f; search index loads %.0f\n",
			mem, m1["askwpd_search_index_loads_total"]-m0["askwpd_search_index_loads_total"])
	}
	ss.mu.Unlock()

	// Events.
	es.mu.Lock()
	sort.Slice(es.lat, func(i, j int) bool { return es.lat[i] < es.lat[j] })
	nOther := 0
	for _, v := range es.other {
		nOther += v
	}
	fmt.Printf("\nevents: %d sent in %.1fs (%d fresh, %d replays): %d answered 202, %d duplicate (401 replayed event id), %d other %v\n",
		es.sent, burstTook.Seconds(), es.fresh, es.replays, es.accepted, es.duplicate, nOther, es.other)
	slow := len(es.lat) - sort.Search(len(es.lat), func(i int) bool { return es.lat[i] > shimTimeout })
	fmt.Printf("event request latency: p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d answered after %s (the shim's timeout: it would drop them and pause 30 s)\n",
		ms(quantile(es.lat, 0.5)), ms(quantile(es.lat, 0.99)), ms(quantile(es.lat, 1)), slow, shimTimeout)
	if mid != nil {
		fmt.Printf("queue at end of load: %d pending, %d failed\n", mid.Freshness.PendingEvents, mid.Freshness.FailedEvents)
	}
	fmt.Printf("queue drained %.1fs after the load ended", drained.Seconds())
	if derr != nil {
		fmt.Printf(" — NOT drained: %v", derr)
	}
	fmt.Println()
	accepted := append([]string(nil), es.acceptedID...)
	sent, dup, replays, fresh := es.sent, es.duplicate, es.replays, es.fresh
	es.mu.Unlock()

	// The crawl.
	if stEnd == nil {
		stEnd, _ = p.status(ctx)
	}
	if stEnd != nil {
		fmt.Printf("\ncrawl (%s): crawling now: %v, frontier pending %d (a running pass's counts are written when it finishes)\n",
			crawlFlash, stEnd.Crawling, stEnd.Freshness.FrontierPending)
		for _, r := range stEnd.Runs {
			if r.ID > 0 && len(st0.Runs) > 0 && r.ID <= st0.Runs[0].ID {
				continue
			}
			fmt.Printf("  run %d %s: discovered %d, fetched %d, indexed %d, unchanged %d, errors %d, started %s, finished %q %s\n",
				r.ID, r.Kind, r.Discovered, r.Fetched, r.Indexed, r.Unchanged, r.Errors, r.StartedAt, r.FinishedAt, r.Error)
		}
	}
	fmt.Printf("\ndaemon: RSS %.1f MB before, %.1f MB peak, %.1f MB after; goroutines %.0f before, %.0f peak, %.0f after (heap in use %.1f → %.1f MB)\n",
		float64(before.rssKB)/1024, float64(peak.rssKB)/1024, float64(after.rssKB)/1024, before.goroutines, peak.goroutines, after.goroutines,
		before.heapMB, after.heapMB)
	fmt.Printf("  RSS split after: anon %.1f MB, file %.1f MB (file: mostly the binary's own pages)\n", float64(after.anonKB)/1024, float64(after.fileKB)/1024)

	if err := p.stop(); err != nil {
		fmt.Println("askwpd serve exit:", err)
	}
	stored, applied, missing, unapplied, verr := verifyEvents(p.state, accepted)
	if verr != nil {
		return false, fmt.Errorf("reading the daemon's events: %w", verr)
	}
	fmt.Printf("events in the daemon's database: %d stored, %d of %d accepted applied\n", stored, applied, len(accepted))
	fmt.Printf("load average at the end: %s\n", uptime())

	fmt.Println("\nacceptance:")
	check(nErr == 0, "search errors: %d", nErr)
	check(p99 <= o.p99, "search p99 %.1f ms <= %.0f ms", ms(p99), ms(o.p99))
	check(sent == o.events, "events sent: %d of %d", sent, o.events)
	check(nOther == 0, "event answers other than 202 / duplicate: %d", nOther)
	check(dup == replays && len(accepted) == fresh, "every replay answered duplicate (%d/%d), every fresh event accepted (%d/%d)", dup, replays, len(accepted), fresh)
	check(derr == nil, "event queue drained within %s (took %.1fs)", o.drain, drained.Seconds())
	check(len(missing) == 0 && len(unapplied) == 0 && stored == len(accepted), "every accepted event stored once and applied: %d missing, %d unapplied, %d stored", len(missing), len(unapplied), stored)
	if len(unapplied) > 0 {
		fmt.Printf("    e.g. %q\n", unapplied[:min(3, len(unapplied))])
	}
	return v.ok, nil
}

func soak(ctx context.Context, o options, p *daemonProc, hot []hotPost) (bool, error) {
	fmt.Printf("soak: %s; %d search clients (think %s mean), %.1f events/s (%.0f%% replays, %d hot posts), a crawl every %s, schedule on; sample every %s\n",
		o.soak, o.clients, o.think, o.eventRate, o.dup*100, len(hot), o.crawlEvery, o.sample)
	// Before any load: the count the quiesced daemon returns to.
	before := p.sampleNow(ctx)
	sctx, cancel := context.WithTimeout(ctx, o.soak)
	defer cancel()
	ss := newSearchStats()
	es := newEventStats()
	var wg sync.WaitGroup
	startSearchClients(sctx, &wg, p, o.clients, o.think, ss)
	sender := &eventSender{p: p, hot: hot, dup: o.dup, st: es, tag: strconv.FormatInt(time.Now().UnixNano(), 36), rand: rand.New(rand.NewPCG(42, 43))}
	wg.Add(1)
	go func() {
		defer wg.Done()
		n := int(o.eventRate * o.soak.Seconds())
		sender.sendPaced(sctx, n, o.soak, 8)
	}()
	crawls := map[string]int{}
	var cmu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			f, err := p.reindex(sctx)
			cmu.Lock()
			if err != nil {
				if sctx.Err() != nil {
					cmu.Unlock()
					return
				}
				f = "error"
			}
			crawls[f]++
			cmu.Unlock()
			select {
			case <-sctx.Done():
				return
			case <-time.After(o.crawlEvery):
			}
		}
	}()

	start := time.Now()
	var samples []sample
	fmt.Printf("\n%8s %8s %8s %8s %10s %8s %9s %8s %8s %8s  %s\n", "t", "RSS MB", "anon MB", "file MB", "goroutines", "heap MB", "searches", "p99 ms", "pending", "crawling", "load avg")
	take := func() {
		s := p.sampleNow(ctx)
		s.at = time.Since(start)
		ss.mu.Lock()
		iv := ss.interval
		ss.interval = nil
		s.searches = len(ss.lat)
		ss.mu.Unlock()
		sort.Slice(iv, func(i, j int) bool { return iv[i] < iv[j] })
		s.p99 = quantile(iv, 0.99)
		if st, err := p.status(ctx); err == nil {
			s.pending, s.crawling = st.Freshness.PendingEvents, st.Crawling
		}
		samples = append(samples, s)
		fmt.Printf("%8s %8.1f %8.1f %8.1f %10.0f %8.1f %9d %8.1f %8d %8v  %s\n", s.at.Round(time.Second), float64(s.rssKB)/1024,
			float64(s.anonKB)/1024, float64(s.fileKB)/1024, s.goroutines, s.heapMB, s.searches, ms(s.p99), s.pending, s.crawling, uptime())
	}
	take()
	t := time.NewTicker(o.sample)
	for sctx.Err() == nil {
		select {
		case <-sctx.Done():
		case <-t.C:
			take()
		}
	}
	t.Stop()
	wg.Wait()
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	take()
	drained, _, final, derr := drainAndSample(ctx, p, o.drain)

	v := &verdict{ok: true}
	check := v.check
	var steady []sample
	for _, s := range samples {
		if s.at >= o.warmup {
			steady = append(steady, s)
		}
	}
	fmt.Printf("\nbefore the load: RSS %.1f MB, %.0f goroutines, heap in use %.1f MB\n", float64(before.rssKB)/1024, before.goroutines, before.heapMB)
	fmt.Printf("after the drain: RSS %.1f MB (anon %.1f, file %.1f), %.0f goroutines, heap in use %.1f MB\n", float64(final.rssKB)/1024,
		float64(final.anonKB)/1024, float64(final.fileKB)/1024, final.goroutines, final.heapMB)
	ss.mu.Lock()
	sort.Slice(ss.lat, func(i, j int) bool { return ss.lat[i] < ss.lat[j] })
	nErr := 0
	for _, v := range ss.errs {
		nErr += v
	}
	fmt.Printf("searches: %d, errors %d %v, p50 %.1f ms, p99 %.1f ms, max %.1f ms, %d with live expansion\n", len(ss.lat)+nErr, nErr, ss.errs,
		ms(quantile(ss.lat, 0.5)), ms(quantile(ss.lat, 0.99)), ms(quantile(ss.lat, 1)), ss.expanded)
	ss.mu.Unlock()
	es.mu.Lock()
	nOther := 0
	for _, v := range es.other {
		nOther += v
	}
	accepted := append([]string(nil), es.acceptedID...)
	sort.Slice(es.lat, func(i, j int) bool { return es.lat[i] < es.lat[j] })
	slow := len(es.lat) - sort.Search(len(es.lat), func(i int) bool { return es.lat[i] > shimTimeout })
	fmt.Printf("events: %d sent, %d accepted, %d duplicate, %d other %v; request p99 %.1f ms, %d slower than the shim's %s; queue drained in %.1fs\n",
		es.sent, es.accepted, es.duplicate, nOther, es.other, ms(quantile(es.lat, 0.99)), slow, shimTimeout, drained.Seconds())
	es.mu.Unlock()
	cmu.Lock()
	fmt.Printf("crawls requested: %v\n", crawls)
	cmu.Unlock()

	fmt.Println("\nacceptance:")
	if len(steady) < 6 {
		check(false, "too few samples after the %s warm-up (%d) to judge flatness", o.warmup, len(steady))
	} else {
		third := len(steady) / 3
		first, last := steady[:third], steady[len(steady)-third:]
		mean := func(xs []sample, f func(sample) float64) float64 {
			t := 0.0
			for _, x := range xs {
				t += f(x)
			}
			return t / float64(len(xs))
		}
		rss := func(s sample) float64 { return float64(s.rssKB) / 1024 }
		gor := func(s sample) float64 { return s.goroutines }
		heap := func(s sample) float64 { return s.heapMB }
		r1, r3 := mean(first, rss), mean(last, rss)
		g1, g3 := mean(first, gor), mean(last, gor)
		h1, h3 := mean(first, heap), mean(last, heap)
		fmt.Printf("  slope after warm-up: RSS %+.2f MB/h, goroutines %+.2f /h, heap %+.2f MB/h\n", slope(steady, rss), slope(steady, gor), slope(steady, heap))
		anon := func(s sample) float64 { return float64(s.anonKB) / 1024 }
		file := func(s sample) float64 { return float64(s.fileKB) / 1024 }
		a1, a3 := mean(first, anon), mean(last, anon)
		f1, f3 := mean(first, file), mean(last, file)
		fmt.Printf("  slope after warm-up: RSS anon %+.2f MB/h, RSS file %+.2f MB/h\n", slope(steady, anon), slope(steady, file))
		fmt.Printf("  heap in use: first third %.1f MB, last third %.1f MB (%+.1f%%)\n", h1, h3, 100*(h3-h1)/h1)
		fmt.Printf("  RSS anon: first third %.1f MB, last third %.1f MB (%+.1f%%); RSS file (the binary's pages): %.1f → %.1f MB\n",
			a1, a3, 100*(a3-a1)/a1, f1, f3)
		check(r3 <= r1*(1+o.flat), "RSS flat: first third mean %.1f MB, last third %.1f MB (%+.1f%%, limit %+.0f%%)", r1, r3, 100*(r3-r1)/r1, 100*o.flat)
		// A sample's goroutines include the requests in flight, which a
		// slow spell (a busy machine) multiplies without any leak; a leak
		// raises the floor. So the check compares each third's lowest
		// sample, and the quiesced count after the drain with the one
		// before the load; the means are shown for the record.
		floor := func(xs []sample) float64 {
			m := math.Inf(1)
			for _, x := range xs {
				m = min(m, x.goroutines)
			}
			return m
		}
		fl1, fl3 := floor(first), floor(last)
		fmt.Printf("  goroutines: first third mean %.1f, last third mean %.1f (in-flight requests included)\n", g1, g3)
		check(fl3 <= fl1*(1+o.flat)+5, "goroutines flat: first third floor %.0f, last third floor %.0f (limit +%.0f%% +5)", fl1, fl3, 100*o.flat)
		check(final.goroutines <= before.goroutines+5, "goroutines after the drain, idle connections closed: %.0f (before the load: %.0f, limit +5)",
			final.goroutines, before.goroutines)
	}
	check(nErr == 0, "search errors: %d", nErr)
	check(nOther == 0, "event answers other than 202 / duplicate: %d", nOther)
	check(derr == nil, "event queue drained within %s", o.drain)
	if err := p.stop(); err != nil {
		fmt.Println("askwpd serve exit:", err)
	}
	stored, applied, missing, unapplied, verr := verifyEvents(p.state, accepted)
	if verr != nil {
		return false, fmt.Errorf("reading the daemon's events: %w", verr)
	}
	check(len(missing) == 0 && len(unapplied) == 0 && stored == len(accepted), "every accepted event stored once and applied: %d of %d applied, %d missing, %d unapplied",
		applied, len(accepted), len(missing), len(unapplied))
	return v.ok, nil
}

// slope is the least-squares growth per hour.
func slope(xs []sample, f func(sample) float64) float64 {
	var sx, sy, sxx, sxy float64
	n := float64(len(xs))
	for _, s := range xs {
		x, y := s.at.Hours(), f(s)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// verdict prints acceptance checks and remembers whether all of them held.
type verdict struct{ ok bool }

func (v *verdict) check(cond bool, format string, a ...any) {
	mark := "ok  "
	if !cond {
		mark, v.ok = "FAIL", false
	}
	fmt.Printf("  [%s] %s\n", mark, fmt.Sprintf(format, a...))
}

// startSearchClients runs n search clients on wg until ctx is done, each
// with its own query mix and seed.
func startSearchClients(ctx context.Context, wg *sync.WaitGroup, p *daemonProc, n int, think time.Duration, ss *searchStats) {
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			searchClient(ctx, p, newQueryMix(), uint64(i+1), think, ss)
		}()
	}
}
