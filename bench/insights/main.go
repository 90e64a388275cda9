// Command insights measures what the question log adds to a search.
//
// It opens a daemon on the test WordPress (or -wp-root), indexes it into
// a fresh state dir, and runs the same queries through search_site with
// and without the log, interleaved in blocks so that both see the same
// machine load. It prints, for each side, the p50 and p95 of a call's
// wall time and the process CPU time per search (getrusage, so the log's
// writer goroutine, its redaction and its inserts are counted). Searches
// run lean (index only, no live expansion) so that the numbers are about
// the search and the log, not WordPress answering fetches.
//
// A second measure isolates the log: the wrapper around a tool that
// returns a ready result at once, so what is timed is the log alone. A
// third times the report over -report synthetic questions.
//
// Usage:
//
//	ASKWPD_TEST_WP_ENV=.wp-test/env go run ./bench/insights [-n 4000] [-block 200]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/daemon"
	"github.com/askwp/askwpd/insights"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

var queries = []string{
	"how do I roast coffee in a popcorn popper", "sourdough starter hooch", "nightly mariadb backups restic",
	"espresso grinder retention", "token bucket rate limiter go", "coffee grounds worm farm", "caddy reverse proxy wordpress",
	"move mastodon to a cheaper vps", "bicycle commuter lights", "php-fpm pool users", "slow wp_query meta query",
	"gofmt tabs or spaces", "do you sell gift cards", "is the entrance wheelchair accessible", "student discount",
	"opening hours on saturday", "can I cancel my subscription", "do you ship outside germany", "contact email", "workshops",
}

func main() {
	n := flag.Int("n", 4000, "searches per side")
	block := flag.Int("block", 200, "searches per block; the sides alternate by block")
	wpRoot := flag.String("wp-root", "", "WordPress root (default: the test site's, from ASKWPD_TEST_WP_ENV)")
	flag.IntVar(&reportN, "report", 20000, "questions to time the report over")
	flag.Parse()
	if err := run(*n, *block, *wpRoot); err != nil {
		fmt.Fprintln(os.Stderr, "insights bench:", err)
		os.Exit(1)
	}
}

var reportN int

