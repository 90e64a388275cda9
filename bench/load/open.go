package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askwp/askwpd/internal/wptest"
)

// readQueries reads a BEIR queries.jsonl's texts, in file order.
func readQueries(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var q struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if q.Text != "" {
			out = append(out, q.Text)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no queries", path)
	}
	return out, nil
}

// corpusDir resolves -corpus: "scifact" names the shared SciFact copy,
// beside the repository (../shared/evaldata/beir-scifact).
func corpusDir(name string) string {
	if name == "scifact" {
		return filepath.Join(wptest.RepoRoot(), "..", "shared", "evaldata", "beir-scifact")
	}
	return name
}

// streamResult is one open-loop stream's outcome. Latencies run from each
// request's scheduled start, so time spent queued (in the generator, for
// a free virtual user, in the daemon) counts.
type streamResult struct {
	rate      float64
	scheduled int
	lat       []time.Duration
	errs      map[string]int
	wall      time.Duration
	cpu       float64 // the daemon's CPU seconds over the stream
}

func (r *streamResult) nErr() int {
	n := 0
	for _, v := range r.errs {
		n += v
	}
	return n
}

// openStream sends searches as a Poisson stream of rate a second for d,
// with at most vus in flight; an arrival that finds every virtual user
// busy waits for one, and that wait counts in its latency.
func openStream(ctx context.Context, p *daemonProc, queries []string, rate float64, d time.Duration, vus int, seed uint64) *streamResult {
	res := &streamResult{rate: rate, errs: map[string]int{}}
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	sem := make(chan struct{}, vus)
	var wg sync.WaitGroup
	cpu0 := p.cpuSeconds()
	start := time.Now()
	arrivals(ctx, r, rate, d, func(_ int, at time.Time) {
		q := queries[r.IntN(len(queries))]
		res.scheduled++
		wg.Add(1)
		go func(sched time.Time) {
			defer wg.Done()
			sem <- struct{}{}
			in, kind := searchOnce(ctx, p, q)
			<-sem
			took := in.Sub(sched)
			mu.Lock()
			if kind != "" {
				res.errs[kind]++
			} else {
				res.lat = append(res.lat, took)
			}
			mu.Unlock()
		}(at)
	})
	wg.Wait()
	res.wall = time.Since(start)
	res.cpu = p.cpuSeconds() - cpu0
	sort.Slice(res.lat, func(i, j int) bool { return res.lat[i] < res.lat[j] })
	return res
}

// arrivals calls fn at the times of a Poisson stream of rate a second,
// for d or until ctx ends, with each arrival's number and scheduled
// time.
func arrivals(ctx context.Context, r *rand.Rand, rate float64, d time.Duration, fn func(n int, at time.Time)) {
	start := time.Now()
	at := start
	for n := 0; ; n++ {
		at = at.Add(time.Duration(r.ExpFloat64() / rate * float64(time.Second)))
		if at.Sub(start) >= d {
			return
		}
		if w := time.Until(at); w > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(w):
			}
		}
		if ctx.Err() != nil {
			return
		}
		fn(n, at)
	}
}

// searchOnce runs one search_site call. It returns when the whole answer
// was in, the time a caller's latency ends (the core search's ends when its
// body is read, unparsed, and the check of this one's is the load
// generator's work, not the daemon's), and "" or the kind of error.
func searchOnce(ctx context.Context, p *daemonProc, query string) (time.Time, string) {
	body, _ := json.Marshal(map[string]any{"query": query, "limit": 10})
	req, _ := http.NewRequestWithContext(ctx, "POST", p.base+"/v1/tools/search_site", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return time.Now(), "timeout"
		}
		return time.Now(), "transport"
	}
	b, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	in := time.Now()
	var sr struct {
		Action string `json:"action"`
	}
	switch {
	case rerr != nil:
		return in, "read"
	case resp.StatusCode != 200:
		return in, "status_" + strconv.Itoa(resp.StatusCode)
	case json.Unmarshal(b, &sr) != nil || sr.Action == "":
		return in, "decode"
	}
	return in, ""
}

