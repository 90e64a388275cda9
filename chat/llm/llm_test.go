package llm

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// failing fails with the given errors in turn, then answers.
type failing struct {
	errs   []error
	calls  int
	stream bool // stream a delta before failing
}

func (f *failing) Name() string { return "failing" }

func (f *failing) Stream(ctx context.Context, req Request, onDelta func(string)) (*Response, error) {
	f.calls++
	if f.calls <= len(f.errs) {
		if f.stream {
			onDelta("partial ")
		}
		return nil, f.errs[f.calls-1]
	}
	onDelta("ok")
	return &Response{Text: "ok"}, nil
}

func TestRetry(t *testing.T) {
	e429 := &Error{Status: http.StatusTooManyRequests, Err: errors.New("slow down")}
	e500 := &Error{Status: 500, Err: errors.New("oops")}
	e401 := &Error{Status: 401, Err: errors.New("bad key")}
	for _, tc := range []struct {
		name      string
		f         *failing
		wantCalls int
		wantErr   bool
	}{
		{"RetriesRateLimitAndServerErrors", &failing{errs: []error{e429, e500}}, 3, false},
		{"GivesUpAfterAttempts", &failing{errs: []error{e500, e500, e500}}, 3, true},
		{"NoRetryOnBadKey", &failing{errs: []error{e401}}, 1, true},
		{"NoRetryAfterStreaming", &failing{errs: []error{e500}, stream: true}, 1, true},
		{"NoRetryOnOtherErrors", &failing{errs: []error{errors.New("not a provider error")}}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Retry{Provider: tc.f, Attempts: 3, Base: time.Millisecond}
			_, err := r.Stream(context.Background(), Request{}, func(string) {})
			if (err != nil) != tc.wantErr || tc.f.calls != tc.wantCalls {
				t.Errorf("calls %d err %v, want %d calls, error %v", tc.f.calls, err, tc.wantCalls, tc.wantErr)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	h := http.Header{}
	h.Set("Retry-After", "2")
	if got := retryAfter(h); got != 2*time.Second {
		t.Errorf("Retry-After 2 = %v", got)
	}
	h.Set("retry-after-ms", "150")
	if got := retryAfter(h); got != 150*time.Millisecond {
		t.Errorf("retry-after-ms 150 = %v", got)
	}
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
		err  bool
	}{
		{Config{Kind: "openai"}, "openai/" + DefaultOpenAIModel, false},
		{Config{Kind: "anthropic", Model: "claude-x"}, "anthropic/claude-x", false},
		{Config{Kind: "openai-compatible", BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3"}, "openai-compatible/llama3", false},
		{Config{Kind: "openai-compatible", Model: "llama3"}, "", true},
		{Config{Kind: "google"}, "google/" + DefaultGoogleModel, false},
		{Config{Kind: "google", Model: "gemini-2.5-pro"}, "google/gemini-2.5-pro", false},
		{Config{Kind: "gemini"}, "", true},
		{Config{}, "", true},
	} {
		p, err := New(tc.cfg)
		if (err != nil) != tc.err || (err == nil && p.Name() != tc.want) {
			t.Errorf("New(%+v) = %v, %v; want %q", tc.cfg, p, err, tc.want)
		}
	}
}
