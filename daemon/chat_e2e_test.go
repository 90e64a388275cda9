package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/llmtest"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// The chat's quality gates, end to end: the real test WordPress,
// indexed by the real daemon from wp_root alone, and the chat loop driven
// by a scripted provider speaking each provider's wire protocol. With
// ASKWPD_TEST_OPENAI_KEY or ASKWPD_TEST_ANTHROPIC_KEY set, each gate also
// runs against the real provider, checking outcomes only.

// chatSite is the shared daemon over the indexed test site, with fast
// provider retries.
func chatSite(t *testing.T) (*Daemon, *wptest.Site) {
	t.Helper()
	d, site := indexedDaemon(t)
	d.Agent.Opts = chat.Options{RetryBase: time.Millisecond}
	return d, site
}

// TestChatGates runs the gates under one hold of the site lock: they read
// WordPress's exact content, and one test changes its options.
func TestChatGates(t *testing.T) {
	d, site := chatSite(t)
	for _, g := range []struct {
		name string
		fn   func(*testing.T, *Daemon, *wptest.Site)
	}{
		{"1_FreshSiteWorks", gate1FreshSiteWorks},
		{"2_MostRecentPost", gate2MostRecentPost},
		{"3_SpecificPost", gate3SpecificPost},
		{"4_ThinPage", gate4ThinPage},
		{"5_NoPasteRequests", gate5NoPasteRequests},
		{"6_FabricatedQuoteIsCorrected", gate6FabricatedQuoteIsCorrected},
		{"ProviderFromWPOptions", providerFromWPOptions},
		{"MetricsCountTheTurn", metricsCountTheTurn},
	} {
		t.Run(g.name, func(t *testing.T) { g.fn(t, d, site) })
	}
}

// gateProvider is one way of answering: scripted in a protocol, or real.
type gateProvider struct {
	name string
	kind string
	real config.ProviderConfig // set for a real provider
}

func gateProviders() []gateProvider {
	ps := []gateProvider{{name: "scripted-openai", kind: "openai"}, {name: "scripted-anthropic", kind: "anthropic"}}
	if k := os.Getenv("ASKWPD_TEST_OPENAI_KEY"); k != "" {
		ps = append(ps, gateProvider{name: "real-openai", real: config.ProviderConfig{Kind: "openai", APIKey: k, Model: os.Getenv("ASKWPD_TEST_OPENAI_MODEL")}})
	}
	if k := os.Getenv("ASKWPD_TEST_ANTHROPIC_KEY"); k != "" {
		ps = append(ps, gateProvider{name: "real-anthropic", real: config.ProviderConfig{Kind: "anthropic", APIKey: k, Model: os.Getenv("ASKWPD_TEST_ANTHROPIC_MODEL")}})
	}
	return ps
}

// runGate asks the question with each provider; steps script the fake
// ones, check judges every outcome.
// The caller holds the site lock (chatSite); subtests must not take it
// again, since flock locks conflict within one process too.
func runGate(t *testing.T, d *Daemon, req chat.Request, steps []llmtest.Step, check func(t *testing.T, d *Daemon, resp *chat.Response, events []chat.Event)) {
	for _, gp := range gateProviders() {
		t.Run(gp.name, func(t *testing.T) {
			var p *llmtest.Provider
			if gp.real.Kind != "" {
				d.Agent.Provider = chat.ProviderConfig(gp.real)
			} else {
				p = llmtest.New(t, gp.kind, steps...)
				d.Agent.Provider = chat.ProviderConfig(p.Config())
			}
			t.Cleanup(func() { d.Agent.Provider = chat.ProviderConfig{} })
			var events []chat.Event
			resp, err := d.Chat(context.Background(), req, func(ev chat.Event) { events = append(events, ev) })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("reply: %s\nsources: %+v\nevidence: %s", resp.Reply, resp.Sources, resp.Evidence)
			if p != nil && len(p.Seen()) != len(steps) {
				t.Errorf("model calls = %d, want %d", len(p.Seen()), len(steps))
			}
			if resp.Degraded != "" {
				t.Fatalf("degraded reply: %s", resp.Degraded)
			}
			if asksForPageContent(resp.Reply) {
				t.Errorf("the reply asks to paste site content: %q", resp.Reply)
			}
			assertVerbatim(t, d, resp)
			check(t, d, resp, events)
		})
	}
}

