package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// gemini is an httptest server speaking the Gemini API's
// streamGenerateContent?alt=sse. Each request is handed to the next
// handler in turn, after the checks every request must pass.
type gemini struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	handlers []func(w http.ResponseWriter, body map[string]any)
	calls    int
}

const gemKey = "AIzaSy-test-key-0123456789"

func newGemini(t *testing.T, handlers ...func(w http.ResponseWriter, body map[string]any)) *gemini {
	g := &gemini{t: t, handlers: handlers}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1beta/models/gemini-test:streamGenerateContent" || r.URL.Query().Get("alt") != "sse" {
			t.Errorf("%s %s?%s, want POST /v1beta/models/gemini-test:streamGenerateContent?alt=sse", r.Method, r.URL.Path, r.URL.RawQuery)
		}
		if got := r.Header.Get("x-goog-api-key"); got != gemKey {
			t.Errorf("x-goog-api-key %q, want %q", got, gemKey)
		}
		if strings.Contains(r.URL.RawQuery, "key=") {
			t.Errorf("the key travels in the URL: %s", r.URL.RawQuery)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("body is not JSON: %v", err)
		}
		g.mu.Lock()
		i := g.calls
		g.calls++
		g.mu.Unlock()
		if i >= len(g.handlers) {
			t.Errorf("request %d beyond the script", i+1)
			w.WriteHeader(500)
			return
		}
		g.handlers[i](w, body)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *gemini) provider() Provider {
	p, err := New(Config{Kind: "google", BaseURL: g.srv.URL + "/v1beta/", Model: "gemini-test", APIKey: gemKey})
	if err != nil {
		g.t.Fatal(err)
	}
	return p
}

// sse writes events as the API does: "data: JSON" and a blank line, CRLF.
func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(e)); err != nil {
			panic(err)
		}
		fmt.Fprintf(w, "data: %s\r\n\r\n", b.Bytes())
		w.(http.Flusher).Flush()
	}
}

func jsonEq(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want for %s: %v", what, err)
	}
	gb, _ := json.Marshal(got)
	var g any
	_ = json.Unmarshal(gb, &g)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, gb, want)
	}
}

