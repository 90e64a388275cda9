// Command bigsite measures one askwpd node on a big WordPress:
// the first full index against plain GETs of the same URLs, and the cost
// curve of serving (store size, index bytes per chunk, RSS, start-up to
// ready, search latency and CPU). The site is the one scripts/bigsite-up.sh
// N brings up; run it at 1k, 10k and 100k posts.
//
//	go run ./bench/bigsite crawl -state DIR [-env .wp-big/env] [-concurrency 4] [-plain]
//	go run ./bench/bigsite serve -state DIR [-env .wp-big/env] [-rounds 2]
//	go run ./bench/bigsite plain -state DIR [-every 1]
//	go run ./bench/bigsite replicate -from DIR -state DIR2 -times 10
//	go run ./bench/bigsite table DIR...
//	go run ./bench/bigsite pages -state DIR [-n 300] [-cpuprofile F]
//
// crawl runs a full index pass (what `askwpd index --full` runs) into a
// fresh state dir DIR, in a child process, recording every URL it
// requests; with -plain it then GETs the same URLs at the same concurrency
// and nothing else (or plain does it later: with -every N, every Nth
// URL, its time multiplied by N, where the whole list would take too
// long); the CPU profile of the crawl's first five minutes is DIR/bench-crawl.pprof. serve opens DIR as `askwpd serve` does, in a child
// process, and times start-up until search_site answers from the full
// index, then asks every SciFact and wpdocs query (the site's text is
// drawn from those corpora) as whole search_site calls. Both write their
// numbers into DIR/bench-*.json; table prints the cost curve from them.
// replicate makes a stand-in for a bigger site where crawling one takes
// longer than there is: DIR's crawled pages written -times times over,
// each copy at URLs of its own, for serve to measure (table marks it).
// pages fetches n of the pages a crawl of DIR requested and times the
// daemon's own work on each (extract, check, chunk, store), one at a
// time, in process CPU time: the share of the cores a crawl takes from
// WordPress.
package main

import (
	"bufio"
	"bytes"
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
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/daemon"
	"github.com/askwp/askwpd/eval"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
	"github.com/askwp/askwpd/wp"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bigsite crawl|serve|table ...")
		os.Exit(2)
	}
	ctx := context.Background()
	var err error
	switch os.Args[1] {
	case "crawl":
		err = runCrawl(ctx, os.Args[2:])
	case "crawl-child":
		err = crawlChild(ctx, os.Args[2:])
	case "serve":
		err = runServe(os.Args[2:])
	case "serve-child":
		err = serveChild(ctx, os.Args[2:])
	case "table":
		err = table(os.Args[2:])
	case "pages":
		err = runPages(ctx, os.Args[2:])
	case "plain":
		err = runPlain(os.Args[2:])
	case "replicate":
		err = runReplicate(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/bigsite:", err)
		os.Exit(1)
	}
}

func readEnv(path string) (map[string]string, error) {
	if path == "" {
		path = filepath.Join(wptest.RepoRoot(), ".wp-big", "env")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the big WordPress is not up (scripts/bigsite-up.sh N): %w", err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = strings.Trim(v, `"'`)
		}
	}
	return m, nil
}

func siteConfig(e map[string]string, state string, conc int) config.Config {
	cfg := config.Default()
	cfg.WPRoot = e["WP_ROOT"]
	cfg.StateDir = state
	cfg.Schedule.Disabled = true
	cfg.Crawl.Concurrency = conc
	// The comparison is with plain GETs as fast as the site answers: no
	// rate limit, and a budget that covers the whole site in one pass.
	cfg.Crawl.RatePerSec = 100000
	cfg.Crawl.Budget = 1 << 30
	return cfg
}

// crawlResult is what crawl writes to DIR/bench-crawl.json.
type crawlResult struct {
	Pages       int     `json:"pages"`
	Requests    int     `json:"requests"`
	Fetched     int     `json:"fetched"`
	Indexed     int     `json:"indexed"`
	Errors      int     `json:"errors"`
	Concurrency int     `json:"concurrency"`
	IndexS      float64 `json:"index_s"`
	PlainS      float64 `json:"plain_s,omitempty"`
	PlainEvery  int     `json:"plain_every,omitempty"` // plain_s is every Nth URL's time × N
	PeakRSSMB   float64 `json:"peak_rss_mb"`
	CPUS        float64 `json:"cpu_s"`
	// Budget, when set, stopped the crawl after that many fetches: the
	// index is of the site's first Budget URLs.
	Budget int `json:"budget,omitempty"`
	// A paired run (crawl -paired D) alternates spans of crawling with
	// spans of plain GETs, each D long, so that both meet the same load
	// from the rest of the machine: the seconds and requests of each side.
	PairedCrawlS    float64 `json:"paired_crawl_s,omitempty"`
	PairedCrawlReqs int     `json:"paired_crawl_requests,omitempty"`
	PairedPlainS    float64 `json:"paired_plain_s,omitempty"`
	PairedPlainReqs int     `json:"paired_plain_requests,omitempty"`
	// PlainShare is the plain spans' length over the crawl spans' (1 when
	// unset): the ratio comes from each side's rate, so the plain spans
	// only need enough requests to measure theirs, not as many as the crawl.
	PlainShare float64 `json:"plain_share,omitempty"`
	// StoppedAfterS, when set, is when the crawl was stopped before its
	// end (crawl -stopafter): the index, like a budget's, is of the URLs
	// it fetched by then.
	StoppedAfterS float64 `json:"stopped_after_s,omitempty"`
}

