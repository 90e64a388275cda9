// Command crawl benchmarks a full crawl of the test WordPress.
//
// It holds the test site lock (.wp-test/test.lock) the whole time, so the
// exact-set tests of other packages never see generated posts. Steps:
//
//  1. optionally generate N posts (scripts/wp/gen-posts.php, as
//     scripts/wp-up.sh --generate N runs it);
//  2. run a full `Index` in a child process (a fresh state dir), recording
//     every URL it requests, while sampling the child's RSS from /proc;
//  3. plainly GET the same URLs at the same concurrency (before and after);
//  4. time extract + chunk + index per page, single-threaded, in process
//     CPU time, on the bodies fetched in step 3;
//  5. remove the generated posts (gen-posts.php --remove).
//
// Usage: go run ./bench/crawl [-generate N] [-concurrency 4] [-keep]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/daemon"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/wp"
)

type childResult struct {
	WallMS    float64  `json:"wall_ms"`
	Fetched   int      `json:"fetched"`
	Indexed   int      `json:"indexed"`
	Errors    int      `json:"errors"`
	Documents int      `json:"documents"`
	URLs      []string `json:"urls"`
}

func main() {
	var (
		gen       = flag.Int("generate", 0, "generated posts to ensure before the crawl (0: leave the site as it is)")
		conc      = flag.Int("concurrency", 4, "crawl and plain-GET concurrency")
		keep      = flag.Bool("keep", false, "keep the generated posts afterwards")
		child     = flag.String("child", "", "internal: run the crawl with this state dir and print JSON")
		skipCPU   = flag.Bool("skip-cpu", false, "skip the per-page CPU measurement")
		skipPlain = flag.Bool("skip-plain", false, "skip the plain-GET comparison (and the CPU measurement): RSS only")
	)
	flag.Parse()
	if *child != "" {
		if err := runChild(*child, *conc); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := run(*gen, *conc, *keep, *skipCPU || *skipPlain, *skipPlain); err != nil {
		fmt.Fprintln(os.Stderr, "bench/crawl:", err)
		os.Exit(1)
	}
}

func env() (map[string]string, error) {
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

func lockSite() (func(), error) {
	f, err := os.OpenFile(filepath.Join(wptest.RepoRoot(), ".wp-test", "test.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	got := time.Now()
	fmt.Printf("site lock taken after waiting %.1fs at %s\n", got.Sub(t0).Seconds(), got.Format(time.RFC3339))
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		fmt.Printf("site lock held for %.1fs (released %s)\n", time.Since(got).Seconds(), time.Now().Format(time.RFC3339))
	}, nil
}

// genPosts runs scripts/wp/gen-posts.php as scripts/wp-up.sh --generate
// and --remove-generated do. It is called directly because wp-up.sh takes
// the test lock itself, which this program already holds for the whole
// run.
func genPosts(e map[string]string, args ...string) error {
	cmd := exec.Command("php", append([]string{"-d", "display_errors=stderr", "-d", "memory_limit=1024M",
		filepath.Join(wptest.RepoRoot(), "scripts", "wp", "gen-posts.php"), "--url=" + e["SITE_URL"]}, args...)...)
	cmd.Env = append(os.Environ(), "WP_ROOT="+e["WP_ROOT"], "SITE_URL="+e["SITE_URL"])
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

func run(gen, conc int, keep, skipCPU, skipPlain bool) error {
	e, err := env()
	if err != nil {
		return err
	}
	// Only a run that generates posts changes the site: it holds the lock
	// from generation to removal. A read-only crawl needs none.
	if gen > 0 {
		unlock, err := lockSite()
		if err != nil {
			return err
		}
		defer unlock()
	}
	if gen > 0 {
		t0 := time.Now()
		if err := genPosts(e, "--count="+strconv.Itoa(gen)); err != nil {
			return err
		}
		fmt.Printf("generated %d posts in %.1fs\n", gen, time.Since(t0).Seconds())
		if !keep {
			defer func() {
				t0 := time.Now()
				if err := genPosts(e, "--remove"); err != nil {
					fmt.Fprintln(os.Stderr, "removing generated posts:", err)
				}
				fmt.Printf("removed generated posts in %.1fs\n", time.Since(t0).Seconds())
			}()
		}
	}

	// Warm PHP's opcache so neither side pays the first compile.
	http.Get(e["SITE_URL"] + "/")

	var plain1 plainResult
	// The daemon crawl, in a child process so its RSS is its own.
	state, err := os.MkdirTemp("", "askwpd-bench-crawl-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-child", state, "-concurrency", strconv.Itoa(conc))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var (
		peakRSS int64
		samples []int64
		smu     sync.Mutex
		stopS   = make(chan struct{})
		sdone   = make(chan struct{})
	)
	go func() {
		defer close(sdone)
		t := time.NewTicker(25 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopS:
				return
			case <-t.C:
				rss, hwm := procMem(cmd.Process.Pid)
				smu.Lock()
				if hwm > peakRSS {
					peakRSS = hwm
				}
				if rss > 0 {
					samples = append(samples, rss)
				}
				smu.Unlock()
			}
		}
	}()
	out, err := io.ReadAll(stdout)
	close(stopS)
	<-sdone
	if werr := cmd.Wait(); werr != nil {
		return fmt.Errorf("child: %v", werr)
	}
	if err != nil {
		return err
	}
	var cr childResult
	if err := json.Unmarshal(out, &cr); err != nil {
		return fmt.Errorf("child output: %v: %.300s", err, out)
	}
	smu.Lock()
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	medRSS := int64(0)
	if len(samples) > 0 {
		medRSS = samples[len(samples)/2]
	}
	smu.Unlock()

	fmt.Printf("\nsite: %s, concurrency %d\n", e["SITE_URL"], conc)
	fmt.Printf("daemon full crawl: %.2fs wall, %d requests, %d pages fetched, %d indexed, %d errors, %d documents\n",
		cr.WallMS/1000, len(cr.URLs), cr.Fetched, cr.Indexed, cr.Errors, cr.Documents)
	if skipPlain {
		fmt.Printf("daemon RSS: peak (VmHWM) %.1f MB, median sample %.1f MB (target < 80 MB)\n",
			float64(peakRSS)/1024, float64(medRSS)/1024)
		return nil
	}
	plain1 = plainGet(cr.URLs, conc, false)
	plain2 := plainGet(cr.URLs, conc, !skipCPU)
	best := min(plain1.wall, plain2.wall)
	fmt.Printf("plain GET of the same %d URLs: %.2fs (before: %.2fs, after: %.2fs)\n", len(cr.URLs), best.Seconds(),
		plain1.wall.Seconds(), plain2.wall.Seconds())
	fmt.Printf("ratio daemon / plain GET: %.3f (target <= 1.15)\n", cr.WallMS/1000/best.Seconds())
	fmt.Printf("daemon RSS: peak (VmHWM) %.1f MB, median sample %.1f MB (target < 80 MB)\n",
		float64(peakRSS)/1024, float64(medRSS)/1024)

	if !skipCPU {
		if err := cpuPerPage(e, plain2.pages); err != nil {
			return err
		}
	}
	return nil
}

// procMem reads VmRSS and VmHWM (kB) of a process.
func procMem(pid int) (rss, hwm int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		var v int64
		if strings.HasPrefix(l, "VmRSS:") {
			fmt.Sscan(strings.TrimPrefix(l, "VmRSS:"), &v)
			rss = v
		}
		if strings.HasPrefix(l, "VmHWM:") {
			fmt.Sscan(strings.TrimPrefix(l, "VmHWM:"), &v)
			hwm = v
		}
	}
	return rss, hwm
}

type plainPage struct {
	url, final string
	status     int
	ctype      string
	body       []byte
}

type plainResult struct {
	wall  time.Duration
	pages []plainPage
}

// plainGet fetches urls with n workers and nothing else: the floor a
// crawler at that concurrency cannot beat.
func plainGet(urls []string, n int, keep bool) plainResult {
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	c := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	ch := make(chan string)
	var (
		mu    sync.Mutex
		pages []plainPage
		wg    sync.WaitGroup
	)
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range ch {
				resp, err := c.Get(u)
				if err != nil {
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if keep && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") && resp.StatusCode == 200 {
					mu.Lock()
					pages = append(pages, plainPage{url: u, final: resp.Request.URL.String(), status: resp.StatusCode,
						ctype: resp.Header.Get("Content-Type"), body: b})
					mu.Unlock()
				}
			}
		}()
	}
	for _, u := range urls {
		ch <- u
	}
	close(ch)
	wg.Wait()
	return plainResult{wall: time.Since(start), pages: pages}
}

