// Command load puts the real daemon under load on loopback and checks it
// holds.
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
//	go run ./bench/load -corpus scifact -rate 200 -sweep 25,50,100,150,200 -compare 100
//	go run ./bench/load -corpus scifact -rate 100 -duration 30s -bin NEW -versus OLD -state DIR
//
// Versus mode (-versus OLD) measures two builds side by side: -bin and
// OLD each serve a copy of the indexed state dir (-state, or one indexed
// for the run) with their schedule off, and each search of one Poisson
// stream at -rate goes to both, the first in turn. It prints each one's
// daemon CPU per search and latency, and does nothing else.
//
// Open-loop mode (-rate N) sends searches as a Poisson stream of N a
// second for -duration from at most -clients virtual users, and measures
// each one's latency from its scheduled start, so queueing counts. With
// -corpus the site is grown by a BEIR corpus, loaded as posts
// (scripts/wp/load-corpus.php, under the site lock, removed afterwards
// even on Ctrl-C), and the searches are its queries. Alongside the stream
// run a crawl, and -events signed events (default 2,000 updates plus 200
// replays) each sent at its scheduled time over -burst; /v1/status and
// /metrics are probed twice a second and the daemon's RSS every second.
// Before the run, on the idle daemon, -compare times search_site against
// WordPress core search on the same queries (after an untimed pass over
// both, whose cold-cache p95s are printed too), and -sweep runs the stream
// alone at each rate for -sweep-step to find where p99 crosses -p99. It
// exits 1 unless: no search failed, search p99 <= -p99, every fresh event
// got 202 and every replay was refused, event p99 <= -event-p99 and none
// over the shim's 750 ms, /v1/status and /metrics p99 <= 50 ms, peak RSS
// <= -max-rss, and every accepted event was applied.
//
// With -corpus, -state serves a copy of a state dir kept from an earlier
// run (-keep-state), without the pass that run interrupted, against the
// corpus loaded anew, under new post IDs: its
// crawl re-indexes the pages it reaches instead of finding them
// unchanged, as a re-crawl after a theme or permalink change does. A
// fresh run's crawl commits almost nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "modernc.org/sqlite"
)

type options struct {
	duration, burst, think, drain, soak, sample, warmup, crawlEvery time.Duration
	clients, events, hot, generate                                  int
	dup, eventRate, flat                                            float64
	p99, eventP99, sweepStep                                        time.Duration
	bin, crawl, reuse, corpus, sweep, versus                        string
	rate, maxRSS                                                    float64
	compare                                                         int
	keepState                                                       bool
	timerSlack                                                      time.Duration
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
	flag.Float64Var(&o.rate, "rate", 0, "open loop: searches a second, a Poisson stream, latency from each one's scheduled start (0: closed-loop clients)")
	flag.StringVar(&o.corpus, "corpus", "", "load this BEIR corpus dir as posts (\"scifact\": ../shared/evaldata/beir-scifact) and search with its queries; removed afterwards")
	flag.StringVar(&o.sweep, "sweep", "", "open loop: rates for the saturation sweep before the run, e.g. 25,50,100,150,200")
	flag.DurationVar(&o.sweepStep, "sweep-step", 15*time.Second, "open loop: length of each sweep step")
	flag.IntVar(&o.compare, "compare", 0, "open loop: compare search_site with WordPress core search on this many queries")
	flag.DurationVar(&o.eventP99, "event-p99", 100*time.Millisecond, "open loop: event answer p99 must not exceed this")
	flag.Float64Var(&o.maxRSS, "max-rss", 200, "open loop: the daemon's peak RSS must not exceed this many MB")
	flag.StringVar(&o.versus, "versus", "", "open loop: compare this askwpd binary's CPU per search with -bin's, side by side (each search sent to both), for -duration at -rate, and nothing else")
	flag.StringVar(&o.reuse, "state", "", "serve a copy of this existing state dir (a kept one) instead of indexing a fresh one")
	flag.DurationVar(&o.timerSlack, "timer-slack", unitTimerSlack(), "the daemon's timer slack (default: TimerSlackNSec of systemd/askwpd.service, as the service runs it); 0: the kernel's default")
	flag.Parse()
	if o.soak > 0 && !flagSet("generate") {
		o.generate = 0
	}
	if o.rate > 0 {
		// The stream: 2,000 update events plus 10% replays.
		if !flagSet("events") {
			o.events = 2200
		}
		if !flagSet("dup") {
			o.dup = 200.0 / 2200
		}
	}
	if o.corpus != "" && !flagSet("generate") {
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