func (r *streamResult) print(label string) {
	n := len(r.lat) + r.nErr()
	cpuPer := 0.0
	if n > 0 {
		cpuPer = r.cpu / float64(n) * 1000
	}
	fmt.Printf("%s %6.0f/s offered: %5d sent, %6.1f/s done, %d errors %v; latency from schedule p50 %7.1f ms, p95 %7.1f ms, p99 %7.1f ms, max %7.1f ms; daemon CPU %.1f s (%.0f%% of a core), %.2f ms a search\n",
		label, r.rate, r.scheduled, float64(n)/r.wall.Seconds(), r.nErr(), r.errs,
		ms(quantile(r.lat, 0.5)), ms(quantile(r.lat, 0.95)), ms(quantile(r.lat, 0.99)), ms(quantile(r.lat, 1)),
		r.cpu, 100*r.cpu/r.wall.Seconds(), cpuPer)
}

// probe GETs path every interval until ctx is done and keeps each
// answer's latency; an answer other than 200 counts as an error.
type probe struct {
	path string
	mu   sync.Mutex
	lat  []time.Duration
	errs int
}

func (pr *probe) run(ctx context.Context, p *daemonProc, every time.Duration) {
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "GET", p.base+pr.path, nil)
		req.Header.Set("Authorization", "Bearer "+p.token)
		t0 := time.Now()
		resp, err := p.client.Do(req)
		ok := err == nil && resp.StatusCode == 200
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		d := time.Since(t0)
		if ctx.Err() != nil {
			return
		}
		pr.mu.Lock()
		if ok {
			pr.lat = append(pr.lat, d)
		} else {
			pr.errs++
		}
		pr.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
}

func (pr *probe) p99() time.Duration {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	sort.Slice(pr.lat, func(i, j int) bool { return pr.lat[i] < pr.lat[j] })
	return quantile(pr.lat, 0.99)
}

func (pr *probe) print() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	sort.Slice(pr.lat, func(i, j int) bool { return pr.lat[i] < pr.lat[j] })
	fmt.Printf("%-11s %4d answers, %d errors: p50 %6.1f ms, p99 %6.1f ms, max %6.1f ms\n", pr.path, len(pr.lat), pr.errs,
		ms(quantile(pr.lat, 0.5)), ms(quantile(pr.lat, 0.99)), ms(quantile(pr.lat, 1)))
}