// cpuPerPage runs the daemon's own extract + chunk + index step on each
// page, one at a time, and reports the process CPU time each took.
func cpuPerPage(e map[string]string, pages []plainPage) error {
	state, err := os.MkdirTemp("", "askwpd-bench-cpu-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	cfg := config.Default()
	cfg.WPRoot = e["WP_ROOT"]
	cfg.StateDir = state
	cfg.Schedule.Disabled = true
	ctx := context.Background()
	d, err := daemon.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer d.Close()
	posts, err := d.WP.Posts(ctx, wp.PostFilter{Light: true})
	if err != nil {
		return err
	}
	public := map[int64]*wp.Post{}
	for _, p := range posts {
		public[p.ID] = p
	}
	var cpu []time.Duration
	statuses := map[string]int{}
	runtime.GC()
	for _, p := range pages {
		page := &crawl.Page{URL: p.final, Status: p.status, Body: p.body, ContentType: p.ctype}
		before := cpuTime()
		st, err := d.Crawler.IndexPage(ctx, page, public)
		after := cpuTime()
		if err != nil {
			statuses["error"]++
			continue
		}
		statuses[st]++
		if st == "indexed" {
			cpu = append(cpu, after-before)
		}
	}
	if len(cpu) == 0 {
		return fmt.Errorf("no page was indexed in the CPU run: %v", statuses)
	}
	sort.Slice(cpu, func(i, j int) bool { return cpu[i] < cpu[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("CPU per indexed page (extract + chunk + index), %d pages %v: median %.2f ms, p90 %.2f ms, max %.2f ms (target median <= 5 ms)\n",
		len(cpu), statuses, ms(cpu[len(cpu)/2]), ms(cpu[len(cpu)*9/10]), ms(cpu[len(cpu)-1]))
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runChild crawls the site into a fresh state dir and prints the result.
func runChild(state string, conc int) error {
	e, err := env()
	if err != nil {
		return err
	}
	cfg := config.Default()
	cfg.WPRoot = e["WP_ROOT"]
	cfg.StateDir = state
	cfg.Schedule.Disabled = true
	cfg.Crawl.Concurrency = conc
	cfg.Crawl.RatePerSec = 100000
	cfg.Crawl.Budget = 1 << 30
	ctx := context.Background()
	d, err := daemon.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer d.Close()
	var (
		mu   sync.Mutex
		urls []string
	)
	tr := d.Crawler.Fetcher.Client.Transport
	d.Crawler.Fetcher.Client.Transport = rt(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		urls = append(urls, r.URL.String())
		mu.Unlock()
		return tr.RoundTrip(r)
	})
	start := time.Now()
	opt := daemon.IndexOptions{Full: true}
	if hp := os.Getenv("ASKWPD_BENCH_HEAP"); hp != "" {
		var once sync.Once
		opt.Progress = func(done, _ int) {
			if done >= 1500 {
				once.Do(func() {
					runtime.GC()
					if f, err := os.Create(hp); err == nil {
						pprof.WriteHeapProfile(f)
						f.Close()
					}
					os.Exit(3)
				})
			}
		}
	}
	r, err := d.Index(ctx, opt)
	if err != nil {
		return err
	}
	wall := time.Since(start)
	st, err := d.Store.Stats(ctx)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(childResult{WallMS: float64(wall.Microseconds()) / 1000, Fetched: r.Fetched,
		Indexed: r.Indexed, Errors: r.Errors, Documents: st.Documents, URLs: urls})
}

type rt func(*http.Request) (*http.Response, error)

func (f rt) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