var searchTool = Tool{Name: "search_site", Description: "Search the site.", Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "Search words."},
    "filters": {"type": "object", "properties": {"after": {"type": ["string", "null"]}}, "additionalProperties": false},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50}
  },
  "required": ["query"],
  "additionalProperties": false,
  "$schema": "https://json-schema.org/draft/2020-12/schema"
}`)}

// TestGoogle_ToolRoundTrip: a turn that streams text and calls a tool,
// then the next request carrying the call (with its thoughtSignature)
// and its results back, in the shapes the API documents.
func TestGoogle_ToolRoundTrip(t *testing.T) {
	temp := 0.2
	g := newGemini(t,
		func(w http.ResponseWriter, body map[string]any) {
			jsonEq(t, "systemInstruction", body["systemInstruction"], `{"parts": [{"text": "Be brief."}]}`)
			jsonEq(t, "tools", body["tools"], `[{"functionDeclarations": [{"name": "search_site", "description": "Search the site.",
				"parameters": {"type": "object", "required": ["query"], "properties": {
					"query": {"type": "string", "description": "Search words."},
					"filters": {"type": "object", "properties": {"after": {"type": "string", "nullable": true}}},
					"limit": {"type": "integer", "minimum": 1, "maximum": 50}}}}]}]`)
			jsonEq(t, "generationConfig", body["generationConfig"], `{"maxOutputTokens": 77, "temperature": 0.2}`)
			jsonEq(t, "contents", body["contents"], `[{"role": "user", "parts": [{"text": "Refunds?"}]}]`)
			if _, ok := body["toolConfig"]; ok {
				t.Errorf("toolConfig set while tools are allowed: %v", body["toolConfig"])
			}
			sse(w,
				`{"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me "}]}, "index": 0}]}`,
				`{"candidates": [{"content": {"role": "model", "parts": [{"text": "check.", "thoughtSignature": "dGV4dA=="}, {"text": "hidden", "thought": true}]}, "index": 0}]}`,
				`{"candidates": [{"content": {"role": "model", "parts": [
					{"functionCall": {"id": "fc-1", "name": "search_site", "args": {"query": "refund policy"}}, "thoughtSignature": "c2lnLTE="},
					{"functionCall": {"name": "get_recent"}}]}, "finishReason": "STOP", "index": 0}],
				 "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 9, "thoughtsTokenCount": 30, "totalTokenCount": 159}}`)
		},
		func(w http.ResponseWriter, body map[string]any) {
			jsonEq(t, "contents", body["contents"], `[
				{"role": "user", "parts": [{"text": "Refunds?"}]},
				{"role": "model", "parts": [{"text": "Let me check."},
					{"functionCall": {"id": "fc-1", "name": "search_site", "args": {"query": "refund policy"}}, "thoughtSignature": "c2lnLTE="},
					{"functionCall": {"id": "call_1_2", "name": "get_recent", "args": {}}}]},
				{"role": "user", "parts": [
					{"functionResponse": {"id": "fc-1", "name": "search_site", "response": {"hits": [{"url": "https://example.com/refunds/"}]}}},
					{"functionResponse": {"id": "call_1_2", "name": "get_recent", "response": {"error": "the tool failed"}}}]}]`)
			jsonEq(t, "toolConfig", body["toolConfig"], `{"functionCallingConfig": {"mode": "NONE"}}`)
			sse(w, `{"candidates": [{"content": {"role": "model", "parts": [{"text": "Within 30 days."}]}, "finishReason": "STOP", "index": 0}]}`)
		})
	p := g.provider()
	req := Request{System: "Be brief.", Tools: []Tool{searchTool}, MaxTokens: 77, Temperature: &temp,
		Messages: []Message{{Role: "user", Content: "Refunds?"}}}
	var deltas []string
	res, err := p.Stream(context.Background(), req, func(s string) { deltas = append(deltas, s) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Let me check." || strings.Join(deltas, "|") != "Let me |check." {
		t.Errorf("text %q deltas %q (thought text must not show)", res.Text, deltas)
	}
	want := []ToolCall{{ID: "fc-1", Name: "search_site", Args: `{"query":"refund policy"}`, Signature: "c2lnLTE="},
		{Name: "get_recent", Args: "{}"}}
	if !reflect.DeepEqual(res.ToolCalls, want) {
		t.Errorf("calls %+v, want %+v", res.ToolCalls, want)
	}
	if res.Usage != (Usage{InputTokens: 120, OutputTokens: 39}) || res.StopReason != "STOP" || res.FirstToken.IsZero() {
		t.Errorf("usage %+v stop %q first %v", res.Usage, res.StopReason, res.FirstToken)
	}

	// The chat loop names calls that came without an ID, and sends back
	// the assistant turn and the results.
	calls := res.ToolCalls
	calls[1].ID = "call_1_2"
	req.Messages = append(req.Messages,
		Message{Role: "assistant", Content: res.Text, ToolCalls: calls},
		Message{Role: "tool", ToolCallID: "fc-1", Content: `{"hits": [{"url": "https://example.com/refunds/"}]}`},
		Message{Role: "tool", ToolCallID: "call_1_2", Content: "the tool failed", IsError: true})
	req.NoTools = true
	res, err = p.Stream(context.Background(), req, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Within 30 days." || len(res.ToolCalls) != 0 {
		t.Errorf("second turn: %+v", res)
	}
}

