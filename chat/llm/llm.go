// Package llm adapts LLM providers (OpenAI Chat Completions, Anthropic
// Messages, Google's Gemini API, and OpenAI-compatible servers such as
// OpenRouter and Ollama) to one small streaming interface for the chat
// loop. It uses OpenAI's and Anthropic's official Go SDKs, speaks
// Gemini's REST protocol itself, and imports nothing of this module, so
// the chat depends on it and never the other way round.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Message is one turn of a conversation in provider-neutral form.
type Message struct {
	// Role is "user", "assistant" or "tool".
	Role    string
	Content string
	// ToolCalls are the calls an assistant turn made.
	ToolCalls []ToolCall
	// ToolCallID and IsError describe a "tool" turn: the result of one call.
	ToolCallID string
	IsError    bool
}

// ToolCall is one function call the model asked for. Args is exactly what
// the model produced, which may be invalid JSON or not an object: the
// caller validates it.
type ToolCall struct {
	ID   string
	Name string
	Args string
	// Signature is an opaque token the provider wants back with the call
	// in the history (Gemini's thoughtSignature); empty for the others.
	Signature string
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object.
	Parameters json.RawMessage
}

// Request is one model call.
type Request struct {
	System      string
	Messages    []Message
	Tools       []Tool
	Model       string
	MaxTokens   int
	Temperature *float64
	// NoTools keeps the tool definitions in the request (so earlier tool
	// turns stay valid) but forbids new calls.
	NoTools bool
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Response is the model's complete turn.
type Response struct {
	Text       string
	ToolCalls  []ToolCall
	Usage      Usage
	StopReason string
	// FirstToken is when the first text delta or tool call arrived.
	FirstToken time.Time
}

// Provider streams one model turn. onDelta receives text as it arrives;
// it is never called after Stream returns.
type Provider interface {
	Stream(ctx context.Context, req Request, onDelta func(string)) (*Response, error)
	// Name is the provider kind and model, for logs.
	Name() string
}

// Error is a failed provider call.
type Error struct {
	Provider string
	// Status is the HTTP status, or 0 for a transport failure.
	Status int
	// RetryAfter is the server's requested wait, when it gave one.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("llm: %s: HTTP %d: %v", e.Provider, e.Status, e.Err)
	}
	return fmt.Sprintf("llm: %s: %v", e.Provider, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether another attempt may succeed: rate limits,
// server errors and transport failures, but not a bad key or request.
func (e *Error) Retryable() bool {
	if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
		return false
	}
	return e.Status == 0 || e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout ||
		e.Status == 529 || e.Status >= 500
}

func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && ms >= 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// Retry wraps a provider so that failures before any output are retried
// with exponential backoff and jitter. Once text has been streamed to the
// caller a retry would repeat it, so later failures are returned as is.
type Retry struct {
	Provider
	Attempts int           // total attempts; default 3
	Base     time.Duration // first backoff; default 400 ms
	Max      time.Duration // longest single wait; default 8 s
}

// Stream implements Provider.
func (r Retry) Stream(ctx context.Context, req Request, onDelta func(string)) (*Response, error) {
	attempts, base, maxWait := r.Attempts, r.Base, r.Max
	if attempts <= 0 {
		attempts = 3
	}
	if base <= 0 {
		base = 400 * time.Millisecond
	}
	if maxWait <= 0 {
		maxWait = 8 * time.Second
	}
	var err error
	for i := 0; i < attempts; i++ {
		streamed := false
		var resp *Response
		resp, err = r.Provider.Stream(ctx, req, func(s string) {
			streamed = true
			onDelta(s)
		})
		if err == nil {
			return resp, nil
		}
		var pe *Error
		if streamed || !errors.As(err, &pe) || !pe.Retryable() || i == attempts-1 {
			return resp, err
		}
		wait := base << i
		wait = wait/2 + rand.N(wait/2+1)
		if pe.RetryAfter > 0 {
			wait = pe.RetryAfter
		}
		if wait > maxWait {
			wait = maxWait
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
	return nil, err
}

// Config selects and configures a provider.
type Config struct {
	// Kind is "openai", "anthropic", "google" or "openai-compatible".
	Kind    string
	BaseURL string
	Model   string
	APIKey  string
	// HTTPClient, when set, carries every request (tests, proxies).
	HTTPClient *http.Client
}

// Default models when none is configured.
const (
	DefaultOpenAIModel    = "gpt-4o-mini"
	DefaultAnthropicModel = "claude-3-5-haiku-latest"
	DefaultGoogleModel    = "gemini-2.5-flash"
)

// DefaultModel is the model a kind uses when none is configured; "" for
// a kind that has none (an OpenAI-compatible server's models are its own).
func DefaultModel(kind string) string {
	switch kind {
	case "openai":
		return DefaultOpenAIModel
	case "anthropic":
		return DefaultAnthropicModel
	case "google":
		return DefaultGoogleModel
	}
	return ""
}

// New returns the provider for cfg.
func New(cfg Config) (Provider, error) {
	switch strings.ToLower(cfg.Kind) {
	case "openai", "openai-compatible", "openrouter", "ollama":
		if cfg.Kind == "openai-compatible" && cfg.BaseURL == "" {
			return nil, errors.New("llm: openai-compatible needs base_url")
		}
		if cfg.Model == "" {
			if cfg.Kind != "openai" {
				return nil, fmt.Errorf("llm: %s needs a model", cfg.Kind)
			}
			cfg.Model = DefaultOpenAIModel
		}
		return newOpenAI(cfg), nil
	case "anthropic":
		if cfg.Model == "" {
			cfg.Model = DefaultAnthropicModel
		}
		return newAnthropic(cfg), nil
	case "google":
		if cfg.Model == "" {
			cfg.Model = DefaultGoogleModel
		}
		return newGoogle(cfg), nil
	case "":
		return nil, errors.New("llm: no provider configured")
	}
	return nil, fmt.Errorf("llm: unknown provider kind %q (want openai, anthropic, google or openai-compatible)", cfg.Kind)
}
