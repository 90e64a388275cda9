package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askwp/askwpd/internal/wptest"
)

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
	site, err := wptest.Open()
	if err != nil {
		return false, fmt.Errorf("%w: run scripts/wp-up.sh", err)
	}
	e := site.Env
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
	var corpus string
	if o.corpus != "" {
		corpus = filepath.Join(corpusDir(o.corpus), "corpus.jsonl")
		if _, err := os.Stat(corpus); err != nil {
			fmt.Printf("no corpus at %s (%v): skipped\n", corpus, err)
			return true, nil
		}
	}
	if o.generate > 0 || corpus != "" {
		unlock, err := lockSite(ctx, site)
		if err != nil {
			return false, err
		}
		defer unlock()
	}
	if corpus != "" {
		defer func() {
			t0 := time.Now()
			if err := loadCorpus(e, "--remove"); err != nil {
				fmt.Fprintln(os.Stderr, "removing the corpus posts:", err, "(run: php scripts/wp/load-corpus.php --url=SITE --remove)")
				return
			}
			fmt.Printf("removed the corpus posts in %.1fs\n", time.Since(t0).Seconds())
		}()
		t0 := time.Now()
		if err := loadCorpus(e, "--corpus="+corpus); err != nil {
			return false, err
		}
		fmt.Printf("loaded %s as posts in %.1fs\n", corpus, time.Since(t0).Seconds())
	}
	if o.generate > 0 {
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
	if o.versus != "" {
		if o.corpus == "" || o.rate <= 0 {
			return false, fmt.Errorf("-versus needs -corpus (its queries are the searches) and -rate")
		}
		return versus(ctx, o, bin, state, tmp, e) // serves copies
	}
	if o.reuse != "" {
		// A copy: the run's events and crawl write to the state, and the
		// kept one serves the next run as it was.
		state = filepath.Join(tmp, "state")
		if err := copyState(o.reuse, state); err != nil {
			return false, err
		}
	}
	p, err := startDaemon(ctx, bin, state, e, o.soak > 0, o.timerSlack)
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
	if err := waitIndex(ctx, p); err != nil {
		return false, err
	}
	if o.soak > 0 {
		return soak(ctx, o, p, hot)
	}
	if o.rate > 0 {
		if o.corpus == "" {
			return false, fmt.Errorf("-rate needs -corpus (its queries are the searches)")
		}
		return openLoad(ctx, o, p, hot, e["SITE_URL"])
	}
	return load(ctx, o, p, hot)
}

// copyState copies a kept state dir to dst for a daemon to serve, without
// the pass the run that kept it interrupted: the daemon would resume it as
// it starts, and a state kept by an open-loop run holds its crawl, cut off
// with thousands of pages queued. Resumed, it rendered and indexed them
// through the core-search comparison and the sweep that came first.
func copyState(src, dst string) error {
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("copying the state dir: %w: %s", err, out)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dst, "askwpd.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE urls SET queued = 0 WHERE queued = 1`)
	if err != nil {
		return fmt.Errorf("dropping the kept state's interrupted pass: %w", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		fmt.Printf("the kept state held an interrupted pass (%d pages queued): the copy served drops it\n", n)
	}
	return db.Close()
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
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
