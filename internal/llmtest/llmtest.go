// Package llmtest is a scripted LLM provider for tests: an httptest
// server that speaks the real wire protocol of OpenAI Chat Completions,
// Anthropic Messages or Google's Gemini streamGenerateContent, streaming
// included, replays a script of tool calls and text, and records what it
// receives, the key it was sent included, so tests can assert on it. It
// is the one part of askwpd a test may script.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askwp/askwpd/chat"
)

// SeenCall is a tool call in a request's history.
type SeenCall struct{ ID, Name, Args string }

// SeenMsg is one message of a request, normalized across protocols.
type SeenMsg struct {
	Role      string // user | assistant | tool
	Text      string
	Calls     []SeenCall
	ToolUseID string
	IsError   bool
}

// Request is one request the provider received.
type Request struct {
	Path string
	// Key is the credential the request carried: the bearer token
	// (OpenAI), x-api-key (Anthropic) or x-goog-api-key (Google).
	Key            string
	Model          string
	System         string
	Tools          map[string]string // name → description
	ToolChoiceNone bool
	Messages       []SeenMsg
	MaxTokens      int
}

// LastResults are the tool results answering the last assistant turn.
func (r *Request) LastResults() []SeenMsg {
	var out []SeenMsg
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role == "tool"; i-- {
		out = append([]SeenMsg{r.Messages[i]}, out...)
	}
	return out
}

// LastUser is the text of the last user message.
func (r *Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text
		}
	}
	return ""
}

// ScriptCall is a tool call the script makes; Args is sent as is, so it
// may be malformed on purpose.
type ScriptCall struct{ Name, Args string }

// Turn is the script's answer to one request.
type Turn struct {
	Text   string
	Calls  []ScriptCall
	Status int // an HTTP error instead of a stream
	Delay  time.Duration
	// CutAfter ends the stream early, after this many text pieces.
	CutAfter int
}

// Step answers one request; it may assert on what it received.
type Step func(t *testing.T, r *Request) Turn

// Provider is the fake provider.
type Provider struct {
	t     *testing.T
	kind  string // openai | anthropic | google
	steps []Step
	// Loop, when set, answers requests after the script ran out.
	Loop Step
	Srv  *httptest.Server

	mu       sync.Mutex
	requests []*Request
	wantKey  string
}

// New starts a fake provider of kind (openai, anthropic or google)
// replaying steps.
func New(t *testing.T, kind string, steps ...Step) *Provider {
	s := &Provider{t: t, kind: kind, steps: steps}
	s.Srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Srv.Close)
	return s
}

// Config is the provider configuration pointing at the fake, with the
// key "test-key", which the fake then expects.
func (s *Provider) Config() chat.ProviderConfig {
	pc := chat.ProviderConfig{Kind: s.kind, BaseURL: s.BaseURL(), Model: "scripted-model", APIKey: "test-key"}
	s.WantKey("test-key")
	return pc
}

// BaseURL is the base_url that reaches the fake for its kind.
func (s *Provider) BaseURL() string {
	switch s.kind {
	case "openai":
		return s.Srv.URL + "/v1"
	case "google":
		return s.Srv.URL + "/v1beta"
	}
	return s.Srv.URL
}

// WantKey has the fake fail the test for a request carrying another key;
// "" accepts any that is not empty.
func (s *Provider) WantKey(key string) {
	s.mu.Lock()
	s.wantKey = key
	s.mu.Unlock()
}

// Seen returns the requests received so far.
func (s *Provider) Seen() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

