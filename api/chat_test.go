package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/tool"
)

// chatBackend is a Backend with a Chat capability given by ChatFn.
type chatBackend struct {
	ChatFn func(ctx context.Context, req chat.Request, emit func(chat.Event)) (*chat.Response, error)
}

func (b *chatBackend) Call(context.Context, string, json.RawMessage) (any, error) {
	return nil, errors.New("no tools")
}
func (b *chatBackend) Status(context.Context) (*Status, error) { return &Status{}, nil }
func (b *chatBackend) Chat(ctx context.Context, req chat.Request, emit func(chat.Event)) (*chat.Response, error) {
	return b.ChatFn(ctx, req, emit)
}

var _ Chatter = (*chatBackend)(nil)

func chatTestServer(t *testing.T, b Backend) *httptest.Server {
	srv := httptest.NewServer(New(b, Options{Token: "chat-test-token-123", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	t.Cleanup(srv.Close)
	return srv
}

func chatPost(t *testing.T, srv *httptest.Server, body, accept string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer chat-test-token-123")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func TestChat_Routes(t *testing.T) {
	t.Run("NotRegisteredWithoutChatter", func(t *testing.T) {
		srv := chatTestServer(t, &fakeBackend{})
		if res := chatPost(t, srv, `{}`, ""); res.StatusCode != http.StatusNotFound {
			t.Errorf("status %d, want 404", res.StatusCode)
		}
	})
	b := &chatBackend{ChatFn: func(ctx context.Context, req chat.Request, emit func(chat.Event)) (*chat.Response, error) {
		if req.Messages[0].Content == "fail" {
			return nil, &tool.Error{Code: "invalid", Message: "bad question"}
		}
		if req.Messages[0].Content == "crash" {
			return nil, errors.New("secret internal detail")
		}
		emit(chat.Event{Type: "status", Data: chat.Status{Message: "Searching the site…"}})
		emit(chat.Event{Type: "delta", Data: chat.Delta{Text: "Hel"}})
		emit(chat.Event{Type: "delta", Data: chat.Delta{Text: "lo"}})
		return &chat.Response{Reply: "Hello", Sources: []chat.Source{{Title: "T", URL: "http://x/", Quote: "q", Start: 1, End: 2}}, Evidence: "grounded"}, nil
	}}
	srv := chatTestServer(t, b)
	t.Run("JSON", func(t *testing.T) {
		res := chatPost(t, srv, `{"messages": [{"role": "user", "content": "hi"}]}`, "")
		var got chat.Response
		if err := json.NewDecoder(res.Body).Decode(&got); err != nil || res.StatusCode != 200 {
			t.Fatalf("status %d: %v", res.StatusCode, err)
		}
		if got.Reply != "Hello" || len(got.Sources) != 1 || got.Sources[0].End != 2 || got.Evidence != "grounded" {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("JSONError", func(t *testing.T) {
		res := chatPost(t, srv, `{"messages": [{"role": "user", "content": "fail"}]}`, "")
		if res.StatusCode != 400 {
			t.Errorf("status %d, want 400", res.StatusCode)
		}
	})
	t.Run("SSE", func(t *testing.T) {
		res := chatPost(t, srv, `{"messages": [{"role": "user", "content": "hi"}]}`, "text/event-stream")
		got := readEvents(t, res)
		want := []string{"status", "delta", "delta", "done"}
		if len(got) != len(want) {
			t.Fatalf("events %v", got)
		}
		for i, ev := range got {
			if ev[0] != want[i] {
				t.Errorf("event %d = %s, want %s", i, ev[0], want[i])
			}
		}
		if !strings.Contains(got[3][1], `"reply":"Hello"`) || !strings.Contains(got[1][1], `"text":"Hel"`) {
			t.Errorf("payloads %v", got)
		}
	})
	t.Run("SSEErrors", func(t *testing.T) {
		got := readEvents(t, chatPost(t, srv, `{"messages": [{"role": "user", "content": "fail"}]}`, "text/event-stream"))
		if len(got) != 1 || got[0][0] != "error" || !strings.Contains(got[0][1], "bad question") {
			t.Errorf("events %v", got)
		}
		got = readEvents(t, chatPost(t, srv, `{"messages": [{"role": "user", "content": "crash"}]}`, "text/event-stream"))
		if len(got) != 1 || got[0][0] != "error" || strings.Contains(got[0][1], "secret") {
			t.Errorf("internal error leaks or is missing: %v", got)
		}
	})
}

func readEvents(t *testing.T, res *http.Response) [][2]string {
	t.Helper()
	var out [][2]string
	sc := bufio.NewScanner(res.Body)
	var ev [2]string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev[0] = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev[1] = strings.TrimPrefix(line, "data: ")
		case line == "" && ev[0] != "":
			out = append(out, ev)
			ev = [2]string{}
		}
	}
	return out
}
