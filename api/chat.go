package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/askwp/askwpd/tool"
)

// Chatter is the backend capability behind POST /v1/chat: the agent loop.
// emit receives the stream's events (status, delta) as they happen, from
// one goroutine at a time; the final response is also returned. Errors of
// type *Error are shown to the caller as is; a provider outage is not an
// error but an honest reply.
type Chatter interface {
	Chat(ctx context.Context, req ChatRequest, emit func(ChatEvent)) (*ChatResponse, error)
}

// ChatMessage is one turn of the conversation.
type ChatMessage struct {
	Role    string `json:"role"` // user | assistant
	Content string `json:"content"`
}

// ChatRequest is POST /v1/chat's body. Provider, Model, MaxTokens and
// Temperature override the configured provider for this request; the
// provider's key and address always come from the configuration.
type ChatRequest struct {
	Messages    []ChatMessage `json:"messages"`
	PageURL     string        `json:"page_url,omitempty"`
	PageTitle   string        `json:"page_title,omitempty"`
	Provider    string        `json:"provider,omitempty"`
	Model       string        `json:"model,omitempty"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
	Temperature *float64      `json:"temperature,omitempty"`
}

// ChatSource is one cited source. Quote is verbatim: it is exactly the
// stored page text between the code point offsets Start and End.
type ChatSource struct {
	Title     string `json:"title"`
	URL       string `json:"url"`
	Quote     string `json:"quote"`
	Start     int    `json:"start"`
	End       int    `json:"end"`
	Published string `json:"published,omitempty"`
	Modified  string `json:"modified,omitempty"`
}

// ChatUsage counts the model's tokens over every call of the turn.
type ChatUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	ModelCalls   int `json:"model_calls"`
}

// ChatToolCall is one tool call of the turn, run by the model or by the
// context builder (Auto).
type ChatToolCall struct {
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"args"`
	Round     int             `json:"round"`
	Auto      bool            `json:"auto,omitempty"`
	OK        bool            `json:"ok"`
	ErrorCode string          `json:"error_code,omitempty"`
	LatencyMS float64         `json:"latency_ms"`
}

// ChatTiming says where the turn's time went.
type ChatTiming struct {
	ContextMS    float64   `json:"context_ms"`
	FirstTokenMS float64   `json:"first_token_ms"`
	ModelMS      []float64 `json:"model_ms"`
	// ToolRoundMS is the wall time of each round of tool calls.
	ToolRoundMS []float64 `json:"tool_round_ms"`
	ValidateMS  float64   `json:"validate_ms"`
}

// ChatResponse is POST /v1/chat's result, and the data of the SSE "done"
// event.
type ChatResponse struct {
	Reply     string         `json:"reply"`
	Sources   []ChatSource   `json:"sources"`
	Evidence  string         `json:"evidence"` // grounded | thin | none
	Usage     ChatUsage      `json:"usage"`
	ToolCalls []ChatToolCall `json:"tool_calls"`
	LatencyMS float64        `json:"latency_ms"`
	// Degraded names what went wrong when the reply is a fallback, e.g.
	// "provider_unavailable"; empty for a normal answer.
	Degraded string      `json:"degraded,omitempty"`
	Provider string      `json:"provider,omitempty"`
	Timing   *ChatTiming `json:"timing,omitempty"`
}

// ChatEvent is one server-sent event. Type is "status" (Data:
// {"message", "tool"?, "reset"?}), "delta" ({"text"}), "done" (the
// ChatResponse) or "error" ({"code", "message"}). A status with "reset":
// true means the text streamed so far is withdrawn and a corrected reply
// follows; "done".reply is always the final text.
type ChatEvent struct {
	Type string
	Data any
}

// Status and delta payloads.
type (
	ChatStatus struct {
		Message string `json:"message"`
		Tool    string `json:"tool,omitempty"`
		Reset   bool   `json:"reset,omitempty"`
	}
	ChatDelta struct {
		Text string `json:"text"`
	}
)

func (s *Server) registerChatRoutes(g *echo.Group) {
	ch, ok := s.b.(Chatter)
	if !ok {
		return
	}
	g.POST("/v1/chat", func(c echo.Context) error { return s.handleChat(c, ch) })
}

func (s *Server) handleChat(c echo.Context, ch Chatter) error {
	var req ChatRequest
	dec := json.NewDecoder(c.Request().Body)
	if err := dec.Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) || strings.Contains(err.Error(), "request body too large") {
			return &tool.Error{Code: "too_large", Message: "request body too large"}
		}
		return tool.Invalid("body must be a JSON object: " + err.Error())
	}
	if !strings.Contains(c.Request().Header.Get("Accept"), "text/event-stream") {
		resp, err := ch.Chat(c.Request().Context(), req, func(ChatEvent) {})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, resp)
	}
	return s.streamChat(c, ch, req)
}

// streamChat answers in server-sent events. Every outcome, failures
// included, is an event, so a client reads one format only.
func (s *Server) streamChat(c echo.Context, ch Chatter, req ChatRequest) error {
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx in front must not buffer the stream
	w.WriteHeader(http.StatusOK)
	w.Flush()

	var mu sync.Mutex
	closed := false
	write := func(event string, data any) {
		b, err := json.Marshal(data)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		_, _ = w.Write([]byte("event: " + event + "\ndata: "))
		_, _ = w.Write(b)
		_, _ = w.Write([]byte("\n\n"))
		w.Flush()
	}
	// Comments keep proxies from closing a stream that waits on a slow
	// model.
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(15 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				mu.Lock()
				if !closed {
					_, _ = w.Write([]byte(": keep-alive\n\n"))
					w.Flush()
				}
				mu.Unlock()
			}
		}
	}()
	resp, err := ch.Chat(c.Request().Context(), req, func(ev ChatEvent) { write(ev.Type, ev.Data) })
	close(stop)
	if err != nil {
		detail := errorDetail{Code: "internal", Message: "internal error"}
		var ae *tool.Error
		switch {
		case errors.As(err, &ae):
			detail = errorDetail{Code: ae.Code, Message: ae.Message}
		case errors.Is(err, context.Canceled):
			return nil // the client left
		case errors.Is(err, context.DeadlineExceeded):
			detail = errorDetail{Code: "timeout", Message: "the answer took too long"}
		default:
			s.log.Error("Chat failed", "error", err)
		}
		write("error", detail)
	} else {
		write("done", resp)
	}
	mu.Lock()
	closed = true
	mu.Unlock()
	return nil
}
