package chat

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/askwp/askwpd/chat/llm"
	"github.com/askwp/askwpd/tool"
)

// providerSettings is the resolved LLM for one chat turn.
type providerSettings struct {
	Kind        string // openai | anthropic | openai-compatible
	Label       string // as configured: openrouter, ollama, …
	BaseURL     string
	Model       string
	APIKey      string
	MaxTokens   int
	Temperature *float64
	// Instructions are the site owner's extra instructions (AskWP's
	// askwp_system_instructions).
	Instructions string
	Source       string // "config" or "wp_options"
}

// AskWP's provider options in wp_options.
var askwpOptionNames = []string{
	"askwp_llm_provider", "askwp_api_key", "askwp_model", "askwp_ollama_endpoint",
	"askwp_max_output_tokens", "askwp_temperature", "askwp_system_instructions",
}

// wpOptionsTTL is how long AskWP's options are kept: reading seven rows
// from MySQL on every chat turn would add to the time to first token.
const wpOptionsTTL = 30 * time.Second

func (a *Agent) askwpOptions(ctx context.Context) (map[string]string, error) {
	if a.SiteOption == nil {
		return map[string]string{}, nil
	}
	a.wpMu.Lock()
	defer a.wpMu.Unlock()
	if a.wpOpts != nil && time.Since(a.wpAt) < wpOptionsTTL {
		return a.wpOpts, nil
	}
	opts := make(map[string]string, len(askwpOptionNames))
	for _, name := range askwpOptionNames {
		v, err := a.SiteOption(ctx, name)
		if err != nil {
			return nil, err
		}
		opts[name] = strings.TrimSpace(v)
	}
	a.wpOpts, a.wpAt = opts, time.Now()
	return opts, nil
}

// providerCandidates are the configured providers: askwpd's own
// [provider] section first, then AskWP's options.
func (a *Agent) providerCandidates(ctx context.Context) ([]providerSettings, string, error) {
	var out []providerSettings
	wpo, err := a.askwpOptions(ctx)
	if err != nil {
		// The site's database being down must not stop a configured
		// provider from answering.
		a.Log.Warn("Unable to read AskWP's provider options", "error", err)
		wpo = map[string]string{}
	}
	instructions := wpo["askwp_system_instructions"]
	if pc := a.Provider; pc.Kind != "" {
		ps := providerSettings{Kind: pc.Kind, Label: pc.Kind, BaseURL: pc.BaseURL, Model: pc.Model, APIKey: pc.APIKey,
			MaxTokens: pc.MaxTokens, Instructions: instructions, Source: "config"}
		if pc.Temperature != 0 {
			t := pc.Temperature
			ps.Temperature = &t
		}
		out = append(out, ps)
	}
	if label := strings.ToLower(wpo["askwp_llm_provider"]); label != "" {
		ps := providerSettings{Label: label, APIKey: wpo["askwp_api_key"], Model: wpo["askwp_model"],
			Instructions: instructions, Source: "wp_options"}
		switch label {
		case "openai", "anthropic":
			ps.Kind = label
		case "openrouter":
			ps.Kind, ps.BaseURL = "openai-compatible", "https://openrouter.ai/api/v1"
		case "ollama":
			ep := strings.TrimRight(wpo["askwp_ollama_endpoint"], "/")
			if ep == "" {
				ep = "http://localhost:11434"
			}
			if !strings.HasSuffix(ep, "/v1") {
				ep += "/v1"
			}
			ps.Kind, ps.BaseURL = "openai-compatible", ep
		default:
			a.Log.Warn("Unknown AskWP provider in wp_options", "askwp_llm_provider", label)
			ps.Kind = ""
		}
		if n, err := strconv.Atoi(wpo["askwp_max_output_tokens"]); err == nil && n > 0 {
			ps.MaxTokens = n
		}
		if t, err := strconv.ParseFloat(wpo["askwp_temperature"], 64); err == nil && wpo["askwp_temperature"] != "" {
			ps.Temperature = &t
		}
		if ps.Kind != "" {
			out = append(out, ps)
		}
	}
	return out, instructions, nil
}

// kindMatches tells whether a requested provider names a candidate.
func kindMatches(want string, ps providerSettings) bool {
	want = strings.ToLower(strings.TrimSpace(want))
	return want == ps.Kind || want == ps.Label ||
		(want == "openai-compatible" && (ps.Label == "openrouter" || ps.Label == "ollama"))
}

// resolveProvider picks the provider for a chat request and applies its
// overrides. Only configured providers can be chosen: a request never
// brings its own key or address.
func (a *Agent) resolveProvider(ctx context.Context, req Request) (providerSettings, error) {
	cands, _, err := a.providerCandidates(ctx)
	if err != nil {
		return providerSettings{}, err
	}
	if len(cands) == 0 {
		return providerSettings{}, &tool.Error{Code: "no_provider",
			Message: "no LLM provider is configured: set [provider] in askwpd's configuration, or choose a provider in AskWP's settings"}
	}
	ps := cands[0]
	if req.Provider != "" {
		found := false
		for _, c := range cands {
			if kindMatches(req.Provider, c) {
				ps, found = c, true
				break
			}
		}
		if !found {
			return providerSettings{}, &tool.Error{Code: "invalid",
				Message: fmt.Sprintf("provider %q is not configured", req.Provider)}
		}
	}
	if req.Model != "" {
		ps.Model = req.Model
	}
	if req.MaxTokens > 0 {
		ps.MaxTokens = min(req.MaxTokens, 16000)
	}
	if req.Temperature != nil {
		t := min(max(*req.Temperature, 0), 2)
		ps.Temperature = &t
	}
	return ps, nil
}

// providerHTTP returns the client every provider client shares, so
// connections to the provider are kept alive between turns: a new TLS
// handshake per turn would cost more than the whole budget for time to
// first token.
func (a *Agent) providerHTTP() *http.Client {
	a.httpOnce.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 16
		t.ResponseHeaderTimeout = 90 * time.Second
		a.http = &http.Client{Transport: t}
	})
	return a.http
}

// newProvider keeps one SDK client per configuration (in a.clients):
// building the OpenAI client wires up every one of its services, which is
// not free.
func (a *Agent) newProvider(ps providerSettings, opt Options) (llm.Provider, error) {
	hc := opt.HTTPClient
	if hc == nil {
		hc = a.providerHTTP()
	}
	cfg := llm.Config{Kind: ps.Kind, BaseURL: ps.BaseURL, Model: ps.Model, APIKey: ps.APIKey, HTTPClient: hc}
	p, ok := a.clients.Load(cfg)
	if !ok {
		np, err := llm.New(cfg)
		if err != nil {
			return nil, &tool.Error{Code: "no_provider", Message: strings.TrimPrefix(err.Error(), "llm: ")}
		}
		p, _ = a.clients.LoadOrStore(cfg, np)
	}
	return llm.Retry{Provider: p.(llm.Provider), Attempts: opt.RetryAttempts, Base: opt.RetryBase, Max: opt.RetryMax}, nil
}
