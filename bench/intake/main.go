// Command intake measures how long a webhook's events take to be stored
// while the store is busy with index writes, without WordPress or HTTP:
// the store's side of webhooks stalling behind a crawl and searches.
//
// It opens a store in a temporary dir, fills it with -docs documents of
// SciFact (../shared/evaldata/beir-scifact/corpus.jsonl), loads the
// in-memory search index over it (so every index commit is analyzed by
// the search package, as in the daemon), then, for -duration, runs
// -writers goroutines that re-put documents with changed text back to
// back (a crawl's writes), while single-event InsertEvents calls arrive
// at -rate a second, each from its own goroutine at its scheduled time
// (an open loop: a slow store shows as queueing). It prints the insert
// latency from schedule (p50, p99, max), the document writes done, and
// the process's CPU time.
//
//	go run ./bench/intake -writers 4 -rate 200 -duration 20s
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

func main() {
	corpus := flag.String("corpus", "../shared/evaldata/beir-scifact/corpus.jsonl", "BEIR corpus.jsonl, relative to the repository root")
	docs := flag.Int("docs", 2000, "documents stored before the run")
	writers := flag.Int("writers", 4, "goroutines re-putting documents back to back")
	rate := flag.Float64("rate", 200, "events a second")
	duration := flag.Duration("duration", 20*time.Second, "length of the run")
	flag.Parse()
	if err := run(*corpus, *docs, *writers, *rate, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "bench/intake:", err)
		os.Exit(2)
	}
}

type corpusDoc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

func readCorpus(path string, n int) ([]corpusDoc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []corpusDoc
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() && len(out) < n {
		var d corpusDoc
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, sc.Err()
}

func doc(d corpusDoc, rev int) *store.Document {
	body := fmt.Sprintf("%s\n\nRevision %d.", d.Text, rev)
	n := len([]rune(body))
	return &store.Document{
		URL: "http://bench.test/" + d.ID + "/", Title: d.Title, PostType: "post", Body: body, Text: body,
		Published: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), ContentHash: fmt.Sprintf("%s-%d", d.ID, rev),
		FetchedAt: time.Now(), WordCount: n / 6,
		Chunks: []store.Chunk{{Ord: 0, Start: 0, End: n, Text: body, Type: "prose"}},
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func run(corpusPath string, nDocs, writers int, rate float64, d time.Duration) error {
	if _, err := os.Stat(corpusPath); err != nil {
		fmt.Printf("no corpus at %s (%v): skipped\n", corpusPath, err)
		return nil
	}
	cds, err := readCorpus(corpusPath, nDocs)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "askwpd-bench-intake-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "askwpd.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	for _, cd := range cds {
		if _, err := st.PutDocument(ctx, doc(cd, 0)); err != nil {
			return err
		}
	}
	ix := search.New(st)
	defer ix.Close()
	if err := ix.Load(ctx); err != nil {
		return err
	}
	fmt.Printf("%d documents, search index loaded; %d writers, %.0f events/s for %s, GOMAXPROCS %d\n",
		len(cds), writers, rate, d, runtime.GOMAXPROCS(0))

	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var puts atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; rctx.Err() == nil; i += writers {
				cd := cds[i%len(cds)]
				if _, err := st.PutDocument(ctx, doc(cd, 1+i/len(cds))); err != nil {
					fmt.Fprintln(os.Stderr, "put:", err)
					return
				}
				puts.Add(1)
			}
		}()
	}
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs int
	)
	cpu0 := cpuSeconds()
	start := time.Now()
	var ev sync.WaitGroup
	for i := 0; ; i++ {
		at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if at.Sub(start) >= d {
			break
		}
		time.Sleep(time.Until(at))
		ev.Add(1)
		go func() {
			defer ev.Done()
			err := st.InsertEvents(ctx, []*store.Event{{EventID: fmt.Sprintf("bench-%d", i), Type: store.EventPostUpdated, PostID: int64(i%10 + 1)}})
			took := time.Since(at)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				return
			}
			lat = append(lat, took)
		}()
	}
	ev.Wait()
	cancel()
	wg.Wait()
	wall := time.Since(start)
	cpu := cpuSeconds() - cpu0
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		i := int(math.Ceil(p*float64(len(lat)))) - 1
		return float64(lat[min(max(i, 0), len(lat)-1)].Microseconds()) / 1000
	}
	fmt.Printf("events: %d stored, %d errors; insert latency from schedule: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
		len(lat), errs, q(0.5), q(0.99), q(1))
	fmt.Printf("document writes alongside: %d (%.0f/s); process CPU %.1f s in %.1f s\n",
		puts.Load(), float64(puts.Load())/wall.Seconds(), cpu, wall.Seconds())
	return nil
}