// assertVerbatim checks every source independently of the chat code: the
// quote is the stored body at its offsets, and a tool retrieved the page.
func assertVerbatim(t *testing.T, d *Daemon, resp *chat.Response) {
	t.Helper()
	for _, s := range resp.Sources {
		doc, err := d.Store.FindDocument(context.Background(), s.URL, false)
		if err != nil {
			t.Errorf("source %s: %v", s.URL, err)
			continue
		}
		body := []rune(doc.Body)
		if s.Start < 0 || s.End > len(body) || s.Start >= s.End || string(body[s.Start:s.End]) != s.Quote {
			t.Errorf("source %s: quote %q is not the body at %d:%d", s.URL, s.Quote, s.Start, s.End)
		}
		args, _ := json.Marshal(tool.QuoteArgs{URL: s.URL, Quote: s.Quote})
		res, err := d.Call(context.Background(), "verify_quote", args)
		if err != nil {
			t.Errorf("verify_quote %s: %v", s.URL, err)
		} else if b, _ := json.Marshal(res); !strings.Contains(string(b), `"found":true`) {
			t.Errorf("verify_quote does not find %q on %s: %s", s.Quote, s.URL, b)
		}
	}
	if resp.Evidence == "grounded" && len(resp.Sources) == 0 {
		t.Errorf("a grounded answer without sources")
	}
}

var reResult = regexp.MustCompile(`(?s)<result url="([^"]+)" title="([^"]*)"[^>]*>\n(.*?)\n</result>`)

type promptResult struct{ URL, Title, Text string }

func promptResults(system string) []promptResult {
	var out []promptResult
	for _, m := range reResult.FindAllStringSubmatch(system, -1) {
		out = append(out, promptResult{m[1], m[2], m[3]})
	}
	return out
}

// plainSentence is a sentence of Markdown with at least n words and no
// markup, for a script to quote.
func plainSentence(md string, n int) string {
	for _, line := range strings.Split(md, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.ContainsAny(line[:1], "#|>-*`![0123456789") || strings.ContainsAny(line, "*_`[]|") {
			continue
		}
		for _, s := range regexp.MustCompile(`[^.!?]+[.!?]`).FindAllString(line, -1) {
			s = strings.TrimSpace(s)
			if len(strings.Fields(s)) >= n && !strings.ContainsAny(s, `"“”`) {
				return s
			}
		}
	}
	return ""
}

// publicPosts are WordPress's public posts, newest first.
func publicPosts(t *testing.T, site *wptest.Site) []struct{ Title, URL, Published string } {
	var out []struct{ Title, URL, Published string }
	for _, p := range site.Truth(t).Public {
		if p.Type == "post" {
			out = append(out, struct{ Title, URL, Published string }{p.Title, crawl.Canonical(p.URL), p.Published})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, _ := time.Parse(time.RFC3339, out[i].Published)
		b, _ := time.Parse(time.RFC3339, out[j].Published)
		return a.After(b)
	})
	if len(out) == 0 {
		t.Fatal("the test site has no public posts")
	}
	return out
}

func autoCalled(resp *chat.Response, name string) bool {
	for _, c := range resp.ToolCalls {
		if c.Auto && c.Name == name && c.OK {
			return true
		}
	}
	return false
}

func modelCalled(resp *chat.Response, name string) bool {
	for _, c := range resp.ToolCalls {
		if !c.Auto && c.Name == name && c.OK {
			return true
		}
	}
	return false
}

// A fresh site works with no retrieval setup: the first question
// about its content is answered from its pages, with sources.
func gate1FreshSiteWorks(t *testing.T, d *Daemon, site *wptest.Site) {
	posts := publicPosts(t, site)
	post := posts[len(posts)-1]
	q := fmt.Sprintf("Do you have anything on %s?", strings.ToLower(post.Title))
	var quoted string
	runGate(t, d, ask(q), []llmtest.Step{func(t *testing.T, r *llmtest.Request) llmtest.Turn {
		res := promptResults(r.System)
		if len(res) == 0 {
			t.Fatalf("no evidence in the context for %q:\n%s", q, r.System)
		}
		found := false
		for _, e := range res {
			if e.URL == post.URL {
				found = true
				quoted = plainSentence(e.Text, 5)
			}
		}
		if !found {
			t.Fatalf("the context's evidence misses %s: %+v", post.URL, res)
		}
		for _, rule := range []string{"Answer from evidence", "Never ask the user to paste", "never present an inference", "Be brief"} {
			if !strings.Contains(strings.ToLower(r.System), strings.ToLower(rule)) {
				t.Errorf("system prompt lacks the rule %q", rule)
			}
		}
		text := fmt.Sprintf("Yes: the post %s covers it.", post.Title)
		if quoted != "" {
			text += fmt.Sprintf(" It says: %q", quoted)
		}
		return llmtest.Turn{Text: text}
	}}, func(t *testing.T, d *Daemon, resp *chat.Response, _ []chat.Event) {
		if resp.Evidence != "grounded" {
			t.Errorf("evidence = %s, want grounded", resp.Evidence)
		}
		if !hasSource(resp, post.URL) {
			t.Errorf("sources miss %s", post.URL)
		}
		if !autoCalled(resp, "search_site") {
			t.Errorf("the context builder did not search: %+v", resp.ToolCalls)
		}
	})
}

