package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"syscall"
	"time"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/daemon"
	"github.com/askwp/askwpd/eval"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// runTool times whole search_site calls as the HTTP API and MCP make them,
// in-process: argument decoding, search, confidence, match explanations,
// selective expansion, result cards, the log line and the JSON answer. The
// engine alone (latency) leaves out most of what a caller pays for.
func runTool(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tool", flag.ExitOnError)
	corpus := fs.String("corpus", "", "BEIR corpus.jsonl (e.g. ../shared/evaldata/beir-scifact/corpus.jsonl)")
	stateDir := fs.String("state", "", "instead of -corpus: a daemon's state dir (a copy: the daemon may write to it), as `askwpd index` left it for a WordPress site")
	siteURL := fs.String("site", "", "with -state: the site's URL")
	queries := fs.String("queries", "", "BEIR queries.jsonl: each query is one search_site call")
	rounds := fs.Int("rounds", 2, "times each query is asked, after one untimed warm-up pass")
	limit := fs.Int("limit", 10, "search_site limit")
	cpuProf := fs.String("cpuprofile", "", "CPU profile of the timed calls")
	memProf := fs.String("memprofile", "", "allocation profile of the timed calls")
	overHTTP := fs.Bool("http", false, "call over the daemon's HTTP API on loopback, as the PHP plugin does (the CPU is then the server's and the client's)")
	gap := fs.Duration("gap", 0, "idle time between timed calls, as a daemon has between visitors (the CPU counted is the calls')")
	evictMB := fs.Int("evict", 0, "between timed calls, write this many MB of other memory, as the site's PHP and MariaDB do between a daemon's visitors (the CPU counted is the calls')")
	outPath := fs.String("out", "", "write each answer's JSON, one a line, to compare two builds' answers")
	warmPath := fs.String("warm", "", "BEIR queries.jsonl asked once, untimed, before the first pass: the daemon has then cached the pages other visitors' questions found, and the first pass times new questions alone (-cpuprofile is then of the first pass)")
	noWarm := fs.Bool("cold", false, "leave the search caches empty at the start, where the daemon warms them as it starts (search.Index.Warm)")
	fs.Parse(args)
	if (*corpus == "") == (*stateDir == "") || *queries == "" || (*stateDir != "") != (*siteURL != "") {
		return fmt.Errorf("tool: -queries and one of -corpus or -state (with -site) are required")
	}
	source := *corpus
	if source == "" {
		source = *stateDir
	}
	if _, err := os.Stat(source); err != nil {
		fmt.Printf("skipped: %v\n", err)
		return nil
	}
	qs, err := eval.ReadQueries(*queries)
	if err != nil {
		return err
	}
	var warmQs []eval.Query
	if *warmPath != "" {
		if warmQs, err = eval.ReadQueries(*warmPath); err != nil {
			return err
		}
	}

	cfg := config.Default()
	cfg.StateDir, cfg.SiteURL = *stateDir, *siteURL
	var docs, chunks int
	if *corpus != "" {
		dir, err := os.MkdirTemp("", "askwpd-tool-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		db, err := store.Open(ctx, filepath.Join(dir, "askwpd.db"))
		if err != nil {
			return err
		}
		docs, chunks, err = eval.IndexCorpus(ctx, db, *corpus, 0)
		db.Close()
		if err != nil {
			return err
		}
		cfg.StateDir, cfg.SiteURL = dir, "https://site.test"
	}
	// The daemon's JSON log, written nowhere: formatting the "Tool call"
	// line is part of a call's cost.
	d, err := daemon.Open(ctx, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer d.Close()
	if *stateDir != "" {
		st, err := d.Store.Stats(ctx)
		if err != nil {
			return err
		}
		docs, chunks = st.Documents, st.Chunks
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	if err := d.Search.Load(ctx); err != nil {
		return err
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	fmt.Printf("store: %d documents, %d chunks; in-memory index %.1f MB of heap (%.0f bytes per chunk)\n",
		docs, chunks, float64(m1.HeapAlloc-m0.HeapAlloc)/1e6, float64(m1.HeapAlloc-m0.HeapAlloc)/float64(chunks))

	if !*noWarm && !*overHTTP { // over HTTP, the daemon serving warms its own
		start, c0 := time.Now(), cpuTime()
		w, err := d.Search.Warm(ctx, 0)
		if err != nil {
			return err
		}
		fmt.Printf("warmed as the daemon does at its start: %d texts, %d term lists, %.1f MB, %v, cpu %.0f ms\n",
			w.Texts, w.Lists, float64(w.Bytes)/1e6, time.Since(start).Round(time.Millisecond), float64(cpuTime()-c0)/1e6)
	}
	bodies := make([]json.RawMessage, len(qs))
	for i, q := range qs {
		bodies[i], _ = json.Marshal(tool.SearchArgs{Query: q.Text, Limit: *limit})
	}
	var viaHTTP func(search.Query) error
	if *overHTTP {
		d.Close()
		call, stop, err := serveHTTP(ctx, cfg.StateDir, cfg.SiteURL)
		if err != nil {
			return err
		}
		defer stop()
		viaHTTP = call
	}
	expanded := 0
	var answers [][]byte // of the warm-up pass
	warm := true
	call := func(i int) error {
		if viaHTTP != nil {
			return viaHTTP(search.Query{Text: qs[i].Text, Limit: *limit})
		}
		out, err := d.Tools.Call(ctx, "search_site", bodies[i])
		if err != nil {
			return err
		}
		if r, ok := out.(*tool.SearchResponse); ok && r.ExpansionStop != "" {
			expanded++
		}
		b, err := json.Marshal(out)
		if warm {
			answers = append(answers, b)
		}
		return err
	}
	for _, q := range warmQs {
		var err error
		if viaHTTP != nil {
			err = viaHTTP(search.Query{Text: q.Text, Limit: *limit})
		} else {
			b, _ := json.Marshal(tool.SearchArgs{Query: q.Text, Limit: *limit})
			_, err = d.Tools.Call(ctx, "search_site", b)
		}
		if err != nil {
			return err
		}
	}
	stopFirst := func() {}
	if *cpuProf != "" && len(warmQs) > 0 {
		if stopFirst, err = startCPUProfile(*cpuProf); err != nil {
			return err
		}
	}
	// The warm-up pass builds what a running daemon has cached. Each of
	// its questions is new to the index, as most of a site's visitors'
	// are, so its cost is printed too.
	cold := cpuTime()
	for i := range bodies {
		if err := call(i); err != nil {
			return err
		}
	}
	fmt.Printf("first pass, each question new: cpu per call %.3f ms (%d calls)\n", float64(cpuTime()-cold)/1e6/float64(len(bodies)), len(bodies))
	stopFirst()
	if *outPath != "" {
		f, err := os.Create(*outPath)
		if err != nil {
			return err
		}
		for _, a := range answers {
			f.Write(append(a, '\n'))
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	expanded, answers, warm = 0, nil, false

	if *cpuProf != "" && len(warmQs) == 0 {
		stop, err := startCPUProfile(*cpuProf)
		if err != nil {
			return err
		}
		defer stop()
	}
	if *memProf != "" {
		runtime.MemProfileRate = 4096
	}
	runtime.GC()
	runtime.ReadMemStats(&m0)
	cpu0 := cpuTime()
	lat := make([]time.Duration, 0, len(bodies)**rounds)
	var other []byte
	if *evictMB > 0 {
		other = make([]byte, *evictMB<<20)
	}
	var evictCPU time.Duration
	for range *rounds {
		for i := range bodies {
			if *gap > 0 {
				time.Sleep(*gap)
			}
			if other != nil {
				e := cpuTime()
				evict(other)
				evictCPU += cpuTime() - e
			}
			t := time.Now()
			if err := call(i); err != nil {
				return err
			}
			lat = append(lat, time.Since(t))
		}
	}
	cpu := cpuTime() - cpu0 - evictCPU
	runtime.ReadMemStats(&m1)
	n := float64(len(lat))
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
	fmt.Printf("search_site calls: %d (%d queries × %d)\n", len(lat), len(bodies), *rounds)
	fmt.Printf("cpu per call (process, all threads, GC included): %.3f ms\n", float64(cpu)/1e6/n)
	fmt.Printf("wall p50 %.3f ms  p95 %.3f ms  p99 %.3f ms\n", pct(0.5), pct(0.95), pct(0.99))
	fmt.Printf("allocs per call %.0f, bytes per call %.0f\n", float64(m1.Mallocs-m0.Mallocs)/n, float64(m1.TotalAlloc-m0.TotalAlloc)/n)
	if viaHTTP == nil {
		fmt.Printf("selective expansion ran on %d of %d calls (%.1f %%)\n", expanded, len(lat), 100*float64(expanded)/n)
	}
	if *memProf != "" {
		f, err := os.Create(*memProf)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return err
		}
	}
	return nil
}

// evict writes a line of each 64 bytes of b: the caches then hold b, not
// what the calls before used.
func evict(b []byte) {
	for i := 0; i < len(b); i += 64 {
		b[i]++
	}
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startCPUProfile profiles the process into path until stop.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
