package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/internal/llmtest"
	"github.com/askwp/askwpd/internal/wptest"
)

// The chat's provider from WordPress 7's Connectors, end to end: keys
// saved as WordPress saves them (its REST settings route, update_option,
// a constant in wp-config.php, the environment), read by a daemon opened
// on the real test site, and sent to a scripted provider that records
// the key it received. WordPress itself is asked where it finds each key,
// and askwpd must agree.

// The status's provider object as the tests compare it: JSON with the
// shape the plugin reads.
type providerJSON = map[string]any

const statusToken = "provider-test-token-0123456789"

// providerSite holds the site lock, clears every provider setting the
// test may leave, and keeps the connectors' environment variables empty
// (WordPress takes an empty one for unset) whatever the caller's.
func providerSite(t *testing.T) *wptest.Site {
	t.Helper()
	site := wptest.Get(t)
	site.Lock(t)
	for _, id := range []string{"OPENAI", "ANTHROPIC", "GOOGLE"} {
		t.Setenv(id+"_API_KEY", "")
	}
	clear := func() {
		var php strings.Builder
		for _, name := range []string{"askwp_llm_provider", "askwp_api_key", "askwp_model", wptest.ConnectorOption("openai"),
			wptest.ConnectorOption("anthropic"), wptest.ConnectorOption("google")} {
			fmt.Fprintf(&php, "delete_option(%q);", name)
		}
		site.PHP(t, php.String())
	}
	clear()
	t.Cleanup(clear)
	return site
}

// servedDaemon opens a daemon on the site at wpRoot with pc as its
// [provider], and serves its API.
func servedDaemon(t *testing.T, site *wptest.Site, wpRoot string, pc config.ProviderConfig) (*Daemon, *httptest.Server) {
	t.Helper()
	d := openOn(t, site.URL(), func(cfg *config.Config) {
		cfg.WPRoot = wpRoot
		cfg.Provider = pc
	})
	srv := httptest.NewServer(api.New(d, api.Options{Token: statusToken, Log: d.Log}).Handler())
	t.Cleanup(srv.Close)
	return d, srv
}

func authGet(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+statusToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: HTTP %d: %.300s", url, res.StatusCode, b)
	}
	return string(b)
}