// compareCore times search_site over HTTP and WordPress's core search
// (GET /wp-json/wp/v2/search, ten results) on the same queries, one at a
// time on the idle site, and returns the two p95s. An untimed pass of the
// same queries over both comes first: a site that has been up answers
// from warm caches (MariaDB's buffer pool and PHP's opcache, the daemon's
// remembered stems), and a daemon just started has none of its own.
func compareCore(ctx context.Context, p *daemonProc, site string, queries []string, n int) (ours, core time.Duration, err error) {
	n = min(n, len(queries))
	coreSearch := func(q string) error {
		req, _ := http.NewRequestWithContext(ctx, "GET", site+"/wp-json/wp/v2/search?per_page=10&search="+url.QueryEscape(q), nil)
		resp, err := p.client.Do(req)
		if err != nil {
			return fmt.Errorf("core search %q: %w", q, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("core search %q: %s", q, resp.Status)
		}
		return nil
	}
	var a0, b0 []time.Duration
	for _, q := range queries[:n] {
		t0 := time.Now()
		in, kind := searchOnce(ctx, p, q)
		if kind != "" {
			return 0, 0, fmt.Errorf("search_site %q: %s", q, kind)
		}
		a0 = append(a0, in.Sub(t0))
		t0 = time.Now()
		if err := coreSearch(q); err != nil {
			return 0, 0, err
		}
		b0 = append(b0, time.Since(t0))
	}
	sort.Slice(a0, func(i, j int) bool { return a0[i] < a0[j] })
	sort.Slice(b0, func(i, j int) bool { return b0[i] < b0[j] })
	fmt.Printf("first pass (cold caches, untimed in the check): search_site p95 %.1f ms, core p95 %.1f ms, %.1fx\n",
		ms(quantile(a0, 0.95)), ms(quantile(b0, 0.95)), float64(quantile(b0, 0.95))/float64(quantile(a0, 0.95)))
	var a, b []time.Duration
	for _, q := range queries[:n] {
		t0 := time.Now()
		in, kind := searchOnce(ctx, p, q)
		if kind != "" {
			return 0, 0, fmt.Errorf("search_site %q: %s", q, kind)
		}
		a = append(a, in.Sub(t0))
		t0 = time.Now()
		if err := coreSearch(q); err != nil {
			return 0, 0, err
		}
		b = append(b, time.Since(t0))
	}
	sort.Slice(a, func(i, j int) bool { return a[i] < a[j] })
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	fmt.Printf("search_site over HTTP, %d queries one at a time: p50 %.1f ms, p95 %.1f ms\n", n, ms(quantile(a, 0.5)), ms(quantile(a, 0.95)))
	fmt.Printf("WordPress core search (REST /wp/v2/search), same queries:  p50 %.1f ms, p95 %.1f ms\n", ms(quantile(b, 0.5)), ms(quantile(b, 0.95)))
	fmt.Printf("core p95 / search_site p95 = %.1fx (goal >= 20x)\n", float64(quantile(b, 0.95))/float64(quantile(a, 0.95)))
	return quantile(a, 0.95), quantile(b, 0.95), nil
}

func parseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("-sweep: %q is not a rate", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// openLoad is the open-loop run: the core-search comparison and the
// saturation sweep on the idle daemon, then -rate searches a second for
// -duration with a crawl and the event burst alongside, and /v1/status
// and /metrics probed throughout.
func openLoad(ctx context.Context, o options, p *daemonProc, hot []hotPost, site string) (bool, error) {
	queries, err := readQueries(filepath.Join(corpusDir(o.corpus), "queries.jsonl"))
	if err != nil {
		return false, err
	}
	v := &verdict{ok: true}
	check := v.check
	st0, err := p.status(ctx)
	if err != nil {
		return false, err
	}
	before := p.sampleNow(ctx)
	fmt.Printf("index: %d documents, %d chunks; daemon before: RSS %.1f MB, %.0f goroutines; %d queries\n",
		st0.Index.Documents, st0.Index.Chunks, float64(before.rssKB)/1024, before.goroutines, len(queries))

	if o.compare > 0 {
		fmt.Println("\n== search_site against WordPress core search")
		ours, core, err := compareCore(ctx, p, site, queries, o.compare)
		if err != nil {
			return false, err
		}
		check(core >= 20*ours, "core search p95 / search_site p95 = %.1fx >= 20x", float64(core)/float64(ours))
	}

	if rates, err := parseRates(o.sweep); err != nil {
		return false, err
	} else if len(rates) > 0 {
		fmt.Printf("\n== saturation sweep: searches alone, %s a step, %d virtual users\n", o.sweepStep, o.clients)
		var below, above float64
		for i, rate := range rates {
			r := openStream(ctx, p, queries, rate, o.sweepStep, o.clients, uint64(100+i))
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			r.print("  sweep")
			p99 := quantile(r.lat, 0.99)
			if p99 <= o.p99 && r.nErr() == 0 {
				below = rate
			} else if above == 0 {
				above = rate
			}
			time.Sleep(2 * time.Second) // let the queue empty between steps
		}
		switch {
		case above == 0:
			fmt.Printf("saturation: p99 stays <= %.0f ms up to %.0f searches/s (the highest step)\n", ms(o.p99), below)
		case below == 0:
			fmt.Printf("saturation: p99 is over %.0f ms already at %.0f searches/s (the lowest step)\n", ms(o.p99), above)
		default:
			fmt.Printf("saturation: p99 crosses %.0f ms between %.0f and %.0f searches/s\n", ms(o.p99), below, above)
		}
	}

	fmt.Printf("\n== open loop: %.0f searches/s (Poisson) for %s, %d virtual users; crawl %q; %d events in %s (%.0f%% replays, %d hot posts)\n",
		o.rate, o.duration, o.clients, o.crawl, o.events, o.burst, o.dup*100, len(hot))
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	status, metrics := &probe{path: "/v1/status"}, &probe{path: "/metrics"}
	var (
		peakRSS int64
		rssMu   sync.Mutex
	)
	wg.Add(3)
	go func() { defer wg.Done(); status.run(lctx, p, 500*time.Millisecond) }()
	go func() { defer wg.Done(); metrics.run(lctx, p, 500*time.Millisecond) }()
	go func() {
		defer wg.Done()
		for lctx.Err() == nil {
			rss, _, _ := p.memKB()
			rssMu.Lock()
			peakRSS = max(peakRSS, rss)
			rssMu.Unlock()
			select {
			case <-lctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	es := newEventStats()
	side := startSideLoad(lctx, &wg, p, o, hot, es, func(s *eventSender) time.Duration {
		return s.sendOpen(lctx, o.events, o.burst)
	})
	main := openStream(ctx, p, queries, o.rate, o.duration, o.clients, 7)
	cancel()
	wg.Wait()
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	main.print("searches")
	status.print()
	metrics.print()

	drained, stEnd, after, derr := drainAndSample(ctx, p, o.drain)

	es.mu.Lock()
	sort.Slice(es.lat, func(i, j int) bool { return es.lat[i] < es.lat[j] })
	nOther := 0
	for _, v := range es.other {
		nOther += v
	}
	slow := len(es.lat) - sort.Search(len(es.lat), func(i int) bool { return es.lat[i] > shimTimeout })
	evP99 := quantile(es.lat, 0.99)
	fmt.Printf("events: %d sent in %.1fs (%d fresh, %d replays): %d answered 202, %d duplicate, %d other %v\n",
		es.sent, side.burstTook.Seconds(), es.fresh, es.replays, es.accepted, es.duplicate, nOther, es.other)
	fmt.Printf("event latency from schedule: p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d over %s\n",
		ms(quantile(es.lat, 0.5)), ms(evP99), ms(quantile(es.lat, 1)), slow, shimTimeout)
	fmt.Printf("event queue drained %.1fs after the load ended", drained.Seconds())
	if derr != nil {
		fmt.Printf(" — NOT drained: %v", derr)
	}
	fmt.Println()
	accepted := append([]string(nil), es.acceptedID...)
	sent, dup, replays, fresh := es.sent, es.duplicate, es.replays, es.fresh
	es.mu.Unlock()
	if stEnd != nil {
		fmt.Printf("crawl (%s): crawling at the end: %v, frontier pending %d\n", side.crawlFlash, stEnd.Crawling, stEnd.Freshness.FrontierPending)
		fmt.Printf("search index loads: %d before, %d after\n", st0.SearchIndex.Loads, stEnd.SearchIndex.Loads)
	}
	rssMu.Lock()
	peak := peakRSS
	rssMu.Unlock()
	fmt.Printf("daemon: RSS %.1f MB before, %.1f MB peak, %.1f MB after; load average %s\n",
		float64(before.rssKB)/1024, float64(peak)/1024, float64(after.rssKB)/1024, uptime())

	if err := p.stop(); err != nil {
		fmt.Println("askwpd serve exit:", err)
	}
	stored, applied, missing, unapplied, verr := verifyEvents(p.state, accepted)
	if verr != nil {
		return false, fmt.Errorf("reading the daemon's events: %w", verr)
	}
	fmt.Printf("events in the daemon's database: %d stored, %d of %d accepted applied\n", stored, applied, len(accepted))

	fmt.Println("\nacceptance:")
	check(main.nErr() == 0, "search errors: %d", main.nErr())
	check(quantile(main.lat, 0.99) <= o.p99, "search p99 %.1f ms <= %.0f ms", ms(quantile(main.lat, 0.99)), ms(o.p99))
	check(sent == o.events && nOther == 0 && dup == replays && len(accepted) == fresh,
		"every fresh event answered 202 (%d/%d), every replay refused (%d/%d), no other answer (%d)", len(accepted), fresh, dup, replays, nOther)
	check(evP99 <= o.eventP99, "event p99 %.1f ms <= %.0f ms", ms(evP99), ms(o.eventP99))
	check(slow == 0, "events answered after %s: %d", shimTimeout, slow)
	check(status.p99() <= 50*time.Millisecond && status.errs == 0, "/v1/status p99 %.1f ms <= 50 ms, %d errors", ms(status.p99()), status.errs)
	check(metrics.p99() <= 50*time.Millisecond && metrics.errs == 0, "/metrics p99 %.1f ms <= 50 ms, %d errors", ms(metrics.p99()), metrics.errs)
	check(float64(peak)/1024 <= o.maxRSS, "peak RSS %.1f MB <= %.0f MB", float64(peak)/1024, o.maxRSS)
	check(derr == nil, "event queue drained within %s (took %.1fs)", o.drain, drained.Seconds())
	check(len(missing) == 0 && len(unapplied) == 0 && stored == len(accepted), "every accepted event stored once and applied: %d missing, %d unapplied, %d stored", len(missing), len(unapplied), stored)
	return v.ok, nil
}
