package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/daemon"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// runLatency builds a synthetic site (Zipf-distributed made-up words,
// titles, tags, code chunks) and times in-process searches of the kinds a
// chatbot sends: 1–4 words, some misspelt, some filtered.
func runLatency(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	docs := fs.Int("docs", 10000, "documents")
	perDoc := fs.Int("chunks", 5, "chunks per document")
	words := fs.Int("words", 120, "words per chunk")
	queries := fs.Int("queries", 2000, "queries")
	slow := fs.Int("slow", 0, "print the N slowest queries")
	dir := fs.String("dir", "", "store directory (default: temp)")
	prof := fs.String("cpuprofile", "", "CPU profile of the query phase")
	overHTTP := fs.Bool("http", false, "search through the daemon's HTTP API on loopback, not in-process")
	questions := fs.Int("questions", 200, "then time this many chat-style questions of 8–12 words, reported apart from the mix")
	rk := rankingFlags(fs)
	fs.IntVar(&rk.AllTermsMax, "allmax", rk.AllTermsMax, "AND-first up to this many terms")
	fs.Parse(args)

	if *dir == "" {
		tmp, err := os.MkdirTemp("", "askwpd-latency-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		*dir = tmp
	}
	db, err := store.Open(ctx, filepath.Join(*dir, "askwpd.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	ix := search.New(db)
	defer ix.Close()
	ix.SetRanking(*rk)

	rng := rand.New(rand.NewPCG(1, 2))
	vocab := makeVocab(rng, 40000)
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 2, uint64(len(vocab)-1))
	word := func() string { return vocab[zipf.Uint64()] }
	sentence := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(word())
		}
		return b.String()
	}
	// Pages are about something: each draws a share of its words from one
	// of 500 topics, and queries are words of a topic, as a visitor asks
	// about what a page covers.
	topics := make([][]string, 500)
	for i := range topics {
		for j := 0; j < 60; j++ {
			topics[i] = append(topics[i], vocab[200+rng.IntN(len(vocab)-200)])
		}
	}
	topicSentence := func(tp []string, n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			if rng.IntN(10) < 3 {
				b.WriteString(tp[rng.IntN(len(tp))])
			} else {
				b.WriteString(word())
			}
		}
		return b.String()
	}
	langs := []string{"go", "php", "js", "python"}
	// A store left in -dir by an earlier run holds the same pages (the
	// generator is seeded): generate them again for the random stream,
	// but don't write them.
	st, err := db.Stats(ctx)
	if err != nil {
		return err
	}
	reuse := st.Documents == *docs
	t0 := time.Now()
	var batch []*store.Document
	nChunks := 0
	for i := 0; i < *docs; i++ {
		tp := topics[rng.IntN(len(topics))]
		d := &store.Document{
			URL: fmt.Sprintf("https://site.test/p/%d/", i), PostType: "post", Lang: "en",
			Title:     topicSentence(tp, 2+rng.IntN(5)),
			Published: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(6*365*24)) * time.Hour),
			Tags:      []string{word(), word()}, Categories: []string{vocab[rng.IntN(50)]},
		}
		var body strings.Builder
		for c := 0; c < *perDoc; c++ {
			text := topicSentence(tp, *words-20+rng.IntN(40)) + "."
			ch := store.Chunk{Ord: c, Type: "prose", HeadingPath: []string{sentence(3)}}
			if rng.IntN(6) == 0 {
				ch.Type, ch.CodeLang = "code", langs[rng.IntN(len(langs))]
				text = "func " + word() + "_" + word() + "() { return " + word() + " }"
			}
			start := len([]rune(body.String()))
			body.WriteString(text + "\n\n")
			ch.Text, ch.Start, ch.End = text, start, start+len([]rune(text))
			ch.ContentHash = fmt.Sprintf("%d-%d", i, c)
			d.Chunks = append(d.Chunks, ch)
			nChunks++
		}
		d.Body, d.Text = body.String(), body.String()
		d.ContentHash = fmt.Sprint(i)
		batch = append(batch, d)
		if reuse {
			batch = batch[:0]
		}
		if len(batch) == 500 {
			if err := db.PutDocuments(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := db.PutDocuments(ctx, batch); err != nil {
		return err
	}
	fmt.Printf("store: %d documents, %d chunks, indexed in %s\n", *docs, nChunks, time.Since(t0).Round(time.Millisecond))
	if !*overHTTP {
		t := time.Now()
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := ix.Load(ctx); err != nil {
			return err
		}
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		fmt.Printf("in-memory index: loaded in %s, %.1f MB of heap\n", time.Since(t).Round(time.Millisecond),
			float64(after.HeapAlloc-before.HeapAlloc)/1e6)
	}

	type kind struct {
		name string
		lat  []time.Duration
	}
	kinds := map[string]*kind{}
	var all []time.Duration
	typo := func(w string) string {
		if len(w) < 5 {
			return w
		}
		i := 1 + rng.IntN(len(w)-2)
		return w[:i] + w[i+1:]
	}
	run := func(q search.Query) error {
		_, err := ix.Search(ctx, q)
		return err
	}
	if *overHTTP {
		db.Close()
		call, stop, err := serveHTTP(ctx, *dir, "https://site.test")
		if err != nil {
			return err
		}
		defer stop()
		run = call
	}
	// Warm the caches (vocabulary, statistics) as a running daemon has.
	if err := run(search.Query{Text: "warm " + typo(vocab[500])}); err != nil {
		return err
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	type timedQuery struct {
		text, kind string
		d          time.Duration
	}
	var slowest []timedQuery
	var ru0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	cpu0 := time.Duration(ru0.Utime.Nano() + ru0.Stime.Nano())
	for i := 0; i < *queries; i++ {
		n := 1 + rng.IntN(4)
		var ws []string
		tp := topics[rng.IntN(len(topics))]
		for j := 0; j < n; j++ {
			if rng.IntN(4) == 0 {
				ws = append(ws, vocab[20+rng.IntN(2000)]) // a common word
			} else {
				ws = append(ws, tp[rng.IntN(len(tp))])
			}
		}
		q := search.Query{Text: strings.Join(ws, " "), Limit: 10}
		k := "plain"
		switch i % 10 {
		case 0:
			ws[0] = typo(ws[0])
			q.Text = strings.Join(ws, " ")
			k = "typo"
		case 1:
			q.Filters = search.Filters{ChunkType: "code", CodeLang: langs[rng.IntN(len(langs))]}
			k = "filtered"
		case 2:
			q.Text = "latest " + q.Text
			k = "temporal"
		case 3:
			q.Passages = true
			k = "passages"
		}
		t := time.Now()
		if err := run(q); err != nil {
			return err
		}
		d := time.Since(t)
		if kinds[k] == nil {
			kinds[k] = &kind{name: k}
		}
		kinds[k].lat = append(kinds[k].lat, d)
		all = append(all, d)
		slowest = append(slowest, timedQuery{q.Text, k, d})
	}
	report := func(name string, ds []time.Duration) {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		p := func(f float64) string {
			return fmt.Sprintf("%.2f ms", float64(ds[int(f*float64(len(ds)-1))])/1e6)
		}
		fmt.Printf("%-9s n=%-5d p50 %s  p95 %s  p99 %s\n", name, len(ds), p(0.5), p(0.95), p(0.99))
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) - cpu0
	fmt.Printf("cpu per query (mean, all threads): %.2f ms\n", float64(cpu)/1e6/float64(*queries))
	report("all", all)
	sort.Slice(slowest, func(i, j int) bool { return slowest[i].d > slowest[j].d })
	for _, q := range slowest[:min(*slow, len(slowest))] {
		fmt.Printf("  %7.2f ms  %-9s %q\n", float64(q.d)/1e6, q.kind, q.text)
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		report(k, kinds[k].lat)
	}

	// A chat question is longer than a search box query: every one is
	// reranked (four words or more), which the mix above rarely is.
	fill := []string{"how", "do", "i", "the", "my", "with", "what", "is", "a", "for", "can", "you"}
	var long []time.Duration
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	cpu0 = time.Duration(ru0.Utime.Nano() + ru0.Stime.Nano())
	for range *questions {
		tp := topics[rng.IntN(len(topics))]
		var ws []string
		for range 8 + rng.IntN(5) {
			switch rng.IntN(3) {
			case 0:
				ws = append(ws, fill[rng.IntN(len(fill))])
			case 1:
				ws = append(ws, vocab[20+rng.IntN(2000)])
			default:
				ws = append(ws, tp[rng.IntN(len(tp))])
			}
		}
		t := time.Now()
		if err := run(search.Query{Text: strings.Join(ws, " ") + "?", Limit: 10}); err != nil {
			return err
		}
		long = append(long, time.Since(t))
	}
	if len(long) > 0 {
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		cpu = time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) - cpu0
		fmt.Printf("questions, apart from the mix (cpu per query %.2f ms):\n", float64(cpu)/1e6/float64(len(long)))
		report("question", long)
	}
	return nil
}

// makeVocab makes n distinct pronounceable words.
func makeVocab(rng *rand.Rand, n int) []string {
	cons := []string{"b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "st", "tr", "pl", "ch"}
	vows := []string{"a", "e", "i", "o", "u", "ai", "ou"}
	ends := []string{"", "", "s", "ing", "ed", "er", "ion", "ly"}
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		for s := 0; s < 1+rng.IntN(3); s++ {
			b.WriteString(cons[rng.IntN(len(cons))])
			b.WriteString(vows[rng.IntN(len(vows))])
		}
		b.WriteString(ends[rng.IntN(len(ends))])
		w := b.String()
		if len(w) >= 3 && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// serveHTTP opens the store in dir through the daemon, as `askwpd serve`
// does, serves its API on a loopback port, and returns a search_site call
// over HTTP with keep-alive, as the PHP plugin makes it.
func serveHTTP(ctx context.Context, dir, site string) (func(search.Query) error, func(), error) {
	cfg := config.Default()
	cfg.StateDir, cfg.SiteURL = dir, site
	d, err := daemon.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, err
	}
	// The daemon's Serve loads this at start-up.
	if err := d.Search.Load(ctx); err != nil {
		d.Close()
		return nil, nil, err
	}
	const token = "bench-token"
	srv := api.New(d, api.Options{Token: token, Log: d.Log})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	url := "http://" + ln.Addr().String() + "/v1/tools/search_site"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	call := func(q search.Query) error {
		args := tool.SearchArgs{Query: q.Text, Limit: q.Limit, Passages: q.Passages,
			Filters: tool.SearchFilter{ChunkType: q.Filters.ChunkType, Language: q.Filters.CodeLang}}
		body, _ := json.Marshal(args)
		req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("search_site: %s: %s", resp.Status, b)
		}
		return nil
	}
	stop := func() {
		hs.Close()
		d.Close()
	}
	return call, stop, nil
}
