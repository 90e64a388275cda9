// Command coresearch puts askwpd and WordPress core search side by side on
// the same WordPress site and the same judged questions.
//
// It loads a BEIR corpus (wpdocs by default) into the test WordPress as
// published pages (scripts/wp/load-beir.php, Markdown turned into HTML,
// under the test site lock, removed afterwards even on Ctrl-C), then asks
// each question of
//   - WordPress core search, through its REST route /wp/v2/search (what the
//     site's own search box and most "search" integrations call), and
//   - askwpd: a full index pass of the site as it now stands (its other
//     content included) into a temporary state dir, then search_site,
//
// and scores both rankings against the judgments with the code of `askwpd
// eval` (nDCG@10, recall, MRR@10, per query type), ten results each. Latency is printed
// for each, but they are not alike: core search is timed over HTTP through
// PHP, askwpd in-process; bench/load times askwpd over HTTP.
//
// Usage (needs scripts/wp-up.sh and ../shared/evaldata):
//
//	go run ./bench/coresearch
//	go run ./bench/coresearch -corpus ../shared/evaldata/beir-scifact/corpus.jsonl \
//	    -queries ../shared/evaldata/beir-scifact/queries.jsonl \
//	    -qrels ../shared/evaldata/beir-scifact/qrels/train.tsv -post-type post
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/yuin/goldmark"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/daemon"
	"github.com/askwp/askwpd/eval"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/tool"
)

