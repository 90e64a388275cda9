package config

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

func TestConfig_Embeddings(t *testing.T) {
	base := func() Config {
		c := Default()
		c.WPRoot = "/srv/wp"
		return c
	}
	c := base()
	if err := c.Validate(); err != nil || c.Embeddings.BaseURL != "" {
		t.Fatalf("embeddings must be off and valid by default: %v", err)
	}
	c, err := Load("", []string{
		"ASKWPD_WP_ROOT=/srv/wp", "ASKWPD_EMBEDDINGS_BASE_URL=http://127.0.0.1:11434/v1",
		"ASKWPD_EMBEDDINGS_MODEL=nomic-embed-text", "ASKWPD_EMBEDDINGS_API_KEY=k", "ASKWPD_EMBEDDINGS_ALPHA=0.7",
		"ASKWPD_EMBEDDINGS_FUSION=rrf", "ASKWPD_EMBEDDINGS_DIMENSIONS=256", "ASKWPD_EMBEDDINGS_QUERY_TIMEOUT=1500ms",
	})
	if err != nil {
		t.Fatal(err)
	}
	e := c.Embeddings
	if e.BaseURL != "http://127.0.0.1:11434/v1" || e.Model != "nomic-embed-text" || e.APIKey != "k" || e.Alpha != 0.7 ||
		e.Fusion != "rrf" || e.Dimensions != 256 || e.QueryTimeout.Duration != 1500*time.Millisecond {
		t.Fatalf("env mapping: %+v", e)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("embeddings.alpha", "0"); err != nil || c.Embeddings.Alpha != 0 || c.Validate() != nil {
		t.Fatalf("alpha 0 must be settable and valid: %v", err)
	}
	for name, mut := range map[string]func(*EmbeddingsConfig){
		"no model":    func(e *EmbeddingsConfig) { e.Model = "" },
		"alpha > 1":   func(e *EmbeddingsConfig) { e.Alpha = 1.5 },
		"alpha < 0":   func(e *EmbeddingsConfig) { e.Alpha = -0.1 },
		"fusion":      func(e *EmbeddingsConfig) { e.Fusion = "max" },
		"url":         func(e *EmbeddingsConfig) { e.BaseURL = "127.0.0.1:11434" },
		"batch":       func(e *EmbeddingsConfig) { e.BatchSize = 0 },
		"concurrency": func(e *EmbeddingsConfig) { e.Concurrency = 0 },
		"dimensions":  func(e *EmbeddingsConfig) { e.Dimensions = -1 },
	} {
		c2 := c
		mut(&c2.Embeddings)
		if err := c2.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A log line that prints the section shows that a key is set, not the key.
	var buf strings.Builder
	c.Embeddings.APIKey = "sk-secret-0123456789"
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "embeddings", c.Embeddings)
	if strings.Contains(buf.String(), c.Embeddings.APIKey) || !strings.Contains(buf.String(), `"api_key":"(set)"`) {
		t.Errorf("log line: %s", buf.String())
	}
}

// TestConfig_Listen: host:port on loopback, or unix: with an absolute path.
func TestConfig_Listen(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:8787":               "",
		"[::1]:8787":                   "",
		"localhost:0":                  "",
		"unix:/run/askwpd/askwpd.sock": "",
		"unix:askwpd.sock":             "absolute path",
		"0.0.0.0:8787":                 "not a loopback address",
		"/run/askwpd/askwpd.sock":      "missing port",
	} {
		c := Default()
		c.WPRoot = "/srv/wp"
		c.Listen = listen
		err := c.Validate()
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("listen %q: %v, want %q", listen, err, want)
		}
	}
	c, err := Load("", []string{"ASKWPD_WEB_GROUP=www-data", "ASKWPD_LISTEN=unix:/run/askwpd/askwpd.sock"})
	if err != nil || c.WebGroup != "www-data" {
		t.Fatalf("web_group from the environment: %+v %v", c.WebGroup, err)
	}
	if p, ok := SocketPath(c.Listen); !ok || p != "/run/askwpd/askwpd.sock" {
		t.Errorf("SocketPath(%q) = %q, %v", c.Listen, p, ok)
	}
}

