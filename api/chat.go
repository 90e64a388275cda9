package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/tool"
)

// Chatter is the backend capability behind POST /v1/chat: the agent loop.
// emit receives the stream's events (status, delta) as they happen, from
// one goroutine at a time; the final response is also returned. Errors of
// type *tool.Error are shown to the caller as is; a provider outage is not an
// error but an honest reply.
type Chatter interface {
	Chat(ctx context.Context, req chat.Request, emit func(chat.Event)) (*chat.Response, error)
}

func (s *Server) registerChatRoutes(g *echo.Group) {
	ch, ok := s.b.(Chatter)
	if !ok {
		return
	}
	g.POST("/v1/chat", func(c echo.Context) error { return s.handleChat(c, ch) })
}

func (s *Server) handleChat(c echo.Context, ch Chatter) error {
	var req chat.Request
	dec := json.NewDecoder(c.Request().Body)
	if err := dec.Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return readFailed(err)
		}
		return tool.Invalid("body must be a JSON object: " + err.Error())
	}
	// Admitted before any byte of a stream goes out, so a refusal is a
	// plain 429 whatever the Accept header.
	release, err := s.gate.Admit()
	if err != nil {
		var r *chat.Refusal
		if !errors.As(err, &r) {
			return err
		}
		secs := int(max(time.Second, r.RetryAfter).Seconds())
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		// retry_after repeats the header for callers that read only the body.
		type refusal struct {
			errorDetail
			RetryAfter int `json:"retry_after"`
		}
		return c.JSON(http.StatusTooManyRequests, map[string]refusal{"error": {errorDetail{r.Code, r.Message}, secs}})
	}
	defer release()
	if !strings.Contains(c.Request().Header.Get("Accept"), "text/event-stream") {
		resp, err := ch.Chat(c.Request().Context(), req, func(chat.Event) {})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, resp)
	}
	return s.streamChat(c, ch, req)
}

// streamChat answers in server-sent events. Every outcome, failures
// included, is an event, so a client reads one format only.
func (s *Server) streamChat(c echo.Context, ch Chatter, req chat.Request) error {
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
	resp, err := ch.Chat(c.Request().Context(), req, func(ev chat.Event) { write(ev.Type, ev.Data) })
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
