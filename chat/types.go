package chat

import "encoding/json"

// Message is one turn of the conversation.
type Message struct {
	Role    string `json:"role"` // user | assistant
	Content string `json:"content"`
}

// Request is POST /v1/chat's body. Provider, Model, MaxTokens and
// Temperature override the configured provider for this request; the
// provider's key and address always come from the configuration.
type Request struct {
	Messages    []Message `json:"messages"`
	PageURL     string    `json:"page_url,omitempty"`
	PageTitle   string    `json:"page_title,omitempty"`
	Provider    string    `json:"provider,omitempty"`
	Model       string    `json:"model,omitempty"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
}

// Source is one cited source. Quote is verbatim: it is exactly the
// stored page text between the code point offsets Start and End.
type Source struct {
	Title     string `json:"title"`
	URL       string `json:"url"`
	Quote     string `json:"quote"`
	Start     int    `json:"start"`
	End       int    `json:"end"`
	Published string `json:"published,omitempty"`
	Modified  string `json:"modified,omitempty"`
}

// Usage counts the model's tokens over every call of the turn.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	ModelCalls   int `json:"model_calls"`
}

// ToolCall is one tool call of the turn, run by the model or by the
// context builder (Auto).
type ToolCall struct {
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"args"`
	Round     int             `json:"round"`
	Auto      bool            `json:"auto,omitempty"`
	OK        bool            `json:"ok"`
	ErrorCode string          `json:"error_code,omitempty"`
	LatencyMS float64         `json:"latency_ms"`
}

// Timing says where the turn's time went.
type Timing struct {
	ContextMS    float64   `json:"context_ms"`
	FirstTokenMS float64   `json:"first_token_ms"`
	ModelMS      []float64 `json:"model_ms"`
	// ToolRoundMS is the wall time of each round of tool calls.
	ToolRoundMS []float64 `json:"tool_round_ms"`
	ValidateMS  float64   `json:"validate_ms"`
}

// Response is POST /v1/chat's result, and the data of the SSE "done"
// event.
type Response struct {
	// TurnID names this turn, so that a visitor's vote on the answer
	// (POST /v1/feedback) finds it. It is random and says nothing about
	// the visitor.
	TurnID    string     `json:"turn_id"`
	Reply     string     `json:"reply"`
	Sources   []Source   `json:"sources"`
	Evidence  string     `json:"evidence"` // grounded | thin | none
	Usage     Usage      `json:"usage"`
	ToolCalls []ToolCall `json:"tool_calls"`
	LatencyMS float64    `json:"latency_ms"`
	// Degraded names what went wrong when the reply is a fallback, e.g.
	// "provider_unavailable"; empty for a normal answer.
	Degraded string  `json:"degraded,omitempty"`
	Provider string  `json:"provider,omitempty"`
	Timing   *Timing `json:"timing,omitempty"`
}

// Event is one server-sent event. Type is "status" (Data:
// {"message", "tool"?, "reset"?}), "delta" ({"text"}), "done" (the
// Response) or "error" ({"code", "message"}). A status with "reset":
// true means the text streamed so far is withdrawn and a corrected reply
// follows; "done".reply is always the final text.
type Event struct {
	Type string
	Data any
}

// Status and delta payloads.
type (
	Status struct {
		Message string `json:"message"`
		Tool    string `json:"tool,omitempty"`
		Reset   bool   `json:"reset,omitempty"`
	}
	Delta struct {
		Text string `json:"text"`
	}
)
