// Command askwpd is the AskWP companion daemon: it keeps a fresh,
// citable index of a WordPress site's public pages and serves it to LLM
// chat clients as tools over HTTP and MCP.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/daemon"
)

const usage = `askwpd: the AskWP companion daemon.

Usage:
  askwpd serve   [flags]              run the daemon (HTTP API, schedule)
  askwpd index   [flags] [--full]     one discovery + crawl + index pass, then exit
                 [--wait] [--site N]  (run by askwpd serve when it runs on the state dir)
  askwpd search  [flags] [--json] QUERY
  askwpd extract [--url URL] FILE|-   print the extraction of one HTML page as JSON
  askwpd eval    --corpus F --queries F [--qrels F] [--run F]
  askwpd mcp     --stdio [flags]      serve the tools over MCP on standard input/output
  askwpd doctor  [flags]              check config, database, site, store
  askwpd gaps    [flags] [--days N] [--json|--csv] [-v]
                                      what visitors asked that the site does not answer
  askwpd version

Common flags:
  --config FILE      TOML configuration (default $ASKWPD_CONFIG, else /etc/askwpd/askwpd.toml if present)
  --wp-root DIR      the folder holding wp-config.php
  --site-url URL     the site's address (read from WordPress when unset)
  --state-dir DIR    where the index and secrets live (default /var/lib/askwpd)
  --listen ADDR      HTTP address (default 127.0.0.1:8787), or unix:/path for a socket
  --db-dsn DSN       MySQL DSN, instead of reading wp-config.php
  --set KEY=VALUE    any other key, e.g. --set crawl.concurrency=2 (repeatable)
  --log-level LEVEL  debug, info, warn, error
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "askwpd: "+oneLine(err.Error()))
		}
		os.Exit(exitCode(err))
	}
}

type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{2, errors.New("no command given")}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return cmdServe(ctx, rest, stderr)
	case "index":
		return cmdIndex(ctx, rest, stderr)
	case "search":
		return cmdSearch(ctx, rest, stdout, stderr)
	case "extract":
		return cmdExtract(ctx, rest, os.Stdin, stdout, stderr)
	case "eval":
		return cmdEval(ctx, rest, stdout, stderr)
	case "doctor":
		return cmdDoctor(ctx, rest, stdout, stderr)
	case "gaps":
		return cmdGaps(ctx, rest, stdout)
	case probeReadCmd:
		return cmdProbeRead(rest)
	case "mcp":
		return cmdMCP(ctx, rest, os.Stdin, os.Stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "askwpd", daemon.Version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return &exitError{2, fmt.Errorf("unknown command %q", cmd)}
}

// common holds the flags every site-facing command takes.
type common struct {
	config, wpRoot, siteURL, stateDir, listen, dbDSN, logLevel string
	sets                                                       multiFlag
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "TOML configuration file")
	fs.StringVar(&c.wpRoot, "wp-root", "", "WordPress root (folder of wp-config.php)")
	fs.StringVar(&c.siteURL, "site-url", "", "site address")
	fs.StringVar(&c.stateDir, "state-dir", "", "state directory")
	fs.StringVar(&c.listen, "listen", "", "HTTP listen address")
	fs.StringVar(&c.dbDSN, "db-dsn", "", "MySQL DSN")
	fs.StringVar(&c.logLevel, "log-level", "", "log level")
	fs.Var(&c.sets, "set", "KEY=VALUE configuration override (repeatable)")
}

// load applies file, then environment, then flags.
func (c *common) load() (config.Config, error) {
	path := c.config
	if path == "" {
		path = os.Getenv("ASKWPD_CONFIG")
	}
	if path == "" {
		if _, err := os.Stat("/etc/askwpd/askwpd.toml"); err == nil {
			path = "/etc/askwpd/askwpd.toml"
		}
	}
	cfg, err := config.Load(path, os.Environ())
	if err != nil {
		return cfg, err
	}
	for k, v := range map[string]string{"wp_root": c.wpRoot, "site_url": c.siteURL, "state_dir": c.stateDir,
		"listen": c.listen, "db_dsn": c.dbDSN, "log_level": c.logLevel} {
		if v != "" {
			if err := cfg.Set(k, v); err != nil {
				return cfg, err
			}
		}
	}
	for _, kv := range c.sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return cfg, fmt.Errorf("--set %q: want KEY=VALUE", kv)
		}
		if err := cfg.Set(k, v); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

func newLogger(w io.Writer, level string, json bool) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lv}
	if json {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Print(usage)
			return err
		}
		return &exitError{2, err}
	}
	return nil
}