func (s *Provider) serve(w http.ResponseWriter, r *http.Request) {
	t := s.t
	body, _ := io.ReadAll(r.Body)
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Errorf("provider: request is not JSON: %v", err)
		http.Error(w, "bad json", 400)
		return
	}
	req, key := s.parse(t, r, raw)
	s.mu.Lock()
	want := s.wantKey
	s.mu.Unlock()
	if key == "" || want != "" && key != want {
		t.Errorf("provider: %s key %q, want %q", s.kind, key, want)
	}
	req.Key = key
	req.Path = r.URL.Path
	if stream, _ := raw["stream"].(bool); !stream && s.kind != "google" {
		t.Errorf("provider: request does not ask to stream")
	}
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, req)
	var st Step
	switch {
	case n < len(s.steps):
		st = s.steps[n]
	case s.Loop != nil:
		st = s.Loop
	}
	s.mu.Unlock()
	if st == nil {
		t.Errorf("provider: request %d beyond the script", n+1)
		http.Error(w, `{"error": {"message": "script ended"}}`, 500)
		return
	}
	tr := st(t, req)
	if tr.Delay > 0 {
		select {
		case <-time.After(tr.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if tr.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(tr.Status)
		switch s.kind {
		case "anthropic":
			fmt.Fprintf(w, `{"type": "error", "error": {"type": "api_error", "message": "Provider %d"}}`, tr.Status)
		case "google":
			fmt.Fprintf(w, `{"error": {"code": %d, "message": "Provider %d", "status": "UNAVAILABLE"}}`, tr.Status, tr.Status)
		default:
			fmt.Fprintf(w, `{"error": {"message": "Provider %d", "type": "server_error", "code": null}}`, tr.Status)
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	switch s.kind {
	case "anthropic":
		writeAnthropicStream(w, n, tr)
	case "google":
		writeGoogleStream(t, w, n, tr)
	default:
		writeOpenAIStream(w, n, tr)
	}
}

// parse reads a request in the fake's protocol, and the key it carried.
func (s *Provider) parse(t *testing.T, r *http.Request, raw map[string]any) (*Request, string) {
	var req *Request
	var key string
	switch s.kind {
	case "openai":
		if r.URL.Path != "/v1/chat/completions" {
			t.Errorf("provider: path %s, want /v1/chat/completions", r.URL.Path)
		}
		key, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		req = parseOpenAI(t, raw)
	case "anthropic":
		if r.URL.Path != "/v1/messages" {
			t.Errorf("provider: path %s, want /v1/messages", r.URL.Path)
		}
		if r.Header.Get("Anthropic-Version") == "" {
			t.Errorf("provider: no anthropic-version header")
		}
		key = r.Header.Get("X-Api-Key")
		req = parseAnthropic(t, raw)
	case "google":
		model, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
		model, ok2 := strings.CutSuffix(model, ":streamGenerateContent")
		if !ok || !ok2 || r.URL.Query().Get("alt") != "sse" {
			t.Errorf("provider: %s?%s, want /v1beta/models/MODEL:streamGenerateContent?alt=sse", r.URL.Path, r.URL.RawQuery)
		}
		if r.URL.Query().Get("key") != "" {
			t.Errorf("provider: the key is in the URL, which logs and proxies keep")
		}
		key = r.Header.Get("X-Goog-Api-Key")
		req = parseGoogle(t, raw)
		req.Model = model
	}
	return req, key
}

// pieces splits text into small deltas, as a model streams it.
func pieces(s string) []string {
	var out []string
	words := strings.SplitAfter(s, " ")
	for i := 0; i < len(words); i += 3 {
		out = append(out, strings.Join(words[i:min(i+3, len(words))], ""))
	}
	return out
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func writeOpenAIStream(w http.ResponseWriter, n int, tr Turn) {
	id := fmt.Sprintf("chatcmpl-%d", n)
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": "scripted-model",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["choices"] = []any{}
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flush(w)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for i, p := range pieces(tr.Text) {
		if tr.CutAfter > 0 && i == tr.CutAfter {
			return // the connection ends mid-stream
		}
		chunk(map[string]any{"content": p}, nil, nil)
	}
	for i, c := range tr.Calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil, nil)
		// Arguments arrive in pieces, as they do from the real API.
		for j := 0; j < len(c.Args); j += 7 {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i,
				"function": map[string]any{"arguments": c.Args[j:min(j+7, len(c.Args))]}}}}, nil, nil)
		}
	}
	finish := "stop"
	if len(tr.Calls) > 0 {
		finish = "tool_calls"
	}
	chunk(map[string]any{}, finish, nil)
	chunk(nil, nil, map[string]any{"prompt_tokens": 100 + n, "completion_tokens": 10, "total_tokens": 110 + n})
	fmt.Fprint(w, "data: [DONE]\n\n")
	flush(w)
}

func writeAnthropicStream(w http.ResponseWriter, n int, tr Turn) {
	ev := func(typ string, data map[string]any) {
		data["type"] = typ
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		flush(w)
	}
	ev("message_start", map[string]any{"message": map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant",
		"content": []any{}, "model": "scripted-model", "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100 + n, "output_tokens": 1}}})
	idx := 0
	if tr.Text != "" {
		ev("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("ping", map[string]any{})
		for i, p := range pieces(tr.Text) {
			if tr.CutAfter > 0 && i == tr.CutAfter {
				return
			}
			ev("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
		ev("content_block_stop", map[string]any{"index": idx})
		idx++
	}
	for i, c := range tr.Calls {
		ev("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "tool_use",
			"id": fmt.Sprintf("toolu_%d_%d", n, i), "name": c.Name, "input": map[string]any{}}})
		for j := 0; j < len(c.Args); j += 7 {
			ev("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "input_json_delta",
				"partial_json": c.Args[j:min(j+7, len(c.Args))]}})
		}
		ev("content_block_stop", map[string]any{"index": idx})
		idx++
	}
	stop := "end_turn"
	if len(tr.Calls) > 0 {
		stop = "tool_use"
	}
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 10}})
	ev("message_stop", map[string]any{})
}

func str(v any) string { s, _ := v.(string); return s }

// contentText reads a content that is a string or a list of text parts.
func contentText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	if parts, ok := v.([]any); ok {
		for _, p := range parts {
			if m, ok := p.(map[string]any); ok && str(m["type"]) == "text" {
				b.WriteString(str(m["text"]))
			}
		}
	}
	return b.String()
}