// crawlOpts are crawl's flags; its child process parses the same.
type crawlOpts struct {
	state, envPath, plainURLs string
	conc, budget              int
	plain, waits              bool
	paired, stopAfter         time.Duration
	plainShare                float64
}

func (o *crawlOpts) register(fs *flag.FlagSet) {
	fs.StringVar(&o.state, "state", "", "state dir to create (must not hold a store)")
	fs.StringVar(&o.envPath, "env", "", "the big site's env file (default .wp-big/env)")
	fs.IntVar(&o.conc, "concurrency", config.Default().Crawl.Concurrency, "crawl and plain-GET concurrency")
	fs.BoolVar(&o.plain, "plain", false, "then GET the same URLs at the same concurrency")
	fs.BoolVar(&o.waits, "waits", false, "also write where the crawl waits: block and mutex profiles and goroutine dumps (DIR/bench-crawl-*)")
	fs.IntVar(&o.budget, "budget", 0, "stop after this many fetches (0: the whole site)")
	fs.DurationVar(&o.paired, "paired", 0, "alternate spans of crawling and of plain GETs this long (see -plainurls)")
	fs.StringVar(&o.plainURLs, "plainurls", "", "with -paired: a URL list (an earlier crawl's bench-urls.txt) whose last URLs the plain spans GET, the pages the crawl reaches last")
	fs.Float64Var(&o.plainShare, "plainshare", 1, "with -paired: the plain spans' length as a share of the crawl spans'")
	fs.DurationVar(&o.stopAfter, "stopafter", 0, "stop the crawl after this long and report what it measured (0: run to the end)")
}

func runCrawl(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("crawl", flag.ExitOnError)
	var o crawlOpts
	o.register(fs)
	fs.Parse(args)
	if o.state == "" {
		return fmt.Errorf("crawl: -state is required")
	}
	if o.plainShare <= 0 {
		return fmt.Errorf("crawl: -plainshare must be above 0")
	}
	e, err := readEnv(o.envPath)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.state, 0o700); err != nil {
		return err
	}
	// Warm PHP's opcache so neither side pays the first compile.
	if r, err := http.Get(e["SITE_URL"] + "/"); err == nil {
		r.Body.Close()
	}
	urlsPath := filepath.Join(o.state, "bench-urls.txt")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if o.paired > 0 && o.plainURLs == "" {
		return fmt.Errorf("crawl: -paired needs -plainurls")
	}
	// The child parses the same flags.
	cmd := exec.Command(self, append([]string{"crawl-child", "-urls", urlsPath}, args...)...)
	cmd.Stderr = os.Stderr
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		return err
	}
	peak := sampleRSS(cmd.Process.Pid)
	werr := cmd.Wait()
	var ru *syscall.Rusage
	if cmd.ProcessState != nil {
		ru, _ = cmd.ProcessState.SysUsage().(*syscall.Rusage)
	}
	if werr != nil {
		return fmt.Errorf("crawl child: %w", werr)
	}
	var r crawlResult
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		return fmt.Errorf("crawl child output: %w: %.300s", err, out.String())
	}
	r.PeakRSSMB = float64(peak()) / 1024
	if ru != nil {
		r.CPUS = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	if r.StoppedAfterS > 0 {
		fmt.Printf("stopped after %.0f s, before the end of the pass: ", r.StoppedAfterS)
	}
	fmt.Printf("site %s, concurrency %d: full index %.1f s (%d requests, %d fetched, %d indexed, %d errors, %d pages); daemon CPU %.1f s, peak RSS %.0f MB\n",
		e["SITE_URL"], o.conc, r.IndexS, r.Requests, r.Fetched, r.Indexed, r.Errors, r.Pages, r.CPUS, r.PeakRSSMB)
	if r.PairedCrawlS > 0 && r.PairedPlainS > 0 {
		crawlRate, plainRate := float64(r.PairedCrawlReqs)/r.PairedCrawlS, float64(r.PairedPlainReqs)/r.PairedPlainS
		fmt.Printf("paired spans of %v (plain spans %.2f of that): crawl %d requests in %.1f s (%.2f/s), plain GETs %d in %.1f s (%.2f/s); the crawl's own time %.1f s against %.1f s for plain GETs of its requests at that rate: ratio %.3f (target <= 1.15)\n",
			o.paired, r.PlainShare, r.PairedCrawlReqs, r.PairedCrawlS, crawlRate, r.PairedPlainReqs, r.PairedPlainS, plainRate,
			r.PairedCrawlS, float64(r.PairedCrawlReqs)/plainRate, plainRate/crawlRate)
	}
	if o.plain {
		b, err := os.ReadFile(urlsPath)
		if err != nil {
			return err
		}
		urls := strings.Fields(string(b))
		wall := plainGet(urls, o.conc)
		r.PlainS, r.PlainEvery = wall.Seconds(), 1
		fmt.Printf("plain GET of the same %d URLs at concurrency %d: %.1f s; ratio index / plain GET %.3f (target <= 1.15)\n",
			len(urls), o.conc, r.PlainS, r.IndexS/r.PlainS)
	}
	return writeJSON(filepath.Join(o.state, "bench-crawl.json"), r)
}

