package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"time"
)

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
	sender := &eventSender{p: p, hot: hot, dup: o.dup, st: es, rand: rand.New(rand.NewPCG(42, 43))}
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
