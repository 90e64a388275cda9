package embed

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

// Worker embeds the chunks still without a vector in the background, and
// the text of each search. A nil *Worker is embeddings off: its methods do
// nothing and searches run on keywords alone.
type Worker struct {
	e     *Client
	store *store.DB
	log   *slog.Logger
	// Alpha weighs the vector ranking against the keyword one (0 is
	// keyword only) and Fusion names how they are fused (alpha or rrf);
	// Open sets them from the configuration.
	Alpha  float64
	Fusion string
	// OnFallback, when set, is told each time a query embedding fails
	// ("error" or "timeout") and the search goes on with keywords alone.
	OnFallback func(reason string)

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

// Open sets up hybrid retrieval when cfg turns it on, and returns nil when
// it does not. When the configured model is not the one the stored vectors
// came from, they are dropped here, and the worker re-embeds every chunk
// in the background.
func Open(ctx context.Context, cfg config.EmbeddingsConfig, st *store.DB, log *slog.Logger) (*Worker, error) {
	if cfg.BaseURL == "" {
		return nil, nil
	}
	e := NewClient(cfg, nil)
	have, err := st.VectorModel(ctx)
	if err != nil {
		return nil, err
	}
	if have != e.ModelKey() {
		n, err := st.ResetVectors(ctx, e.ModelKey())
		if err != nil {
			return nil, err
		}
		if have != "" {
			log.Info("Embedding model changed; vectors dropped, re-embedding in the background", "from", have, "to", e.ModelKey(), "dropped", n)
		}
	}
	log.Info("Hybrid retrieval on", "embeddings", cfg)
	return &Worker{e: e, store: st, log: log, Alpha: cfg.Alpha, Fusion: cfg.Fusion, kick: make(chan struct{}, 1)}, nil
}

// Kick asks the worker to embed what is pending. It never blocks: the
// crawl goes on whatever the endpoint does.
func (w *Worker) Kick() {
	if w == nil {
		return
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	if !w.started {
		w.started = true
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel, w.done = cancel, make(chan struct{})
		go w.run(ctx)
	}
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Close stops the worker and waits for it, before the store closes.
func (w *Worker) Close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.started && w.cancel != nil {
		w.cancel()
		<-w.done
		w.cancel = nil
	}
}

func (w *Worker) run(ctx context.Context) {
	defer close(w.done)
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		}
		n, err := Pending(ctx, w.store, w.e, w.log)
		if ctx.Err() != nil {
			return
		}
		if n > 0 {
			w.log.Info("Embedded chunks", "chunks", n)
		}
		if err == nil {
			wait = 0
			continue
		}
		// An endpoint that is down is not asked again at every indexed
		// page: back off, up to a quarter hour, then sweep again.
		wait = min(max(2*wait, time.Minute), 15*time.Minute)
		w.log.Warn("Embedding chunks failed; search uses keywords for pages without vectors", "error", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// EmbedPending embeds every chunk without a vector now, and returns how
// many it stored. `askwpd index` and tests call it; the worker does the
// same in the background.
func (w *Worker) EmbedPending(ctx context.Context) (int, error) {
	if w == nil {
		return 0, nil
	}
	return Pending(ctx, w.store, w.e, w.log)
}

// Pending sweeps the chunks without a vector once, in id order. A
// batch the endpoint refuses is skipped for this sweep; three refusals in
// a row end it (the endpoint is down, not one input too long).
func Pending(ctx context.Context, st *store.DB, e *Client, log *slog.Logger) (int, error) {
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

// Query is the vector part of a search for text, or nil for keyword
// only: embeddings off, alpha 0, or the endpoint failing or slow, which is
// reported to OnFallback and logged (at most twice a minute) but never the
// caller's error.
func (w *Worker) Query(ctx context.Context, text string) *search.HybridQuery {
	if w == nil || w.Alpha <= 0 || strings.TrimSpace(text) == "" {
		return nil
	}
	if !w.queried.Swap(true) {
		// The first search starts the worker, so a daemon that starts
		// with a backlog (a new model) does not wait for the next pass.
		w.Kick()
	}
	v, err := w.e.Query(ctx, text)
	if err != nil {
		reason := "error"
		if errors.Is(err, context.DeadlineExceeded) {
			reason = "timeout"
		}
		if w.OnFallback != nil {
			w.OnFallback(reason)
		}
		now := time.Now().UnixNano()
		last := w.lastWarn.Load()
		if now-last >= int64(30*time.Second) && w.lastWarn.CompareAndSwap(last, now) {
			w.log.Warn("Query embedding failed; searching with keywords alone", "reason", reason, "error", err,
				"suppressed", w.suppressed.Swap(0))
		} else {
			w.suppressed.Add(1)
		}
		return nil
	}
	return &search.HybridQuery{Vector: v, Alpha: w.Alpha, Fusion: w.Fusion}
}
