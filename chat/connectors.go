package chat

import (
	"context"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// WordPress 7's Connectors (Settings → Connectors) keep an API key for
// each built-in AI provider. WordPress finds a connector's key the way
// _wp_connectors_get_api_key_source (wp-includes/connectors.php) does:
// the environment variable {ID}_API_KEY, then the constant of that name,
// then the option connectors_ai_{id}_api_key; the first that is not empty
// wins. askwpd looks in the same order, with its own environment for
// PHP's and wp-config.php (parsed, never run) for the constants.

// connector is one of WordPress's built-in AI connectors.
type connector struct {
	ID   string // the connector's id: openai | anthropic | google
	Kind string // the llm kind that speaks its API
}

// connectors are tried in this order when no one chose a provider and
// several keys are saved: WordPress itself has no default among them.
var connectors = []connector{{"openai", "openai"}, {"anthropic", "anthropic"}, {"google", "google"}}

// option is the connector's setting: connectors_ai_{id}_api_key (an id's
// dashes become underscores, as WordPress registers it).
func (c connector) option() string {
	return "connectors_ai_" + strings.ReplaceAll(c.ID, "-", "_") + "_api_key"
}

// constant is the constant and environment variable WordPress names for
// the connector: {CONSTANT_CASE_ID}_API_KEY.
func (c connector) constant() string {
	return strings.ToUpper(strings.ReplaceAll(c.ID, "-", "_")) + "_API_KEY"
}

// siteOptionNames are the WordPress options the provider is resolved
// from: AskWP's, then the Connectors'.
var siteOptionNames = func() []string {
	names := []string{
		"askwp_llm_provider", "askwp_api_key", "askwp_model", "askwp_ollama_endpoint",
		"askwp_max_output_tokens", "askwp_temperature", "askwp_system_instructions",
	}
	for _, c := range connectors {
		names = append(names, c.option())
	}
	return names
}()

// wpOptionsTTL is how long the site's settings (those options and
// wp-config.php's constants) are kept: reading ten rows from MySQL on
// every chat turn, or every status request, would add to each. A key
// saved under Settings → Connectors is used within this.
const wpOptionsTTL = 30 * time.Second

// wpReadTimeout bounds one reading of the settings: a database that takes
// longer for ten point lookups is down, and a chat turn or the status
// must not wait on it (they use the last reading meanwhile).
const wpReadTimeout = 3 * time.Second

// siteSettings is one reading of the site's provider settings.
type siteSettings struct {
	opts   map[string]string
	consts map[string]string
	at     time.Time
	// err is why the options or constants could not be read, when they
	// could not; the last good values are kept meanwhile.
	err error
}

// settings returns the site's provider settings, read at most once per
// wpOptionsTTL whether the reading succeeds or fails.
func (a *Agent) settings(ctx context.Context) *siteSettings {
	a.wpMu.Lock()
	defer a.wpMu.Unlock()
	if a.wp != nil && time.Since(a.wp.at) < wpOptionsTTL {
		return a.wp
	}
	next := &siteSettings{opts: map[string]string{}, consts: map[string]string{}, at: time.Now()}
	if a.wp != nil {
		next.opts, next.consts = a.wp.opts, a.wp.consts
	}
	if a.SiteOption != nil {
		rctx, cancel := context.WithTimeout(ctx, wpReadTimeout)
		opts := make(map[string]string, len(siteOptionNames))
		for _, name := range siteOptionNames {
			v, err := a.SiteOption(rctx, name)
			if err != nil {
				next.err = err
				break
			}
			opts[name] = strings.TrimSpace(v)
		}
		cancel()
		if next.err == nil {
			next.opts = opts
		} else {
			// The site's database being down must not stop a configured
			// provider from answering.
			a.Log.Warn("Unable to read the provider settings from WordPress's options", "error", next.err)
		}
	}
	if a.SiteConstants != nil {
		if consts, err := a.SiteConstants(); err == nil {
			next.consts = consts
		} else if next.err == nil {
			next.err = err
			a.Log.Warn("Unable to read wp-config.php's constants", "error", err)
		}
	}
	a.wp = next
	return next
}

// ForgetSettings drops the site settings read so far: the next chat turn
// or status reads WordPress's options and wp-config.php again.
func (a *Agent) ForgetSettings() {
	a.wpMu.Lock()
	a.wp = nil
	a.wpMu.Unlock()
}

// foundKey is a connector's key and where it was found.
type foundKey struct {
	key  string
	from string // for the status, e.g. "option connectors_ai_openai_api_key"
}

// connectorKeys finds each connector's key, by kind. None is found when
// wp-config.php turns WordPress's AI support off (WP_AI_SUPPORT false):
// the Connectors screen then has no AI providers, and WordPress would use
// none of these keys.
func (a *Agent) connectorKeys(s *siteSettings) map[string]foundKey {
	keys := map[string]foundKey{}
	if v, ok := s.consts["WP_AI_SUPPORT"]; ok && (v == "" || v == "0") {
		return keys
	}
	getenv := a.Getenv
	if getenv == nil {
		getenv = os.LookupEnv
	}
	for _, c := range connectors {
		name := c.constant()
		if v, ok := getenv(name); ok && strings.TrimSpace(v) != "" {
			keys[c.Kind] = foundKey{key: strings.TrimSpace(v), from: "environment " + name}
		} else if v := strings.TrimSpace(s.consts[name]); v != "" {
			keys[c.Kind] = foundKey{key: v, from: "constant " + name + " in wp-config.php"}
		} else if v := s.opts[c.option()]; v != "" {
			keys[c.Kind] = foundKey{key: v, from: "option " + c.option()}
		}
	}
	return keys
}

// maskKey shows a key as WordPress's _wp_connectors_mask_api_key does:
// bullets (at most 16) and the last 4 characters. A key of 8 characters
// or fewer, where WordPress would show half of it or all, is bullets
// only.
func maskKey(key string) string {
	n := utf8.RuneCountInString(key)
	if n == 0 {
		return ""
	}
	if n <= 8 {
		return strings.Repeat("\u2022", n)
	}
	r := []rune(key)
	return strings.Repeat("\u2022", min(n-4, 16)) + string(r[n-4:])
}