func hasSource(resp *chat.Response, u string) bool {
	for _, s := range resp.Sources {
		if s.URL == u {
			return true
		}
	}
	return false
}

// "What is the most recent blog post?" gets the real newest post's
// URL and date into the sources.
func gate2MostRecentPost(t *testing.T, d *Daemon, site *wptest.Site) {
	newest := publicPosts(t, site)[0]
	wantDate, _ := time.Parse(time.RFC3339, newest.Published)
	runGate(t, d, ask("What is the most recent blog post?"), []llmtest.Step{
		func(t *testing.T, r *llmtest.Request) llmtest.Turn {
			if !strings.Contains(r.System, "<recent>") {
				t.Errorf("a temporal question without recent posts in the context")
			}
			return llmtest.Turn{Calls: []llmtest.ScriptCall{{Name: "get_recent", Args: `{"type": "post", "limit": 1}`}}}
		},
		func(t *testing.T, r *llmtest.Request) llmtest.Turn {
			res := r.LastResults()
			if len(res) != 1 || res[0].IsError {
				t.Fatalf("get_recent result: %+v", res)
			}
			var rr tool.RecentResponse
			if err := json.Unmarshal([]byte(res[0].Text), &rr); err != nil || len(rr.Results) != 1 {
				t.Fatalf("get_recent result %s: %v", res[0].Text, err)
			}
			top := rr.Results[0]
			if top.URL != newest.URL {
				t.Errorf("get_recent gave %s, WordPress's newest is %s", top.URL, newest.URL)
			}
			return llmtest.Turn{Text: fmt.Sprintf("The most recent post is %s, published on %s.", top.Title, top.Published[:10])}
		},
	}, func(t *testing.T, d *Daemon, resp *chat.Response, _ []chat.Event) {
		var src *chat.Source
		for i := range resp.Sources {
			if resp.Sources[i].URL == newest.URL {
				src = &resp.Sources[i]
			}
		}
		if src == nil {
			t.Fatalf("sources %+v miss the newest post %s", resp.Sources, newest.URL)
		}
		got, err := time.Parse(time.RFC3339, src.Published)
		if err != nil || !got.Equal(wantDate) {
			t.Errorf("source published %q, WordPress says %s", src.Published, newest.Published)
		}
		if !strings.Contains(resp.Reply, wantDate.UTC().Format("2006-01-02")) && !strings.Contains(resp.Reply, newest.Title) {
			t.Errorf("the reply names neither the newest post nor its date: %q", resp.Reply)
		}
	})
}

