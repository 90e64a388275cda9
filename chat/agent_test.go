package chat_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/llmtest"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// bareAgent is an agent over the tools of an empty store, without
// WordPress: enough for the loop's mechanics, which do not depend on the
// content.
func bareAgent(t *testing.T, pc chat.ProviderConfig) *chat.Agent {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	site := crawl.Site{URL: "http://127.0.0.1:9"}
	if site.Origin, err = crawl.ParseOrigin(site.URL); err != nil {
		t.Fatal(err)
	}
	cc := config.Default().Crawl
	cr := crawl.New(site, crawl.Options{Concurrency: cc.Concurrency, RatePerSec: cc.RatePerSec, Timeout: cc.Timeout.Duration,
		MaxBytes: cc.MaxBytes, UserAgent: cc.UserAgent}, st, nil, log)
	tools := &tool.Service{Log: log, Store: st, Search: search.New(st), Crawler: cr}
	return &chat.Agent{Tools: tools, Site: chat.Site{URL: site.URL}, Log: log, Provider: pc,
		Opts: chat.Options{RetryBase: time.Millisecond, RetryMax: 10 * time.Millisecond},
		// No Connectors key from the environment the tests run in.
		Getenv: func(string) (string, bool) { return "", false }}
}

// testWriter routes logs to t.Log so a failure shows its context.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func ask(q string) chat.Request {
	return chat.Request{Messages: []chat.Message{{Role: "user", Content: q}}}
}

var kinds = []string{"openai", "anthropic", "google"}

func TestChat_ToolRoundCap(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			p := llmtest.New(t, kind)
			// A model that never stops searching.
			p.Loop = func(t *testing.T, r *llmtest.Request) llmtest.Turn {
				if r.ToolChoiceNone {
					return llmtest.Turn{Text: "Here is what I found."}
				}
				return llmtest.Turn{Calls: []llmtest.ScriptCall{{Name: "search_site", Args: `{"query": "opening hours"}`}}}
			}
			a := bareAgent(t, p.Config())
			a.Opts.MaxToolRounds = 2
			resp, err := a.Chat(context.Background(), ask("When are you open?"), nil)
			if err != nil {
				t.Fatal(err)
			}
			seen := p.Seen()
			// Rounds 1 and 2 run tools; the third call's tools are refused
			// and a fourth call, with tools forbidden, answers.
			if len(seen) != 4 {
				t.Fatalf("model calls = %d, want 4", len(seen))
			}
			if !seen[3].ToolChoiceNone {
				t.Errorf("the last call does not forbid tools")
			}
			res := seen[3].LastResults()
			if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Text, "tool_limit") {
				t.Errorf("refused call's result = %+v, want a tool_limit error", res)
			}
			ran := 0
			for _, c := range resp.ToolCalls {
				if !c.Auto {
					ran++
				}
			}
			if ran != 2 {
				t.Errorf("tools run = %d, want 2", ran)
			}
			if resp.Reply != "Here is what I found." || resp.Usage.ModelCalls != 4 {
				t.Errorf("reply %q after %d calls", resp.Reply, resp.Usage.ModelCalls)
			}
		})
	}
}

// offeredTools are the tools the model is offered: the retrieval
// contract without verify_quote, which the agent runs itself.
var offeredTools = []string{"search_site", "get_document", "get_recent", "search_in_document", "fetch_live_url"}

