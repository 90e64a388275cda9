// Command network benchmarks askwpd on a WordPress network: N sites of P
// posts each (default 20 × 500) added to the test network that
// scripts/network-up.sh brings up, then:
//
//  1. plain GETs of every post's URL at the crawl's concurrency (which
//     also builds each new site's rewrite rules);
//  2. the first full index of the whole network (a fresh state dir, every
//     site's pass at once on the shared crawl budget), its wall time and the
//     process's RSS after it and at its peak;
//  3. with -again, plain GETs of the same URLs again;
//  4. search_site latency p50/p95 over Q queries of two of the posts'
//     words, after one search per site has loaded its index: without a
//     site (the main site, which holds none of the bench posts), with a
//     site (a bench site's blog id) and with site "all" (every site,
//     merged);
//  5. /v1/status's answer and a /metrics scrape, 50 of each, p50 and p99:
//     both report every site's index.
//
// It holds the network's test lock (.wp-network/test.lock) throughout and
// removes the bench sites at the end unless -keep.
//
// Usage: go run ./bench/network [-sites 20] [-posts 500] [-queries 300] [-concurrency 4] [-keep] [-again] [-gets=false]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/daemon"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/tool"
)

type benchSites struct {
	Sites []struct {
		BlogID int64    `json:"blog_id"`
		Home   string   `json:"home"`
		URLs   []string `json:"urls"`
	} `json:"sites"`
	Words []string `json:"words"`
}

func main() {
	var (
		nsites  = flag.Int("sites", 20, "bench sites")
		nposts  = flag.Int("posts", 500, "posts per bench site")
		queries = flag.Int("queries", 300, "searches per mode")
		conc    = flag.Int("concurrency", 4, "crawl and plain-GET concurrency")
		keep    = flag.Bool("keep", false, "keep the bench sites afterwards")
		again   = flag.Bool("again", false, "plain GETs once more after the index")
		gets    = flag.Bool("gets", true, "plain GETs before the index")
	)
	flag.Parse()
	if err := run(*nsites, *nposts, *queries, *conc, *keep, *again, *gets); err != nil {
		fmt.Fprintln(os.Stderr, "bench/network:", err)
		os.Exit(1)
	}
}