// A question about a specific post uses evidence from that post.
func gate3SpecificPost(t *testing.T, d *Daemon, site *wptest.Site) {
	posts := publicPosts(t, site)
	post := posts[len(posts)/2]
	doc, err := d.Store.FindDocument(context.Background(), post.URL, false)
	if err != nil {
		t.Fatal(err)
	}
	want := plainSentence(doc.Body, 6)
	if want == "" {
		t.Fatalf("post %s has no plain sentence to quote", post.URL)
	}
	q := fmt.Sprintf("What does the post about %s say?", strings.ToLower(post.Title))
	runGate(t, d, ask(q), []llmtest.Step{
		llmtest.CallTool("search_site", fmt.Sprintf(`{"query": %q}`, post.Title)),
		func(t *testing.T, r *llmtest.Request) llmtest.Turn {
			var sr tool.SearchResponse
			if err := json.Unmarshal([]byte(r.LastResults()[0].Text), &sr); err != nil || len(sr.Results) == 0 {
				t.Fatalf("search_site result: %v", err)
			}
			if sr.Results[0].URL != post.URL {
				t.Errorf("search_site's top result %s, want %s", sr.Results[0].URL, post.URL)
			}
			return llmtest.Turn{Calls: []llmtest.ScriptCall{{Name: "get_document", Args: fmt.Sprintf(`{"id_or_url": %q}`, sr.Results[0].URL)}}}
		},
		func(t *testing.T, r *llmtest.Request) llmtest.Turn {
			var dr tool.DocumentResponse
			if err := json.Unmarshal([]byte(r.LastResults()[0].Text), &dr); err != nil {
				t.Fatalf("get_document result: %v", err)
			}
			if !strings.Contains(dr.Content, want) {
				t.Errorf("get_document's content lacks %q", want)
			}
			return llmtest.Turn{Text: fmt.Sprintf("The post %s explains it. In its words: “%s”", dr.Title, want)}
		},
	}, func(t *testing.T, d *Daemon, resp *chat.Response, _ []chat.Event) {
		if resp.Evidence != "grounded" {
			t.Errorf("evidence %s, want grounded", resp.Evidence)
		}
		if !hasSource(resp, post.URL) {
			t.Fatalf("sources %+v miss %s", resp.Sources, post.URL)
		}
	})
	// The scripted run quotes exactly; check that quote became the source.
	d.Agent.Provider = chat.ProviderConfig{}
	p := llmtest.New(t, "openai", llmtest.CallTool("get_document", fmt.Sprintf(`{"id_or_url": %q}`, post.URL)),
		llmtest.Say(fmt.Sprintf("It says “%s”", want)))
	d.Agent.Provider = chat.ProviderConfig(p.Config())
	defer func() { d.Agent.Provider = chat.ProviderConfig{} }()
	resp, err := d.Chat(context.Background(), ask(q), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Sources) == 0 || resp.Sources[0].URL != post.URL || resp.Sources[0].Quote != want {
		t.Errorf("first source %+v, want the quoted sentence of %s", resp.Sources, post.URL)
	}
	if !modelCalled(resp, "get_document") {
		t.Errorf("tool calls %+v", resp.ToolCalls)
	}
}

// A thin page does not dead-end: related pages and recent posts
// are searched first, and the answer is a labeled inference.
func gate4ThinPage(t *testing.T, d *Daemon, site *wptest.Site) {
	docs, err := d.Store.ListDocuments(context.Background(), store.DocumentFilter{PostType: "any"})
	if err != nil {
		t.Fatal(err)
	}
	var thin *store.Document
	for _, doc := range docs {
		if doc.Thin {
			thin = doc
			break
		}
	}
	if thin == nil {
		t.Fatal("the test site has no thin page")
	}
	req := ask("What is this page about?")
	req.PageURL, req.PageTitle = thin.URL, thin.Title
	runGate(t, d, req, []llmtest.Step{func(t *testing.T, r *llmtest.Request) llmtest.Turn {
		for _, want := range []string{`thin="true"`, thin.URL, "<recent>", `"Inference:"`} {
			if !strings.Contains(r.System, want) {
				t.Errorf("context lacks %s", want)
			}
		}
		return llmtest.Turn{Text: fmt.Sprintf("The page %s has almost no content yet. Inference: it is a placeholder for something the site will describe later; the newest posts may say more.", thin.Title)}
	}}, func(t *testing.T, d *Daemon, resp *chat.Response, _ []chat.Event) {
		if !strings.Contains(resp.Reply, "Inference:") {
			t.Errorf("the reply has no labeled inference: %q", resp.Reply)
		}
		if !autoCalled(resp, "get_recent") || !autoCalled(resp, "search_site") {
			t.Errorf("the thin page did not trigger related searches: %+v", resp.ToolCalls)
		}
		if resp.Evidence == "none" {
			t.Errorf("evidence none after searching related pages")
		}
	})
}

