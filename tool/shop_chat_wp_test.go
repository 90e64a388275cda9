package tool_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/internal/llmtest"
)

// The chat over the shop: what the model is given to state a price and
// stock from. The model is scripted (an LLM is the one part a test may
// script); the tools, the index and WordPress are real.
func TestShop_ChatStatesPriceFromProductFields(t *testing.T) {
	svc := shopSite(t)
	p := llmtest.New(t, "openai",
		func(t *testing.T, r *llmtest.Request) llmtest.Turn {
			if !strings.Contains(r.System, `only from a result's or page's "product" fields`) {
				t.Errorf("system prompt lacks the price rule:\n%s", r.System)
			}
			return llmtest.Turn{Calls: []llmtest.ScriptCall{{Name: "search_site",
				Args: `{"query": "blue mug", "filters": {"in_stock": true, "price_max": 20}}`}}}
		},
		func(t *testing.T, r *llmtest.Request) llmtest.Turn {
			res := r.LastResults()
			if len(res) != 1 || !strings.Contains(res[0].Text, `"url":"`+svc.Crawler.Site.URL+`/product/stoneware-mug/"`) ||
				!strings.Contains(res[0].Text, `"price":15,"currency":"USD","availability":"InStock","in_stock":true`) {
				t.Errorf("the filtered search's result given to the model lacks the mug's product fields: %+v", res)
			}
			return llmtest.Turn{Text: "Yes: the Stoneware Mug is 15 USD and in stock."}
		})
	a := &chat.Agent{Tools: svc, Site: chat.Site{URL: svc.Crawler.Site.URL}, Log: slog.New(slog.NewTextHandler(testLog{t}, nil)),
		Provider: p.Config(), Opts: chat.Options{RetryBase: time.Millisecond, RetryMax: 10 * time.Millisecond},
		Getenv: func(string) (string, bool) { return "", false }}
	resp, err := a.Chat(context.Background(), chat.Request{Messages: []chat.Message{{Role: "user",
		Content: "Do you have a blue mug under 20 in stock?"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Seen()); n != 2 {
		t.Fatalf("model calls = %d, want 2", n)
	}
	// The first pass, before any tool call, shows the products it found
	// with their fields.
	if sys := p.Seen()[0].System; !strings.Contains(sys, `/product/stoneware-mug/"`) || !strings.Contains(sys, `product="{\"name\":\"Stoneware Mug\"`) {
		t.Errorf("first-pass evidence lacks the mug's product: %s", sys)
	}
	if !strings.Contains(resp.Reply, "15 USD") {
		t.Errorf("reply = %q", resp.Reply)
	}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