func crawlChild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("crawl-child", flag.ExitOnError)
	var o crawlOpts
	o.register(fs)
	urlsPath := fs.String("urls", "", "")
	fs.Parse(args)
	e, err := readEnv(o.envPath)
	if err != nil {
		return err
	}
	cfg := siteConfig(e, o.state, o.conc)
	if o.budget > 0 {
		cfg.Crawl.Budget = o.budget
	}
	d, err := daemon.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer d.Close()
	f, err := os.Create(*urlsPath)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	var (
		mu       sync.Mutex
		requests int
	)
	tr := d.Crawler.Fetcher.Client.Transport
	var pair *pairing
	if o.paired > 0 {
		if pair, err = newPairing(o.plainURLs, o.conc); err != nil {
			return err
		}
	}
	d.Crawler.Fetcher.Client.Transport = roundTrip(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		fmt.Fprintln(w, r.URL.String())
		requests++
		mu.Unlock()
		if pair != nil {
			pair.enter()
			defer pair.leave()
		}
		resp, err := tr.RoundTrip(r)
		if err == nil && pair != nil {
			// The body is the request's too: read it within the span.
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(b))
			if rerr != nil {
				return nil, rerr
			}
		}
		return resp, err
	})
	if pair != nil {
		pair.run(o.paired, time.Duration(float64(o.paired)*o.plainShare))
		defer pair.stop()
	}
	// The crawl's own CPU profile, for `go tool pprof`: where the daemon's
	// share of the two cores goes.
	pf, err := os.Create(filepath.Join(o.state, "bench-crawl.pprof"))
	if err != nil {
		return err
	}
	defer pf.Close()
	if err := pprof.StartCPUProfile(pf); err != nil {
		return err
	}
	// Five minutes of a long crawl say where its time goes, and can be
	// read while it runs on.
	var stopProf sync.Once
	stop := time.AfterFunc(5*time.Minute, func() { stopProf.Do(pprof.StopCPUProfile) })
	defer stop.Stop()
	if o.waits {
		stopWaits := profileWaits(o.state, 5*time.Minute)
		defer stopWaits()
	}
	start := time.Now()
	last := start
	var stopped atomic.Bool
	if o.stopAfter > 0 {
		// A cancelled pass records its run and keeps its frontier; the
		// pages it fetched are in the store, for serve to measure.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		t := time.AfterFunc(o.stopAfter, func() {
			stopped.Store(true)
			cancel()
		})
		defer t.Stop()
	}
	run, err := d.Index(ctx, daemon.IndexOptions{Full: true, Progress: func(done, total int) {
		if time.Since(last) > 30*time.Second {
			last = time.Now()
			fmt.Fprintf(os.Stderr, "%s %d/%d pages\n", time.Now().Format("15:04:05"), done, total)
			if pair != nil {
				// Should the run die before its end, the rates so far
				// are on record.
				cs, cr, ps, pr := pair.counts()
				fmt.Fprintf(os.Stderr, "  spans so far: crawl %d requests in %.1f s, plain %d in %.1f s\n", cr, cs, pr, ps)
			}
		}
	}})
	wall := time.Since(start)
	switch {
	case err != nil && !stopped.Load():
		return err
	case err != nil:
		// Cancelling the pass is how it stops: what it says is expected.
		fmt.Fprintf(os.Stderr, "the pass stopped after %v: %v\n", o.stopAfter, err)
	}
	if run == nil {
		return fmt.Errorf("the pass stopped after %v before it started: %w", o.stopAfter, err)
	}
	stopProf.Do(pprof.StopCPUProfile)
	res := crawlResult{Budget: o.budget}
	if o.paired > 0 {
		res.PlainShare = o.plainShare
	}
	if stopped.Load() {
		res.StoppedAfterS = o.stopAfter.Seconds()
	}
	if pair != nil {
		res.PairedCrawlS, res.PairedCrawlReqs, res.PairedPlainS, res.PairedPlainReqs = pair.stop()
	}
	if err := w.Flush(); err != nil {
		return err
	}
	st, err := d.Store.Stats(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	res.Pages, res.Requests, res.Fetched, res.Indexed, res.Errors, res.Concurrency, res.IndexS =
		st.Documents, requests, run.Fetched, run.Indexed, run.Errors, o.conc, wall.Seconds()
	return json.NewEncoder(os.Stdout).Encode(res)
}