// No reply asks to paste content the tools can fetch. The scripted model
// tries, in words the validator's own examples do not use; the validator
// catches it and the model is corrected, and the test's oracle judges the
// replies.
func gate5NoPasteRequests(t *testing.T, d *Daemon, site *wptest.Site) {
	var page struct{ Title, URL string }
	for _, p := range site.Truth(t).Public {
		if p.Type == "page" {
			if doc, err := d.Store.FindDocument(context.Background(), crawl.Canonical(p.URL), false); err == nil && !doc.Thin {
				page.Title, page.URL = p.Title, crawl.Canonical(p.URL)
				break
			}
		}
	}
	if page.URL == "" {
		t.Fatal("no non-thin page on the test site")
	}
	q := "Can you summarize " + page.URL + " for me?"
	runGate(t, d, ask(q), []llmtest.Step{
		llmtest.Say("Sorry, I’m not able to open " + page.URL + " from here. Would you mind dropping its text into the chat?"),
		func(t *testing.T, r *llmtest.Request) llmtest.Turn {
			if !strings.Contains(r.LastUser(), "[askwpd check]") || !strings.Contains(r.LastUser(), "get_document") {
				t.Errorf("no correction after a paste request; last user message: %q", r.LastUser())
			}
			if r.ToolChoiceNone {
				t.Errorf("tools are forbidden for the corrected reply")
			}
			return llmtest.Turn{Calls: []llmtest.ScriptCall{{Name: "get_document", Args: fmt.Sprintf(`{"id_or_url": %q}`, page.URL)}}}
		},
		func(t *testing.T, r *llmtest.Request) llmtest.Turn {
			var dr tool.DocumentResponse
			json.Unmarshal([]byte(r.LastResults()[0].Text), &dr)
			return llmtest.Turn{Text: fmt.Sprintf("The page %s says: “%s”", dr.Title, plainSentence(dr.Content, 5))}
		},
	}, func(t *testing.T, d *Daemon, resp *chat.Response, events []chat.Event) {
		if !hasSource(resp, page.URL) {
			t.Errorf("sources %+v miss %s", resp.Sources, page.URL)
		}
		reset := false
		for _, ev := range events {
			if st, ok := ev.Data.(chat.Status); ok && st.Reset {
				reset = true
			}
		}
		if !reset {
			t.Errorf("no reset event before the corrected reply")
		}
	})

	// A model that insists is scrubbed: the user never sees the request.
	p := llmtest.New(t, "anthropic",
		llmtest.Say("Mind sending over the wording of "+page.URL+"? I’ll summarize it then."),
		llmtest.Say("I have no way of viewing that page myself. If you share what it says, I’ll go from there."))
	d.Agent.Provider = chat.ProviderConfig(p.Config())
	defer func() { d.Agent.Provider = chat.ProviderConfig{} }()
	resp, err := d.Chat(context.Background(), ask(q), nil)
	if err != nil {
		t.Fatal(err)
	}
	if asksForPageContent(resp.Reply) || resp.Reply == "" {
		t.Errorf("insisting model's reply not scrubbed: %q", resp.Reply)
	}
}

