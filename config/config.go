// Package config reads askwpd's configuration: the TOML file, then ASKWPD_*
// environment variables, then flags, and checks what can be checked without
// touching the site. It imports no other package of the module.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/robfig/cron/v3"
)

// Config is askwpd's configuration. Every key can come from the TOML file,
// from an ASKWPD_* environment variable (ASKWPD_STATE_DIR,
// ASKWPD_CRAWL_CONCURRENCY, …) or from a flag, in that order of precedence
// (flags win). With only wp_root set, everything else is found by itself.
type Config struct {
	WPRoot      string `toml:"wp_root"`
	SiteURL     string `toml:"site_url"`
	DBDSN       string `toml:"db_dsn"`
	TablePrefix string `toml:"table_prefix"`
	StateDir    string `toml:"state_dir"`
	// Listen is host:port, or unix:/path for a unix socket that only the
	// web server's group may use.
	Listen string `toml:"listen"`
	// WebGroup is the group the web server's PHP runs as, which gets the
	// state dir, its secrets and the socket. Empty: wp-config.php's group,
	// else the php-fpm pool's user's group.
	WebGroup string `toml:"web_group"`
	// AllowRemote permits binding a non-loopback address. The API has a
	// bearer token but no TLS, so this is an explicit choice.
	AllowRemote bool `toml:"allow_remote"`
	// AllowedHosts are the Host header values the API accepts besides
	// its listen address's own (localhost, 127.0.0.1, [::1] and the IP
	// called, at the listen port): the names a proxy in front forwards,
	// "name" for any port or "name:port". Anything else is refused, so a
	// page rebinding its DNS name to this host cannot drive the API.
	AllowedHosts []string `toml:"allowed_hosts"`
	LogLevel     string   `toml:"log_level"`
	// Origin is the web server the fetcher connects to for the site,
	// "http://127.0.0.1:8080", in place of the site's public address (a
	// CDN or edge cache). Empty: a local web server that proves it serves
	// the site, else the public address (package origin).
	Origin string `toml:"origin"`

	Crawl    CrawlConfig    `toml:"crawl"`
	Schedule ScheduleConfig `toml:"schedule"`
	Provider ProviderConfig `toml:"provider"`
	Search   SearchConfig   `toml:"search"`

	Embeddings EmbeddingsConfig `toml:"embeddings"`
	Insights   InsightsConfig   `toml:"insights"`

	Chat ChatConfig `toml:"chat"`

	Network NetworkConfig `toml:"network"`

	Cluster ClusterConfig `toml:"cluster"`
	Debug   DebugConfig   `toml:"debug"`
}

// ClusterConfig runs several daemons, one per web head, against the
// site's one MariaDB: one crawls, every one serves the same index. Off by
// default.
type ClusterConfig struct {
	// Mode is "" or "off" (one daemon, as always), or "mariadb".
	Mode string `toml:"mode"`
	// Name namespaces the cluster's tables ({prefix}askwpd_{name}_events,
	// …), for more than one cluster in one database; empty for the usual
	// one. The shim must be told the same name (ASKWPD_CLUSTER).
	Name string `toml:"name"`
	// LeaseTTL is how long the leader's lease lasts unrenewed: a dead
	// leader is replaced within it plus a second. Default 10s.
	LeaseTTL Duration `toml:"lease_ttl"`
	// Poll is how often a node reads the changelog. Default 200ms.
	Poll Duration `toml:"poll"`
}

// On reports whether cluster mode is on.
func (c ClusterConfig) On() bool { return c.Mode == "mariadb" }

var clusterNameRe = regexp.MustCompile(`^[A-Za-z0-9_]{0,24}$`)

// Validate checks the cluster section.
func (c ClusterConfig) Validate() error {
	switch c.Mode {
	case "", "off", "mariadb":
	default:
		return fmt.Errorf(`config: cluster.mode %q: want "off" or "mariadb"`, c.Mode)
	}
	if !clusterNameRe.MatchString(c.Name) {
		return fmt.Errorf("config: cluster.name %q: use letters, digits and _ (at most 24)", c.Name)
	}
	if t := c.LeaseTTL.Duration; t != 0 && (t < 3*time.Second || t > 29*time.Second) {
		return fmt.Errorf("config: cluster.lease_ttl %s must be 3s..29s: a dead leader must be replaced within 30 s", t)
	}
	if p := c.Poll.Duration; p != 0 && (p < 20*time.Millisecond || p > 2*time.Second) {
		return fmt.Errorf("config: cluster.poll %s must be 20ms..2s: nodes must converge within 2 s", p)
	}
	return nil
}

