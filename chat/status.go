package chat

import (
	"context"

	"github.com/askwp/askwpd/chat/llm"
)

// ProviderStatus says which LLM /v1/chat uses and where its key comes
// from, for /v1/status, the admin page and doctor. It never holds the
// key itself: Key is masked as WordPress masks it on the Connectors
// screen.
type ProviderStatus struct {
	Configured bool `json:"configured"`
	// Kind is openai, anthropic, google or openai-compatible.
	Kind    string `json:"kind,omitempty"`
	Label   string `json:"label,omitempty"`
	Model   string `json:"model,omitempty"`
	BaseURL string `json:"base_url,omitempty"`
	// Source is the layer the key came from: config, askwp_options or
	// connectors.
	Source string `json:"source,omitempty"`
	// KeyFrom names the key's origin, e.g. "option
	// connectors_ai_openai_api_key" or "environment OPENAI_API_KEY".
	KeyFrom string `json:"key_from,omitempty"`
	Key     string `json:"key,omitempty"`
	// Hint says where to set a provider when none is configured.
	Hint string `json:"hint,omitempty"`
}

// labels are the providers' names as people know them.
var labels = map[string]string{
	"openai": "OpenAI", "anthropic": "Anthropic", "google": "Google", "openrouter": "OpenRouter", "ollama": "Ollama",
	"openai-compatible": "OpenAI-compatible",
}

// ProviderStatus is the provider a chat turn without overrides would
// use. It reads the site's settings as a chat turn does, so it costs a
// database round trip at most once per wpOptionsTTL.
func (a *Agent) ProviderStatus(ctx context.Context) ProviderStatus {
	ch := a.providerCandidates(ctx)
	if ch.blocked == nil && len(ch.cands) == 0 {
		return ProviderStatus{Hint: ch.hint()}
	}
	var st ProviderStatus
	ps := ch.blocked
	if ps == nil {
		ps = &ch.cands[0]
		st = ProviderStatus{Configured: true, KeyFrom: ps.KeyFrom, Key: maskKey(ps.APIKey)}
	} else {
		// askwpd's own choice, which cannot answer: what it is, and why.
		st.Hint = ch.hint()
	}
	st.Kind, st.Label, st.Model, st.BaseURL, st.Source = ps.Kind, labels[ps.Label], ps.Model, ps.BaseURL, ps.Source
	if st.Label == "" {
		st.Label = ps.Label
	}
	if st.Model == "" {
		st.Model = llm.DefaultModel(ps.Kind)
	}
	return st
}

// Where names the layer the key came from as the site owner knows it.
func (s ProviderStatus) Where() string {
	switch s.Source {
	case "config":
		return "askwpd's configuration"
	case "askwp_options":
		return "AskWP's settings"
	case "connectors":
		return "WordPress's Settings → Connectors"
	}
	return s.Source
}