func parseOpenAI(t *testing.T, raw map[string]any) *Request {
	req := &Request{Model: str(raw["model"]), Tools: map[string]string{}}
	if n, ok := raw["max_completion_tokens"].(float64); ok {
		req.MaxTokens = int(n)
	}
	for _, tl := range asList(raw["tools"]) {
		f, _ := tl.(map[string]any)["function"].(map[string]any)
		req.Tools[str(f["name"])] = str(f["description"])
		if params, ok := f["parameters"].(map[string]any); !ok || str(params["type"]) != "object" {
			t.Errorf("provider: tool %s has no object schema", str(f["name"]))
		}
	}
	req.ToolChoiceNone = raw["tool_choice"] == "none"
	pending := map[string]bool{}
	for _, m := range asList(raw["messages"]) {
		mm := m.(map[string]any)
		switch role := str(mm["role"]); role {
		case "system", "developer":
			req.System += contentText(mm["content"])
		case "user":
			req.Messages = append(req.Messages, SeenMsg{Role: "user", Text: contentText(mm["content"])})
		case "assistant":
			sm := SeenMsg{Role: "assistant", Text: contentText(mm["content"])}
			for _, c := range asList(mm["tool_calls"]) {
				cm := c.(map[string]any)
				f, _ := cm["function"].(map[string]any)
				sm.Calls = append(sm.Calls, SeenCall{ID: str(cm["id"]), Name: str(f["name"]), Args: str(f["arguments"])})
				pending[str(cm["id"])] = true
			}
			req.Messages = append(req.Messages, sm)
		case "tool":
			id := str(mm["tool_call_id"])
			if !pending[id] {
				t.Errorf("provider: tool result %q answers no tool call", id)
			}
			delete(pending, id)
			text := contentText(mm["content"])
			req.Messages = append(req.Messages, SeenMsg{Role: "tool", Text: text, ToolUseID: id, IsError: strings.HasPrefix(text, `{"error"`)})
		default:
			t.Errorf("provider: unknown role %q", role)
		}
	}
	if len(pending) > 0 {
		t.Errorf("provider: tool calls without results: %v", pending)
	}
	return req
}

func parseAnthropic(t *testing.T, raw map[string]any) *Request {
	req := &Request{Model: str(raw["model"]), Tools: map[string]string{}}
	if n, ok := raw["max_tokens"].(float64); ok {
		req.MaxTokens = int(n)
	} else {
		t.Errorf("provider: max_tokens is required")
	}
	req.System = contentText(raw["system"])
	for _, tl := range asList(raw["tools"]) {
		tm := tl.(map[string]any)
		req.Tools[str(tm["name"])] = str(tm["description"])
		if schema, ok := tm["input_schema"].(map[string]any); !ok || str(schema["type"]) != "object" {
			t.Errorf("provider: tool %s has no object input_schema", str(tm["name"]))
		}
	}
	if tc, ok := raw["tool_choice"].(map[string]any); ok && str(tc["type"]) == "none" {
		req.ToolChoiceNone = true
	}
	var pending map[string]bool
	lastRole := ""
	for _, m := range asList(raw["messages"]) {
		mm := m.(map[string]any)
		role := str(mm["role"])
		if role == lastRole {
			t.Errorf("provider: two %s messages in a row", role)
		}
		lastRole = role
		if role == "user" && len(pending) > 0 {
			// Every tool_use must be answered in the next user message.
			for _, c := range asList(mm["content"]) {
				if cm, _ := c.(map[string]any); str(cm["type"]) == "tool_result" {
					delete(pending, str(cm["tool_use_id"]))
				}
			}
			if len(pending) > 0 {
				t.Errorf("provider: tool_use without tool_result: %v", pending)
			}
		}
		pending = map[string]bool{}
		var sm SeenMsg
		sm.Role = role
		content := mm["content"]
		if s, ok := content.(string); ok {
			sm.Text = s
			req.Messages = append(req.Messages, sm)
			continue
		}
		for _, c := range asList(content) {
			cm := c.(map[string]any)
			switch str(cm["type"]) {
			case "text":
				sm.Text += str(cm["text"])
			case "tool_use":
				args, _ := json.Marshal(cm["input"])
				if _, ok := cm["input"].(map[string]any); !ok {
					t.Errorf("provider: tool_use input is not an object: %s", args)
				}
				sm.Calls = append(sm.Calls, SeenCall{ID: str(cm["id"]), Name: str(cm["name"]), Args: string(args)})
				pending[str(cm["id"])] = true
			case "tool_result":
				isErr, _ := cm["is_error"].(bool)
				req.Messages = append(req.Messages, SeenMsg{Role: "tool", Text: contentText(cm["content"]), ToolUseID: str(cm["tool_use_id"]), IsError: isErr})
			}
		}
		if sm.Text != "" || len(sm.Calls) > 0 || role == "assistant" {
			req.Messages = append(req.Messages, sm)
		}
	}
	return req
}

func asList(v any) []any { l, _ := v.([]any); return l }

// Say is a step that answers with text.
func Say(text string) Step { return func(*testing.T, *Request) Turn { return Turn{Text: text} } }

// CallTool is a step that calls one tool.
func CallTool(name, args string) Step {
	return func(*testing.T, *Request) Turn { return Turn{Calls: []ScriptCall{{name, args}}} }
}
