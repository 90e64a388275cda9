// Package eval measures retrieval on a BEIR data set through the same
// chunk → index → search path that serves search_site: nDCG@10,
// Recall@100, MRR@10 and latency, and a TREC run for trec_eval.
package eval

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/embed"
	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

// Options configure Run (the `askwpd eval` command).
type Options struct {
	Corpus, Queries, Qrels, Run string
	// Limit caps the number of queries evaluated; 0 means all.
	Limit int
	// StateDir holds the temporary store; "" means a new temp dir.
	StateDir string
	// Ranking overrides the store's default ranking when set.
	Ranking *search.Ranking
	// ChunkTokens is the chunker's target size; 0 means the daemon's.
	ChunkTokens int
	// Baseline is a TREC run (as Run writes) to compare this run with,
	// query by query; it needs Qrels.
	Baseline string
	// Depth is how many documents each query asks for; 0 means 100.
	// Search fetches more candidates for deeper lists, so a depth of 10
	// measures nDCG@10 as a chatbot's search (limit 10) ranks it.
	Depth int
	// Embeddings, when its base_url is set, makes the run hybrid;
	// Run reads it from the ASKWPD_EMBEDDINGS_* variables.
	Embeddings config.EmbeddingsConfig
}

// Metrics are the results of one evaluation.
type Metrics struct {
	Queries   int
	Docs      int
	Chunks    int
	NDCG10    float64
	Recall100 float64
	MRR10     float64
	P50, P95  time.Duration
	IndexTime time.Duration
	// PerQuery holds each judged query's scores, in query order.
	PerQuery []QueryScore
}

// QueryScore is one judged query's result.
type QueryScore struct {
	ID, Text, Type           string
	NDCG10, Recall100, MRR10 float64
}

// runDepth is how many documents per query the run holds.
const runDepth = 100

// Run indexes a BEIR corpus through the same chunk → index → search
// path as crawled pages, runs the queries, writes a TREC run when
// opt.Run is set, and prints metrics to out when qrels are given.
func Run(ctx context.Context, opt Options, out io.Writer) error {
	if opt.Embeddings.BaseURL == "" {
		cfg, err := config.Load("", os.Environ())
		if err != nil {
			return err
		}
		opt.Embeddings = cfg.Embeddings
	}
	_, err := Evaluate(ctx, opt, out)
	return err
}

// Evaluate is Run returning the metrics.
func Evaluate(ctx context.Context, opt Options, out io.Writer) (*Metrics, error) {
	if opt.Corpus == "" || opt.Queries == "" {
		return nil, errors.New("eval: --corpus and --queries are required")
	}
	dir := opt.StateDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "askwpd-eval-")
		if err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	path := filepath.Join(dir, "eval.db")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	db, err := store.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer db.Close()
	ix := search.New(db)
	defer ix.Close()
	if opt.Ranking != nil {
		ix.SetRanking(*opt.Ranking)
	}

	m := &Metrics{}
	start := time.Now()
	var ids map[string]string
	if m.Docs, m.Chunks, ids, err = indexCorpus(ctx, db, opt.Corpus, opt.ChunkTokens); err != nil {
		return nil, err
	}
	m.IndexTime = time.Since(start)
	// Search as the daemon does, from the in-memory index.
	if err := ix.Load(ctx); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	hyb, err := newHybrid(ctx, db, opt.Embeddings, out)
	if err != nil {
		return nil, err
	}
	queries, qrels, err := loadQueries(opt)
	if err != nil {
		return nil, err
	}
	depth := runDepth
	if opt.Depth > 0 {
		depth = opt.Depth
	}
	engine := func(ctx context.Context, text string) ([]string, []float64, error) {
		res, err := ix.Search(ctx, search.Query{Text: text, Limit: depth, PerDoc: 1, Hybrid: hyb.query(ctx, text)})
		if err != nil {
			return nil, nil, err
		}
		ranked, scores := make([]string, len(res.Hits)), make([]float64, len(res.Hits))
		for i, h := range res.Hits {
			ranked[i], scores[i] = ids[h.URL], h.Score
		}
		return ranked, scores, nil
	}
	if err := runQueries(ctx, engine, queries, qrels, opt.Run, m); err != nil {
		return nil, err
	}
	hyb.report(out)
	if err := m.report(out, opt, qrels); err != nil {
		return nil, err
	}
	return m, nil
}

