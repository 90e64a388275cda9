package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

// Embedder is a client of an OpenAI-compatible embeddings endpoint
// (POST {base_url}/embeddings {model, input: [...]}), with batching,
// bounded concurrency and a small cache of query vectors.
type Embedder struct {
	cfg config.EmbeddingsConfig
	url string
	hc  *http.Client

	mu    sync.Mutex
	cache map[string][]float32
	order []string // cache keys, oldest first
}

// queryCacheSize is how many query vectors are kept: a chat turn and its
// follow-ups repeat queries, and an embedding round trip costs more than
// the search itself.
const queryCacheSize = 512

// NewEmbedder returns a client for cfg; hc nil means a default client
// (each request is bounded by cfg's timeouts, not the client's).
func NewEmbedder(cfg config.EmbeddingsConfig, hc *http.Client) *Embedder {
	if hc == nil {
		hc = &http.Client{}
	}
	u := strings.TrimRight(cfg.BaseURL, "/")
	switch {
	case strings.HasSuffix(u, "/embeddings"):
	case strings.Count(u, "/") <= 2: // scheme://host[:port]: OpenAI's path
		u += "/v1/embeddings"
	default:
		u += "/embeddings"
	}
	return &Embedder{cfg: cfg, url: u, hc: hc, cache: map[string][]float32{}}
}

// ModelKey names the vectors this embedder makes: the model, and the
// dimension when one is asked for, since the same model at another
// dimension makes vectors that cannot be compared.
func (e *Embedder) ModelKey() string {
	if e.cfg.Dimensions > 0 {
		return e.cfg.Model + "@" + strconv.Itoa(e.cfg.Dimensions)
	}
	return e.cfg.Model
}

