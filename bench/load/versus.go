package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// versus compares two builds' CPU per search: -bin and -versus each serve
// a copy of one state dir, and every search of one Poisson stream goes to
// both, one after the other, the first alternating. On a machine whose
// pace drifts by a fifth from one hour to the next, two runs minutes
// apart differ by more than most changes; side by side, the drift falls
// on both alike. The daemons serve with their schedule off, so the CPU
// each uses is the searches', the HTTP around them and the question log
// included.
func versus(ctx context.Context, o options, bin, state, tmp string, e map[string]string) (bool, error) {
	queries, err := readQueries(filepath.Join(corpusDir(o.corpus), "queries.jsonl"))
	if err != nil {
		return false, err
	}
	var ps []*daemonProc
	defer func() {
		for _, p := range ps {
			if err := p.stop(); err != nil {
				fmt.Println("stopping askwpd:", err)
			}
		}
	}()
	for i, b := range []string{bin, o.versus} {
		dir := filepath.Join(tmp, fmt.Sprintf("versus-%d", i))
		if err := copyState(state, dir); err != nil {
			return false, err
		}
		p, err := startDaemon(ctx, b, dir, e, false, o.timerSlack)
		if err != nil {
			return false, err
		}
		ps = append(ps, p)
		if err := waitIndex(ctx, p); err != nil {
			return false, err
		}
	}
	// A pass over the queries builds what a running daemon has cached.
	for _, q := range queries {
		for _, p := range ps {
			if _, kind := searchOnce(ctx, p, q); kind != "" {
				return false, fmt.Errorf("warm-up search on %s: %s", p.base, kind)
			}
		}
	}
	fmt.Printf("\n== side by side, %.0f searches a second each, %s, %d queries\n", o.rate, o.duration, len(queries))
	lat := make([][]time.Duration, len(ps))
	errs := make([]int, len(ps))
	var mu sync.Mutex
	var wg sync.WaitGroup
	cpu0 := make([]float64, len(ps))
	for i, p := range ps {
		cpu0[i] = p.cpuSeconds()
	}
	r := rand.New(rand.NewPCG(7, 7^0x9e3779b97f4a7c15))
	arrivals(ctx, r, o.rate, o.duration, func(n int, _ time.Time) {
		q := queries[r.IntN(len(queries))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range ps {
				i := (k + n) % len(ps)
				t := time.Now()
				in, kind := searchOnce(ctx, ps[i], q)
				took := in.Sub(t)
				mu.Lock()
				if kind != "" {
					errs[i]++
				} else {
					lat[i] = append(lat[i], took)
				}
				mu.Unlock()
			}
		}()
	})
	wg.Wait()
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	ok := true
	for i, p := range ps {
		cpu := p.cpuSeconds() - cpu0[i]
		l := lat[i]
		sort.Slice(l, func(a, b int) bool { return l[a] < l[b] })
		n := len(l) + errs[i]
		fmt.Printf("%-40s %5d searches, %d errors; %.3f ms of daemon CPU a search; latency p50 %.1f ms, p95 %.1f ms, p99 %.1f ms\n",
			[]string{bin, o.versus}[i], n, errs[i], 1000*cpu/float64(max(n, 1)),
			ms(quantile(l, 0.5)), ms(quantile(l, 0.95)), ms(quantile(l, 0.99)))
		ok = ok && errs[i] == 0
	}
	return ok, nil
}

// waitIndex waits until p's in-memory search index is loaded.
func waitIndex(ctx context.Context, p *daemonProc) error {
	t0 := time.Now()
	for {
		m, err := p.metrics(ctx)
		if err == nil && m["askwpd_search_index_ready"] == 1 {
			fmt.Printf("in-memory search index ready %.1f s after the daemon answered\n", time.Since(t0).Seconds())
			return nil
		}
		if time.Since(t0) > 2*time.Minute {
			return fmt.Errorf("the in-memory search index was not ready after %s", time.Since(t0).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