// pairing alternates a crawl with plain GETs: a span of crawling, then,
// once the crawl's requests in flight are answered, a span in which the
// crawl's next requests wait and as many plain GETs as it has fetchers
// run, of URLs the crawl reaches last (until the two meet, each side is
// first at the pages it fetches). Each span ends when its requests in
// flight are done.
// On a machine whose other work comes and goes, back-to-back runs of the
// two meet different loads (on ours, 1.8× apart in pace); spans of a
// few seconds each meet the same.
type pairing struct {
	mu       sync.Mutex
	cond     *sync.Cond
	plain    bool // a plain span: crawl requests wait
	inflight int
	urls     []string // consumed from the end
	conc     int
	client   *http.Client

	crawlT, plainT       time.Duration
	crawlReqs, plainReqs int
	done                 chan struct{}
	finished             chan struct{}
}

func newPairing(path string, conc int) (*pairing, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p := &pairing{urls: strings.Fields(string(b)), conc: conc, done: make(chan struct{}), finished: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 60 * time.Second}}
	p.cond = sync.NewCond(&p.mu)
	return p, nil
}

func (p *pairing) enter() {
	p.mu.Lock()
	for p.plain {
		p.cond.Wait()
	}
	p.inflight++
	p.mu.Unlock()
}

func (p *pairing) leave() {
	p.mu.Lock()
	p.inflight--
	p.crawlReqs++
	p.cond.Broadcast()
	p.mu.Unlock()
}

// run alternates crawl spans of d with plain spans of plainD until stop.
func (p *pairing) run(d, plainD time.Duration) {
	go func() {
		defer close(p.finished)
		for {
			t0 := time.Now()
			select {
			case <-p.done:
				p.mu.Lock()
				p.crawlT += time.Since(t0)
				p.mu.Unlock()
				return
			case <-time.After(d):
			}
			p.mu.Lock()
			p.plain = true
			for p.inflight > 0 {
				p.cond.Wait()
			}
			p.crawlT += time.Since(t0)
			p.mu.Unlock()

			t1 := time.Now()
			n := p.plainSpan(plainD)
			p.mu.Lock()
			p.plainT += time.Since(t1)
			p.plainReqs += n
			p.plain = false
			p.cond.Broadcast()
			p.mu.Unlock()
		}
	}()
}