type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     int      `json:"dimensions,omitempty"`
	EncodingFormat string   `json:"encoding_format"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
}

// Embed returns one vector per input, in order. Inputs go in batches of
// batch_size, at most concurrency requests at once, each under timeout.
func (e *Embedder) Embed(ctx context.Context, inputs []string) ([][]float32, error) {
	out := make([][]float32, len(inputs))
	p := pool.New().WithErrors().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(e.cfg.Concurrency)
	for start := 0; start < len(inputs); start += e.cfg.BatchSize {
		end := min(start+e.cfg.BatchSize, len(inputs))
		p.Go(func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout.Duration)
			defer cancel()
			vs, err := e.request(ctx, inputs[start:end])
			if err != nil {
				return err
			}
			copy(out[start:end], vs)
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// Query returns the vector of a search query, from the cache when it was
// asked for recently, within query_timeout.
func (e *Embedder) Query(ctx context.Context, text string) ([]float32, error) {
	e.mu.Lock()
	v, ok := e.cache[text]
	e.mu.Unlock()
	if ok {
		return v, nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.QueryTimeout.Duration)
	defer cancel()
	vs, err := e.request(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.cache[text]; !ok {
		if len(e.order) >= queryCacheSize {
			delete(e.cache, e.order[0])
			e.order = e.order[1:]
		}
		e.cache[text] = vs[0]
		e.order = append(e.order, text)
	}
	return vs[0], nil
}

// request makes one call to the endpoint. Its errors name the endpoint
// and the status, never the key.
func (e *Embedder) request(ctx context.Context, inputs []string) ([][]float32, error) {
	body, err := json.Marshal(embedRequest{Model: e.cfg.Model, Input: inputs, Dimensions: e.cfg.Dimensions, EncodingFormat: "float"})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.cfg.APIKey)
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	defer resp.Body.Close()
	// 64 MiB holds a batch of 2048 vectors of 3072 floats as JSON text.
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("embeddings: %s: %w", e.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(raw))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return nil, fmt.Errorf("embeddings: %s answered %d: %s", e.url, resp.StatusCode, msg)
	}
	var er embedResponse
	if err := json.Unmarshal(raw, &er); err != nil {
		return nil, fmt.Errorf("embeddings: %s: bad response: %w", e.url, err)
	}
	if len(er.Data) != len(inputs) {
		return nil, fmt.Errorf("embeddings: %s returned %d vectors for %d inputs", e.url, len(er.Data), len(inputs))
	}
	out := make([][]float32, len(inputs))
	for _, d := range er.Data {
		if d.Index < 0 || d.Index >= len(inputs) || out[d.Index] != nil {
			return nil, fmt.Errorf("embeddings: %s returned a bad or repeated index %d", e.url, d.Index)
		}
		if len(d.Embedding) == 0 || (e.cfg.Dimensions > 0 && len(d.Embedding) != e.cfg.Dimensions) {
			return nil, fmt.Errorf("embeddings: %s returned %d dimensions, want %d", e.url, len(d.Embedding), e.cfg.Dimensions)
		}
		if len(d.Embedding) != len(er.Data[0].Embedding) {
			return nil, fmt.Errorf("embeddings: %s returned vectors of different lengths", e.url)
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

// embedRuntime is the daemon's share of hybrid retrieval: the client and
// the background worker that embeds chunks still without a vector.
type embedRuntime struct {
	e *Embedder // nil when embeddings are off

	mu      sync.Mutex
	started bool
	closed  bool
	kick    chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}

	queried    atomic.Bool
	lastWarn   atomic.Int64 // unix nanoseconds of the last fallback warning
	suppressed atomic.Int64 // fallbacks not logged since
}

// embedBatch is how many chunks one sweep step reads from the store; the
// embedder splits it into requests of batch_size.
const embedBatch = 256

// openEmbeddings sets up hybrid retrieval when configured. When the
// configured model is not the one the stored vectors came from, they are
// dropped here, and the worker re-embeds every chunk in the background.
func (d *Daemon) openEmbeddings(ctx context.Context) error {
	cfg := d.Config.Embeddings
	if cfg.BaseURL == "" {
		return nil
	}
	e := NewEmbedder(cfg, nil)
	have, err := d.Store.VectorModel(ctx)
	if err != nil {
		return err
	}
	if have != e.ModelKey() {
		n, err := d.Store.ResetVectors(ctx, e.ModelKey())
		if err != nil {
			return err
		}
		if have != "" {
			d.Log.Info("Embedding model changed; vectors dropped, re-embedding in the background", "from", have, "to", e.ModelKey(), "dropped", n)
		}
	}
	d.embed.e = e
	d.embed.kick = make(chan struct{}, 1)
	d.Log.Info("Hybrid retrieval on", "embeddings", cfg)
	return nil
}

// kickEmbed asks the worker to embed what is pending. It never blocks:
// the crawl goes on whatever the endpoint does.
func (d *Daemon) kickEmbed() {
	r := &d.embed
	if r.e == nil {
		return
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	if !r.started {
		r.started = true
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel, r.done = cancel, make(chan struct{})
		go d.embedWorker(ctx)
	}
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// stopEmbedder stops the worker and waits for it, before the store closes.
func (d *Daemon) stopEmbedder() {
	r := &d.embed
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.started && r.cancel != nil {
		r.cancel()
		<-r.done
		r.cancel = nil
	}
}

func (d *Daemon) embedWorker(ctx context.Context) {
	defer close(d.embed.done)
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.embed.kick:
		}
		n, err := embedPending(ctx, d.Store, d.embed.e, d.Log)
		if ctx.Err() != nil {
			return
		}
		if n > 0 {
			d.Log.Info("Embedded chunks", "chunks", n)
		}
		if err == nil {
			wait = 0
			continue
		}
		// An endpoint that is down is not asked again at every indexed
		// page: back off, up to a quarter hour, then sweep again.
		wait = min(max(2*wait, time.Minute), 15*time.Minute)
		d.Log.Warn("Embedding chunks failed; search uses keywords for pages without vectors", "error", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		select {
		case d.embed.kick <- struct{}{}:
		default:
		}
	}
}

// EmbedPending embeds every chunk without a vector now, and returns how
// many it stored. `askwpd index` and tests call it; the daemon's worker
// does the same in the background.
func (d *Daemon) EmbedPending(ctx context.Context) (int, error) {
	if d.embed.e == nil {
		return 0, nil
	}
	return embedPending(ctx, d.Store, d.embed.e, d.Log)
}

// embedPending sweeps the chunks without a vector once, in id order. A
// batch the endpoint refuses is skipped for this sweep; three refusals in
// a row end it (the endpoint is down, not one input too long).
func embedPending(ctx context.Context, st *store.DB, e *Embedder, log *slog.Logger) (int, error) {
	var (
		after    int64
		stored   int
		failures int
		lastErr  error
	)
	for {
		batch, err := st.PendingVectors(ctx, after, embedBatch)
		if err != nil {
			return stored, err
		}
		if len(batch) == 0 {
			return stored, lastErr
		}
		after = batch[len(batch)-1].ChunkID
		inputs := make([]string, len(batch))
		for i, b := range batch {
			inputs[i] = b.Input
		}
		vs, err := e.Embed(ctx, inputs)
		if err != nil {
			if ctx.Err() != nil {
				return stored, ctx.Err()
			}
			lastErr = err
			failures++
			log.Debug("Embedding batch failed", "first_chunk", batch[0].ChunkID, "chunks", len(batch), "error", err)
			if failures >= 3 {
				return stored, err
			}
			continue
		}
		failures = 0
		cvs := make([]store.ChunkVector, len(batch))
		for i, b := range batch {
			cvs[i] = store.ChunkVector{ChunkID: b.ChunkID, InputHash: b.Hash, Vector: vs[i]}
		}
		n, err := st.PutVectors(ctx, e.ModelKey(), cvs)
		stored += n
		if err != nil {
			return stored, err
		}
	}
}

// hybridQuery is the vector part of a search, or nil for keyword only:
// embeddings off, alpha 0, or the endpoint failing or slow, which is
// counted and logged (at most twice a minute) but never the caller's
// error.
func (d *Daemon) hybridQuery(ctx context.Context, text string) *search.HybridQuery {
	r := &d.embed
	cfg := d.Config.Embeddings
	if r.e == nil || cfg.Alpha <= 0 || strings.TrimSpace(text) == "" {
		return nil
	}
	if !r.queried.Swap(true) {
		// The first search starts the worker, so a daemon that starts
		// with a backlog (a new model) does not wait for the next pass.
		d.kickEmbed()
	}
	v, err := r.e.Query(ctx, text)
	if err != nil {
		reason := "error"
		if errors.Is(err, context.DeadlineExceeded) {
			reason = "timeout"
		}
		d.obs().embedFallbacks.WithLabelValues(reason).Inc()
		now := time.Now().UnixNano()
		last := r.lastWarn.Load()
		if now-last >= int64(30*time.Second) && r.lastWarn.CompareAndSwap(last, now) {
			d.Log.Warn("Query embedding failed; searching with keywords alone", "reason", reason, "error", err,
				"suppressed", r.suppressed.Swap(0))
		} else {
			r.suppressed.Add(1)
		}
		return nil
	}
	return &search.HybridQuery{Vector: v, Alpha: cfg.Alpha, Fusion: cfg.Fusion}
}

// search is the store's search, hybrid when embeddings are configured.
func (d *Daemon) search(ctx context.Context, q search.Query) (*search.Result, error) {
	q.Hybrid = d.hybridQuery(ctx, q.Text)
	return d.Search.Search(ctx, q)
}

// evalHybrid is hybrid retrieval for `askwpd eval`: it embeds the whole
// corpus before the queries run, and counts the queries that fell back to
// keywords, so a site owner measures what the daemon would serve.
type evalHybrid struct {
	e         *Embedder
	cfg       config.EmbeddingsConfig
	fallbacks int
	lastErr   error
}

// newEvalHybrid embeds every chunk of db when cfg is on; nil when off.
func newEvalHybrid(ctx context.Context, db *store.DB, cfg config.EmbeddingsConfig, out io.Writer) (*evalHybrid, error) {
	if cfg.BaseURL == "" {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	e := NewEmbedder(cfg, nil)
	if _, err := db.ResetVectors(ctx, e.ModelKey()); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	start := time.Now()
	n, err := embedPending(ctx, db, e, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("eval: embedding the corpus: %w", err)
	}
	fmt.Fprintf(out, "hybrid: %s, fusion %s, alpha %.2f; %d chunks embedded in %s\n",
		e.ModelKey(), cfg.Fusion, cfg.Alpha, n, time.Since(start).Round(time.Millisecond))
	return &evalHybrid{e: e, cfg: cfg}, nil
}

// query is a query's vector part; nil when off or when the endpoint failed.
func (h *evalHybrid) query(ctx context.Context, text string) *search.HybridQuery {
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

func (h *evalHybrid) report(out io.Writer) {
	if h != nil && h.fallbacks > 0 {
		fmt.Fprintf(out, "hybrid: %d queries fell back to keywords (last error: %v)\n", h.fallbacks, h.lastErr)
	}
}