// statusProvider reads /v1/status's provider object, and checks that no
// key appears in the status or the admin page.
func statusProvider(t *testing.T, srv *httptest.Server, keys ...string) providerJSON {
	t.Helper()
	body := authGet(t, srv.URL+"/v1/status")
	var st struct {
		Provider providerJSON `json:"provider"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Provider == nil {
		t.Fatalf("/v1/status has no provider (%v): %.300s", err, body)
	}
	admin := authGet(t, srv.URL+"/admin")
	for _, k := range keys {
		if strings.Contains(body, k) {
			t.Errorf("/v1/status shows the key %q", k)
		}
		if strings.Contains(admin, k) {
			t.Errorf("/admin shows the key %q", k)
		}
	}
	if k, _ := st.Provider["key"].(string); k != "" && !strings.Contains(admin, k) {
		t.Errorf("/admin does not show the masked key %q", k)
	}
	return st.Provider
}

// postChat asks one question over /v1/chat and returns the status code
// and the body.
func postChat(t *testing.T, srv *httptest.Server, q string) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(ask(q))
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+statusToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	body, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("/v1/chat: %v: %.300s", err, body)
	}
	return res.StatusCode, out
}

// chatKey has the daemon answer one question through p and returns the
// key p received.
func chatKey(t *testing.T, srv *httptest.Server, p *llmtest.Provider) string {
	t.Helper()
	before := len(p.Seen())
	code, resp := postChat(t, srv, "Hello?")
	if code != 200 || resp["reply"] != "Hello from the scripted provider." {
		t.Fatalf("/v1/chat: HTTP %d: %v", code, resp)
	}
	seen := p.Seen()
	if len(seen) != before+1 {
		t.Fatalf("%d model calls, want 1", len(seen)-before)
	}
	return seen[before].Key
}

func chatProvider(pc config.ProviderConfig) chat.ProviderConfig { return chat.ProviderConfig(pc) }

func sayHello(kind string, t *testing.T) *llmtest.Provider {
	p := llmtest.New(t, kind)
	p.Loop = llmtest.Say("Hello from the scripted provider.")
	return p
}

// mask is WordPress's _wp_connectors_mask_api_key for keys over 8
// characters: bullets, at most 16, then the last 4.
func mask(key string) string {
	return strings.Repeat("\u2022", min(len(key)-4, 16)) + key[len(key)-4:]
}

func wantProvider(t *testing.T, got providerJSON, want providerJSON) {
	t.Helper()
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("status provider:\n got %s\nwant %s", gb, wb)
	}
}

// wpKeySource asks WordPress, running with the wp-config.php at config,
// where it finds a connector's key (_wp_connectors_get_api_key_source)
// and what the key is.
func wpKeySource(t *testing.T, site *wptest.Site, config, id string) (source, key string) {
	t.Helper()
	code := `$_SERVER['HTTP_HOST'] = '` + site.Host() + `'; $_SERVER['REQUEST_URI'] = '/'; define('WP_USE_THEMES', false);
require '` + config + `';
$c = wp_get_connector('` + id + `');
if (!$c) { echo json_encode(array('none', '')); exit; }
$a = $c['authentication'];
$s = _wp_connectors_get_api_key_source($a['setting_name'], $a['env_var_name'], $a['constant_name']);
$k = 'env' === $s ? getenv($a['env_var_name']) : ('constant' === $s ? constant($a['constant_name']) : get_option($a['setting_name'], ''));
echo json_encode(array($s, (string) $k));`
	out, err := exec.Command("php", "-r", code).Output()
	if err != nil {
		t.Fatalf("php: %v: %s", err, out)
	}
	var r [2]string
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("php: %v: %s", err, out)
	}
	return r[0], r[1]
}

// configCopy writes a copy of the site's wp-config.php into a folder of
// its own, with extra PHP before anything else and ABSPATH still the
// site's, so that WordPress can run with it and askwpd read it.
func configCopy(t *testing.T, site *wptest.Site, extra string) (root, path string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(site.Root(), "wp-config.php"))
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), "<?php", "<?php\n"+extra+"\ndefine( 'ABSPATH', '"+strings.TrimRight(site.Root(), "/")+"/' );", 1)
	root = t.TempDir()
	path = filepath.Join(root, "wp-config.php")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return root, path
}

// TestProvider_Connectors: the owner saved an OpenAI key under Settings
// → Connectors and nothing else; askwpd's config points the openai kind
// at the scripted provider (base_url, no key). /v1/chat answers with the
// Connectors key, and the status says so without showing it.
func TestProvider_Connectors(t *testing.T) {
	site := providerSite(t)
	const key = "sk-proj-connectors-0123456789abcdefWXYZ"
	if got := site.SaveConnectorKey(t, "openai", key); got != mask(key) {
		t.Errorf("WordPress answered %q, want its mask %q", got, mask(key))
	}
	// WordPress 7.1 stores the key as it is: no serializing, no cipher.
	if raw := site.PHP(t, `global $wpdb; echo $wpdb->get_var($wpdb->prepare("SELECT option_value FROM $wpdb->options WHERE option_name = %s", 'connectors_ai_openai_api_key'));`); raw != key {
		t.Fatalf("stored %q, want the key as is", raw)
	}
	if src, k := wpKeySource(t, site, filepath.Join(site.Root(), "wp-config.php"), "openai"); src != "database" || k != key {
		t.Fatalf("WordPress finds %s %q", src, k)
	}
	p := sayHello("openai", t)
	p.WantKey(key)
	d, srv := servedDaemon(t, site, site.Root(), config.ProviderConfig{Kind: "openai", BaseURL: p.BaseURL()})
	if got := chatKey(t, srv, p); got != key {
		t.Errorf("the provider received %q, want the Connectors key", got)
	}
	wantProvider(t, statusProvider(t, srv, key), providerJSON{"configured": true, "kind": "openai", "label": "OpenAI",
		"model": "gpt-4o-mini", "base_url": p.BaseURL(), "source": "connectors", "key_from": "option connectors_ai_openai_api_key",
		"key": mask(key)})

	// Without askwpd's config the key is OpenAI's own: the status says
	// so (no chat here, which would reach api.openai.com).
	d.Agent.Provider = chatProvider(config.ProviderConfig{})
	d.Agent.ForgetSettings()
	d.invalidateView()
	wantProvider(t, statusProvider(t, srv, key), providerJSON{"configured": true, "kind": "openai", "label": "OpenAI",
		"model": "gpt-4o-mini", "source": "connectors", "key_from": "option connectors_ai_openai_api_key", "key": mask(key)})
}

// TestProvider_ConnectorSources: a connector's key from a constant in
// wp-config.php and from the environment, and the order WordPress looks
// in (environment, constant, option), checked against WordPress itself.
func TestProvider_ConnectorSources(t *testing.T) {
	site := providerSite(t)
	const optKey, constKey, envKey = "sk-ant-option-000000000000AAAA", "sk-ant-constant-11111111111BBBB", "sk-ant-environment-2222222CCCC"
	site.PHP(t, fmt.Sprintf("update_option(%q, %q);", wptest.ConnectorOption("anthropic"), optKey))
	root, cfgPath := configCopy(t, site, fmt.Sprintf("define( 'ANTHROPIC_API_KEY', '%s' );", constKey))
	p := sayHello("anthropic", t)
	d, srv := servedDaemon(t, site, root, config.ProviderConfig{Kind: "anthropic", BaseURL: p.BaseURL()})
	for _, tc := range []struct {
		env, wpSource, want, from string
	}{
		{"", "constant", constKey, "constant ANTHROPIC_API_KEY in wp-config.php"},
		{envKey, "env", envKey, "environment ANTHROPIC_API_KEY"},
	} {
		t.Setenv("ANTHROPIC_API_KEY", tc.env)
		d.Agent.ForgetSettings()
		d.invalidateView()
		if src, k := wpKeySource(t, site, cfgPath, "anthropic"); src != tc.wpSource || k != tc.want {
			t.Fatalf("WordPress finds %s %q, want %s %q", src, k, tc.wpSource, tc.want)
		}
		if got := chatKey(t, srv, p); got != tc.want {
			t.Errorf("the provider received %q, want %q (%s)", got, tc.want, tc.from)
		}
		wantProvider(t, statusProvider(t, srv, optKey, constKey, envKey), providerJSON{"configured": true, "kind": "anthropic",
			"label": "Anthropic", "model": "claude-3-5-haiku-latest", "base_url": p.BaseURL(), "source": "connectors",
			"key_from": tc.from, "key": mask(tc.want)})
	}

	// Google's key from the environment reaches Gemini's protocol.
	t.Setenv("GOOGLE_API_KEY", "AIzaSy-environment-3333333DDDD")
	g := sayHello("google", t)
	_, srv2 := servedDaemon(t, site, root, config.ProviderConfig{Kind: "google", BaseURL: g.BaseURL(), Model: "gemini-test"})
	if got := chatKey(t, srv2, g); got != "AIzaSy-environment-3333333DDDD" || g.Seen()[0].Model != "gemini-test" {
		t.Errorf("Gemini received key %q for model %q", got, g.Seen()[0].Model)
	}
	wantProvider(t, statusProvider(t, srv2, "AIzaSy-environment-3333333DDDD"), providerJSON{"configured": true, "kind": "google",
		"label": "Google", "model": "gemini-test", "base_url": g.BaseURL(), "source": "connectors",
		"key_from": "environment GOOGLE_API_KEY", "key": mask("AIzaSy-environment-3333333DDDD")})

	// A site that turns WordPress's AI off has no Connectors: WordPress
	// registers no AI connector, and askwpd takes none of their keys.
	root3, cfg3 := configCopy(t, site, "define( 'WP_AI_SUPPORT', false );\ndefine( 'OPENAI_API_KEY', 'sk-ignored-44444444EEEE' );")
	if src, _ := wpKeySource(t, site, cfg3, "openai"); src != "none" {
		t.Fatalf("with WP_AI_SUPPORT false WordPress still has the openai connector (%s)", src)
	}
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	_, srv3 := servedDaemon(t, site, root3, config.ProviderConfig{})
	if st := statusProvider(t, srv3, "sk-ignored-44444444EEEE"); st["configured"] != false {
		t.Errorf("WP_AI_SUPPORT false: %v", st)
	}
}

// TestProvider_Precedence: askwpd's config beats AskWP's options, which
// beat the Connectors; a layer naming a kind without a key takes the key
// of that kind from the layers below, keeping its own base_url.
func TestProvider_Precedence(t *testing.T) {
	site := providerSite(t)
	const cfgKey, askwpKey, connKey = "sk-config-5555555555555FFFF", "sk-askwp-666666666666666GGGG", "sk-connectors-77777777777HHHH"
	site.SaveConnectorKey(t, "openai", connKey)
	site.PHP(t, `update_option('askwp_llm_provider', 'openai'); update_option('askwp_api_key', '`+askwpKey+`'); update_option('askwp_model', 'gpt-askwp');`)
	p := sayHello("openai", t)
	d, srv := servedDaemon(t, site, site.Root(), config.ProviderConfig{})
	all := []string{cfgKey, askwpKey, connKey}
	for _, tc := range []struct {
		name  string
		pc    config.ProviderConfig
		php   string
		want  string
		model string
		prov  providerJSON
	}{
		{"ConfigModel", config.ProviderConfig{Kind: "openai", BaseURL: p.BaseURL(), APIKey: cfgKey, Model: "gpt-config"}, "", cfgKey, "gpt-config",
			providerJSON{"configured": true, "kind": "openai", "label": "OpenAI", "model": "gpt-config", "base_url": p.BaseURL(),
				"source": "config", "key_from": "askwpd config [provider] api_key", "key": mask(cfgKey)}},
		// The config names no model: AskWP's for the same kind fills it.
		{"ConfigKey", config.ProviderConfig{Kind: "openai", BaseURL: p.BaseURL(), APIKey: cfgKey}, "", cfgKey, "gpt-askwp",
			providerJSON{"configured": true, "kind": "openai", "label": "OpenAI", "model": "gpt-askwp", "base_url": p.BaseURL(),
				"source": "config", "key_from": "askwpd config [provider] api_key", "key": mask(cfgKey)}},
		{"AskWPKey", config.ProviderConfig{Kind: "openai", BaseURL: p.BaseURL()}, "", askwpKey, "gpt-askwp",
			providerJSON{"configured": true, "kind": "openai", "label": "OpenAI", "model": "gpt-askwp", "base_url": p.BaseURL(),
				"source": "askwp_options", "key_from": "option askwp_api_key", "key": mask(askwpKey)}},
		{"ConnectorsKey", config.ProviderConfig{Kind: "openai", BaseURL: p.BaseURL()}, "delete_option('askwp_api_key');", connKey, "gpt-askwp",
			providerJSON{"configured": true, "kind": "openai", "label": "OpenAI", "model": "gpt-askwp", "base_url": p.BaseURL(),
				"source": "connectors", "key_from": "option connectors_ai_openai_api_key", "key": mask(connKey)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.php != "" {
				site.PHP(t, tc.php)
			}
			d.Agent.Provider = chatProvider(tc.pc)
			d.Agent.ForgetSettings()
			d.invalidateView()
			before := len(p.Seen())
			if got := chatKey(t, srv, p); got != tc.want {
				t.Errorf("the provider received %q, want %q", got, tc.want)
			}
			if m := p.Seen()[before].Model; m != tc.model {
				t.Errorf("model %q, want %q", m, tc.model)
			}
			wantProvider(t, statusProvider(t, srv, all...), tc.prov)
		})
	}

	// AskWP's settings choose OpenAI and hold no key (askwp_api_key was
	// deleted above); with no config they take the Connectors key, at
	// OpenAI's own address, with AskWP's model.
	d.Agent.Provider = chatProvider(config.ProviderConfig{})
	d.Agent.ForgetSettings()
	d.invalidateView()
	wantProvider(t, statusProvider(t, srv, all...), providerJSON{"configured": true, "kind": "openai", "label": "OpenAI",
		"model": "gpt-askwp", "source": "connectors", "key_from": "option connectors_ai_openai_api_key", "key": mask(connKey)})
}

// TestProvider_None: with no key anywhere, /v1/chat answers no_provider
// (503) saying where to set one, and so does the status; a layer that
// chose a provider without a key is named.
func TestProvider_None(t *testing.T) {
	site := providerSite(t)
	_, srv := servedDaemon(t, site, site.Root(), config.ProviderConfig{})
	code, body := postChat(t, srv, "Hello?")
	e, _ := body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if code != 503 || e["code"] != "no_provider" {
		t.Fatalf("HTTP %d %v, want 503 no_provider", code, body)
	}
	for _, want := range []string{"no LLM provider is configured", "Settings → Connectors", "AskWP's settings", "[provider]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message %q does not say %q", msg, want)
		}
	}
	wantProvider(t, statusProvider(t, srv), providerJSON{"configured": false, "hint": msg})

	site.PHP(t, `update_option('askwp_llm_provider', 'anthropic');`)
	_, srv = servedDaemon(t, site, site.Root(), config.ProviderConfig{})
	st := statusProvider(t, srv)
	if h, _ := st["hint"].(string); st["configured"] != false || !strings.Contains(h, "AskWP's settings choose anthropic but no API key was found for it") {
		t.Errorf("AskWP's choice without a key: %v", st)
	}
}

// TestProvider_StatusReadsOncePerTTL: the status and chat turns share one
// reading of WordPress's options per TTL, however often they are asked.
func TestProvider_StatusReadsOncePerTTL(t *testing.T) {
	site := providerSite(t)
	d, srv := servedDaemon(t, site, site.Root(), config.ProviderConfig{})
	var reads atomic.Int64
	opt := d.Agent.SiteOption
	d.Agent.SiteOption = func(ctx context.Context, name string) (string, error) {
		reads.Add(1)
		return opt(ctx, name)
	}
	d.Agent.ForgetSettings()
	d.invalidateView()
	for range 30 {
		statusProvider(t, srv)
	}
	postChat(t, srv, "Hello?")
	n := reads.Load()
	if n == 0 || n > 10 {
		t.Errorf("%d option reads for 30 status requests and a chat turn, want one reading (10 options)", n)
	}
	t.Logf("%d option reads for 30 status requests and a chat turn", n)
}
