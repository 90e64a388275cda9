// Package wp reads what askwpd needs from a WordPress install: the
// settings in wp-config.php (parsed, never executed) and the published,
// public content in its MySQL/MariaDB database.
package wp

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
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

// ReadConfig parses wp-config.php and the files it includes. host, when not
// empty, picks among several candidate files of a dynamic include (Debian's
// /etc/wordpress/config-HOST.php scheme).
func ReadConfig(path, host string) (*Config, error) {
	p := &configParser{
		consts: map[string]string{},
		vars:   map[string]value{},
		seen:   map[string]bool{},
		host:   strings.ToLower(host),
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
// WordPress's reading of DB_HOST: "localhost" is the unix socket,
// "host:port" is TCP, "localhost:/path.sock" (or ":/path.sock") a socket.
func (c *Config) DSN() string {
	addr := dbAddress(c.DBHost)
	return fmt.Sprintf("%s:%s@%s/%s?parseTime=true&loc=UTC&charset=utf8mb4&collation=utf8mb4_unicode_ci&timeout=5s&readTimeout=30s",
		c.DBUser, c.DBPassword, addr, c.DBName)
}

// defaultSockets are where Debian, RHEL and macOS packages put the server
// socket, tried in order when DB_HOST is "localhost".
var defaultSockets = []string{"/run/mysqld/mysqld.sock", "/var/run/mysqld/mysqld.sock", "/var/lib/mysql/mysql.sock", "/tmp/mysql.sock"}

func dbAddress(host string) string {
	host = strings.TrimSpace(host)
	if host == "" {
		host = "localhost"
	}
	h, rest, hasRest := strings.Cut(host, ":")
	if strings.HasPrefix(host, "[") { // [::1]:3306
		if i := strings.Index(host, "]"); i > 0 {
			h, rest, hasRest = host[1:i], strings.TrimPrefix(host[i+1:], ":"), strings.HasPrefix(host[i+1:], ":")
		}
	}
	switch {
	case hasRest && strings.HasPrefix(rest, "/"):
		return "unix(" + rest + ")"
	case hasRest && rest != "":
		if h == "" || h == "localhost" {
			h = "127.0.0.1"
		}
		return "tcp(" + net.JoinHostPort(h, rest) + ")"
	case h == "localhost":
		for _, s := range defaultSockets {
			if _, err := os.Stat(s); err == nil {
				return "unix(" + s + ")"
			}
		}
		return "tcp(127.0.0.1:3306)"
	default:
		return "tcp(" + net.JoinHostPort(h, "3306") + ")"
	}
}

// value is an evaluated PHP expression: known text, or a glob pattern where
// the parts that need running PHP (function calls, request data) are "*".
type value struct {
	s       string
	pattern bool
}

func (v value) known() bool { return !v.pattern }

type configParser struct {
	consts map[string]string
	vars   map[string]value
	seen   map[string]bool
	files  []string
	host   string
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
	b, err := os.ReadFile(path)
	if err != nil {
		if depth == 0 {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%w: %s", ErrNoConfig, path)
			}
			return fmt.Errorf("wp: cannot read %s (askwpd needs read access to it): %w", path, err)
		}
		return nil // an optional include that isn't readable: WordPress would fail too, or skip it
	}
	if len(b) > maxConfigSize {
		return fmt.Errorf("wp: %s is larger than 1 MiB, not a config file", path)
	}
	p.files = append(p.files, path)
	toks := lexPHP(string(b))
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
				if name.known() && val.known() {
					if _, dup := p.consts[name.s]; !dup { // PHP keeps the first definition
						p.consts[name.s] = val.s
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
						if e, ok := os.LookupEnv(v.s); ok {
							b.WriteString(e)
							continue
						}
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
				b.WriteString(v.s)
				pattern = pattern || v.pattern
			} else {
				b.WriteString("*")
				pattern = true
			}
		default:
			b.WriteString("*")
			pattern = true
		}
	}
	return value{s: b.String(), pattern: pattern}
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