// TestGoogle_Errors: the API's error statuses become *Error like the
// other providers': a bad key is final, a rate limit or a server error
// is retried (with the wait a RetryInfo asks for), an error event in
// the stream is an error too. No message carries the key.
func TestGoogle_Errors(t *testing.T) {
	status := func(code int, body string) func(http.ResponseWriter, map[string]any) {
		return func(w http.ResponseWriter, _ map[string]any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			io.WriteString(w, body)
		}
	}
	badKey := status(400, `{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT",
		"details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}`)
	for _, tc := range []struct {
		name      string
		h         func(http.ResponseWriter, map[string]any)
		status    int
		retryable bool
		after     time.Duration
		msg       string
	}{
		{"BadKey400", badKey, 400, false, 0, "INVALID_ARGUMENT: API key not valid"},
		{"Unauthenticated401", status(401, `{"error": {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}}`),
			401, false, 0, "UNAUTHENTICATED"},
		{"Denied403", status(403, `{"error": {"code": 403, "message": "Permission denied.", "status": "PERMISSION_DENIED"}}`), 403, false, 0, "PERMISSION_DENIED"},
		{"RateLimit429", status(429, `{"error": {"code": 429, "message": "Resource has been exhausted.", "status": "RESOURCE_EXHAUSTED",
			"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]}}`), 429, true, 7 * time.Second, "RESOURCE_EXHAUSTED"},
		{"Server500", status(500, `{"error": {"code": 500, "message": "Internal error.", "status": "INTERNAL"}}`), 500, true, 0, "INTERNAL"},
		{"Overloaded503", status(503, `{"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}`), 503, true, 0, "UNAVAILABLE"},
		{"NotJSON502", status(502, `<html>Bad Gateway</html>`), 502, true, 0, "Bad Gateway"},
		{"InStream", func(w http.ResponseWriter, _ map[string]any) {
			sse(w, `{"candidates": [{"content": {"role": "model", "parts": [{"text": "Part"}]}, "index": 0}]}`,
				`{"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}`)
		}, 503, true, 0, "UNAVAILABLE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newGemini(t, tc.h).provider()
			_, err := p.Stream(context.Background(), Request{Messages: []Message{{Role: "user", Content: "hi"}}}, func(string) {})
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("err %v, want *llm.Error", err)
			}
			if pe.Status != tc.status || pe.Retryable() != tc.retryable || pe.RetryAfter != tc.after || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err %v: status %d retryable %v after %v; want %d %v %v containing %q",
					err, pe.Status, pe.Retryable(), pe.RetryAfter, tc.status, tc.retryable, tc.after, tc.msg)
			}
			if strings.Contains(err.Error(), gemKey) {
				t.Errorf("the error shows the key: %v", err)
			}
		})
	}
	t.Run("RetriedThenOK", func(t *testing.T) {
		g := newGemini(t, status(429, `{"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}`),
			status(503, `{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}`),
			func(w http.ResponseWriter, _ map[string]any) {
				sse(w, `{"candidates": [{"content": {"role": "model", "parts": [{"text": "Fine now."}]}, "finishReason": "STOP", "index": 0}]}`)
			})
		r := Retry{Provider: g.provider(), Base: time.Millisecond}
		res, err := r.Stream(context.Background(), Request{Messages: []Message{{Role: "user", Content: "hi"}}}, func(string) {})
		if err != nil || res.Text != "Fine now." || g.calls != 3 {
			t.Errorf("res %+v err %v after %d calls", res, err, g.calls)
		}
	})
	t.Run("BadKeyNotRetried", func(t *testing.T) {
		g := newGemini(t, badKey)
		r := Retry{Provider: g.provider(), Base: time.Millisecond}
		if _, err := r.Stream(context.Background(), Request{Messages: []Message{{Role: "user", Content: "hi"}}}, func(string) {}); err == nil || g.calls != 1 {
			t.Errorf("err %v after %d calls, want an error after 1", err, g.calls)
		}
	})
}

// TestGoogle_BlockedPrompt: a prompt the API blocks answers no candidate;
// the turn ends empty with the reason, not with an error.
func TestGoogle_BlockedPrompt(t *testing.T) {
	p := newGemini(t, func(w http.ResponseWriter, _ map[string]any) {
		sse(w, `{"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 5}}`)
	}).provider()
	res, err := p.Stream(context.Background(), Request{Messages: []Message{{Role: "user", Content: "hi"}}}, func(string) {})
	if err != nil || res.Text != "" || res.StopReason != "blocked: SAFETY" {
		t.Errorf("res %+v err %v", res, err)
	}
}
