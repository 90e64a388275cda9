package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openAIChat speaks Chat Completions, which OpenAI, OpenRouter, Ollama and
// vLLM all serve, so one adapter covers them.
type openAIChat struct {
	client openai.Client
	cfg    Config
}

func newOpenAI(cfg Config) *openAIChat {
	// The explicit key and base URL override OPENAI_API_KEY and
	// OPENAI_BASE_URL, so the daemon's configuration always wins. Local
	// servers (Ollama) want no key, but the SDK sends one regardless.
	key := cfg.APIKey
	if key == "" {
		key = "none"
	}
	opts := []option.RequestOption{
		option.WithAPIKey(key),
		option.WithMaxRetries(0), // Retry does it, the same way for every provider
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/")+"/"))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &openAIChat{client: openai.NewClient(opts...), cfg: cfg}
}

func (p *openAIChat) Name() string { return p.cfg.Kind + "/" + p.cfg.Model }

func (p *openAIChat) params(req Request) openai.ChatCompletionNewParams {
	model := req.Model
	if model == "" {
		model = p.cfg.Model
	}
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			msgs = append(msgs, openai.UserMessage(m.Content))
		case "assistant":
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Args},
					},
				})
			}
			msgs = append(msgs, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case "tool":
			msgs = append(msgs, openai.ToolMessage(m.Content, m.ToolCallID))
		}
	}
	params := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(model),
		Messages:      msgs,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	for _, t := range req.Tools {
		var schema map[string]any
		_ = json.Unmarshal(t.Parameters, &schema)
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  shared.FunctionParameters(schema),
		}))
	}
	if len(req.Tools) > 0 && req.NoTools {
		params.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	}
	if req.MaxTokens > 0 {
		// OpenAI's own API wants max_completion_tokens (o-series and newer
		// models reject max_tokens); compatible servers mostly know only
		// max_tokens.
		if p.cfg.Kind == "openai" {
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(*req.Temperature)
	}
	return params
}

// Stream implements Provider.
func (p *openAIChat) Stream(ctx context.Context, req Request, onDelta func(string)) (*Response, error) {
	stream := p.client.Chat.Completions.NewStreaming(ctx, p.params(req))
	defer stream.Close()
	resp := &Response{}
	var text strings.Builder
	type partial struct {
		id, name string
		args     strings.Builder
	}
	calls := map[int64]*partial{}
	for stream.Next() {
		chunk := stream.Current()
		if chunk.Usage.PromptTokens > 0 || chunk.Usage.CompletionTokens > 0 {
			resp.Usage = Usage{InputTokens: int(chunk.Usage.PromptTokens), OutputTokens: int(chunk.Usage.CompletionTokens)}
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			if ch.Delta.Content != "" {
				if resp.FirstToken.IsZero() {
					resp.FirstToken = time.Now()
				}
				text.WriteString(ch.Delta.Content)
				onDelta(ch.Delta.Content)
			}
			for _, tc := range ch.Delta.ToolCalls {
				if resp.FirstToken.IsZero() {
					resp.FirstToken = time.Now()
				}
				c := calls[tc.Index]
				if c == nil {
					c = &partial{}
					calls[tc.Index] = c
				}
				if tc.ID != "" {
					c.id = tc.ID
				}
				if tc.Function.Name != "" {
					c.name += tc.Function.Name
				}
				c.args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != "" {
				resp.StopReason = ch.FinishReason
			}
		}
	}
	resp.Text = text.String()
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		c := calls[i]
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: c.id, Name: c.name, Args: c.args.String()})
	}
	if err := stream.Err(); err != nil {
		return resp, p.wrap(err)
	}
	return resp, nil
}

func (p *openAIChat) wrap(err error) error {
	e := &Error{Provider: p.Name(), Err: err}
	var ae *openai.Error
	if errors.As(err, &ae) {
		e.Status = ae.StatusCode
		if ae.Response != nil {
			e.RetryAfter = retryAfter(ae.Response.Header)
		}
		// The SDK's message is safe to log: no URL, no key.
		msg := ae.Message
		if msg == "" {
			msg = http.StatusText(ae.StatusCode)
		}
		e.Err = errors.New(msg)
	}
	return e
}