func TestConfig_NetworkSiteSchedules(t *testing.T) {
	path := t.TempDir() + "/askwpd.toml"
	if err := os.WriteFile(path, []byte("wp_root = \"/srv/wp\"\n[network.sites.3]\nincremental = \"*/2 * * * *\"\nnightly = \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc, ok := c.Network.Sites["3"]; !ok || sc.Incremental != "*/2 * * * *" || sc.Nightly != "" {
		t.Fatalf("network.sites = %+v", c.Network.Sites)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Network.Sites["3"] = ScheduleConfig{Incremental: "every tuesday"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "network.sites.3") {
		t.Errorf("a bad site schedule: %v", err)
	}
	c.Network.Sites = map[string]ScheduleConfig{"main": {}}
	if err := c.Validate(); err == nil {
		t.Error("a site key that is no blog id was accepted")
	}
}

func TestConfig_Cluster(t *testing.T) {
	c := Default()
	c.WPRoot = "/srv/wp"
	if err := c.Validate(); err != nil || c.Cluster.On() {
		t.Fatalf("the default: On=%v, %v; want off and valid", c.Cluster.On(), err)
	}
	c, err := Load("", []string{"ASKWPD_WP_ROOT=/srv/wp", "ASKWPD_CLUSTER_MODE=mariadb", "ASKWPD_CLUSTER_LEASE_TTL=5s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil || !c.Cluster.On() || c.Cluster.LeaseTTL.Duration != 5*time.Second {
		t.Fatalf("from the environment: %+v, %v", c.Cluster, err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"ErrMode", func(c *Config) { c.Cluster.Mode = "redis" }, "cluster.mode"},
		{"ErrName", func(c *Config) { c.Cluster.Name = "a-b" }, "cluster.name"},
		{"ErrTTL", func(c *Config) { c.Cluster.LeaseTTL = Duration{time.Minute} }, "within 30 s"},
		{"ErrPoll", func(c *Config) { c.Cluster.Poll = Duration{5 * time.Second} }, "cluster.poll"},
		{"ErrNoDatabase", func(c *Config) { c.WPRoot, c.SiteURL = "", "http://example.org" }, "needs the WordPress database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c2 := c
			tc.edit(&c2)
			if err := c2.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func TestConfig_Provider(t *testing.T) {
	c, err := Load("", []string{"ASKWPD_WP_ROOT=/srv/wp", "ASKWPD_PROVIDER_KIND=google", "ASKWPD_PROVIDER_MODEL=gemini-2.5-pro"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Provider.Kind != "google" || c.Provider.Model != "gemini-2.5-pro" || c.Validate() != nil {
		t.Fatalf("google without a key (it comes from the Connectors): %+v, %v", c.Provider, c.Validate())
	}
	for _, ok := range []ProviderConfig{
		{},
		{MaxTokens: 500, Temperature: 0.3}, // tuning alone chooses nothing, and misleads no one
		{Kind: "openai"},
		{Kind: "openai", BaseURL: "http://127.0.0.1:8080/v1"},
		{Kind: "anthropic", APIKey: "sk-ant-x", Model: "claude-x"},
		{Kind: "openai-compatible", BaseURL: "https://openrouter.ai/api/v1", APIKey: "k", Model: "m"},
	} {
		c2 := c
		c2.Provider = ok
		if err := c2.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	for _, tc := range []struct {
		p    ProviderConfig
		want string
	}{
		{ProviderConfig{BaseURL: "http://127.0.0.1:8080/v1"}, "provider.base_url is set but provider.kind is not"},
		{ProviderConfig{APIKey: "sk-x", Model: "gpt-4o"}, "provider.api_key and provider.model are set but provider.kind is not"},
		{ProviderConfig{Kind: "gemini"}, `provider.kind "gemini": want openai, anthropic, google or openai-compatible`},
		{ProviderConfig{Kind: "openai-compatible", Model: "llama3"}, "needs provider.base_url"},
		{ProviderConfig{Kind: "openai", BaseURL: "127.0.0.1:8080/v1"}, "want an http or https URL"},
		{ProviderConfig{Kind: "openai", Temperature: 3}, "temperature (3) 0 to 2"},
	} {
		c2 := c
		c2.Provider = tc.p
		if err := c2.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.p, err, tc.want)
		}
	}
	var buf strings.Builder
	c.Provider.APIKey = "sk-secret-0123456789"
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "provider", c.Provider)
	if strings.Contains(buf.String(), c.Provider.APIKey) || !strings.Contains(buf.String(), `"api_key":"(set)"`) {
		t.Errorf("log line: %s", buf.String())
	}
}
