package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultGoogleBaseURL is the Gemini API's REST root, version included,
// as an OpenAI base_url includes /v1: a proxy's base_url replaces it whole.
const DefaultGoogleBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// googleGemini speaks the Gemini API's streamGenerateContent (v1beta
// REST). Google's Go SDK would bring in its cloud auth stack for what is
// one POST and a stream of JSON events, so the protocol is written out
// here.
type googleGemini struct {
	cfg  Config
	base string
	http *http.Client
}

func newGoogle(cfg Config) *googleGemini {
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultGoogleBaseURL
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	return &googleGemini{cfg: cfg, base: base, http: hc}
}

func (p *googleGemini) Name() string { return "google/" + p.cfg.Model }

// The request and response shapes of generateContent, as much of them as
// the chat uses.
type (
	gemContent struct {
		Role  string    `json:"role,omitempty"`
		Parts []gemPart `json:"parts"`
	}
	gemPart struct {
		Text             string       `json:"text,omitempty"`
		Thought          bool         `json:"thought,omitempty"`
		FunctionCall     *gemCall     `json:"functionCall,omitempty"`
		FunctionResponse *gemResponse `json:"functionResponse,omitempty"`
		// ThoughtSignature must go back with the call it came with: newer
		// models refuse a history whose calls lost theirs.
		ThoughtSignature string `json:"thoughtSignature,omitempty"`
	}
	gemCall struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args,omitempty"`
	}
	gemResponse struct {
		ID       string          `json:"id,omitempty"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	}
	gemFunction struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters,omitempty"`
	}
	gemTool struct {
		FunctionDeclarations []gemFunction `json:"functionDeclarations"`
	}
	gemToolConfig struct {
		FunctionCallingConfig struct {
			Mode string `json:"mode"`
		} `json:"functionCallingConfig"`
	}
	gemGenConfig struct {
		MaxOutputTokens int      `json:"maxOutputTokens,omitempty"`
		Temperature     *float64 `json:"temperature,omitempty"`
	}
	gemRequest struct {
		SystemInstruction *gemContent    `json:"systemInstruction,omitempty"`
		Contents          []gemContent   `json:"contents"`
		Tools             []gemTool      `json:"tools,omitempty"`
		ToolConfig        *gemToolConfig `json:"toolConfig,omitempty"`
		GenerationConfig  *gemGenConfig  `json:"generationConfig,omitempty"`
	}
	gemChunk struct {
		Candidates []struct {
			Content      gemContent `json:"content"`
			FinishReason string     `json:"finishReason"`
			Index        int        `json:"index"`
		} `json:"candidates"`
		PromptFeedback *struct {
			BlockReason string `json:"blockReason"`
		} `json:"promptFeedback"`
		UsageMetadata *struct {
			PromptTokenCount     int `json:"promptTokenCount"`
			CandidatesTokenCount int `json:"candidatesTokenCount"`
			ThoughtsTokenCount   int `json:"thoughtsTokenCount"`
		} `json:"usageMetadata"`
		Error *gemError `json:"error"`
	}
	gemError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type       string `json:"@type"`
			RetryDelay string `json:"retryDelay"`
		} `json:"details"`
	}
)

func (p *googleGemini) body(req Request) gemRequest {
	var g gemRequest
	if req.System != "" {
		g.SystemInstruction = &gemContent{Parts: []gemPart{{Text: req.System}}}
	}
	if len(req.Tools) > 0 {
		var fns []gemFunction
		for _, t := range req.Tools {
			var schema map[string]any
			_ = json.Unmarshal(t.Parameters, &schema)
			fns = append(fns, gemFunction{Name: t.Name, Description: t.Description, Parameters: geminiSchema(schema)})
		}
		g.Tools = []gemTool{{FunctionDeclarations: fns}}
		if req.NoTools {
			g.ToolConfig = &gemToolConfig{}
			g.ToolConfig.FunctionCallingConfig.Mode = "NONE"
		}
	}
	if req.MaxTokens > 0 || req.Temperature != nil {
		g.GenerationConfig = &gemGenConfig{MaxOutputTokens: req.MaxTokens, Temperature: req.Temperature}
	}
	g.Contents = geminiContents(req.Messages)
	return g
}