// report prints the metrics, per query type, and the comparison with
// opt.Baseline when there is one.
func (m *Metrics) report(out io.Writer, opt Options, qrels map[string]map[string]int) error {
	m.print(out, qrels != nil)
	printByType(out, m.PerQuery)
	if opt.Baseline != "" && qrels != nil {
		base, err := readRun(opt.Baseline)
		if err != nil {
			return err
		}
		compare(out, m.PerQuery, base, qrels)
	}
	return nil
}

// loadQueries reads the queries, keeps only judged ones when qrels are
// given, and applies opt.Limit.
func loadQueries(opt Options) ([]Query, map[string]map[string]int, error) {
	queries, err := ReadQueries(opt.Queries)
	if err != nil {
		return nil, nil, err
	}
	var qrels map[string]map[string]int
	if opt.Qrels != "" {
		if qrels, err = readQrels(opt.Qrels); err != nil {
			return nil, nil, err
		}
		kept := queries[:0]
		for _, q := range queries {
			if _, ok := qrels[q.ID]; ok {
				kept = append(kept, q)
			}
		}
		queries = kept
	}
	if opt.Limit > 0 && len(queries) > opt.Limit {
		queries = queries[:opt.Limit]
	}
	return queries, qrels, nil
}

// ranker returns a query's ranked document ids and their scores.
type ranker func(ctx context.Context, text string) (ids []string, scores []float64, err error)

// runQueries ranks each query, writes the rankings to a TREC run at
// runPath when set, and fills m's scores (means over the queries) and
// latencies.
func runQueries(ctx context.Context, rank ranker, queries []Query, qrels map[string]map[string]int,
	runPath string, m *Metrics) error {
	var run *bufio.Writer
	if runPath != "" {
		f, err := os.Create(runPath)
		if err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		defer f.Close()
		run = bufio.NewWriter(f)
	}
	var lat []time.Duration
	for _, q := range queries {
		if err := ctx.Err(); err != nil {
			return err
		}
		t0 := time.Now()
		ranked, scores, err := rank(ctx, q.Text)
		if err != nil {
			return fmt.Errorf("eval: query %s: %w", q.ID, err)
		}
		lat = append(lat, time.Since(t0))
		if run != nil {
			prev := math.Inf(1)
			for i, id := range ranked {
				// trec_eval orders by score; keep scores strictly
				// decreasing so it sees our order.
				s := scores[i]
				if s >= prev {
					s = prev - 1e-6
				}
				prev = s
				fmt.Fprintf(run, "%s Q0 %s %d %.6f askwpd\n", q.ID, id, i+1, s)
			}
		}
		if qrels != nil {
			rel := qrels[q.ID]
			qs := QueryScore{ID: q.ID, Text: q.Text, Type: q.Type,
				NDCG10: ndcgAt(ranked, rel, 10), Recall100: recallAt(ranked, rel, 100), MRR10: mrrAt(ranked, rel, 10)}
			m.PerQuery = append(m.PerQuery, qs)
			m.NDCG10 += qs.NDCG10
			m.Recall100 += qs.Recall100
			m.MRR10 += qs.MRR10
		}
	}
	m.Queries = len(queries)
	if m.Queries > 0 {
		n := float64(m.Queries)
		m.NDCG10, m.Recall100, m.MRR10 = m.NDCG10/n, m.Recall100/n, m.MRR10/n
	}
	m.P50, m.P95 = percentile(lat, 0.50), percentile(lat, 0.95)
	if run != nil {
		if err := run.Flush(); err != nil {
			return fmt.Errorf("eval: write run: %w", err)
		}
	}
	return nil
}

