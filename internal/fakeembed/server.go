package fakeembed

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askwp/askwpd/config"
)

// Server speaks the OpenAI embeddings wire format. It answers with
// fakeembed.Vector, or, when ASKWPD_TEST_EMBED_URL is set, forwards to that
// endpoint; either way it records what it was asked and can be told to
// fail (500), hang up, or be slow.
type Server struct {
	*httptest.Server
	Model, Key string

	mu       sync.Mutex
	mode     string // "", "500", "hangup", "slow"
	Requests []Request
}

func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{Model: "concepts-64", Key: "sk-test-" + strconv.FormatUint(rand.Uint64(), 36)}
	var proxy *httputil.ReverseProxy
	if real := os.Getenv("ASKWPD_TEST_EMBED_URL"); real != "" {
		s.Model, s.Key = os.Getenv("ASKWPD_TEST_EMBED_MODEL"), os.Getenv("ASKWPD_TEST_EMBED_KEY")
		if s.Model == "" {
			t.Fatal("ASKWPD_TEST_EMBED_URL is set without ASKWPD_TEST_EMBED_MODEL")
		}
		target := strings.TrimRight(real, "/")
		if !strings.HasSuffix(target, "/embeddings") {
			target += "/embeddings"
		}
		u, err := url.Parse(target)
		if err != nil {
			t.Fatal(err)
		}
		proxy = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL = u
			r.Out.Host = u.Host
		}}
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req Request
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" || json.Unmarshal(body, &req) != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		s.mu.Lock()
		s.Requests = append(s.Requests, req)
		mode := s.mode
		s.mu.Unlock()
		switch mode {
		case "500":
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
			return
		case "hangup":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		case "slow":
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
			return
		}
		if proxy != nil {
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			r.ContentLength = int64(len(body))
			proxy.ServeHTTP(w, r)
			return
		}
		type datum struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Object string         `json:"object"`
			Data   []datum        `json:"data"`
			Model  string         `json:"model"`
			Usage  map[string]int `json:"usage"`
		}{Object: "list", Model: req.Model, Usage: map[string]int{"prompt_tokens": 0, "total_tokens": 0}}
		// Answer in reverse order: clients must place vectors by index.
		for i := len(req.Input) - 1; i >= 0; i-- {
			out.Data = append(out.Data, datum{Object: "embedding", Index: i, Embedding: Vector(req.Input[i])})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(s.Close)
	return s
}

// SetMode makes the server fail: "500", "hangup", "slow", or "" to answer.
func (s *Server) SetMode(m string) {
	s.mu.Lock()
	s.mode = m
	s.mu.Unlock()
}

// Take returns the inputs asked for with model, and clears the record.
func (s *Server) Take(model string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.Requests {
		if r.Model == model {
			out = append(out, r.Input...)
		}
	}
	s.Requests = nil
	return out
}

// Config is an embeddings section pointing at the server with model.
func (s *Server) Config(model string) config.EmbeddingsConfig {
	c := config.Default().Embeddings
	c.BaseURL, c.Model, c.APIKey = s.URL+"/v1", model, s.Key
	c.BatchSize = 3 // several requests for a few pages: batching is exercised
	c.QueryTimeout = config.Duration{Duration: 500 * time.Millisecond}
	if os.Getenv("ASKWPD_TEST_EMBED_URL") != "" {
		c.QueryTimeout = config.Duration{Duration: 10 * time.Second}
	}
	return c
}

// Request is one request the server received.
type Request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     int      `json:"dimensions,omitempty"`
	EncodingFormat string   `json:"encoding_format"`
}

// RequestCount is how many requests the server has received.
func (s *Server) RequestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.Requests)
}
