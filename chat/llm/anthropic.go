package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// anthropicMessages speaks the Anthropic Messages API.
type anthropicMessages struct {
	client anthropic.Client
	cfg    Config
}

// defaultAnthropicMaxTokens is used when none is configured: the API
// requires max_tokens.
const defaultAnthropicMaxTokens = 1024

func newAnthropic(cfg Config) *anthropicMessages {
	// WithoutEnvironmentDefaults: ANTHROPIC_API_KEY, profiles and
	// federation files on the host must not replace the configured key.
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
		option.WithoutOpenTelemetry(),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/")+"/"))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &anthropicMessages{client: anthropic.NewClient(opts...), cfg: cfg}
}

func (p *anthropicMessages) Name() string { return "anthropic/" + p.cfg.Model }

func (p *anthropicMessages) params(req Request) anthropic.MessageNewParams {
	model := req.Model
	if model == "" {
		model = p.cfg.Model
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultAnthropicMaxTokens
	}
	params := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: int64(maxTokens)}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	if req.Temperature != nil {
		params.Temperature = anthropic.Float(*req.Temperature)
	}
	for _, t := range req.Tools {
		var schema map[string]any
		_ = json.Unmarshal(t.Parameters, &schema)
		in := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					in.Required = append(in.Required, s)
				}
			}
		}
		for k, v := range schema {
			if k != "properties" && k != "required" && k != "type" {
				in.ExtraFields[k] = v
			}
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: t.Name, Description: anthropic.String(t.Description), InputSchema: in,
		}})
	}
	if len(req.Tools) > 0 && req.NoTools {
		params.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
	}
	// Tool results travel in user turns, and the API wants the roles to
	// alternate, so consecutive turns of one role are merged.
	for _, m := range req.Messages {
		var (
			role   anthropic.MessageParamRole
			blocks []anthropic.ContentBlockParamUnion
		)
		switch m.Role {
		case "user":
			role = anthropic.MessageParamRoleUser
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
		case "tool":
			role = anthropic.MessageParamRoleUser
			blocks = append(blocks, anthropic.NewToolResultBlock(m.ToolCallID, m.Content, m.IsError))
		case "assistant":
			role = anthropic.MessageParamRoleAssistant
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				var input map[string]any
				if json.Unmarshal([]byte(tc.Args), &input) != nil || input == nil {
					// The API only takes an object here; what the model
					// really sent is in the error result that follows.
					input = map[string]any{}
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, input, tc.Name))
			}
		default:
			continue
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(params.Messages); n > 0 && params.Messages[n-1].Role == role {
			params.Messages[n-1].Content = append(params.Messages[n-1].Content, blocks...)
			continue
		}
		params.Messages = append(params.Messages, anthropic.MessageParam{Role: role, Content: blocks})
	}
	return params
}

// Stream implements Provider.
func (p *anthropicMessages) Stream(ctx context.Context, req Request, onDelta func(string)) (*Response, error) {
	stream := p.client.Messages.NewStreaming(ctx, p.params(req))
	defer stream.Close()
	resp := &Response{}
	var text strings.Builder
	type partial struct {
		id, name string
		args     strings.Builder
	}
	calls := map[int64]*partial{}
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			resp.Usage.InputTokens = int(ev.Message.Usage.InputTokens)
			resp.Usage.OutputTokens = int(ev.Message.Usage.OutputTokens)
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				if resp.FirstToken.IsZero() {
					resp.FirstToken = time.Now()
				}
				calls[ev.Index] = &partial{id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				if ev.Delta.Text == "" {
					continue
				}
				if resp.FirstToken.IsZero() {
					resp.FirstToken = time.Now()
				}
				text.WriteString(ev.Delta.Text)
				onDelta(ev.Delta.Text)
			case "input_json_delta":
				if c := calls[ev.Index]; c != nil {
					c.args.WriteString(ev.Delta.PartialJSON)
				}
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				resp.StopReason = string(ev.Delta.StopReason)
			}
			if ev.Usage.OutputTokens > 0 {
				resp.Usage.OutputTokens = int(ev.Usage.OutputTokens)
			}
			if ev.Usage.InputTokens > 0 {
				resp.Usage.InputTokens = int(ev.Usage.InputTokens)
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
		args := c.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}" // a call without arguments streams no input deltas
		}
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: c.id, Name: c.name, Args: args})
	}
	if err := stream.Err(); err != nil {
		return resp, p.wrap(err)
	}
	return resp, nil
}

func (p *anthropicMessages) wrap(err error) error {
	e := &Error{Provider: p.Name(), Err: err}
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		e.Status = ae.StatusCode
		if ae.Response != nil {
			e.RetryAfter = retryAfter(ae.Response.Header)
		}
		e.Err = errors.New(http.StatusText(ae.StatusCode))
	}
	return e
}
