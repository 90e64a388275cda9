package daemon

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/internal/llmtest"
)

// The chat gate end to end: the real daemon over the indexed test site,
// its HTTP API, and a scripted provider that holds each answer long enough
// for turns to overlap.
func TestChatGateCapAndBudget(t *testing.T) {
	d, _ := chatSite(t)
	ctx := context.Background()
	const metaKey = "chat_model_calls"
	if err := d.Store.SetMeta(ctx, metaKey, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Store.SetMeta(ctx, metaKey, "") })

	answer := func(t *testing.T, r *llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: "The site does not say.", Delay: 800 * time.Millisecond}
	}
	p := llmtest.New(t, "openai")
	p.Loop = answer
	d.Agent.Provider = chat.ProviderConfig(p.Config())
	const maxConcurrent, daily = 2, 3
	gate := chat.NewGate(ctx, maxConcurrent, daily, d.Store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	d.Agent.Gate = gate
	t.Cleanup(func() { d.Agent.Provider, d.Agent.Gate = chat.ProviderConfig{}, nil })

	const token = "gate-test-token-0123456789"
	srv := httptest.NewServer(api.New(d, api.Options{Token: token, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ChatGate: gate}).Handler())
	t.Cleanup(srv.Close)
	post := func(accept string) (int, string, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat", strings.NewReader(`{"messages": [{"role": "user", "content": "What are the opening hours?"}]}`))
		req.Header.Set("Authorization", "Bearer "+token)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, "", ""
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Retry-After"), string(b)
	}
	status := func() *chat.GateStatus {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/status", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var st struct {
			Chat *chat.GateStatus `json:"chat"`
		}
		if err := json.NewDecoder(res.Body).Decode(&st); err != nil || st.Chat == nil {
			t.Fatalf("/v1/status has no chat gate: %v", err)
		}
		return st.Chat
	}

	t.Run("OneMoreThanTheCapGets429", func(t *testing.T) {
		type result struct {
			code       int
			retryAfter string
			body       string
		}
		results := make([]result, maxConcurrent+1)
		var wg sync.WaitGroup
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Half stream, half not: the cap holds for both.
				accept := ""
				if i%2 == 1 {
					accept = "text/event-stream"
				}
				code, ra, body := post(accept)
				results[i] = result{code, ra, body}
			}()
		}
		// While the admitted turns wait on the model, /v1/status shows them.
		time.Sleep(300 * time.Millisecond)
		if st := status(); st.InUse != maxConcurrent || st.MaxConcurrent != maxConcurrent {
			t.Errorf("status while busy: in_use %d / max %d, want %d / %d", st.InUse, st.MaxConcurrent, maxConcurrent, maxConcurrent)
		}
		wg.Wait()
		ok, refused := 0, 0
		for _, r := range results {
			switch r.code {
			case http.StatusOK:
				ok++
			case http.StatusTooManyRequests:
				refused++
				if n, err := strconv.Atoi(r.retryAfter); err != nil || n < 1 {
					t.Errorf("429 without a usable Retry-After: %q", r.retryAfter)
				}
				if !strings.Contains(r.body, `"code":"busy"`) {
					t.Errorf("429 body %s, want code busy", r.body)
				}
			default:
				t.Errorf("status %d: %s", r.code, r.body)
			}
		}
		t.Logf("%d concurrent turns, cap %d: %d answered, %d refused", len(results), maxConcurrent, ok, refused)
		if ok != maxConcurrent || refused != 1 {
			t.Errorf("answered %d, refused %d; want %d and 1", ok, refused, maxConcurrent)
		}
		if st := status(); st.InUse != 0 || st.Refused != 1 {
			t.Errorf("after the turns: in_use %d, refused %d; want 0 and 1", st.InUse, st.Refused)
		}
	})

	t.Run("BudgetExhaustion", func(t *testing.T) {
		// The cap test's turns spent some of the budget; one more turn
		// spends the rest, each model call counted once.
		if code, _, body := post(""); code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		st := status()
		if st.ModelCallsToday != len(p.Seen()) || st.ModelCallsToday < daily {
			t.Fatalf("model calls today %d, provider saw %d, budget %d", st.ModelCallsToday, len(p.Seen()), daily)
		}
		seen := len(p.Seen())
		code, ra, body := post("text/event-stream")
		if code != http.StatusTooManyRequests || !strings.Contains(body, `"code":"budget_exhausted"`) {
			t.Fatalf("past the budget: status %d %s, want 429 budget_exhausted", code, body)
		}
		n, err := strconv.Atoi(ra)
		untilMidnight := time.Until(st.BudgetResetsAt).Seconds()
		if err != nil || n < 1 || float64(n) > untilMidnight+2 || float64(n) < untilMidnight-60 {
			t.Errorf("Retry-After %q, want the %0.f s until %s", ra, untilMidnight, st.BudgetResetsAt)
		}
		if len(p.Seen()) != seen {
			t.Errorf("the refused turn reached the provider")
		}
		t.Logf("budget %d spent; Retry-After %s s, resets at %s", daily, ra, st.BudgetResetsAt)

		// A restart reads the day's count back from the store.
		again := chat.NewGate(ctx, maxConcurrent, daily, d.Store, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if got := again.Status().ModelCallsToday; got != st.ModelCallsToday {
			t.Errorf("after a restart the count is %d, want %d", got, st.ModelCallsToday)
		}
		if _, err := again.Admit(); err == nil {
			t.Errorf("after a restart the spent budget admits a turn")
		}
	})

	t.Run("BudgetSpentMidTurnDegrades", func(t *testing.T) {
		// One call left: the model asks for a tool, and its second call is
		// refused by the budget, so the turn ends with an honest reply.
		if err := d.Store.SetMeta(ctx, metaKey, time.Now().UTC().Format(time.DateOnly)+" "+strconv.Itoa(daily-1)); err != nil {
			t.Fatal(err)
		}
		tp := llmtest.New(t, "openai", func(t *testing.T, r *llmtest.Request) llmtest.Turn {
			return llmtest.Turn{Calls: []llmtest.ScriptCall{{Name: "search_site", Args: `{"query": "opening hours"}`}}}
		})
		d.Agent.Provider = chat.ProviderConfig(tp.Config())
		d.Agent.Gate = chat.NewGate(ctx, maxConcurrent, daily, d.Store, slog.New(slog.NewTextHandler(io.Discard, nil)))
		resp, err := d.Chat(ctx, chat.Request{Messages: []chat.Message{{Role: "user", Content: "What are the opening hours?"}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Degraded != "budget_exhausted" || len(tp.Seen()) != 1 || !strings.Contains(resp.Reply, "limit for today") {
			t.Errorf("degraded %q after %d model calls: %q", resp.Degraded, len(tp.Seen()), resp.Reply)
		}
	})
}