// plainSpan GETs URLs with conc workers for d, and returns how many.
func (p *pairing) plainSpan(d time.Duration) int {
	end := time.Now().Add(d)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		n  int
	)
	next := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(p.urls) == 0 || time.Now().After(end) {
			return ""
		}
		u := p.urls[len(p.urls)-1]
		p.urls = p.urls[:len(p.urls)-1]
		return u
	}
	for range p.conc {
		wg.Go(func() {
			for u := next(); u != ""; u = next() {
				resp, err := p.client.Get(u)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return n
}

// counts returns each side's time and requests so far: the time of the
// spans ended, the crawl's requests including the span under way's.
func (p *pairing) counts() (crawlS float64, crawlReqs int, plainS float64, plainReqs int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.crawlT.Seconds(), p.crawlReqs, p.plainT.Seconds(), p.plainReqs
}

// stop ends the alternation (the crawl is over) and returns each side's
// time and requests. A second call returns the same.
func (p *pairing) stop() (crawlS float64, crawlReqs int, plainS float64, plainReqs int) {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	<-p.finished
	return p.counts()
}

// profileWaits records where the crawl's goroutines wait, for its first
// span: the blocking and lock contention profiles (an event sampled per
// millisecond blocked, a tenth of the contended locks) written at its
// end, and a goroutine dump every half minute within it. The CPU profile
// says what the daemon computes; these say what holds the fetchers and
// processors up while WordPress could take more. The function returned
// writes them if span has not passed yet.
func profileWaits(dir string, span time.Duration) (stop func()) {
	runtime.SetBlockProfileRate(int(time.Millisecond))
	runtime.SetMutexProfileFraction(10)
	write := func(profile, name string, debug int) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return
		}
		defer f.Close()
		pprof.Lookup(profile).WriteTo(f, debug)
	}
	done := make(chan struct{})
	var once sync.Once
	finish := func() {
		once.Do(func() {
			close(done)
			write("block", "bench-crawl-block.pprof", 0)
			write("mutex", "bench-crawl-mutex.pprof", 0)
			runtime.SetBlockProfileRate(0)
			runtime.SetMutexProfileFraction(0)
		})
	}
	go func() {
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		end := time.After(span)
		for n := 1; ; n++ {
			select {
			case <-tick.C:
				write("goroutine", fmt.Sprintf("bench-crawl-goroutine-%02d.txt", n), 1)
			case <-end:
				finish()
				return
			case <-done:
				return
			}
		}
	}()
	return finish
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// plainGet fetches urls with n workers and nothing else: the floor a
// crawler at that concurrency cannot beat.
func plainGet(urls []string, n int) time.Duration {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 60 * time.Second}
	ch := make(chan string)
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Go(func() {
			for u := range ch {
				resp, err := c.Get(u)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	for _, u := range urls {
		ch <- u
	}
	close(ch)
	wg.Wait()
	return time.Since(start)
}

// sampleRSS samples a process's VmHWM until it exits; the function
// returned gives the peak seen, in kB.
func sampleRSS(pid int) func() int64 {
	var (
		mu   sync.Mutex
		peak int64
	)
	go func() {
		for {
			_, hwm := procMem(pid)
			if hwm == 0 {
				return
			}
			mu.Lock()
			peak = max(peak, hwm)
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// procMem reads VmRSS and VmHWM (kB) of a process ("self" for this one).
func procMem(pid int) (rss, hwm int64) {
	p := "self"
	if pid > 0 {
		p = strconv.Itoa(pid)
	}
	b, err := os.ReadFile("/proc/" + p + "/status")
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		var v int64
		if s, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			fmt.Sscan(s, &v)
			rss = v
		}
		if s, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			fmt.Sscan(s, &v)
			hwm = v
		}
	}
	return rss, hwm
}

// serveResult is what serve writes to DIR/bench-serve.json.
type serveResult struct {
	Pages      int     `json:"pages"`
	Chunks     int     `json:"chunks"`
	StoreMB    float64 `json:"store_mb"`
	IndexBytes float64 `json:"index_bytes_per_chunk"`
	ReadyS     float64 `json:"ready_s"`
	LoadS      float64 `json:"load_s"`
	// LoadCPUS is the process's CPU time during the load: unlike the wall
	// time, it does not grow with what else the machine runs.
	LoadCPUS     float64 `json:"load_cpu_s"`
	FromSnapshot bool    `json:"from_snapshot"`
	SnapshotMB   float64 `json:"snapshot_mb"`
	// The same for a start without a snapshot: the index analyzed from
	// the store (a first start, or one after a crash).
	ColdReadyS    float64 `json:"cold_ready_s"`
	ColdLoadS     float64 `json:"cold_load_s"`
	ColdLoadCPUS  float64 `json:"cold_load_cpu_s"`
	RSSReadyMB    float64 `json:"rss_ready_mb"`
	RSSServingMB  float64 `json:"rss_serving_mb"`
	PeakRSSMB     float64 `json:"peak_rss_mb"`
	Searches      int     `json:"searches"`
	P50MS         float64 `json:"p50_ms"`
	P95MS         float64 `json:"p95_ms"`
	CPUPerSearchM float64 `json:"cpu_per_search_ms"`
}

func runServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	state := fs.String("state", "", "state dir a crawl filled")
	envPath := fs.String("env", "", "the big site's env file (default .wp-big/env)")
	rounds := fs.Int("rounds", 2, "times each query is asked, after one untimed warm-up pass")
	heap := fs.String("heapprofile", "", "write a heap profile once the index is loaded")
	searchProf := fs.String("cpuprofile", "", "write a CPU profile of the timed searches")
	loadProf := fs.String("loadprofile", "", "write a CPU profile of the index load")
	fs.Parse(args)
	if *state == "" {
		return fmt.Errorf("serve: -state is required")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := func(args ...string) (serveResult, error) {
		cmd := exec.Command(self, append([]string{"serve-child", "-state", *state, "-env", *envPath}, args...)...)
		cmd.Stderr = os.Stderr
		var out strings.Builder
		cmd.Stdout = &out
		var r serveResult
		if err := cmd.Run(); err != nil {
			return r, fmt.Errorf("serve child: %w", err)
		}
		if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
			return r, fmt.Errorf("serve child output: %w: %.300s", err, out.String())
		}
		return r, nil
	}
	// First a start without the snapshot, which writes one when it stops;
	// then a start that reads it and serves the queries.
	if err := os.Remove(filepath.Join(*state, "search-index.snap")); err != nil && !os.IsNotExist(err) {
		return err
	}
	cold, err := child("-rounds", "0", "-loadprofile", *loadProf)
	if err != nil {
		return err
	}
	r, err := child("-rounds", strconv.Itoa(*rounds), "-heapprofile", *heap, "-cpuprofile", *searchProf)
	if err != nil {
		return err
	}
	r.ColdReadyS, r.ColdLoadS, r.ColdLoadCPUS = cold.ReadyS, cold.LoadS, cold.LoadCPUS
	if fi, err := os.Stat(filepath.Join(*state, "search-index.snap")); err == nil {
		r.SnapshotMB = float64(fi.Size()) / 1e6
	}
	fmt.Printf("%d pages, %d chunks, store %.0f MB, snapshot %.0f MB; ready in %.2f s from the snapshot (load %.2f s, %.2f s CPU, snapshot read: %v), %.2f s from the store (load %.2f s, %.2f s CPU); index %.0f B/chunk; RSS ready %.0f MB, serving %.0f MB, peak %.0f MB; %d searches p50 %.2f ms p95 %.2f ms, CPU %.2f ms/search\n",
		r.Pages, r.Chunks, r.StoreMB, r.SnapshotMB, r.ReadyS, r.LoadS, r.LoadCPUS, r.FromSnapshot, r.ColdReadyS, r.ColdLoadS, r.ColdLoadCPUS, r.IndexBytes,
		r.RSSReadyMB, r.RSSServingMB, r.PeakRSSMB, r.Searches, r.P50MS, r.P95MS, r.CPUPerSearchM)
	return writeJSON(filepath.Join(*state, "bench-serve.json"), r)
}

func serveChild(ctx context.Context, args []string) error {
	start := time.Now()
	fs := flag.NewFlagSet("serve-child", flag.ExitOnError)
	state := fs.String("state", "", "")
	envPath := fs.String("env", "", "")
	rounds := fs.Int("rounds", 2, "")
	heap := fs.String("heapprofile", "", "")
	loadProf := fs.String("loadprofile", "", "")
	searchProf := fs.String("cpuprofile", "", "")
	fs.Parse(args)
	e, err := readEnv(*envPath)
	if err != nil {
		return err
	}
	if *heap != "" {
		runtime.MemProfileRate = 64 // fine enough to split the index's bytes by what holds them
	}
	var r serveResult
	r.StoreMB = float64(dirSize(*state)) / 1e6
	var queries []string
	for _, p := range []string{"beir-scifact/queries.jsonl", "wpdocs/queries.jsonl"} {
		qs, err := eval.ReadQueries(filepath.Join(wptest.RepoRoot(), "..", "shared", "evaldata", p))
		if err != nil {
			return fmt.Errorf("the queries are read from ../shared/evaldata: %w", err)
		}
		for _, q := range qs {
			queries = append(queries, q.Text)
		}
	}

	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	d, err := daemon.Open(ctx, siteConfig(e, *state, 4), slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer d.Close()
	// The heap before the load: the daemon with an empty index.
	runtime.GC()
	runtime.ReadMemStats(&m0)
	if *loadProf != "" {
		f, err := os.Create(*loadProf)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
	}
	t0, cpu0 := time.Now(), cpuTime()
	if err := d.Search.Load(ctx); err != nil {
		return err
	}
	r.LoadS, r.LoadCPUS = time.Since(t0).Seconds(), (cpuTime() - cpu0).Seconds()
	r.FromSnapshot = d.Search.FromSnapshot()
	daemon.LimitMemory(context.Background()) // as serve does after the load
	if *loadProf != "" {
		pprof.StopCPUProfile()
	}
	body := func(q string) json.RawMessage {
		b, _ := json.Marshal(tool.SearchArgs{Query: q, Limit: 10})
		return b
	}
	if _, err := d.Call(ctx, "search_site", body(queries[0])); err != nil {
		return err
	}
	r.ReadyS = time.Since(start).Seconds()
	rss, _ := procMem(0)
	r.RSSReadyMB = float64(rss) / 1024
	runtime.GC()
	runtime.ReadMemStats(&m1)
	si := d.Search.Stats()
	st, err := d.Store.Stats(ctx)
	if err != nil {
		return err
	}
	r.Pages, r.Chunks = st.Documents, si.Chunks
	r.IndexBytes = float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / float64(max(si.Chunks, 1))
	if *heap != "" {
		f, err := os.Create(*heap)
		if err != nil {
			return err
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}

	if *rounds == 0 {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	bodies := make([]json.RawMessage, len(queries))
	for i, q := range queries {
		bodies[i] = body(q)
	}
	for _, b := range bodies { // warm-up: what a running daemon has cached
		if _, err := d.Call(ctx, "search_site", b); err != nil {
			return err
		}
	}
	if *searchProf != "" {
		f, err := os.Create(*searchProf)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	cpu0 = cpuTime()
	lat := make([]time.Duration, 0, len(bodies)**rounds)
	for range *rounds {
		for _, b := range bodies {
			t := time.Now()
			out, err := d.Call(ctx, "search_site", b)
			if err != nil {
				return err
			}
			if _, err := json.Marshal(out); err != nil {
				return err
			}
			lat = append(lat, time.Since(t))
		}
	}
	cpu := cpuTime() - cpu0
	rss, hwm := procMem(0)
	r.RSSServingMB, r.PeakRSSMB = float64(rss)/1024, float64(hwm)/1024
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
	r.Searches, r.P50MS, r.P95MS = len(lat), pct(0.5), pct(0.95)
	r.CPUPerSearchM = float64(cpu) / 1e6 / float64(len(lat))
	return json.NewEncoder(os.Stdout).Encode(r)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dirSize is the bytes of the store's files in the state dir (the
// database, its WAL and shared memory).
func dirSize(dir string) int64 {
	var n int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.Contains(e.Name(), ".db") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

func table(dirs []string) error {
	fmt.Println("| pages | chunks | store on disk (+ snapshot) | index B/chunk | RSS serving (peak) | start-up to ready: snapshot / from the store | load CPU: snapshot / store | search p50 / p95 | CPU/search | full index / plain GET |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, dir := range dirs {
		var s serveResult
		var c crawlResult
		b, err := os.ReadFile(filepath.Join(dir, "bench-serve.json"))
		if err != nil {
			return fmt.Errorf("%s: run serve first: %w", dir, err)
		}
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		pages := strconv.Itoa(s.Pages)
		if b, err := os.ReadFile(filepath.Join(dir, "bench-crawl.json")); err == nil && json.Unmarshal(b, &c) == nil {
			switch {
			case c.StoppedAfterS > 0:
				pages += fmt.Sprintf(" (the %d URLs a crawl stopped after %.0f s fetched)", c.Requests, c.StoppedAfterS)
			case c.Budget > 0:
				pages += fmt.Sprintf(" (the first %d URLs of a bigger site)", c.Budget)
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, "bench-replica.json")); err == nil {
			var rr replicaResult
			if json.Unmarshal(b, &rr) == nil {
				pages += fmt.Sprintf(" (%d crawled pages × %d)", s.Pages/max(rr.Times, 1), rr.Times)
			}
		}
		crawlCol := "–"
		if b, err := os.ReadFile(filepath.Join(dir, "bench-crawl.json")); err == nil && json.Unmarshal(b, &c) == nil {
			crawlCol = fmt.Sprintf("%.0f s", c.IndexS)
			if c.PairedCrawlS > 0 && c.PairedPlainS > 0 {
				plainS := float64(c.PairedCrawlReqs) / (float64(c.PairedPlainReqs) / c.PairedPlainS)
				crawlCol = fmt.Sprintf("%.0f s / %.0f s = %.2f× (paired)", c.PairedCrawlS, plainS, c.PairedCrawlS/plainS)
			}
			if c.PlainS > 0 {
				crawlCol += fmt.Sprintf(" / %.0f s = %.2f×", c.PlainS, c.IndexS/c.PlainS)
				if c.PlainEvery > 1 {
					crawlCol += fmt.Sprintf(" (GETs of every %dth URL, × %d)", c.PlainEvery, c.PlainEvery)
				}
			}
		}
		fmt.Printf("| %s | %d | %.0f MB (+ %.0f MB) | %.0f | %.0f MB (%.0f MB) | %.2f s / %.2f s | %.2f s / %.2f s | %.2f / %.2f ms | %.2f ms | %s |\n",
			pages, s.Chunks, s.StoreMB, s.SnapshotMB, s.IndexBytes, s.RSSServingMB, s.PeakRSSMB, s.ReadyS, s.ColdReadyS,
			s.LoadCPUS, s.ColdLoadCPUS, s.P50MS, s.P95MS, s.CPUPerSearchM, crawlCol)
	}
	return nil
}

func runPages(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pages", flag.ExitOnError)
	state := fs.String("state", "", "a state dir crawl filled (its bench-urls.txt)")
	envPath := fs.String("env", "", "the big site's env file (default .wp-big/env)")
	n := fs.Int("n", 300, "pages")
	prof := fs.String("cpuprofile", "", "CPU profile of the indexing")
	fs.Parse(args)
	e, err := readEnv(*envPath)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(*state, "bench-urls.txt"))
	if err != nil {
		return err
	}
	type page struct {
		url, final, ctype string
		status            int
		body              []byte
	}
	var pages []page
	for _, u := range strings.Fields(string(b)) {
		if len(pages) == *n {
			break
		}
		if strings.Contains(u, "sitemap") || strings.HasSuffix(u, ".txt") {
			continue
		}
		resp, err := http.Get(u)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		pages = append(pages, page{u, resp.Request.URL.String(), resp.Header.Get("Content-Type"), resp.StatusCode, body})
	}
	tmp, err := os.MkdirTemp("", "askwpd-bigsite-pages-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	d, err := daemon.Open(ctx, siteConfig(e, tmp, 4), slog.New(slog.NewTextHandler(io.Discard, nil)))
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
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var cpu []time.Duration
	statuses := map[string]int{}
	for _, p := range pages {
		before := cpuTime()
		st, err := d.Crawler.IndexPage(ctx, &crawl.Page{URL: p.final, Status: p.status, Body: p.body, ContentType: p.ctype}, public)
		after := cpuTime()
		if err != nil {
			statuses["error"]++
			continue
		}
		statuses[st]++
		cpu = append(cpu, after-before)
	}
	if len(cpu) == 0 {
		return fmt.Errorf("no page indexed: %v", statuses)
	}
	var total time.Duration
	for _, c := range cpu {
		total += c
	}
	sort.Slice(cpu, func(i, j int) bool { return cpu[i] < cpu[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("daemon CPU per page (extract, check, chunk, store), %d pages %v: mean %.2f ms, median %.2f ms, p90 %.2f ms\n",
		len(cpu), statuses, ms(total/time.Duration(len(cpu))), ms(cpu[len(cpu)/2]), ms(cpu[len(cpu)*9/10]))
	return nil
}

func runPlain(args []string) error {
	fs := flag.NewFlagSet("plain", flag.ExitOnError)
	state := fs.String("state", "", "a state dir crawl filled")
	every := fs.Int("every", 1, "GET every Nth URL only, and count its time N times")
	conc := fs.Int("concurrency", config.Default().Crawl.Concurrency, "concurrency, when the crawl did not finish (no bench-crawl.json)")
	fs.Parse(args)
	r := crawlResult{Concurrency: *conc}
	b, err := os.ReadFile(filepath.Join(*state, "bench-crawl.json"))
	finished := err == nil
	if finished {
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
	}
	b, err = os.ReadFile(filepath.Join(*state, "bench-urls.txt"))
	if err != nil {
		return err
	}
	var urls []string
	for i, u := range strings.Fields(string(b)) {
		if i%*every == 0 {
			urls = append(urls, u)
		}
	}
	wall := plainGet(urls, r.Concurrency)
	if !finished {
		// A crawl stopped before its end: the plain GETs' rate, to set
		// beside the pages per second its progress lines show.
		fmt.Printf("plain GET of %d of the %d URLs the crawl requested (every %d) at concurrency %d: %.1f s, %.1f URLs/s\n",
			len(urls), len(urls)*(*every), *every, r.Concurrency, wall.Seconds(), float64(len(urls))/wall.Seconds())
		return nil
	}
	r.PlainS, r.PlainEvery = wall.Seconds()*float64(*every), *every
	fmt.Printf("plain GET of %d of the crawl's %d URLs (every %d) at concurrency %d: %.1f s, so %.1f s for all; ratio index / plain GET %.3f (target <= 1.15)\n",
		len(urls), r.Requests, *every, r.Concurrency, wall.Seconds(), r.PlainS, r.IndexS/r.PlainS)
	return writeJSON(filepath.Join(*state, "bench-crawl.json"), r)
}

// replicaResult is what replicate writes to DIR/bench-replica.json.
type replicaResult struct {
	From  string `json:"from"`
	Times int    `json:"times"`
}

func runReplicate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("replicate", flag.ExitOnError)
	from := fs.String("from", "", "a state dir crawl filled")
	state := fs.String("state", "", "the state dir to make (must not exist)")
	times := fs.Int("times", 10, "copies of each page, the original included")
	fs.Parse(args)
	if _, err := os.Stat(*state); err == nil {
		return fmt.Errorf("replicate: %s exists", *state)
	}
	src, err := store.Open(ctx, filepath.Join(*from, "askwpd.db"))
	if err != nil {
		return err
	}
	defer src.Close()
	if err := os.MkdirAll(*state, 0o700); err != nil {
		return err
	}
	dst, err := store.Open(ctx, filepath.Join(*state, "askwpd.db"))
	if err != nil {
		return err
	}
	defer dst.Close()
	urls, err := src.DocumentURLs(ctx)
	if err != nil {
		return err
	}
	var docs []*store.Document
	for u := range urls {
		d, err := src.FindDocument(ctx, u, true)
		if err != nil {
			return err
		}
		docs = append(docs, d)
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].ID < docs[j].ID })
	t0 := time.Now()
	for k := range *times {
		var batch []*store.Document
		for _, d := range docs {
			c := *d
			c.ID = 0
			if k > 0 {
				c.URL = fmt.Sprintf("%scopy-%d/", d.URL, k)
				c.PostID = d.PostID + int64(k)*10_000_000
				c.ContentHash = fmt.Sprintf("%s-%d", d.ContentHash, k)
			}
			c.Chunks = slices.Clone(d.Chunks)
			for i := range c.Chunks {
				c.Chunks[i].ID, c.Chunks[i].DocID = 0, 0
			}
			batch = append(batch, &c)
			if len(batch) == 200 {
				if err := dst.PutDocuments(ctx, batch); err != nil {
					return err
				}
				batch = nil
			}
		}
		if err := dst.PutDocuments(ctx, batch); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "copy %d of %d written (%.0f s)\n", k+1, *times, time.Since(t0).Seconds())
	}
	return writeJSON(filepath.Join(*state, "bench-replica.json"), replicaResult{From: *from, Times: *times})
}