func run(n, block int, wpRoot string) error {
	ctx := context.Background()
	if wpRoot == "" {
		env, err := readEnv(os.Getenv("ASKWPD_TEST_WP_ENV"))
		if err != nil {
			return fmt.Errorf("no -wp-root and no test site (%w)", err)
		}
		wpRoot = env["WP_ROOT"]
	}
	dir, err := os.MkdirTemp("", "askwpd-bench-insights-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := config.Default()
	cfg.WPRoot, cfg.StateDir, cfg.Listen = wpRoot, dir, "127.0.0.1:0"
	cfg.Crawl.RatePerSec, cfg.Schedule.Disabled = 200, true
	d, err := daemon.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer d.Close()
	if _, err := d.Index(ctx, crawl.IndexOptions{Full: true}); err != nil {
		return err
	}
	plain, logged := d.Tools.Lean(), d.Questions.Caller(d.Tools.Lean())
	args := make([]json.RawMessage, len(queries))
	for i, q := range queries {
		args[i], _ = json.Marshal(map[string]any{"query": q})
	}
	// Warm the index and the vocabulary.
	for _, a := range args {
		if _, err := plain.Call(ctx, "search_site", a); err != nil {
			return err
		}
	}
	var wall [2][]time.Duration
	var cpu [2]time.Duration
	for done := 0; done < n; done += block {
		// Each side goes first in every other block.
		order := []int{0, 1}
		if (done/block)%2 == 1 {
			order = []int{1, 0}
		}
		for _, side := range order {
			c := []tool.Caller{plain, logged}[side]
			c0 := cpuTime()
			for i := 0; i < block; i++ {
				a := args[(done+i)%len(args)]
				t0 := time.Now()
				if _, err := c.Call(ctx, "search_site", a); err != nil {
					return err
				}
				wall[side] = append(wall[side], time.Since(t0))
			}
			if side == 1 {
				// The writer's work for this block counts on the log's side.
				if err := d.Questions.Flush(ctx); err != nil {
					return err
				}
			}
			cpu[side] += cpuTime() - c0
		}
	}
	fmt.Printf("search_site on %s, %d searches per side in blocks of %d, lean (no live fetches)\n", wpRoot, n, block)
	for side, name := range []string{"without the log", "with the log"} {
		p50, p95 := quantile(wall[side], 0.5), quantile(wall[side], 0.95)
		fmt.Printf("  %-16s p50 %7.3f ms  p95 %7.3f ms  CPU %7.3f ms/search\n", name, ms(p50), ms(p95), ms(cpu[side])/float64(len(wall[side])))
	}
	fmt.Printf("  difference       p50 %+7.3f ms            CPU %+7.3f ms/search\n",
		ms(quantile(wall[1], 0.5)-quantile(wall[0], 0.5)), (ms(cpu[1])-ms(cpu[0]))/float64(n))
	fmt.Printf("  logged %d, dropped %d\n", d.Questions.Logged(), d.Questions.Dropped())

	// The log alone: a tool that answers at once.
	if err := isolated(ctx, dir, n*5); err != nil {
		return err
	}
	return reportCost(ctx, dir, reportN)
}

// reportCost times the gap report (what /admin and /v1/insights build on
// each request) over n questions made of words from a fixed vocabulary.
func reportCost(ctx context.Context, dir string, n int) error {
	st, err := store.Open(ctx, filepath.Join(dir, "report.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	words := strings.Fields(`coffee roast popcorn popper sourdough starter hooch mold backup restic mariadb grinder retention espresso
		token bucket limiter worm farm grounds caddy proxy mastodon server bicycle light commuter gift card voucher wheelchair
		student discount loyalty points gluten pastry job opening parking dog delivery shipping austria canada refund invoice
		subscription cancel price hours saturday workshop bread flour oven kettle scale filter beans decaf milk`)
	rng := rand.New(rand.NewPCG(1, 2))
	var qs []*store.Question
	now := time.Now()
	for i := 0; i < n; i++ {
		k := 1 + rng.IntN(4)
		ws := make([]string, k)
		for j := range ws {
			ws[j] = words[rng.IntN(len(words))]
		}
		qs = append(qs, &store.Question{At: now.Add(-time.Duration(rng.IntN(30*24)) * time.Hour), Kind: "search",
			Text: "do you have " + strings.Join(ws, " "), Action: []string{"answer", "no_match", "clarify"}[rng.IntN(3)], Evidence: "grounded"})
		if len(qs) == 1000 {
			if err := st.InsertQuestions(ctx, qs); err != nil {
				return err
			}
			qs = qs[:0]
		}
	}
	if err := st.InsertQuestions(ctx, qs); err != nil {
		return err
	}
	l := insights.Open(st, insights.Options{})
	defer l.Close()
	for i := 0; i < 3; i++ {
		c0, t0 := cpuTime(), time.Now()
		// A set Now computes the report afresh rather than reuse the last.
		r, err := l.Report(ctx, insights.ReportOptions{Now: time.Now()})
		if err != nil {
			return err
		}
		fmt.Printf("report over %d questions (%d gap groups): %.0f ms wall, %.0f ms CPU\n", r.Questions, len(r.Gaps), ms(time.Since(t0)), ms(cpuTime()-c0))
	}
	return nil
}

// instant is a tool that returns one ready search result.
type instant struct{ r *tool.SearchResponse }

func (t instant) Call(context.Context, string, json.RawMessage) (any, error) { return t.r, nil }

func isolated(ctx context.Context, dir string, n int) error {
	st, err := store.Open(ctx, filepath.Join(dir, "isolated.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	l := insights.Open(st, insights.Options{Retention: 30 * 24 * time.Hour, Site: "http://example.test"})
	defer l.Close()
	r := &tool.SearchResponse{Query: "call +49 30 1234567 about gift cards", Action: "no_match", Evidence: "none",
		Results: []tool.Evidence{{URL: "http://example.test/a/"}, {URL: "http://example.test/b/"}}}
	c := l.Caller(instant{r})
	args := json.RawMessage(`{"query": "call +49 30 1234567 about gift cards"}`)
	walls := make([]time.Duration, 0, n)
	c0 := cpuTime()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		_, _ = c.Call(ctx, "search_site", args)
		walls = append(walls, time.Since(t0))
		if i%1000 == 999 {
			// Drained as a daemon's writer keeps up, so nothing is dropped.
			if err := l.Flush(ctx); err != nil {
				return err
			}
		}
	}
	if err := l.Flush(ctx); err != nil {
		return err
	}
	total := cpuTime() - c0
	fmt.Printf("the log alone, %d calls: on the caller's path p50 %.4f ms, p95 %.4f ms; CPU in all (writer included) %.4f ms/call; logged %d, dropped %d\n",
		n, ms(quantile(walls, 0.5)), ms(quantile(walls, 0.95)), ms(total)/float64(n), l.Logged(), l.Dropped())
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = strings.Trim(v, `"'`)
		}
	}
	return env, sc.Err()
}