func main() {
	data := filepath.Join(wptest.RepoRoot(), "..", "shared", "evaldata", "wpdocs")
	var (
		corpus   = flag.String("corpus", filepath.Join(data, "corpus.jsonl"), "BEIR corpus to load into WordPress")
		queries  = flag.String("queries", filepath.Join(data, "queries.jsonl"), "BEIR queries")
		qrels    = flag.String("qrels", filepath.Join(data, "qrels", "dev.tsv"), "relevance judgments")
		postType = flag.String("post-type", "page", "load documents as page or post")
		limit    = flag.Int("limit", 0, "evaluate at most this many queries (0: all)")
		keep     = flag.Bool("keep", false, "leave the loaded documents on the site")
	)
	flag.Parse()
	for _, p := range []string{*corpus, *queries, *qrels} {
		if _, err := os.Stat(p); err != nil {
			fmt.Fprintf(os.Stderr, "coresearch: %v (the evaluation data lives in ../shared/evaldata)\n", err)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opt := eval.Options{Queries: *queries, Qrels: *qrels, Limit: *limit}
	if err := run(ctx, *corpus, *postType, *keep, opt); err != nil {
		fmt.Fprintln(os.Stderr, "coresearch:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, corpus, postType string, keep bool, opt eval.Options) error {
	site, err := wptest.Open()
	if err != nil {
		return fmt.Errorf("%w: run scripts/wp-up.sh", err)
	}
	env := site.Env
	release, err := site.Acquire(ctx)
	if err != nil {
		return err
	}
	defer release()

	docs, err := readCorpus(corpus)
	if err != nil {
		return err
	}
	t0 := time.Now()
	// Removal runs even when ctx is cancelled: the site is shared.
	defer func() {
		if !keep {
			if _, err := loadBEIR(context.WithoutCancel(ctx), env, nil, "--remove"); err != nil {
				fmt.Fprintln(os.Stderr, "coresearch: removing the loaded documents:", err)
			}
		}
	}()
	loaded, err := loadBEIR(ctx, env, docs, "--post-type="+postType)
	if err != nil {
		return err
	}
	fmt.Printf("loaded %d documents as %ss in %.1fs\n", len(loaded), postType, time.Since(t0).Seconds())
	byPost, byURL := map[int64]string{}, map[string]string{}
	for _, l := range loaded {
		byPost[l.PostID] = l.ID
		byURL[normURL(l.URL)] = l.ID
	}

	fmt.Println("\n== WordPress core search (REST /wp/v2/search, over HTTP)")
	client := &http.Client{Timeout: 60 * time.Second}
	core := func(ctx context.Context, q string) ([]string, error) {
		u := env["SITE_URL"] + "/?" + url.Values{"rest_route": {"/wp/v2/search"}, "search": {q}, "per_page": {"10"},
			"type": {"post"}, "subtype": {postType}}.Encode()
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			return nil, fmt.Errorf("core search: %s: %.200s", resp.Status, b)
		}
		var hits []struct {
			ID int64 `json:"id"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&hits); err != nil {
			return nil, fmt.Errorf("core search: %w", err)
		}
		var ids []string
		for _, h := range hits {
			if id, ok := byPost[h.ID]; ok {
				ids = append(ids, id)
			}
		}
		return ids, nil
	}
	coreM, err := eval.Judge(ctx, opt, core, os.Stdout)
	if err != nil {
		return err
	}

	fmt.Println("\n== askwpd (a full index pass of the site, then search_site in-process)")
	state, err := os.MkdirTemp("", "askwpd-coresearch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	cfg := config.Default()
	cfg.WPRoot, cfg.StateDir = env["WP_ROOT"], state
	cfg.Crawl.RatePerSec, cfg.Crawl.Budget = 100000, 1000000
	cfg.Schedule.Disabled = true
	d, err := daemon.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer d.Close()
	t0 = time.Now()
	r, err := d.Index(ctx, crawl.IndexOptions{Full: true})
	if err != nil {
		return fmt.Errorf("index pass: %w", err)
	}
	fmt.Printf("index pass: %d pages indexed in %.1fs\n", r.Indexed, time.Since(t0).Seconds())
	askwpd := func(ctx context.Context, q string) ([]string, error) {
		args, _ := json.Marshal(tool.SearchArgs{Query: q, Limit: 10})
		res, err := d.Call(ctx, "search_site", args)
		if err != nil {
			return nil, err
		}
		sr, ok := res.(*tool.SearchResponse)
		if !ok {
			return nil, fmt.Errorf("search_site answered %T", res)
		}
		var ids []string
		for _, e := range sr.Results {
			if id, ok := byURL[normURL(e.URL)]; ok {
				ids = append(ids, id)
			}
		}
		return ids, nil
	}
	ourM, err := eval.Judge(ctx, opt, askwpd, os.Stdout)
	if err != nil {
		return err
	}

	// Both return ten results, as a search box or a chatbot's search
	// asks, so eval's Recall@100 is the recall at ten.
	fmt.Printf("\n== side by side (%d questions)\n", ourM.Queries)
	fmt.Printf("%-34s %8s %10s %7s %9s %9s\n", "system", "nDCG@10", "Recall@10", "MRR@10", "p50", "p95")
	for _, s := range []struct {
		name string
		m    *eval.Metrics
	}{{"WordPress core search (REST)", coreM}, {"askwpd search_site", ourM}} {
		fmt.Printf("%-34s %8.4f %10.4f %7.4f %9s %9s\n", s.name, s.m.NDCG10, s.m.Recall100, s.m.MRR10, ms(s.m.P50), ms(s.m.P95))
	}
	return nil
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}

// normURL keys a permalink the same whether WordPress or the crawler
// wrote it.
func normURL(u string) string {
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://"), "/")
}

type beirDoc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// readCorpus reads the corpus and turns each text into HTML, as an author
// writing Markdown in the block editor would publish it.
func readCorpus(path string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var out []map[string]string
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var d beirDoc
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var html bytes.Buffer
		if err := goldmark.Convert([]byte(d.Text), &html); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, d.ID, err)
		}
		out = append(out, map[string]string{"id": d.ID, "title": d.Title, "html": html.String()})
	}
	return out, sc.Err()
}

type loadedDoc struct {
	ID     string `json:"id"`
	PostID int64  `json:"post_id"`
	URL    string `json:"url"`
}

// loadBEIR runs scripts/wp/load-beir.php inside WordPress with docs on its
// stdin and returns what it loaded.
func loadBEIR(ctx context.Context, env map[string]string, docs []map[string]string, args ...string) ([]loadedDoc, error) {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, "php", append([]string{"-d", "display_errors=stderr", "-d", "memory_limit=1024M",
		filepath.Join(wptest.RepoRoot(), "scripts", "wp", "load-beir.php"), "--url=" + env["SITE_URL"]}, args...)...)
	cmd.Env = append(os.Environ(), "WP_ROOT="+env["WP_ROOT"], "SITE_URL="+env["SITE_URL"])
	cmd.Stdin, cmd.Stderr = &in, os.Stderr
	// Its own process group: a Ctrl-C meant for the bench must not stop
	// PHP half way through a load or a removal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("load-beir.php: %w", err)
	}
	var loaded []loadedDoc
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l loadedDoc
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("load-beir.php said %.200q: %w", sc.Text(), err)
		}
		loaded = append(loaded, l)
	}
	if len(loaded) != len(docs) {
		return nil, fmt.Errorf("load-beir.php loaded %d of %d documents", len(loaded), len(docs))
	}
	return loaded, sc.Err()
}
