package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/daemon"
	"github.com/askwp/askwpd/eval"
	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

func openDaemon(ctx context.Context, c *common, stderr io.Writer, defaultLevel string, jsonLogs bool) (*daemon.Daemon, error) {
	cfg, err := c.load()
	if err != nil {
		return nil, err
	}
	level := cfg.LogLevel
	if c.logLevel == "" && defaultLevel != "" {
		level = defaultLevel
	}
	log := newLogger(stderr, level, jsonLogs)
	return daemon.Open(ctx, cfg, log)
}

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c common
	c.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	// A store found damaged while serving ends Serve; opening again heals
	// it, and serving goes on in the same process.
	for {
		err := serveOnce(ctx, &c, stderr)
		if !errors.Is(err, daemon.ErrStoreDamaged) || ctx.Err() != nil {
			return err
		}
	}
}

func serveOnce(ctx context.Context, c *common, stderr io.Writer) error {
	d, err := openDaemon(ctx, c, stderr, "", true)
	if err != nil {
		return err
	}
	defer d.Close()
	d.Crawler.PassHolder = "askwpd serve"
	if err := d.CheckSite(ctx); err != nil {
		return err
	}
	return d.Serve(ctx)
}

func cmdIndex(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("index", flag.ContinueOnError)
	var c common
	c.register(fs)
	full := fs.Bool("full", false, "re-fetch everything and remove pages no longer found")
	wait := fs.Bool("wait", false, "when another process runs a pass (askwpd serve's schedule, say), wait for it to end instead of refusing")
	site := fs.Int64("site", 0, "on a network, index only the site of this blog id")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	// With askwpd serve running, the pass is its: run here, it would
	// reach serve's index in memory only when a search noticed, seconds
	// later.
	req := api.IndexRequest{Full: *full, Site: *site, Wait: *wait}
	if err := handOff(ctx, cfg.StateDir, req, stderr); !errors.Is(err, errNoServe) {
		return err
	}
	d, err := openDaemon(ctx, &c, stderr, "warn", false)
	if err != nil {
		return err
	}
	defer d.Close()
	d.Crawler.PassHolder = "askwpd index"
	if err := d.CheckSite(ctx); err != nil {
		return err
	}
	if *site != 0 {
		return indexSite(ctx, d, req, stderr)
	}
	opt := daemon.IndexOptions{Full: *full, Kind: "index"}
	tty := isTerminal(stderr)
	if tty {
		opt.Progress = func(done, total int) { progress(stderr, done, total) }
	}
	start := time.Now()
	run, err := d.Index(ctx, opt)
	for said := ""; *wait && errors.Is(err, daemon.ErrCrawlRunning); {
		if err.Error() != said {
			said = err.Error()
			fmt.Fprintf(stderr, "waiting: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
		}
		start = time.Now()
		run, err = d.Index(ctx, opt)
	}
	if tty {
		fmt.Fprintln(stderr)
	}
	if errors.Is(err, daemon.ErrCrawlRunning) {
		// Two passes would fetch the same pages and resume the same
		// interrupted pass twice; the one running finishes the job.
		return fmt.Errorf("%w; not starting a second pass: wait for that one (askwpd index --wait), or, with askwpd serve running, use its admin page's \"reindex now\"", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "indexed %s in %s: %d discovered, %d fetched, %d indexed, %d unchanged, %d removed, %d errors\n",
		d.Crawler.Site.URL, time.Since(start).Round(time.Millisecond), run.Discovered, run.Fetched, run.Indexed, run.Unchanged, run.Removed, run.Errors)
	// A one-shot run embeds what it indexed before it exits (when
	// embeddings are configured), or the chunks would wait for the
	// daemon's worker.
	if n, err := d.Embed.EmbedPending(ctx); err != nil {
		fmt.Fprintf(stderr, "embeddings: %v (search falls back to keywords for the rest)\n", err)
	} else if n > 0 {
		fmt.Fprintf(stderr, "embedded %d chunks\n", n)
	}
	// The search index is built here, once, and Close leaves its
	// snapshot in the state dir: without one, the next start of askwpd
	// serve analyzes every stored chunk before it answers (24 s of two
	// cores at 100,000 pages), with one it is ready in a second.
	if err := d.Search.Load(ctx); err != nil {
		fmt.Fprintf(stderr, "search index: %v (askwpd serve builds it at its next start)\n", err)
	}
	return nil
}

// indexSite runs the pass of one network site here, as serve would
// (IndexPass), and prints what it did.
func indexSite(ctx context.Context, d *daemon.Daemon, req api.IndexRequest, stderr io.Writer) error {
	v := &passView{w: stderr, tty: isTerminal(stderr), start: time.Now()}
	var mu sync.Mutex
	err := d.IndexPass(ctx, req, func(ev api.IndexEvent) {
		mu.Lock()
		defer mu.Unlock()
		v.show(ev)
	})
	if v.bar {
		fmt.Fprintln(stderr)
	}
	if errors.Is(err, api.ErrAlreadyRunning) {
		_, err = v.show(api.IndexEvent{Event: "running", Error: err.Error()})
	}
	return err
}

func progress(w io.Writer, done, total int) {
	if total <= 0 {
		return
	}
	const width = 30
	n := min(width, done*width/total)
	fmt.Fprintf(w, "\r[%s%s] %d/%d", strings.Repeat("#", n), strings.Repeat(" ", width-n), done, total)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func cmdSearch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	var c common
	c.register(fs)
	asJSON := fs.Bool("json", false, "print the search_site JSON result")
	limit := fs.Int("limit", 10, "results")
	if err := parse(fs, args); err != nil {
		return err
	}
	query := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(query) == "" {
		return &exitError{2, errors.New("search: give a QUERY")}
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	// Searching needs only the store: it works with WordPress down.
	st, err := store.Open(ctx, cfg.StateDir+"/askwpd.db")
	if err != nil {
		return err
	}
	defer st.Close()
	sargs := tool.SearchArgs{Query: query, Limit: *limit}
	q, err := sargs.ToSearchQuery()
	if err != nil {
		return err
	}
	ix := search.New(st)
	defer ix.Close()
	if err := ix.Load(ctx); err != nil {
		return err
	}
	r, err := ix.Search(ctx, q)
	if err != nil {
		return err
	}
	resp := tool.NewSearchResponse(q.Text, r)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(resp)
	}
	fmt.Fprintf(stdout, "action: %s  confidence: %.2f  terms: %v\n", resp.Action, resp.Confidence, resp.Terms)
	for i, e := range resp.Results {
		fmt.Fprintf(stdout, "\n%d. %s\n   %s  (%s, published %s, score %.3f)\n   %s\n", i+1, e.Title, e.URL, e.Type, e.Published, e.Score, e.Snippet)
	}
	return nil
}

func cmdExtract(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("extract", flag.ContinueOnError)
	pageURL := fs.String("url", "", "the page's URL (resolves links, canonical)")
	noChunks := fs.Bool("no-chunks", false, "leave chunks out")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return &exitError{2, errors.New("extract: give one FILE, or - for standard input")}
	}
	in := stdin
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("extract: %w", err)
		}
		defer f.Close()
		in = f
	}
	res, err := extract.Extract(ctx, in, extract.Options{URL: *pageURL, NoChunks: *noChunks})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

func cmdEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	var opt eval.Options
	fs.StringVar(&opt.Corpus, "corpus", "", "BEIR corpus.jsonl")
	fs.StringVar(&opt.Queries, "queries", "", "BEIR queries.jsonl")
	fs.StringVar(&opt.Qrels, "qrels", "", "qrels TSV (query-id, corpus-id, score)")
	fs.StringVar(&opt.Run, "run", "", "write a TREC run here")
	fs.StringVar(&opt.Baseline, "baseline", "", "a TREC run (from --run) to compare with, query by query: mean difference, wins and losses, a bootstrap interval (needs --qrels)")
	fs.IntVar(&opt.Limit, "limit", 0, "evaluate at most this many queries")
	fs.StringVar(&opt.StateDir, "state-dir", "", "where to build the temporary index")
	if err := parse(fs, args); err != nil {
		return err
	}
	if opt.Corpus == "" || opt.Queries == "" {
		return &exitError{2, errors.New("eval: --corpus and --queries are required")}
	}
	if opt.Baseline != "" && opt.Qrels == "" {
		return &exitError{2, errors.New("eval: --baseline needs --qrels to score both runs")}
	}
	return eval.Run(ctx, opt, stdout)
}

func cmdDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	var c common
	c.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := c.load()
	if err != nil {
		fmt.Fprintf(stdout, "FAIL config: %s\n", oneLine(err.Error()))
		return err
	}
	fmt.Fprintln(stdout, "ok   config")
	d, err := daemon.Open(ctx, cfg, newLogger(io.Discard, "error", false))
	if err != nil {
		fmt.Fprintf(stdout, "FAIL open: %s\n", oneLine(err.Error()))
		return err
	}
	defer d.Close()
	if d.WP != nil {
		fmt.Fprintln(stdout, "ok   database")
	} else {
		fmt.Fprintln(stdout, "skip database (no wp_root or db_dsn)")
	}
	checkStore(ctx, stdout, d)
	wg, err := d.WebGroup()
	if err != nil {
		fmt.Fprintf(stdout, "FAIL web group: %s\n", oneLine(err.Error()))
		return err
	}
	secretsErr := checkSecrets(stdout, cfg.StateDir, wg)
	checkProvider(ctx, stdout, d)
	clusterErr := checkCluster(ctx, stdout, d)
	if err := d.CheckSite(ctx); err != nil {
		fmt.Fprintf(stdout, "FAIL site: %s\n", oneLine(err.Error()))
		return err
	}
	fmt.Fprintf(stdout, "ok   site %s\n", d.Crawler.Site.URL)
	checkOrigin(stdout, d.Origin())
	if rc, err := d.Crawler.Fetcher.Open(ctx, d.Crawler.Site.URL+"/wp-sitemap.xml"); err != nil {
		fmt.Fprintf(stdout, "warn sitemap: %s\n", oneLine(err.Error()))
	} else {
		rc.Close()
		fmt.Fprintln(stdout, "ok   sitemap")
	}
	return errors.Join(secretsErr, clusterErr)
}