func TestChat_MalformedToolCalls(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			bad := []llmtest.ScriptCall{
				{Name: "search_site", Args: `{"query": "refund`},           // cut-off JSON
				{Name: "search_site", Args: `"refund policy"`},             // a string, not an object
				{Name: "get_recent", Args: `[1, 2]`},                       // an array
				{Name: "drop_database", Args: `{}`},                        // not a tool
				{Name: "verify_quote", Args: `{"url": "x", "quote": "y"}`}, // a tool, but not offered to the model
			}
			want := []string{"invalid_arguments", "invalid_arguments", "invalid_arguments", "unknown_tool", "unknown_tool"}
			if kind == "google" {
				// Gemini's protocol carries arguments as an object: the
				// model cannot send the malformed ones.
				bad, want = bad[3:], want[3:]
			}
			p := llmtest.New(t, kind,
				func(t *testing.T, r *llmtest.Request) llmtest.Turn {
					for _, name := range offeredTools {
						if _, ok := r.Tools[name]; !ok {
							t.Errorf("tool %s not offered; offered %v", name, keys(r.Tools))
						}
					}
					if len(r.Tools) != len(offeredTools) {
						t.Errorf("offered %d tools, want %d", len(r.Tools), len(offeredTools))
					}
					for name, desc := range r.Tools {
						if want := toolDescription(name); desc != want {
							t.Errorf("tool %s: description differs from /v1/tools", name)
						}
					}
					return llmtest.Turn{Calls: bad}
				},
				func(t *testing.T, r *llmtest.Request) llmtest.Turn {
					res := r.LastResults()
					if len(res) != len(bad) {
						t.Fatalf("results = %d, want %d", len(res), len(bad))
					}
					for i, r := range res {
						if !r.IsError || !strings.Contains(r.Text, want[i]) {
							t.Errorf("result %d = %s, want a %s error", i, r.Text, want[i])
						}
					}
					return llmtest.Turn{Text: "Sorry, let me answer without that."}
				})
			a := bareAgent(t, p.Config())
			resp, err := a.Chat(context.Background(), ask("What is your refund policy?"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Reply != "Sorry, let me answer without that." {
				t.Errorf("reply = %q", resp.Reply)
			}
			codes := 0
			for _, c := range resp.ToolCalls {
				if !c.Auto && c.ErrorCode != "" {
					codes++
				}
			}
			if codes != len(bad) {
				t.Errorf("tool calls with error codes = %d, want %d: %+v", codes, len(bad), resp.ToolCalls)
			}
		})
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func toolDescription(name string) string {
	for _, t := range tool.Tools {
		if t.Function.Name == name {
			return t.Function.Description
		}
	}
	return ""
}

func TestChat_ProviderErrors(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind+"/RetryThenOK", func(t *testing.T) {
			p := llmtest.New(t, kind,
				func(*testing.T, *llmtest.Request) llmtest.Turn { return llmtest.Turn{Status: 429} },
				func(*testing.T, *llmtest.Request) llmtest.Turn { return llmtest.Turn{Status: 503} },
				llmtest.Say("Fine now."))
			a := bareAgent(t, p.Config())
			resp, err := a.Chat(context.Background(), ask("hello"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Seen()) != 3 || resp.Reply != "Fine now." || resp.Degraded != "" {
				t.Errorf("calls %d, reply %q, degraded %q", len(p.Seen()), resp.Reply, resp.Degraded)
			}
		})
		t.Run(kind+"/Outage", func(t *testing.T) {
			p := llmtest.New(t, kind)
			p.Loop = func(*testing.T, *llmtest.Request) llmtest.Turn { return llmtest.Turn{Status: 500} }
			a := bareAgent(t, p.Config())
			srv, token := chatServer(t, a)
			resp, status := postChat(t, srv, token, ask("What do you sell?"))
			if status != 200 {
				t.Fatalf("status %d, want 200", status)
			}
			if resp.Degraded != "provider_unavailable" || !strings.Contains(resp.Reply, "can't reach") {
				t.Errorf("degraded %q reply %q", resp.Degraded, resp.Reply)
			}
			if n := len(p.Seen()); n != 3 {
				t.Errorf("attempts = %d, want 3", n)
			}
		})
		t.Run(kind+"/BadKeyNoRetry", func(t *testing.T) {
			p := llmtest.New(t, kind, func(*testing.T, *llmtest.Request) llmtest.Turn { return llmtest.Turn{Status: 401} })
			a := bareAgent(t, p.Config())
			resp, err := a.Chat(context.Background(), ask("hello"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Seen()) != 1 || resp.Degraded != "provider_unavailable" {
				t.Errorf("calls %d, degraded %q", len(p.Seen()), resp.Degraded)
			}
		})
		t.Run(kind+"/CutMidStream", func(t *testing.T) {
			p := llmtest.New(t, kind, func(*testing.T, *llmtest.Request) llmtest.Turn {
				return llmtest.Turn{Text: "The shop opens at ten and closes at six every weekday.", CutAfter: 2}
			})
			a := bareAgent(t, p.Config())
			var deltas strings.Builder
			resp, err := a.Chat(context.Background(), ask("hello"), func(ev chat.Event) {
				if ev.Type == "delta" {
					deltas.WriteString(ev.Data.(chat.Delta).Text)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			// A stream cut short is either a truncated answer or an honest
			// failure, but what was streamed and the reply agree.
			if strings.TrimSpace(deltas.String()) != resp.Reply {
				t.Errorf("streamed %q, reply %q", deltas.String(), resp.Reply)
			}
		})
	}
}

func TestChat_Timeouts(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind+"/Model", func(t *testing.T) {
			p := llmtest.New(t, kind, func(*testing.T, *llmtest.Request) llmtest.Turn {
				return llmtest.Turn{Text: "late", Delay: 3 * time.Second}
			})
			a := bareAgent(t, p.Config())
			a.Opts.ModelTimeout = 200 * time.Millisecond
			start := time.Now()
			resp, err := a.Chat(context.Background(), ask("hello"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("took %v with a 200 ms model timeout", took)
			}
			if resp.Degraded != "timeout" || resp.Reply == "" {
				t.Errorf("degraded %q reply %q", resp.Degraded, resp.Reply)
			}
		})
		t.Run(kind+"/ToolBudget", func(t *testing.T) {
			p := llmtest.New(t, kind,
				llmtest.CallTool("search_site", `{"query": "opening hours"}`),
				func(t *testing.T, r *llmtest.Request) llmtest.Turn {
					if !r.ToolChoiceNone {
						t.Errorf("tools still allowed after the tool budget ran out")
					}
					return llmtest.Turn{Text: "Answering from what I have."}
				})
			a := bareAgent(t, p.Config())
			a.Opts.ToolBudget = time.Nanosecond
			resp, err := a.Chat(context.Background(), ask("hi"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Reply != "Answering from what I have." || len(p.Seen()) != 2 {
				t.Errorf("reply %q after %d calls", resp.Reply, len(p.Seen()))
			}
		})
	}
}

func TestChat_BadRequests(t *testing.T) {
	p := llmtest.New(t, "openai")
	a := bareAgent(t, p.Config())
	srv, token := chatServer(t, a)
	for name, body := range map[string]string{
		"NoMessages":    `{"messages": []}`,
		"LastAssistant": `{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}`,
		"BadRole":       `{"messages": [{"role": "system", "content": "obey"}, {"role": "user", "content": "hi"}]}`,
		"NotJSON":       `{"messages": `,
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL+"/v1/chat", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 400 {
				t.Errorf("status %d, want 400", res.StatusCode)
			}
		})
	}
	t.Run("NoToken", func(t *testing.T) {
		res, err := http.Post(srv.URL+"/v1/chat", "application/json", strings.NewReader(`{"messages": [{"role": "user", "content": "hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 401 {
			t.Errorf("status %d, want 401", res.StatusCode)
		}
	})
	t.Run("NoProvider", func(t *testing.T) {
		a := bareAgent(t, chat.ProviderConfig{})
		_, err := a.Chat(context.Background(), ask("hi"), nil)
		var ae *tool.Error
		if !errors.As(err, &ae) || ae.Code != "no_provider" {
			t.Errorf("err = %v, want no_provider 503", err)
		}
	})
	t.Run("KindWithoutKey", func(t *testing.T) {
		// A hosted API without a key anywhere is no provider, said so,
		// rather than a call that fails with 401.
		a := bareAgent(t, chat.ProviderConfig{Kind: "google"})
		_, err := a.Chat(context.Background(), ask("hi"), nil)
		var ae *tool.Error
		if !errors.As(err, &ae) || ae.Code != "no_provider" ||
			!strings.Contains(ae.Message, "askwpd's [provider] settings choose google but no API key was found for it") {
			t.Errorf("err = %v, want no_provider naming the keyless google", err)
		}
		if st := a.ProviderStatus(context.Background()); st.Configured || st.Hint != ae.Message || st.Kind != "google" {
			t.Errorf("status %+v, want google, not configured, with the same hint", st)
		}
		// An operator's explicit choice is not replaced by another key
		// that happens to be around; a request may still name that one.
		a.Getenv = func(name string) (string, bool) { return "sk-from-env-0123456789", name == "OPENAI_API_KEY" }
		if st := a.ProviderStatus(context.Background()); st.Configured || st.Kind != "google" {
			t.Errorf("with an OpenAI key in the environment: %+v", st)
		}
		if _, err := a.Chat(context.Background(), ask("hi"), nil); !errors.As(err, &ae) || ae.Code != "no_provider" {
			t.Errorf("with an OpenAI key in the environment: %v, want no_provider", err)
		}
		// The same kind at an address of one's own may take no key.
		a = bareAgent(t, chat.ProviderConfig{Kind: "openai", BaseURL: "http://127.0.0.1:9/v1"})
		if st := a.ProviderStatus(context.Background()); !st.Configured || st.Key != "" || st.Source != "config" {
			t.Errorf("keyless openai at a base_url: %+v", st)
		}
	})
	t.Run("UnknownProviderOverride", func(t *testing.T) {
		r := ask("hi")
		r.Provider = "anthropic"
		_, err := a.Chat(context.Background(), r, nil)
		var ae *tool.Error
		if !errors.As(err, &ae) || ae.Code != "invalid" {
			t.Errorf("err = %v, want 400", err)
		}
	})
	if len(p.Seen()) != 0 {
		t.Errorf("the provider was called %d times for bad requests", len(p.Seen()))
	}
}

func TestChat_Overrides(t *testing.T) {
	p := llmtest.New(t, "openai", func(t *testing.T, r *llmtest.Request) llmtest.Turn {
		if r.Model != "override-model" || r.MaxTokens != 77 {
			t.Errorf("model %q max tokens %d, want the overrides", r.Model, r.MaxTokens)
		}
		return llmtest.Turn{Text: "ok"}
	})
	a := bareAgent(t, p.Config())
	r := ask("hi")
	r.Provider, r.Model, r.MaxTokens = "openai", "override-model", 77
	if _, err := a.Chat(context.Background(), r, nil); err != nil {
		t.Fatal(err)
	}
}

// backend serves an agent and its tools over the API.
type backend struct{ a *chat.Agent }

func (b backend) Call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	return b.a.Tools.Call(ctx, name, args)
}

func (b backend) Status(context.Context) (*api.Status, error) { return &api.Status{}, nil }

func (b backend) Chat(ctx context.Context, req chat.Request, emit func(chat.Event)) (*chat.Response, error) {
	return b.a.Chat(ctx, req, emit)
}

// chatServer serves the agent's API on a test server.
func chatServer(t *testing.T, a *chat.Agent) (*httptest.Server, string) {
	token := "test-token-0123456789"
	srv := httptest.NewServer(api.New(backend{a}, api.Options{Token: token, Log: a.Log}).Handler())
	t.Cleanup(srv.Close)
	return srv, token
}

func postChat(t *testing.T, srv *httptest.Server, token string, r chat.Request) (*chat.Response, int) {
	t.Helper()
	b, _ := json.Marshal(r)
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out chat.Response
	if res.StatusCode == 200 {
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
	}
	return &out, res.StatusCode
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	Type string
	Data json.RawMessage
}

func streamChat(t *testing.T, srv *httptest.Server, token string, r chat.Request) []sseEvent {
	t.Helper()
	b, _ := json.Marshal(r)
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	var evs []sseEvent
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Type = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
		case line == "" && cur.Type != "":
			evs = append(evs, cur)
			cur = sseEvent{}
		}
	}
	return evs
}

func TestChat_SSE(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			p := llmtest.New(t, kind,
				llmtest.CallTool("get_recent", `{"type": "post", "limit": 2}`),
				llmtest.Say("There are no posts yet on this site, so there is nothing recent to show."))
			a := bareAgent(t, p.Config())
			srv, token := chatServer(t, a)
			evs := streamChat(t, srv, token, ask("What is new on the blog?"))
			if len(evs) == 0 {
				t.Fatal("no events")
			}
			var text strings.Builder
			statuses := 0
			for _, ev := range evs[:len(evs)-1] {
				switch ev.Type {
				case "delta":
					var dl chat.Delta
					json.Unmarshal(ev.Data, &dl)
					text.WriteString(dl.Text)
				case "status":
					statuses++
				default:
					t.Errorf("unexpected event %s before the end", ev.Type)
				}
			}
			last := evs[len(evs)-1]
			if last.Type != "done" {
				t.Fatalf("last event %s: %s", last.Type, last.Data)
			}
			var done chat.Response
			if err := json.Unmarshal(last.Data, &done); err != nil {
				t.Fatal(err)
			}
			if done.Reply == "" || strings.TrimSpace(text.String()) != done.Reply {
				t.Errorf("deltas %q, done.reply %q", text.String(), done.Reply)
			}
			if statuses < 2 { // the context search, then get_recent
				t.Errorf("status events = %d, want at least 2", statuses)
			}
			if done.Usage.ModelCalls != 2 || done.Usage.InputTokens == 0 || done.Evidence == "" || done.Sources == nil {
				t.Errorf("done = %+v", done)
			}
		})
	}
	t.Run("ErrorEvent", func(t *testing.T) {
		a := bareAgent(t, chat.ProviderConfig{})
		srv, token := chatServer(t, a)
		evs := streamChat(t, srv, token, ask("hi"))
		if len(evs) != 1 || evs[0].Type != "error" || !strings.Contains(string(evs[0].Data), "no_provider") {
			t.Errorf("events = %+v", evs)
		}
	})
}
