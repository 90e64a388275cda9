// Package embed is askwpd's optional half of hybrid retrieval: a client of
// an OpenAI-compatible /v1/embeddings endpoint, and a worker that embeds
// the chunks still without a vector. When the endpoint fails, search goes
// on with keywords alone.
package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/sourcegraph/conc/pool"

	"github.com/askwp/askwpd/config"
)

// Client is a client of an OpenAI-compatible embeddings endpoint
// (POST {base_url}/embeddings {model, input: [...]}), with batching,
// bounded concurrency and a small cache of query vectors.
type Client struct {
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

// NewClient returns a client for cfg; hc nil means a default client
// (each request is bounded by cfg's timeouts, not the client's).
func NewClient(cfg config.EmbeddingsConfig, hc *http.Client) *Client {
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
	return &Client{cfg: cfg, url: u, hc: hc, cache: map[string][]float32{}}
}

// ModelKey names the vectors this embedder makes: the model, and the
// dimension when one is asked for, since the same model at another
// dimension makes vectors that cannot be compared.
func (e *Client) ModelKey() string {
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
func (e *Client) Embed(ctx context.Context, inputs []string) ([][]float32, error) {
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
func (e *Client) Query(ctx context.Context, text string) ([]float32, error) {
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
func (e *Client) request(ctx context.Context, inputs []string) ([][]float32, error) {
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