// DebugConfig holds what an operator turns on to look inside the daemon.
type DebugConfig struct {
	// Pprof serves Go's profiler at /debug/pprof/, behind the token, to
	// callers on this machine only. Off by default.
	Pprof bool `toml:"pprof"`
}

// InsightsConfig is the question log behind /v1/insights and the gap
// report. It stores each visitor question redacted (no IP, user id or
// cookie) for RetentionDays; 0 turns it off and deletes what it kept.
type InsightsConfig struct {
	RetentionDays int `toml:"retention_days"`
}

// ChatConfig bounds what /v1/chat may cost: turns at once, which share
// the host's CPU and the provider's rate limit, and model calls a day,
// which the site owner pays for.
type ChatConfig struct {
	// MaxConcurrent turns run at once; beyond it /v1/chat answers 429.
	// 0 means no cap.
	MaxConcurrent int `toml:"max_concurrent"`
	// DailyModelCalls is the budget of LLM requests per UTC day; once
	// spent, /v1/chat answers 429 until midnight UTC. 0 means no budget.
	DailyModelCalls int `toml:"daily_model_calls"`
}

// NetworkConfig holds what applies to a multisite network only.
type NetworkConfig struct {
	// Sites gives a site, by blog id, a schedule of its own
	// ([network.sites.3] incremental = "..."); every other site follows
	// [schedule], network-wide. TOML only.
	Sites map[string]ScheduleConfig `toml:"sites"`
}

// EmbeddingsConfig turns on hybrid retrieval: keyword search fused with
// vector search over embeddings from an OpenAI-compatible /v1/embeddings
// endpoint (OpenAI, Ollama, vLLM…). Off while base_url is empty. When the
// endpoint fails, search answers from keywords alone.
type EmbeddingsConfig struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1 or
	// http://127.0.0.1:11434/v1; "/embeddings" is appended unless the
	// URL already ends in it.
	BaseURL string `toml:"base_url"`
	Model   string `toml:"model"`
	// APIKey is sent as a bearer token, never logged.
	APIKey string `toml:"api_key"`
	// Dimensions asks models that support it (text-embedding-3-*) for
	// shorter vectors; 0 means the model's own.
	Dimensions int `toml:"dimensions"`
	// Alpha weighs the rankings as Weaviate's hybrid search does: 0 is keyword only, 1 is vector only; default 0.5.
	Alpha float64 `toml:"alpha"`
	// Fusion is "alpha" (normalized scores mixed by alpha) or "rrf"
	// (reciprocal rank fusion, the two lists weighted by 1-alpha, alpha).
	Fusion string `toml:"fusion"`
	// BatchSize is how many chunks go in one request; Concurrency how
	// many requests run at once while indexing.
	BatchSize   int `toml:"batch_size"`
	Concurrency int `toml:"concurrency"`
	// Timeout bounds one indexing request; QueryTimeout a search's query
	// embedding, after which the search goes on with keywords alone.
	Timeout      Duration `toml:"timeout"`
	QueryTimeout Duration `toml:"query_timeout"`
}

// SearchConfig tunes retrieval.
type SearchConfig struct {
	// Synonyms is a Solr-style synonyms file: "a => b" rewrites and
	// "a, b, c" equivalents, one rule a line.
	Synonyms string `toml:"synonyms"`
}

// CrawlConfig bounds fetching so the daemon never crowds out the PHP
// workers it shares a host with.
type CrawlConfig struct {
	Concurrency int      `toml:"concurrency"`
	RatePerSec  float64  `toml:"rate_per_sec"`
	Budget      int      `toml:"budget"` // pages fetched per run
	Timeout     Duration `toml:"timeout"`
	MaxBytes    int64    `toml:"max_bytes"`
	UserAgent   string   `toml:"user_agent"`
	// IndexArchives also indexes category, tag and author archive pages.
	IndexArchives bool `toml:"index_archives"`
	// CacheBypass sends every fetch in the shape page caches pass to PHP,
	// so a fetch after a save reads the page WordPress renders now.
	CacheBypass bool `toml:"cache_bypass"`
	// IndexNoindex also answers from pages marked noindex; their links
	// are followed either way.
	IndexNoindex bool `toml:"index_noindex"`
}

