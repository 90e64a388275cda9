package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

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
	side := startSideLoad(lctx, &wg, p, o, hot, es, func(s *eventSender) time.Duration {
		return s.sendPaced(ctx, o.events, o.burst, 64)
	})
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
		es.sent, side.burstTook.Seconds(), es.fresh, es.replays, es.accepted, es.duplicate, nOther, es.other)
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
			side.crawlFlash, stEnd.Crawling, stEnd.Freshness.FrontierPending)
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
