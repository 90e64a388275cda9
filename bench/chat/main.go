// Command chat measures what askwpd's chat loop adds to a model's latency.
// It indexes a WordPress site (the test site by default), serves the real
// API on loopback, and drives POST /v1/chat over SSE against a scripted
// provider that speaks OpenAI's streaming Chat Completions with a fixed
// time to first token. It reports p50/p95 of the TTFT the daemon adds (the
// client's time to the first delta minus the model's own, on turns the
// model answers at once), of what it adds per tool round (from the model
// finishing a stream of tool calls to the daemon's next request arriving),
// and of where the time goes: context building, each tool round, the model.
//
//	go run ./bench/chat [-wp-root DIR] [-n 60] [-ttft 300ms] [-state DIR]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/daemon"
	"github.com/askwp/askwpd/store"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chat bench:", err)
		os.Exit(1)
	}
}

// fake is the scripted provider. It answers each turn with the steps of
// the current scenario and records when requests arrive and streams end.
type fake struct {
	ttft time.Duration

	mu       sync.Mutex
	script   []fakeStep
	n        int
	arrivals []time.Time
	ends     []time.Time
	firsts   []time.Duration // request arrival → first chunk written
}

type fakeStep struct {
	text string
	tool string
	args string
}

func (f *fake) reset(script []fakeStep) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script, f.n, f.arrivals, f.ends, f.firsts = script, 0, nil, nil, nil
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	st := fakeStep{text: "Done."}
	if f.n < len(f.script) {
		st = f.script[f.n]
	}
	f.n++
	f.arrivals = append(f.arrivals, arrived)
	f.mu.Unlock()

	time.Sleep(f.ttft - time.Since(arrived))
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "bench",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	first := time.Since(arrived)
	f.mu.Lock()
	f.firsts = append(f.firsts, first)
	f.mu.Unlock()
	// The end is stamped before the last chunk goes out: after it, the
	// daemon may already be on its way to the next request.
	end := func() {
		f.mu.Lock()
		f.ends = append(f.ends, time.Now())
		f.mu.Unlock()
	}
	if st.tool != "" {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function",
			"function": map[string]any{"name": st.tool, "arguments": st.args}}}}, nil)
		end()
		chunk(map[string]any{}, "tool_calls")
	} else {
		for _, w := range strings.SplitAfter(st.text, " ") {
			chunk(map[string]any{"content": w}, nil)
		}
		end()
		chunk(map[string]any{}, "stop")
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

type sample struct {
	ttft, addedTTFT, total time.Duration
	// preModel is the client's request to the model's request arriving;
	// postModel is the model's first chunk to the client's first delta.
	preModel, postModel time.Duration
	rounds              []time.Duration
	timing              chat.Timing
}

func run() error {
	var (
		wpRoot = flag.String("wp-root", "", "WordPress root (default: the test site's, from .wp-test/env)")
		n      = flag.Int("n", 60, "turns per scenario")
		ttft   = flag.Duration("ttft", 300*time.Millisecond, "the scripted model's time to first token")
		state  = flag.String("state", "", "state dir to reuse (default: a fresh one, indexed first)")
	)
	flag.Parse()
	ctx := context.Background()
	if *wpRoot == "" {
		b, err := os.ReadFile(".wp-test/env")
		if err != nil {
			return fmt.Errorf("no -wp-root and no .wp-test/env (run scripts/wp-up.sh): %w", err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "WP_ROOT="); ok {
				*wpRoot = strings.Trim(v, `"'`)
			}
		}
	}
	fresh := *state == ""
	if fresh {
		dir, err := os.MkdirTemp("", "askwpd-chat-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*state = dir
	}
	fk := &fake{ttft: *ttft}
	prov := httptest.NewServer(fk)
	defer prov.Close()

	cfg := config.Default()
	cfg.WPRoot = *wpRoot
	cfg.StateDir = *state
	cfg.Schedule.Disabled = true
	cfg.Crawl.RatePerSec = 200
	cfg.Provider = config.ProviderConfig{Kind: "openai", BaseURL: prov.URL + "/v1", Model: "bench", APIKey: "bench"}
	d, err := daemon.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer d.Close()
	if stats, _ := d.Store.Stats(ctx); fresh || stats.Documents == 0 {
		start := time.Now()
		run, err := d.Index(ctx, daemon.IndexOptions{Full: true})
		if err != nil {
			return err
		}
		fmt.Printf("indexed %d pages in %v\n", run.Indexed, time.Since(start).Round(time.Millisecond))
	}
	docs, err := d.Store.ListDocuments(ctx, store.DocumentFilter{PostType: "any"})
	if err != nil || len(docs) == 0 {
		return fmt.Errorf("no documents to ask about (%v)", err)
	}

	token := "bench-token-0123456789abcdef"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: api.New(d, api.Options{Token: token, Log: d.Log}).Handler()}
	go hs.Serve(ln)
	defer hs.Close()
	url := "http://" + ln.Addr().String() + "/v1/chat"

	fmt.Printf("site %s, %d documents, model TTFT %v, %d turns per scenario\n\n", d.Crawler.Site.URL, len(docs), *ttft, *n)

	question := func(i int) string {
		return fmt.Sprintf("What do you say about %s?", strings.ToLower(docs[i%len(docs)].Title))
	}
	// Scenario A: the model answers at once; TTFT includes the context
	// builder's searches.
	var direct []sample
	for i := 0; i < *n+3; i++ {
		fk.reset([]fakeStep{{text: "Here is a short answer from the evidence above, with a source."}})
		s, err := turnOnce(url, token, question(i), fk)
		if err != nil {
			return err
		}
		if i >= 3 { // warm-up: connections, SQLite page cache
			direct = append(direct, s)
		}
	}
	// Scenario B: two tool rounds (search_site, then get_document), then
	// the answer.
	var tools []sample
	for i := 0; i < *n+3; i++ {
		doc := docs[i%len(docs)]
		q, _ := json.Marshal(map[string]any{"query": doc.Title})
		g, _ := json.Marshal(map[string]any{"id_or_url": doc.URL})
		fk.reset([]fakeStep{{tool: "search_site", args: string(q)}, {tool: "get_document", args: string(g)}, {text: "Answer after reading the page."}})
		s, err := turnOnce(url, token, question(i), fk)
		if err != nil {
			return err
		}
		if i >= 3 {
			tools = append(tools, s)
		}
	}

	pct := func(xs []time.Duration) string {
		if len(xs) == 0 {
			return "-"
		}
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		p := func(q float64) time.Duration { return xs[min(len(xs)-1, int(q*float64(len(xs))))] }
		return fmt.Sprintf("p50 %7.2f ms  p95 %7.2f ms  max %7.2f ms", msf(p(0.5)), msf(p(0.95)), msf(xs[len(xs)-1]))
	}
	collect := func(ss []sample, f func(sample) []time.Duration) []time.Duration {
		var out []time.Duration
		for _, s := range ss {
			out = append(out, f(s)...)
		}
		return out
	}
	one := func(f func(sample) time.Duration) func(sample) []time.Duration {
		return func(s sample) []time.Duration { return []time.Duration{f(s)} }
	}
	fromMS := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

	fmt.Println("Scenario A: answer at once (context search, then one model call)")
	fmt.Println("  client TTFT              ", pct(collect(direct, one(func(s sample) time.Duration { return s.ttft }))))
	fmt.Println("  daemon-added TTFT        ", pct(collect(direct, one(func(s sample) time.Duration { return s.addedTTFT }))), " (target p95 <= 50 ms)")
	fmt.Println("    of which context build ", pct(collect(direct, one(func(s sample) time.Duration { return fromMS(s.timing.ContextMS) }))))
	fmt.Println("    before the model call  ", pct(collect(direct, one(func(s sample) time.Duration { return s.preModel }))))
	fmt.Println("    first chunk to client  ", pct(collect(direct, one(func(s sample) time.Duration { return s.postModel }))))
	fmt.Println("  model call (incl. stream)", pct(collect(direct, func(s sample) []time.Duration {
		var out []time.Duration
		for _, m := range s.timing.ModelMS {
			out = append(out, fromMS(m))
		}
		return out
	})))
	fmt.Println("  validate + sources       ", pct(collect(direct, one(func(s sample) time.Duration { return fromMS(s.timing.ValidateMS) }))))
	fmt.Println("  total                    ", pct(collect(direct, one(func(s sample) time.Duration { return s.total }))))
	fmt.Println()
	fmt.Println("Scenario B: two tool rounds (search_site, get_document), then the answer")
	fmt.Println("  daemon-added per round   ", pct(collect(tools, func(s sample) []time.Duration { return s.rounds })), " (target p95 <= 20 ms)")
	fmt.Println("    of which tools run     ", pct(collect(tools, func(s sample) []time.Duration {
		var out []time.Duration
		for _, m := range s.timing.ToolRoundMS {
			out = append(out, fromMS(m))
		}
		return out
	})))
	fmt.Println("  context build            ", pct(collect(tools, one(func(s sample) time.Duration { return fromMS(s.timing.ContextMS) }))))
	fmt.Println("  client TTFT (after 2 rounds)", pct(collect(tools, one(func(s sample) time.Duration { return s.ttft }))))
	fmt.Println("  total                    ", pct(collect(tools, one(func(s sample) time.Duration { return s.total }))))
	fmt.Printf("\nBudget: first token <= 2.5 s, full answer <= 8 s; the model's own %v per call dominates.\n", *ttft)
	return nil
}

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// turnOnce runs one chat turn over SSE and measures it against the
// fake's own timestamps.
func turnOnce(url, token, q string, fk *fake) (sample, error) {
	body, _ := json.Marshal(chat.Request{Messages: []chat.Message{{Role: "user", Content: q}}})
	req, _ := http.NewRequest("POST", url, strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return sample{}, err
	}
	defer res.Body.Close()
	var s sample
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		switch event {
		case "delta":
			if s.ttft == 0 {
				s.ttft = time.Since(start)
			}
		case "done":
			var resp chat.Response
			if err := json.Unmarshal([]byte(data), &resp); err != nil {
				return s, err
			}
			if resp.Degraded != "" {
				return s, fmt.Errorf("degraded turn: %s", resp.Degraded)
			}
			s.timing = *resp.Timing
		case "error":
			return s, fmt.Errorf("error event: %s", data)
		}
	}
	s.total = time.Since(start)
	fk.mu.Lock()
	defer fk.mu.Unlock()
	if len(fk.firsts) == 0 {
		return s, fmt.Errorf("the provider was not called")
	}
	// The model's own share of the first token is its last call's time to
	// first chunk; on one-call turns everything else is the daemon's.
	var model time.Duration
	for _, f := range fk.firsts {
		model += f
	}
	s.addedTTFT = s.ttft - model
	s.preModel = fk.arrivals[0].Sub(start)
	s.postModel = s.ttft - s.preModel - fk.firsts[0]
	for i := 1; i < len(fk.arrivals) && i <= len(fk.ends); i++ {
		s.rounds = append(s.rounds, fk.arrivals[i].Sub(fk.ends[i-1]))
	}
	return s, nil
}