func (m *Metrics) print(out io.Writer, judged bool) {
	if m.Docs > 0 {
		fmt.Fprintf(out, "corpus: %d documents, %d chunks, indexed in %s\n", m.Docs, m.Chunks, m.IndexTime.Round(time.Millisecond))
	}
	fmt.Fprintf(out, "queries: %d\n", m.Queries)
	if judged {
		fmt.Fprintf(out, "nDCG@10: %.4f\nRecall@100: %.4f\nMRR@10: %.4f\n", m.NDCG10, m.Recall100, m.MRR10)
	}
	fmt.Fprintf(out, "latency: p50 %s, p95 %s\n", fmtMS(m.P50), fmtMS(m.P95))
}

func fmtMS(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + " ms"
}

type beirDoc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
	// URLPath is where the page lives on its site, when the corpus says.
	URLPath string `json:"url_path"`
}

// IndexCorpus loads a BEIR corpus.jsonl into the store, in batches, as
// crawled pages are stored.
func IndexCorpus(ctx context.Context, db *store.DB, path string, chunkTokens int) (docs, chunks int, err error) {
	docs, chunks, _, err = indexCorpus(ctx, db, path, chunkTokens)
	return docs, chunks, err
}

// indexCorpus is IndexCorpus, also returning the corpus id of each
// stored page's URL.
func indexCorpus(ctx context.Context, db *store.DB, path string, chunkTokens int) (docs, chunks int, ids map[string]string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	// The whole corpus is read first: a link is resolved to the page it
	// points at.
	var all []beirDoc
	line := 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var bd beirDoc
		if err := json.Unmarshal(sc.Bytes(), &bd); err != nil {
			return 0, 0, nil, fmt.Errorf("eval: %s line %d: %w", path, line, err)
		}
		all = append(all, bd)
	}
	if err := sc.Err(); err != nil {
		return 0, 0, nil, fmt.Errorf("eval: %s: %w", path, err)
	}
	links := newCorpusLinks(all)
	ids = map[string]string{}
	var batch []*store.Document
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := db.PutDocuments(ctx, batch); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		batch = batch[:0]
		return nil
	}
	for _, bd := range all {
		bd.Text = links.rewrite(bd, bd.Text)
		d := beirDocument(bd, chunkTokens)
		ids[d.URL] = bd.ID
		docs++
		chunks += len(d.Chunks)
		batch = append(batch, d)
		if len(batch) == 500 {
			if err := flush(); err != nil {
				return 0, 0, nil, err
			}
		}
	}
	return docs, chunks, ids, flush()
}

// corpusSite is the origin of a corpus's pages that have a url_path.
const corpusSite = "https://corpus.invalid"

// beirDocument turns a corpus entry into a store.Document the way a
// crawled page becomes one: Markdown body, chunks with rune offsets.
func beirDocument(bd beirDoc, chunkTokens int) *store.Document {
	sum := sha256.Sum256([]byte(bd.Title + "\x00" + bd.Text))
	// A page's URL is part of what search reads; a corpus that says where
	// its pages live (url_path) gets URLs on a site of its own.
	u := "beir:" + bd.ID
	if strings.HasPrefix(bd.URLPath, "/") {
		u = corpusSite + bd.URLPath
	}
	d := &store.Document{
		URL:         u,
		PostType:    "post",
		Title:       bd.Title,
		Lang:        "en",
		Body:        bd.Text,
		Text:        bd.Text,
		Source:      "eval",
		WordCount:   len(strings.Fields(bd.Text)),
		ContentHash: hex.EncodeToString(sum[:]),
	}
	d.Chunks = crawl.StoreChunks(extract.ChunkMarkdown(bd.Text, extract.ChunkOptions{TargetTokens: chunkTokens}))
	return d
}

// Query is one BEIR query; Type is its optional "type" field (howto,
// keyword, concept …), for the per-type report.
type Query struct{ ID, Text, Type string }

