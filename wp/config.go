// Package wp reads what askwpd needs from a WordPress install: the
// settings in wp-config.php (parsed, never executed) and the published,
// public content in its MySQL/MariaDB database.
package wp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Config is what wp-config.php says about the site.
type Config struct {
	// Path is the wp-config.php that was read; Files lists it and every
	// file it included, in the order read.
	Path  string
	Files []string

	DBName, DBUser, DBPassword, DBHost string
	TablePrefix                        string
	// Home and SiteURL are WP_HOME and WP_SITEURL when defined.
	Home, SiteURL string
	// Constants holds every define() whose value could be evaluated.
	Constants map[string]string
}

// ErrNoConfig means wp-config.php was not found where WordPress keeps it.
var ErrNoConfig = errors.New("wp: wp-config.php not found")

// FindConfig returns the wp-config.php for a WordPress root. Like WordPress
// itself, it also looks one directory up.
func FindConfig(wpRoot string) (string, error) {
	for _, p := range []string{filepath.Join(wpRoot, "wp-config.php"), filepath.Join(filepath.Dir(filepath.Clean(wpRoot)), "wp-config.php")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w in %s (set wp_root to the folder that holds wp-config.php)", ErrNoConfig, wpRoot)
}

// Env looks up an environment variable. Like PHP's getenv, it tells an unset
// variable (false) from one set to "".
type Env func(name string) (string, bool)

// ReadConfig parses wp-config.php and the files it includes. host, when not
// empty, picks among several candidate files of a dynamic include (Debian's
// /etc/wordpress/config-HOST.php scheme). getenv() and the Docker image's
// getenv_docker() read askwpd's own environment, so a container running
// askwpd needs the same WORDPRESS_DB_* variables (or secret files) as the
// WordPress container.
func ReadConfig(path, host string) (*Config, error) {
	return ReadConfigEnv(path, host, os.LookupEnv)
}

// ReadConfigEnv is ReadConfig with the environment that the config's
// getenv() calls see.
func ReadConfigEnv(path, host string, env Env) (*Config, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	p := &configParser{
		consts:    map[string]string{},
		constErrs: map[string]error{},
		vars:      map[string]value{},
		seen:      map[string]bool{},
		host:      strings.ToLower(host),
		env:       env,
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("wp: read config: %w", err)
	}
	// WordPress defines ABSPATH as the folder of wp-config.php before
	// configs run, unless the config defines it itself.
	if err := p.readFile(abs, 0); err != nil {
		return nil, err
	}
	c := &Config{
		Path:        abs,
		Files:       p.files,
		DBName:      p.consts["DB_NAME"],
		DBUser:      p.consts["DB_USER"],
		DBPassword:  p.consts["DB_PASSWORD"],
		DBHost:      p.consts["DB_HOST"],
		Home:        p.consts["WP_HOME"],
		SiteURL:     p.consts["WP_SITEURL"],
		TablePrefix: "wp_",
		Constants:   p.consts,
	}
	if v, ok := p.vars["table_prefix"]; ok && v.known() {
		c.TablePrefix = v.s
	} else if ok && v.err != nil {
		return c, v.err
	}
	// A secret that WordPress reads from a file askwpd cannot open would
	// otherwise surface later as a baffling "access denied".
	for _, k := range []string{"DB_NAME", "DB_USER", "DB_PASSWORD", "DB_HOST"} {
		if _, ok := p.consts[k]; !ok && p.constErrs[k] != nil {
			return c, p.constErrs[k]
		}
	}
	if c.DBName == "" || c.DBUser == "" {
		return c, fmt.Errorf("wp: %s defines no DB_NAME/DB_USER (read %s); set db_dsn in the askwpd config",
			abs, strings.Join(c.Files, ", "))
	}
	if !validPrefix(c.TablePrefix) {
		return c, fmt.Errorf("wp: table prefix %q in %s is not a plain identifier", c.TablePrefix, abs)
	}
	return c, nil
}

func validPrefix(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// DSN turns the DB_* settings into a go-sql-driver/mysql DSN, following
// WordPress's reading of DB_HOST (wpdb::parse_db_host): "localhost" is the
// unix socket, "host:port" is TCP, "localhost:/path.sock" (or ":/path.sock")
// a socket, and an IPv6 address is bracketed when it carries a port.
func (c *Config) DSN() string {
	addr := dbAddress(c.DBHost)
	return fmt.Sprintf("%s:%s@%s/%s?parseTime=true&loc=UTC&charset=utf8mb4&collation=utf8mb4_unicode_ci&timeout=5s&readTimeout=30s",
		c.DBUser, c.DBPassword, addr, c.DBName)
}

// defaultSockets are where Debian, RHEL and macOS packages put the server
// socket, tried in order when DB_HOST is "localhost".
var defaultSockets = []string{"/run/mysqld/mysqld.sock", "/var/run/mysqld/mysqld.sock", "/var/lib/mysql/mysql.sock", "/tmp/mysql.sock"}

// The patterns wpdb::parse_db_host uses once a socket suffix is peeled off:
// a port is digits only, and anything after is ignored as WordPress does.
var (
	ipv6Host = regexp.MustCompile(`^\[?([0-9a-fA-F:]+)(?:\]:(\d+))?`)
	ipv4Host = regexp.MustCompile(`^([^:/]*)(?::(\d+))?`)
)

func dbAddress(dbHost string) string {
	host := strings.TrimSpace(dbHost)
	socket := ""
	if i := strings.Index(host, ":/"); i >= 0 {
		host, socket = host[:i], host[i+1:]
	}
	re := ipv4Host
	if strings.Count(host, ":") > 1 {
		re = ipv6Host
	}
	port := ""
	if m := re.FindStringSubmatch(host); m != nil {
		host, port = m[1], m[2]
	}
	// mysqli would ignore a socket next to a remote host name, but someone
	// who wrote a socket path meant it.
	switch {
	case socket != "":
		return "unix(" + socket + ")"
	case port != "":
		if host == "" || host == "localhost" {
			host = "127.0.0.1"
		}
		return "tcp(" + net.JoinHostPort(host, port) + ")"
	case host == "" || host == "localhost":
		for _, s := range defaultSockets {
			if _, err := os.Stat(s); err == nil {
				return "unix(" + s + ")"
			}
		}
		return "tcp(127.0.0.1:3306)"
	default:
		return "tcp(" + net.JoinHostPort(host, "3306") + ")"
	}
}

// value is an evaluated PHP expression: known text, or a glob pattern where
// the parts that need running PHP (function calls, request data) are "*".
type value struct {
	s       string
	pattern bool
	// err says why a part is unknown when askwpd could have known it: a
	// secret file it cannot read.
	err error
}

func (v value) known() bool { return !v.pattern }

type configParser struct {
	consts map[string]string
	// constErrs holds why a define() could not be evaluated, when that is
	// worth telling.
	constErrs map[string]error
	vars      map[string]value
	seen      map[string]bool
	files     []string
	host      string
	env       Env
}

const maxConfigSize = 1 << 20

func (p *configParser) readFile(path string, depth int) error {
	if depth > 8 {
		return fmt.Errorf("wp: %s: includes nested too deep", path)
	}
	if p.seen[path] {
		return nil
	}
	p.seen[path] = true
	b, err := readConfigFile(path)
	if errors.Is(err, errTooLarge) {
		return fmt.Errorf("wp: %s is larger than 1 MiB, not a config file", path)
	}
	if err != nil {
		if depth == 0 {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%w: %s", ErrNoConfig, path)
			}
			return fmt.Errorf("wp: cannot read %s (askwpd needs read access to it): %w", path, err)
		}
		return nil // an optional include that isn't readable: WordPress would fail too, or skip it
	}
	p.files = append(p.files, path)
	return p.run(lexPHP(string(b)), path, depth)
}

var errTooLarge = errors.New("larger than 1 MiB")

// readConfigFile reads a config file, or a file it includes, when it is a
// regular file of at most 1 MiB, and no further than the size it had when
// opened. An include can name anything: /dev/zero never ends, a FIFO or
// /dev/stdin blocks, and a file under /proc that says it is empty may
// block on its first byte.
func readConfigFile(path string) ([]byte, error) {
	// Looked at before it is opened: opening a FIFO blocks until a
	// writer comes.
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() { // replaced in between
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxConfigSize {
		return nil, errTooLarge
	}
	return io.ReadAll(io.LimitReader(f, fi.Size()))
}

// run reads the statements of one file, or of code the file eval()s.
func (p *configParser) run(toks []token, path string, depth int) error {
	dir := filepath.Dir(path)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == tIdent && strings.EqualFold(t.text, "define") && i+1 < len(toks) && toks[i+1].text == "(":
			args, next := splitArgs(toks, i+1)
			i = next
			if len(args) >= 2 {
				name := p.eval(args[0], path)
				val := p.eval(args[1], path)
				if _, dup := p.consts[name.s]; name.known() && !dup { // PHP keeps the first definition
					if val.known() {
						p.consts[name.s] = val.s
					} else if val.err != nil && p.constErrs[name.s] == nil {
						p.constErrs[name.s] = val.err
					}
				}
			}
		case t.kind == tVar && i+1 < len(toks) && toks[i+1].text == "=" && (i+2 >= len(toks) || toks[i+2].text != "="):
			end := stmtEnd(toks, i+2)
			name := strings.TrimPrefix(t.text, "$")
			if name == "table_prefix" {
				if _, dup := p.vars[name]; dup {
					// Debian's stub sets a default only "if (!isset(...))".
					i = end
					continue
				}
			}
			p.vars[name] = p.eval(toks[i+2:end], path)
			i = end
		case t.kind == tIdent && isInclude(t.text):
			end := stmtEnd(toks, i+1)
			v := p.eval(toks[i+1:end], path)
			i = end
			if err := p.include(v, dir, depth); err != nil {
				return err
			}
		case t.kind == tIdent && strings.EqualFold(t.text, "eval") && i+1 < len(toks) && toks[i+1].text == "(":
			// The Docker image runs WORDPRESS_CONFIG_EXTRA this way, and sites
			// put WP_HOME and friends there.
			args, next := splitArgs(toks, i+1)
			i = next
			if len(args) == 1 {
				if v := p.eval(args[0], path); v.known() && v.s != "" {
					if depth >= 8 {
						return fmt.Errorf("wp: %s: eval nested too deep", path)
					}
					if err := p.run(lexPHP("<?php "+v.s), path, depth+1); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func isInclude(s string) bool {
	switch strings.ToLower(s) {
	case "require", "require_once", "include", "include_once":
		return true
	}
	return false
}

// include follows an include whose target is known, or globs a pattern
// (a dynamic include) and picks the file that matches the site's host.
func (p *configParser) include(v value, dir string, depth int) error {
	target := v.s
	if target == "" || target == "*" {
		return nil
	}
	if !filepath.IsAbs(target) && !strings.HasPrefix(target, "*") {
		target = filepath.Join(dir, target)
	}
	base := filepath.Base(target)
	// WordPress core, not configuration.
	if base == "wp-settings.php" || base == "wp-load.php" || base == "wp-blog-header.php" {
		return nil
	}
	if v.known() {
		return p.readFile(filepath.Clean(target), depth+1)
	}
	if strings.HasPrefix(target, "*") || strings.Count(target, "*") > 2 {
		return nil
	}
	matches, _ := filepath.Glob(target)
	switch len(matches) {
	case 0:
		return nil
	case 1:
		return p.readFile(matches[0], depth+1)
	}
	sort.Strings(matches)
	if p.host != "" {
		for _, m := range matches {
			if strings.Contains(strings.ToLower(filepath.Base(m)), p.host) {
				return p.readFile(m, depth+1)
			}
		}
	}
	var rest []string
	for _, m := range matches {
		if !strings.Contains(filepath.Base(m), "default") && !p.seen[m] {
			rest = append(rest, m)
		}
	}
	switch len(rest) {
	case 0:
		return p.readFile(matches[0], depth+1)
	case 1:
		return p.readFile(rest[0], depth+1)
	}
	return fmt.Errorf("wp: wp-config.php includes one of %s depending on the request's host; set site_url in the askwpd config so the right one is read",
		strings.Join(rest, ", "))
}

// eval evaluates a concatenation of literals, constants, variables and a
// few pure functions. Anything else becomes a wildcard.
func (p *configParser) eval(toks []token, file string) value {
	toks = trimParens(toks)
	var b strings.Builder
	pattern := false
	var err error
	add := func(v value) {
		b.WriteString(v.s)
		pattern = pattern || v.pattern
		if err == nil {
			err = v.err
		}
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == tString || t.kind == tNumber:
			b.WriteString(t.text)
		case t.text == ".":
		case t.text == "[": // $_SERVER['X'] and friends: request data, unknown here
			depth := 0
			for ; i < len(toks); i++ {
				if toks[i].text == "[" {
					depth++
				} else if toks[i].text == "]" {
					if depth--; depth == 0 {
						break
					}
				}
			}
			b.WriteString("*")
			pattern = true
		case t.kind == tIdent && (strings.EqualFold(t.text, "true") || strings.EqualFold(t.text, "false")):
			if strings.EqualFold(t.text, "true") {
				b.WriteString("1")
			}
		case t.kind == tIdent && t.text == "__DIR__":
			b.WriteString(filepath.Dir(file))
		case t.kind == tIdent && t.text == "__FILE__":
			b.WriteString(file)
		case t.kind == tIdent && i+1 < len(toks) && toks[i+1].text == "(":
			args, next := splitArgs(toks, i+1)
			i = next
			switch strings.ToLower(t.text) {
			case "dirname":
				if len(args) >= 1 {
					v := p.eval(args[0], file)
					if v.known() {
						b.WriteString(filepath.Dir(v.s))
						continue
					}
				}
			case "getenv":
				if len(args) >= 1 {
					if v := p.eval(args[0], file); v.known() {
						if e, ok := p.env(v.s); ok {
							b.WriteString(e)
							continue
						}
					}
				}
			case "getenv_docker":
				if len(args) >= 2 {
					if v := p.eval(args[0], file); v.known() {
						add(p.getenvDocker(v.s, args[1], file))
						continue
					}
				}
			}
			b.WriteString("*")
			pattern = true
		case t.kind == tIdent:
			if v, ok := p.consts[t.text]; ok {
				b.WriteString(v)
			} else if t.text == "ABSPATH" {
				b.WriteString(filepath.Dir(file) + "/")
			} else {
				b.WriteString("*")
				pattern = true
			}
		case t.kind == tVar:
			if i+1 < len(toks) && toks[i+1].text == "[" {
				continue // the index that follows makes it a wildcard
			}
			if v, ok := p.vars[strings.TrimPrefix(t.text, "$")]; ok {
				add(v)
			} else {
				b.WriteString("*")
				pattern = true
			}
		default:
			b.WriteString("*")
			pattern = true
		}
	}
	return value{s: b.String(), pattern: pattern, err: err}
}

// getenvDocker does what the official Docker image's wp-config.php helper
// does: the file named by NAME_FILE (less trailing line breaks), else the
// variable NAME, else the default. PHP reads NAME_FILE by truthiness, so
// "" and "0" fall through.
func (p *configParser) getenvDocker(name string, def []token, file string) value {
	if f, ok := p.env(name + "_FILE"); ok && f != "" && f != "0" {
		b, err := readSmall(f)
		if err != nil {
			return value{s: "*", pattern: true, err: fmt.Errorf(
				"wp: %s reads %s from %s_FILE=%s, which askwpd cannot read (give askwpd the same secret at that path, or set db_dsn): %w",
				filepath.Base(file), name, name, f, err)}
		}
		return value{s: strings.TrimRight(string(b), "\r\n")}
	}
	if v, ok := p.env(name); ok {
		return value{s: v}
	}
	return p.eval(def, file)
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfigSize {
		return nil, errors.New("larger than 1 MiB, not a secret")
	}
	return b, nil
}

func trimParens(toks []token) []token {
	for len(toks) >= 2 && toks[0].text == "(" && toks[len(toks)-1].text == ")" {
		if _, end := splitArgs(toks, 0); end != len(toks)-1 {
			break
		}
		toks = toks[1 : len(toks)-1]
	}
	return toks
}

// splitArgs reads a parenthesized, comma-separated list starting at the
// "(" at index open; it returns the arguments and the index of the ")".
func splitArgs(toks []token, open int) ([][]token, int) {
	depth := 0
	var args [][]token
	start := open + 1
	for i := open; i < len(toks); i++ {
		switch toks[i].text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
			if depth == 0 {
				if i > start || len(args) > 0 {
					args = append(args, toks[start:i])
				}
				return args, i
			}
		case ",":
			if depth == 1 {
				args = append(args, toks[start:i])
				start = i + 1
			}
		}
	}
	return args, len(toks) - 1
}

func stmtEnd(toks []token, from int) int {
	depth := 0
	for i := from; i < len(toks); i++ {
		switch toks[i].text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
			if depth < 0 { // the include sits inside an if (...) condition
				return i
			}
		case ";":
			if depth == 0 {
				return i
			}
		}
	}
	return len(toks)
}