// Every gate checks sources (assertVerbatim): they come with a
// grounded answer, each quote is the stored text at its offsets, and
// verify_quote agrees. This test adds the case of a fabricated quote.
func gate6FabricatedQuoteIsCorrected(t *testing.T, d *Daemon, site *wptest.Site) {
	post := publicPosts(t, site)[0]
	p := llmtest.New(t, "openai",
		llmtest.Say(fmt.Sprintf("The post %s says “we never measured anything at all in this workshop”.", post.Title)),
		func(t *testing.T, r *llmtest.Request) llmtest.Turn {
			if !strings.Contains(r.LastUser(), "do not appear on any page") {
				t.Errorf("no correction for a fabricated quote: %q", r.LastUser())
			}
			return llmtest.Turn{Text: fmt.Sprintf("The post %s is the newest on the site.", post.Title)}
		})
	d.Agent.Provider = chat.ProviderConfig(p.Config())
	defer func() { d.Agent.Provider = chat.ProviderConfig{} }()
	resp, err := d.Chat(context.Background(), ask("What is the latest post about?"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(resp.Reply, "never measured") {
		t.Errorf("fabricated quote survived: %q", resp.Reply)
	}
	assertVerbatim(t, d, resp)
	if len(p.Seen()) != 2 {
		t.Errorf("model calls %d, want 2", len(p.Seen()))
	}
}

// AskWP's own options in wp_options configure the provider when askwpd
// has none: here Ollama, at the scripted server's address.
func providerFromWPOptions(t *testing.T, d *Daemon, site *wptest.Site) {
	p := llmtest.New(t, "openai", func(t *testing.T, r *llmtest.Request) llmtest.Turn {
		if r.Model != "llama3.2" {
			t.Errorf("model %q, want llama3.2 from askwp_model", r.Model)
		}
		if !strings.Contains(r.System, "Always end with a haiku about bread") {
			t.Errorf("askwp_system_instructions missing from the system prompt")
		}
		return llmtest.Turn{Text: "Hello from Ollama."}
	})
	set := map[string]string{
		"askwp_llm_provider":        "ollama",
		"askwp_ollama_endpoint":     p.Srv.URL,
		"askwp_model":               "llama3.2",
		"askwp_system_instructions": "Always end with a haiku about bread.",
	}
	var php strings.Builder
	for k, v := range set {
		fmt.Fprintf(&php, "update_option(%q, %q);", k, v)
	}
	site.PHP(t, php.String())
	t.Cleanup(func() {
		var del strings.Builder
		for k := range set {
			fmt.Fprintf(&del, "delete_option(%q);", k)
		}
		site.PHP(t, del.String())
		freshAgent(d)
	})
	freshAgent(d) // forget the AskWP options the agent read before
	d.Agent.Provider = chat.ProviderConfig{}
	resp, err := d.Chat(context.Background(), ask("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Reply != "Hello from Ollama." || !strings.HasPrefix(resp.Provider, "openai-compatible/") {
		t.Errorf("reply %q provider %q", resp.Reply, resp.Provider)
	}
	if len(p.Seen()) != 1 || p.Seen()[0].Path != "/v1/chat/completions" {
		t.Errorf("requests %d", len(p.Seen()))
	}
}

// metricsCountTheTurn: a chat turn shows in /metrics as one response, cited
// or not, with its tool calls in the histogram.
func metricsCountTheTurn(t *testing.T, d *Daemon, site *wptest.Site) {
	post := publicPosts(t, site)[0]
	p := llmtest.New(t, "openai", func(t *testing.T, r *llmtest.Request) llmtest.Turn {
		for _, e := range promptResults(r.System) {
			if q := plainSentence(e.Text, 5); q != "" {
				return llmtest.Turn{Text: fmt.Sprintf("The page %s says: %q", e.URL, q)}
			}
		}
		return llmtest.Turn{Text: "I found nothing on that."}
	})
	d.Agent.Provider = chat.ProviderConfig(p.Config())
	defer func() { d.Agent.Provider = chat.ProviderConfig{} }()
	const cited, none = `askwpd_chat_responses_total{evidence="cited"}`, `askwpd_chat_responses_total{evidence="none"}`
	before := scrape(t, d)
	resp, err := d.Chat(context.Background(), ask("What does "+post.Title+" say?"), nil)
	if err != nil {
		t.Fatal(err)
	}
	after := scrape(t, d)
	want := none
	if len(resp.Sources) > 0 {
		want = cited
	}
	if got := after[want] - before[want]; got != 1 {
		t.Errorf("%s went up by %v, want 1 (sources: %d)", want, got, len(resp.Sources))
	}
	if got := after[cited] + after[none] - before[cited] - before[none]; got != 1 {
		t.Errorf("chat responses went up by %v, want 1", got)
	}
	if got := after["askwpd_chat_tool_calls_count"] - before["askwpd_chat_tool_calls_count"]; got != 1 {
		t.Errorf("askwpd_chat_tool_calls_count went up by %v, want 1", got)
	}
	if got, calls := after["askwpd_chat_tool_calls_sum"]-before["askwpd_chat_tool_calls_sum"], len(resp.ToolCalls); got != float64(calls) || calls == 0 {
		t.Errorf("askwpd_chat_tool_calls_sum went up by %v; the turn made %d tool calls", got, calls)
	}
}

// scrape reads /metrics into sample name (with labels) → value.
func scrape(t *testing.T, d *Daemon) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	d.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); i > 0 && err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// freshAgent replaces d's agent with a new one of the same settings, so
// nothing it kept (AskWP's options, provider clients) carries over.
func freshAgent(d *Daemon) {
	a := d.Agent
	d.Agent = &chat.Agent{Tools: a.Tools, Reader: a.Reader, Site: a.Site, Log: a.Log, Opts: a.Opts, Provider: a.Provider, SiteOption: a.SiteOption,
		SiteConstants: a.SiteConstants, Getenv: a.Getenv, OnResponse: a.OnResponse}
}

func ask(q string) chat.Request {
	return chat.Request{Messages: []chat.Message{{Role: "user", Content: q}}}
}