// ScheduleConfig holds cron specs (robfig/cron, five fields).
type ScheduleConfig struct {
	Incremental string `toml:"incremental"`
	Nightly     string `toml:"nightly"`
	Disabled    bool   `toml:"disabled"`
	// CatchUp has serve re-render, as it starts, the posts the database
	// says changed since the index last fetched a page, and take out those
	// no longer public: what editors did while the daemon was down is
	// searchable as soon as the site renders it, not when the shim's
	// outbox next sends (up to 30 s later) or at the next pass.
	CatchUp bool `toml:"catch_up"`
}

// ProviderConfig is the LLM used by /v1/chat. What it leaves out comes
// from AskWP's options, then from WordPress's Connectors: a kind without
// an api_key takes the key saved for that kind there, and keeps its
// base_url and model.
type ProviderConfig struct {
	Kind        string  `toml:"kind"` // openai | anthropic | google | openai-compatible
	BaseURL     string  `toml:"base_url"`
	Model       string  `toml:"model"`
	APIKey      string  `toml:"api_key"`
	MaxTokens   int     `toml:"max_tokens"`
	Temperature float64 `toml:"temperature"`
}

// Validate checks the provider section. Without a kind the section
// chooses nothing, so an address, key or model there would be ignored:
// that is refused rather than left to surprise.
func (p ProviderConfig) Validate() error {
	switch p.Kind {
	case "":
		var set []string
		for _, f := range []struct{ name, v string }{{"base_url", p.BaseURL}, {"api_key", p.APIKey}, {"model", p.Model}} {
			if f.v != "" {
				set = append(set, "provider."+f.name)
			}
		}
		if len(set) > 0 {
			verb := "is"
			if len(set) > 1 {
				verb = "are"
			}
			return fmt.Errorf("config: %s %s set but provider.kind is not: set kind to openai, anthropic, google or openai-compatible",
				strings.Join(set, " and "), verb)
		}
	case "openai", "anthropic", "google":
	case "openai-compatible":
		if p.BaseURL == "" {
			return errors.New("config: provider.kind = \"openai-compatible\" needs provider.base_url (e.g. http://127.0.0.1:11434/v1 for Ollama)")
		}
	default:
		return fmt.Errorf("config: provider.kind %q: want openai, anthropic, google or openai-compatible", p.Kind)
	}
	if p.BaseURL != "" {
		if u, err := url.Parse(p.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("config: provider.base_url %q: want an http or https URL", p.BaseURL)
		}
	}
	if p.MaxTokens < 0 || p.Temperature < 0 || p.Temperature > 2 {
		return fmt.Errorf("config: provider.max_tokens (%d) must be 0 or more, provider.temperature (%g) 0 to 2", p.MaxTokens, p.Temperature)
	}
	return nil
}

// Duration reads "15s" style values in TOML and the environment.
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Default is the configuration before any file, variable or flag.
func Default() Config {
	return Config{
		StateDir: "/var/lib/askwpd",
		Listen:   "127.0.0.1:8787",
		LogLevel: "info",
		Crawl: CrawlConfig{
			Concurrency: 4,
			RatePerSec:  8,
			Budget:      5000,
			Timeout:     Duration{20 * time.Second},
			MaxBytes:    5 << 20,
			UserAgent:   "askwpd/0.1 (+companion index for this site)",
			CacheBypass: true,
		},
		Schedule: ScheduleConfig{
			Incremental: "*/5 * * * *",
			Nightly:     "17 3 * * *",
			CatchUp:     true,
		},
		Insights: InsightsConfig{RetentionDays: 30},
		Embeddings: EmbeddingsConfig{
			Alpha: 0.5, Fusion: "alpha", BatchSize: 64, Concurrency: 2,
			Timeout: Duration{30 * time.Second}, QueryTimeout: Duration{2 * time.Second},
		},
		Chat: ChatConfig{MaxConcurrent: 8, DailyModelCalls: 2000},
	}
}

// Load reads the TOML file (when path is not empty), then the
// environment. Unknown keys in the file are an error, so a typo does not
// silently fall back to a default.
func Load(path string, environ []string) (Config, error) {
	c := Default()
	if path != "" {
		md, err := toml.DecodeFile(path, &c)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return c, fmt.Errorf("config: %s does not exist", path)
			}
			return c, fmt.Errorf("config: %s: %w", path, err)
		}
		if und := md.Undecoded(); len(und) > 0 {
			keys := make([]string, len(und))
			for i, k := range und {
				keys[i] = k.String()
			}
			return c, fmt.Errorf("config: %s: unknown keys: %s", path, strings.Join(keys, ", "))
		}
	}
	if err := applyEnv(&c, environ); err != nil {
		return c, err
	}
	return c, nil
}