// ReadQueries reads a BEIR queries.jsonl.
func ReadQueries(path string) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var qs []Query
	for sc.Scan() {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var q struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("eval: %s: %w", path, err)
		}
		qs = append(qs, Query{q.ID, q.Text, q.Type})
	}
	return qs, sc.Err()
}

// readQrels reads a BEIR qrels TSV (query-id, corpus-id, score, with a
// header) or a TREC qrels file (qid 0 docid rel).
func readQrels(path string) (map[string]map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	out := map[string]map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		var q, d, r string
		switch len(fs) {
		case 3:
			q, d, r = fs[0], fs[1], fs[2]
		case 4:
			q, d, r = fs[0], fs[2], fs[3]
		default:
			continue
		}
		rel, err := strconv.Atoi(r)
		if err != nil {
			continue // the header
		}
		if out[q] == nil {
			out[q] = map[string]int{}
		}
		out[q][d] = rel
	}
	return out, sc.Err()
}

// ndcgAt is trec_eval's ndcg_cut: gain = relevance, discount log2(rank+1),
// the ideal ranking taken from the qrels.
func ndcgAt(ranked []string, rel map[string]int, k int) float64 {
	var dcg float64
	for i, id := range ranked {
		if i >= k {
			break
		}
		if g := rel[id]; g > 0 {
			dcg += float64(g) / math.Log2(float64(i+2))
		}
	}
	var gains []int
	for _, g := range rel {
		if g > 0 {
			gains = append(gains, g)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(gains)))
	var idcg float64
	for i, g := range gains {
		if i >= k {
			break
		}
		idcg += float64(g) / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

func recallAt(ranked []string, rel map[string]int, k int) float64 {
	total := 0
	for _, g := range rel {
		if g > 0 {
			total++
		}
	}
	if total == 0 {
		return 0
	}
	found := 0
	for i, id := range ranked {
		if i >= k {
			break
		}
		if rel[id] > 0 {
			found++
		}
	}
	return float64(found) / float64(total)
}

func mrrAt(ranked []string, rel map[string]int, k int) float64 {
	for i, id := range ranked {
		if i >= k {
			break
		}
		if rel[id] > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// hybrid is hybrid retrieval for `askwpd eval`: it embeds the whole
// corpus before the queries run, and counts the queries that fell back to
// keywords, so a site owner measures what the daemon would serve.
type hybrid struct {
	e         *embed.Client
	cfg       config.EmbeddingsConfig
	fallbacks int
	lastErr   error
}

// newHybrid embeds every chunk of db when cfg is on; nil when off.
func newHybrid(ctx context.Context, db *store.DB, cfg config.EmbeddingsConfig, out io.Writer) (*hybrid, error) {
	if cfg.BaseURL == "" {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	e := embed.NewClient(cfg, nil)
	if _, err := db.ResetVectors(ctx, e.ModelKey()); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	start := time.Now()
	n, err := embed.Pending(ctx, db, e, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("eval: embedding the corpus: %w", err)
	}
	fmt.Fprintf(out, "hybrid: %s, fusion %s, alpha %.2f; %d chunks embedded in %s\n",
		e.ModelKey(), cfg.Fusion, cfg.Alpha, n, time.Since(start).Round(time.Millisecond))
	return &hybrid{e: e, cfg: cfg}, nil
}

// query is a query's vector part; nil when off or when the endpoint failed.
func (h *hybrid) query(ctx context.Context, text string) *search.HybridQuery {
	if h == nil || h.cfg.Alpha <= 0 {
		return nil
	}
	v, err := h.e.Query(ctx, text)
	if err != nil {
		h.fallbacks++
		h.lastErr = err
		return nil
	}
	return &search.HybridQuery{Vector: v, Alpha: h.cfg.Alpha, Fusion: h.cfg.Fusion}
}

func (h *hybrid) report(out io.Writer) {
	if h != nil && h.fallbacks > 0 {
		fmt.Fprintf(out, "hybrid: %d queries fell back to keywords (last error: %v)\n", h.fallbacks, h.lastErr)
	}
}