// geminiContents turns the conversation into Gemini's contents. A tool
// result names the function it answers, which the neutral form keeps only
// on the call, so the calls' names are looked up by ID. Turns of one role
// in a row are merged: a model turn's calls must be answered by one user
// turn holding every response.
func geminiContents(msgs []Message) []gemContent {
	names := map[string]string{}
	var out []gemContent
	for _, m := range msgs {
		var (
			role  string
			parts []gemPart
		)
		switch m.Role {
		case "user":
			role = "user"
			if m.Content != "" {
				parts = append(parts, gemPart{Text: m.Content})
			}
		case "assistant":
			role = "model"
			if m.Content != "" {
				parts = append(parts, gemPart{Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Name
				args := json.RawMessage(tc.Args)
				var obj map[string]any
				if json.Unmarshal(args, &obj) != nil || obj == nil {
					// The API takes only an object; what the model really
					// sent is in the error result that follows.
					args = json.RawMessage(`{}`)
				}
				parts = append(parts, gemPart{FunctionCall: &gemCall{ID: tc.ID, Name: tc.Name, Args: args}, ThoughtSignature: tc.Signature})
			}
		case "tool":
			role = "user"
			parts = append(parts, gemPart{FunctionResponse: &gemResponse{ID: m.ToolCallID, Name: names[m.ToolCallID],
				Response: geminiResult(m.Content, m.IsError)}})
		default:
			continue
		}
		if len(parts) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			continue
		}
		out = append(out, gemContent{Role: role, Parts: parts})
	}
	return out
}

// geminiResult is a tool result as the object functionResponse.response
// must be: the result itself when it is an object (an error result
// already says "error"), else wrapped under "output", or "error" for a
// failure, as Google's examples do.
func geminiResult(content string, isErr bool) json.RawMessage {
	var v any
	if json.Unmarshal([]byte(content), &v) != nil {
		v = content
	}
	if obj, ok := v.(map[string]any); ok {
		if _, said := obj["error"]; said || !isErr {
			return json.RawMessage(content)
		}
	}
	key := "output"
	if isErr {
		key = "error"
	}
	b, _ := json.Marshal(map[string]any{key: v})
	return b
}

// geminiSchema keeps of a JSON Schema what Gemini's Schema object (an
// OpenAPI 3.0 subset) knows: the API refuses a request naming any other
// field, additionalProperties among them. A list of types becomes the
// first that is not null, nullable when null was one of them.
func geminiSchema(s map[string]any) map[string]any {
	if s == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range s {
		switch k {
		case "type":
			if list, ok := v.([]any); ok {
				for _, t := range list {
					if t == "null" {
						out["nullable"] = true
					} else if _, set := out["type"]; !set {
						out["type"] = t
					}
				}
				continue
			}
			out[k] = v
		case "description", "format", "enum", "required", "minimum", "maximum", "minItems", "maxItems",
			"minLength", "maxLength", "pattern", "nullable", "title", "minProperties", "maxProperties":
			out[k] = v
		case "items":
			if m, ok := v.(map[string]any); ok {
				out[k] = geminiSchema(m)
			}
		case "properties":
			if m, ok := v.(map[string]any); ok {
				props := map[string]any{}
				for name, ps := range m {
					if pm, ok := ps.(map[string]any); ok {
						props[name] = geminiSchema(pm)
					}
				}
				out[k] = props
			}
		case "anyOf":
			if list, ok := v.([]any); ok {
				var alts []any
				for _, a := range list {
					if am, ok := a.(map[string]any); ok {
						alts = append(alts, geminiSchema(am))
					}
				}
				out[k] = alts
			}
		}
	}
	return out
}

// Stream implements Provider.
func (p *googleGemini) Stream(ctx context.Context, req Request, onDelta func(string)) (*Response, error) {
	model := req.Model
	if model == "" {
		model = p.cfg.Model
	}
	model = strings.TrimPrefix(model, "models/")
	body, err := json.Marshal(p.body(req))
	if err != nil {
		return nil, &Error{Provider: p.Name(), Err: err}
	}
	u := p.base + "/models/" + url.PathEscape(model) + ":streamGenerateContent?alt=sse"
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Provider: p.Name(), Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	hr.Header.Set("x-goog-api-key", p.cfg.APIKey)
	res, err := p.http.Do(hr)
	if err != nil {
		// The URL carries no key (it travels in a header): safe to keep.
		return nil, &Error{Provider: p.Name(), Err: err}
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		return nil, p.httpError(res)
	}
	return p.read(res.Body, onDelta)
}

// read consumes the server-sent events of a stream: each event's data is
// one GenerateContentResponse, whose parts are new text or whole calls.
func (p *googleGemini) read(r io.Reader, onDelta func(string)) (*Response, error) {
	resp := &Response{}
	var text strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var data bytes.Buffer
	handle := func() error {
		defer data.Reset()
		if data.Len() == 0 {
			return nil
		}
		var c gemChunk
		if err := json.Unmarshal(data.Bytes(), &c); err != nil {
			return fmt.Errorf("bad stream event: %w", err)
		}
		if c.Error != nil {
			return &Error{Provider: p.Name(), Status: c.Error.Code, RetryAfter: c.Error.retryDelay(), Err: errors.New(c.Error.text())}
		}
		if u := c.UsageMetadata; u != nil {
			resp.Usage = Usage{InputTokens: u.PromptTokenCount, OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount}
		}
		if c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" {
			resp.StopReason = "blocked: " + c.PromptFeedback.BlockReason
		}
		for _, cand := range c.Candidates {
			if cand.Index != 0 {
				continue
			}
			for _, part := range cand.Content.Parts {
				switch {
				case part.FunctionCall != nil:
					if resp.FirstToken.IsZero() {
						resp.FirstToken = time.Now()
					}
					args := strings.TrimSpace(string(part.FunctionCall.Args))
					if args == "" || args == "null" {
						args = "{}"
					}
					resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: part.FunctionCall.ID, Name: part.FunctionCall.Name,
						Args: args, Signature: part.ThoughtSignature})
				case part.Text != "" && !part.Thought:
					if resp.FirstToken.IsZero() {
						resp.FirstToken = time.Now()
					}
					text.WriteString(part.Text)
					onDelta(part.Text)
				}
			}
			if cand.FinishReason != "" {
				resp.StopReason = cand.FinishReason
			}
		}
		return nil
	}
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			if err := handle(); err != nil {
				resp.Text = text.String()
				return resp, p.streamErr(err)
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(v, " "))
		}
	}
	err := sc.Err()
	if err == nil {
		err = handle()
	}
	resp.Text = text.String()
	if err != nil {
		return resp, p.streamErr(err)
	}
	return resp, nil
}

func (p *googleGemini) streamErr(err error) error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return &Error{Provider: p.Name(), Err: err}
}

// httpError reads a failed call's google.rpc.Status body. Its message
// says what was wrong ("API key not valid") without echoing the key.
func (p *googleGemini) httpError(res *http.Response) error {
	e := &Error{Provider: p.Name(), Status: res.StatusCode, RetryAfter: retryAfter(res.Header)}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	var body struct {
		Error *gemError `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil && body.Error != nil {
		e.Err = errors.New(body.Error.text())
		if e.RetryAfter == 0 {
			e.RetryAfter = body.Error.retryDelay()
		}
		return e
	}
	e.Err = errors.New(http.StatusText(res.StatusCode))
	return e
}

func (e *gemError) text() string {
	msg := e.Message
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	if e.Status != "" {
		return e.Status + ": " + msg
	}
	return msg
}

// retryDelay is the wait a 429's google.rpc.RetryInfo asks for ("13s").
func (e *gemError) retryDelay() time.Duration {
	for _, d := range e.Details {
		if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
			if v, err := time.ParseDuration(d.RetryDelay); err == nil && v > 0 {
				return v
			}
		}
	}
	return 0
}