// applyEnv sets fields from ASKWPD_<KEY> and ASKWPD_<SECTION>_<KEY>.
func applyEnv(c *Config, environ []string) error {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "ASKWPD_") {
			env[k] = v
		}
	}
	return walkFields(reflect.ValueOf(c).Elem(), "ASKWPD_", func(name string, f reflect.Value) error {
		v, ok := env[name]
		if !ok {
			return nil
		}
		if err := setField(f, v); err != nil {
			return fmt.Errorf("config: %s=%q: %w", name, v, err)
		}
		return nil
	})
}

func walkFields(v reflect.Value, prefix string, fn func(string, reflect.Value) error) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		key := sf.Tag.Get("toml")
		if key == "" {
			continue
		}
		name := prefix + strings.ToUpper(key)
		f := v.Field(i)
		if f.Kind() == reflect.Struct && sf.Type != reflect.TypeOf(Duration{}) {
			if err := walkFields(f, name+"_", fn); err != nil {
				return err
			}
			continue
		}
		if err := fn(name, f); err != nil {
			return err
		}
	}
	return nil
}

// Set sets one key given as "section.key" or "key" (used by --set flags).
func (c *Config) Set(key, value string) error {
	want := "ASKWPD_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
	found := false
	err := walkFields(reflect.ValueOf(c).Elem(), "ASKWPD_", func(name string, f reflect.Value) error {
		if name != want {
			return nil
		}
		found = true
		return setField(f, value)
	})
	if err != nil {
		return fmt.Errorf("config: %s: %w", key, err)
	}
	if !found {
		return fmt.Errorf("config: unknown key %q", key)
	}
	return nil
}

func setField(f reflect.Value, v string) error {
	if f.Type() == reflect.TypeOf(Duration{}) {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(Duration{d}))
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(v)
	case reflect.Slice:
		if f.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported type %s", f.Type())
		}
		var xs []string
		for _, x := range strings.Split(v, ",") {
			if x = strings.TrimSpace(x); x != "" {
				xs = append(xs, x)
			}
		}
		f.Set(reflect.ValueOf(xs))
	case reflect.Bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return err
		}
		f.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return err
		}
		f.SetInt(n)
	case reflect.Float64:
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return err
		}
		f.SetFloat(n)
	default:
		return fmt.Errorf("unsupported type %s", f.Type())
	}
	return nil
}

// Validate checks values that can be checked without touching the site.
func (c *Config) Validate() error {
	if c.WPRoot == "" && c.SiteURL == "" && c.DBDSN == "" {
		return errors.New("config: set wp_root (the folder holding wp-config.php), or db_dsn, or site_url")
	}
	if c.StateDir == "" {
		return errors.New("config: state_dir is empty")
	}
	if path, ok := SocketPath(c.Listen); ok {
		if !filepath.IsAbs(path) {
			return fmt.Errorf("config: listen %q: a unix socket needs an absolute path, e.g. unix:/run/askwpd/askwpd.sock", c.Listen)
		}
	} else if err := validateTCP(c.Listen, c.AllowRemote); err != nil {
		return err
	}
	for _, h := range c.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/ *@") {
			return fmt.Errorf("config: allowed_hosts entry %q must be a host name, or name:port", h)
		}
	}
	if o := strings.TrimSpace(c.Origin); o != "" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
			return fmt.Errorf("config: origin %q must be http(s)://host[:port], e.g. http://127.0.0.1:8080", c.Origin)
		}
	}
	if c.Crawl.Concurrency < 1 || c.Crawl.Concurrency > 64 {
		return fmt.Errorf("config: crawl.concurrency %d must be 1..64", c.Crawl.Concurrency)
	}
	if c.Crawl.RatePerSec <= 0 {
		return fmt.Errorf("config: crawl.rate_per_sec must be positive")
	}
	if c.Crawl.MaxBytes < 1024 {
		return fmt.Errorf("config: crawl.max_bytes %d is too small", c.Crawl.MaxBytes)
	}
	if err := ValidateSchedule(c.Schedule); err != nil {
		return err
	}
	for id, sc := range c.Network.Sites {
		if n, err := strconv.ParseInt(id, 10, 64); err != nil || n < 1 {
			return fmt.Errorf("config: network.sites.%s: want a blog id", id)
		}
		if err := ValidateSchedule(sc); err != nil {
			return fmt.Errorf("config: network.sites.%s: %w", id, err)
		}
	}
	if err := c.Embeddings.Validate(); err != nil {
		return err
	}
	if err := c.Provider.Validate(); err != nil {
		return err
	}
	if err := c.Cluster.Validate(); err != nil {
		return err
	}
	if c.Cluster.On() && c.WPRoot == "" && c.DBDSN == "" {
		return errors.New(`config: cluster.mode = "mariadb" needs the WordPress database: set wp_root (or db_dsn)`)
	}
	if c.Insights.RetentionDays < 0 || c.Insights.RetentionDays > 3650 {
		return fmt.Errorf("config: insights.retention_days %d must be 0 (off) to 3650", c.Insights.RetentionDays)
	}
	if c.Chat.MaxConcurrent < 0 || c.Chat.DailyModelCalls < 0 {
		return fmt.Errorf("config: chat.max_concurrent (%d) and chat.daily_model_calls (%d) must be 0 (no limit) or more",
			c.Chat.MaxConcurrent, c.Chat.DailyModelCalls)
	}
	return nil
}

