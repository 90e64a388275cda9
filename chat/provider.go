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
	Kind        string // openai | anthropic | google | openai-compatible
	Label       string // as configured: openrouter, ollama, …
	BaseURL     string
	Model       string
	APIKey      string
	MaxTokens   int
	Temperature *float64
	// Instructions are the site owner's extra instructions (AskWP's
	// askwp_system_instructions).
	Instructions string
	// Source is the layer the provider's key came from (or, for a server
	// that wants none, the layer that chose it): config, askwp_options or
	// connectors. KeyFrom says where exactly, for the status.
	Source  string
	KeyFrom string
}

// Where keys come from, as the status names them.
const (
	keyFromConfig = "askwpd config [provider] api_key"
	keyFromAskWP  = "option askwp_api_key"
)

// needsKey tells whether a provider cannot answer without a key: the
// hosted APIs at their own address. A base_url of one's own (a proxy, a
// local server) may take none.
func (ps providerSettings) needsKey() bool {
	switch {
	case ps.Label == "openrouter":
		return true
	case ps.BaseURL != "":
		return false
	}
	return ps.Kind == "openai" || ps.Kind == "anthropic" || ps.Kind == "google"
}

// askwpProvider is the provider AskWP's options choose, with its key if
// they hold one; ok is false when they choose none.
func (a *Agent) askwpProvider(wpo map[string]string) (providerSettings, bool) {
	label := strings.ToLower(wpo["askwp_llm_provider"])
	if label == "" {
		return providerSettings{}, false
	}
	ps := providerSettings{Label: label, APIKey: wpo["askwp_api_key"], Model: wpo["askwp_model"],
		Instructions: wpo["askwp_system_instructions"], Source: "askwp_options"}
	if ps.APIKey != "" {
		ps.KeyFrom = keyFromAskWP
	}
	switch label {
	case "openai", "anthropic", "google":
		ps.Kind = label
	case "gemini":
		ps.Kind, ps.Label = "google", "google"
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
		return providerSettings{}, false
	}
	if n, err := strconv.Atoi(wpo["askwp_max_output_tokens"]); err == nil && n > 0 {
		ps.MaxTokens = n
	}
	if t, err := strconv.ParseFloat(wpo["askwp_temperature"], 64); err == nil && wpo["askwp_temperature"] != "" {
		ps.Temperature = &t
	}
	return ps, true
}

// providerChoice is what the settings make of the chat's provider.
type providerChoice struct {
	// cands are the usable providers, the default first.
	cands []providerSettings
	// blocked is askwpd's own [provider] choice when it cannot be used:
	// it is the default all the same, so that an operator's explicit
	// choice is never replaced behind their back by another.
	blocked *providerSettings
	// missing says which chosen providers lacked a key or a model.
	missing []string
	readErr error
}

// hint says, when there is no default provider, why and where to set one.
func (c providerChoice) hint() string {
	if c.blocked == nil && len(c.cands) > 0 {
		return ""
	}
	msg := "no LLM provider is configured: save an API key under Settings → Connectors in WordPress (OpenAI, Anthropic or Google), " +
		"choose a provider and key in AskWP's settings, or set [provider] kind and api_key in askwpd's configuration"
	if len(c.missing) > 0 {
		msg += " (" + strings.Join(c.missing, "; ") + ")"
	}
	if c.readErr != nil {
		msg += " (WordPress's settings could not be read: " + c.readErr.Error() + ")"
	}
	return msg
}

// providerCandidates resolves the providers: askwpd's own [provider]
// section, then AskWP's options, then each key saved under WordPress's
// Connectors. A layer that names a provider but no key takes the key of
// the same kind from the layers below it (config from AskWP's options,
// then Connectors; AskWP's options from Connectors), keeping its own
// address and model: a base_url in askwpd's config thereby applies to a
// Connectors key.
func (a *Agent) providerCandidates(ctx context.Context) providerChoice {
	ss := a.settings(ctx)
	ch := providerChoice{readErr: ss.err}
	keys := a.connectorKeys(ss)
	fromConnectors := func(ps *providerSettings) {
		if k, ok := keys[ps.Kind]; ok && ps.APIKey == "" && ps.Label == ps.Kind {
			ps.APIKey, ps.Source, ps.KeyFrom = k.key, "connectors", k.from
		}
	}
	seen := map[string]bool{}
	add := func(ps providerSettings, who string) bool {
		switch {
		case ps.APIKey == "" && ps.needsKey():
			ch.missing = append(ch.missing, fmt.Sprintf("%s choose %s but no API key was found for it", who, ps.Label))
			return false
		case ps.Kind == "openai-compatible" && ps.Model == "":
			ch.missing = append(ch.missing, fmt.Sprintf("%s choose %s but name no model", who, ps.Label))
			return false
		}
		seen[ps.Kind+"/"+ps.Label] = true
		ch.cands = append(ch.cands, ps)
		return true
	}
	askwp, haveAskWP := a.askwpProvider(ss.opts)
	if a.Provider.Kind != "" {
		ps := a.configProvider(ss.opts, askwp, haveAskWP)
		if ps.APIKey == "" {
			fromConnectors(&ps)
		}
		if !add(ps, "askwpd's [provider] settings") {
			ch.blocked = &ps
		}
	}
	if haveAskWP {
		fromConnectors(&askwp)
		add(askwp, "AskWP's settings")
	}
	for _, c := range connectors {
		if k, ok := keys[c.Kind]; ok && !seen[c.Kind+"/"+c.Kind] {
			add(providerSettings{Kind: c.Kind, Label: c.Kind, APIKey: k.key, Instructions: ss.opts["askwp_system_instructions"],
				Source: "connectors", KeyFrom: k.from}, "the Connectors")
		}
	}
	return ch
}

// configProvider is askwpd's own [provider] choice, with what it leaves
// out taken from AskWP's options when they choose the same kind: the
// model, the limits, and the key.
func (a *Agent) configProvider(wpo map[string]string, askwp providerSettings, haveAskWP bool) providerSettings {
	pc := a.Provider
	ps := providerSettings{Kind: pc.Kind, Label: pc.Kind, BaseURL: pc.BaseURL, Model: pc.Model, APIKey: pc.APIKey,
		MaxTokens: pc.MaxTokens, Instructions: wpo["askwp_system_instructions"], Source: "config"}
	if pc.Temperature != 0 {
		t := pc.Temperature
		ps.Temperature = &t
	}
	if ps.APIKey != "" {
		ps.KeyFrom = keyFromConfig
	}
	if !haveAskWP || askwp.Kind != ps.Kind || askwp.Label != ps.Kind {
		return ps
	}
	if ps.Model == "" {
		ps.Model = askwp.Model
	}
	if ps.MaxTokens == 0 {
		ps.MaxTokens = askwp.MaxTokens
	}
	if ps.Temperature == nil {
		ps.Temperature = askwp.Temperature
	}
	if ps.APIKey == "" && askwp.APIKey != "" {
		ps.APIKey, ps.Source, ps.KeyFrom = askwp.APIKey, askwp.Source, askwp.KeyFrom
	}
	return ps
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
	ch := a.providerCandidates(ctx)
	var ps providerSettings
	if req.Provider == "" {
		if h := ch.hint(); h != "" {
			return providerSettings{}, &tool.Error{Code: "no_provider", Message: h}
		}
		ps = ch.cands[0]
	} else {
		found := false
		for _, c := range ch.cands {
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