func run(nsites, nposts, queries, conc int, keep, again, gets bool) error {
	env, err := readEnv(filepath.Join(wptest.RepoRoot(), ".wp-network", "env"))
	if err != nil {
		return fmt.Errorf("the test network is not up (run scripts/network-up.sh): %w", err)
	}
	unlock, err := lock(filepath.Join(env["WP_STATE_DIR"], "test.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	php := func(args ...string) ([]byte, error) {
		cmd := exec.Command("php", append([]string{filepath.Join(wptest.RepoRoot(), "scripts", "wp", "network-bench.php"), "--url=" + env["SITE_URL"]}, args...)...)
		cmd.Env = append(os.Environ(), "WP_ROOT="+env["WP_ROOT"])
		cmd.Stderr = os.Stderr
		return cmd.Output()
	}
	t0 := time.Now()
	out, err := php(fmt.Sprintf("--sites=%d", nsites), fmt.Sprintf("--posts=%d", nposts), "setup")
	if err != nil {
		return fmt.Errorf("network-bench.php setup: %w", err)
	}
	if !keep {
		defer func() {
			if _, err := php("remove"); err != nil {
				fmt.Fprintln(os.Stderr, "bench/network: removing the bench sites:", err)
			}
		}()
	}
	var bs benchSites
	if err := json.Unmarshal(out, &bs); err != nil {
		return fmt.Errorf("network-bench.php: %w", err)
	}
	var urls []string
	for _, s := range bs.Sites {
		urls = append(urls, s.URLs...)
	}
	fmt.Printf("network: %d bench sites, %d posts (setup %.1f s), concurrency %d\n", len(bs.Sites), len(urls), time.Since(t0).Seconds(), conc)

	var getBefore time.Duration
	if gets {
		took, getBytes, err := plainGETs(urls, conc)
		if err != nil {
			return err
		}
		getBefore = took
		fmt.Printf("plain GETs: %d URLs in %.2f s (%.0f pages/s, %.1f MB)\n", len(urls), took.Seconds(), float64(len(urls))/took.Seconds(), float64(getBytes)/1e6)
	}

	state, err := os.MkdirTemp("", "askwpd-bench-network-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	cfg := config.Default()
	cfg.WPRoot = env["WP_ROOT"]
	cfg.StateDir = state
	cfg.Crawl.Concurrency = conc
	cfg.Crawl.RatePerSec = 1000 // the plain GETs have no rate limit either
	cfg.Schedule.Disabled = true
	ctx := context.Background()
	rssBefore := procKB("VmRSS")
	d, err := daemon.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer d.Close()
	start := time.Now()
	if _, err := d.Index(ctx, daemon.IndexOptions{Kind: "bench", Full: true}); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	wall := time.Since(start)
	st, err := d.Status(ctx)
	if err != nil {
		return err
	}
	if st.Network == nil {
		return fmt.Errorf("the daemon did not read a network")
	}
	fmt.Printf("first full index: %d sites, %d documents, %d chunks in %.2f s (%.0f docs/s)\n", len(st.Network.Sites),
		st.Network.Total.Documents, st.Network.Total.Chunks, wall.Seconds(), float64(st.Network.Total.Documents)/wall.Seconds())
	if gets {
		fmt.Printf("index / plain GETs: %.2fx\n", wall.Seconds()/getBefore.Seconds())
	}
	fmt.Printf("RSS: %.0f MB before Open, %.0f MB after the index, peak %.0f MB\n", rssBefore/1024, procKB("VmRSS")/1024, procKB("VmHWM")/1024)

	if again {
		getAfter, _, err := plainGETs(urls, conc)
		if err != nil {
			return err
		}
		fmt.Printf("plain GETs (after): %.2f s\n", getAfter.Seconds())
	}

	rnd := rand.New(rand.NewPCG(20, 500))
	qs := make([]string, queries)
	sites := make([]int64, queries)
	for i := range qs {
		qs[i] = bs.Words[rnd.IntN(len(bs.Words))] + " " + bs.Words[rnd.IntN(len(bs.Words))]
		sites[i] = bs.Sites[rnd.IntN(len(bs.Sites))].BlogID
	}
	// Each site's in-memory index is built on its first search; that first
	// load is timed apart, so the percentiles are of searches proper.
	t1 := time.Now()
	for _, site := range bs.Sites {
		raw, _ := json.Marshal(map[string]any{"query": bs.Words[0], "site": site.BlogID})
		if _, err := d.Lean().Call(ctx, "search_site", raw); err != nil {
			return err
		}
	}
	fmt.Printf("first search of each bench site (loads its index): %.0f ms for %d sites\n", ms(time.Since(t1)), len(bs.Sites))
	for _, mode := range []string{"none", "site", "all"} {
		lat := make([]time.Duration, 0, queries)
		hits := 0
		for i, q := range qs {
			args := map[string]any{"query": q}
			switch mode {
			case "site":
				args["site"] = sites[i]
			case "all":
				args["site"] = tool.AllSites
			}
			raw, _ := json.Marshal(args)
			t := time.Now()
			res, err := d.Lean().Call(ctx, "search_site", raw)
			lat = append(lat, time.Since(t))
			if err != nil {
				return fmt.Errorf("search %s: %w", raw, err)
			}
			if r, ok := res.(*tool.SearchResponse); ok && len(r.Results) > 0 {
				hits++
			}
		}
		sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
		fmt.Printf("search_site site=%-4s %d queries: p50 %.2f ms, p95 %.2f ms, max %.2f ms, %d with results\n", mode, len(lat),
			ms(lat[len(lat)/2]), ms(lat[len(lat)*95/100]), ms(lat[len(lat)-1]), hits)
	}
	return monitor(ctx, d, 50)
}

// monitor times what a monitor polls: /v1/status's answer (the network's
// sites with theirs) and a /metrics scrape (each site's gauges), n of each,
// one every 100 ms as a busy dashboard would. The index is idle: these are
// the network's own cost, per site, with nothing else on the machine.
func monitor(ctx context.Context, d *daemon.Daemon, n int) error {
	var status, scrape []time.Duration
	h := d.MetricsHandler()
	for range n {
		t := time.Now()
		if _, err := d.Status(ctx); err != nil {
			return fmt.Errorf("status: %w", err)
		}
		status = append(status, time.Since(t))
		rec := httptest.NewRecorder()
		t = time.Now()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		scrape = append(scrape, time.Since(t))
		if rec.Code != http.StatusOK {
			return fmt.Errorf("/metrics: %d", rec.Code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, x := range []struct {
		name string
		lat  []time.Duration
	}{{"/v1/status", status}, {"/metrics", scrape}} {
		sort.Slice(x.lat, func(a, b int) bool { return x.lat[a] < x.lat[b] })
		fmt.Printf("%-10s %d answers, one every 100 ms: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", x.name, n,
			ms(x.lat[len(x.lat)/2]), ms(x.lat[len(x.lat)*99/100]), ms(x.lat[len(x.lat)-1]))
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// plainGETs fetches every URL once with conc workers and returns the wall
// time and the bytes read.
func plainGETs(urls []string, conc int) (time.Duration, int64, error) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	next := make(chan string)
	var (
		mu    sync.Mutex
		bytes int64
		ferr  error
		wg    sync.WaitGroup
	)
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range next {
				resp, err := client.Get(u)
				if err == nil {
					n, _ := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					mu.Lock()
					bytes += n
					if resp.StatusCode != 200 && ferr == nil {
						ferr = fmt.Errorf("GET %s: %s", u, resp.Status)
					}
					mu.Unlock()
				} else {
					mu.Lock()
					if ferr == nil {
						ferr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, u := range urls {
		next <- u
	}
	close(next)
	wg.Wait()
	return time.Since(start), bytes, ferr
}

// procKB reads a kB line of /proc/self/status.
func procKB(key string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return f
		}
	}
	return 0
}

func readEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env, nil
}

// lock holds the network's test lock, so its acceptance test never sees
// the bench sites.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