// Validate checks the embeddings section; an empty base_url turns it off.
func (e EmbeddingsConfig) Validate() error {
	if e.BaseURL == "" {
		return nil
	}
	if u, err := url.Parse(e.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("config: embeddings.base_url %q must be an http(s) URL", e.BaseURL)
	}
	if e.Model == "" {
		return errors.New("config: embeddings.model is empty; name the embedding model (e.g. text-embedding-3-small, nomic-embed-text)")
	}
	if e.Alpha < 0 || e.Alpha > 1 || math.IsNaN(e.Alpha) {
		return fmt.Errorf("config: embeddings.alpha %g must be 0..1 (0 keyword only, 1 vector only)", e.Alpha)
	}
	if e.Fusion != "alpha" && e.Fusion != "rrf" {
		return fmt.Errorf("config: embeddings.fusion %q must be alpha or rrf", e.Fusion)
	}
	if e.Dimensions < 0 || e.Dimensions > 16384 {
		return fmt.Errorf("config: embeddings.dimensions %d must be 0..16384", e.Dimensions)
	}
	if e.BatchSize < 1 || e.BatchSize > 2048 {
		return fmt.Errorf("config: embeddings.batch_size %d must be 1..2048", e.BatchSize)
	}
	if e.Concurrency < 1 || e.Concurrency > 16 {
		return fmt.Errorf("config: embeddings.concurrency %d must be 1..16", e.Concurrency)
	}
	if e.Timeout.Duration <= 0 || e.QueryTimeout.Duration <= 0 {
		return errors.New("config: embeddings.timeout and embeddings.query_timeout must be positive")
	}
	return nil
}

// SocketPath returns the path of a listen address of the form unix:/path.
func SocketPath(listen string) (string, bool) {
	return strings.CutPrefix(listen, "unix:")
}

func validateTCP(listen string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("config: listen %q: %w", listen, err)
	}
	if !allowRemote && !isLoopback(host) {
		return fmt.Errorf("config: listen %q is not a loopback address; the API has no TLS, so set allow_remote = true only behind a TLS proxy", listen)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ValidateSchedule checks the cron specs, naming the bad one.
func ValidateSchedule(s ScheduleConfig) error {
	p := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	for name, spec := range map[string]string{"schedule.incremental": s.Incremental, "schedule.nightly": s.Nightly} {
		if spec == "" {
			continue
		}
		if _, err := p.Parse(spec); err != nil {
			return fmt.Errorf("config: %s: invalid spec %q: %w", name, spec, err)
		}
	}
	return nil
}

// LogValue keeps the API key out of any log line that prints the
// configuration.
func (e EmbeddingsConfig) LogValue() slog.Value {
	key := ""
	if e.APIKey != "" {
		key = "(set)"
	}
	return slog.GroupValue(slog.String("base_url", e.BaseURL), slog.String("model", e.Model),
		slog.String("api_key", key), slog.Int("dimensions", e.Dimensions), slog.Float64("alpha", e.Alpha),
		slog.String("fusion", e.Fusion))
}

// LogValue keeps the provider's API key out of any log line that prints
// the configuration.
func (p ProviderConfig) LogValue() slog.Value {
	key := ""
	if p.APIKey != "" {
		key = "(set)"
	}
	return slog.GroupValue(slog.String("kind", p.Kind), slog.String("base_url", p.BaseURL), slog.String("model", p.Model),
		slog.String("api_key", key), slog.Int("max_tokens", p.MaxTokens), slog.Float64("temperature", p.Temperature))
}
