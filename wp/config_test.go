package wp

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadConfig_Standard(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "wp-config.php"), `<?php
/** The name of the database for WordPress */
define( 'DB_NAME', 'blog' );
define( 'DB_USER', "blog_user" );
define( 'DB_PASSWORD', 'p\'a"s$s' ); // a comment with define('DB_NAME', 'nope')
# another comment
define( 'DB_HOST', 'localhost:/run/custom.sock' );
/* define('DB_USER', 'commented'); */
define('WP_HOME', 'https://example.com');
$table_prefix = 'blog_';
if ( ! defined( 'ABSPATH' ) ) {
	define( 'ABSPATH', __DIR__ . '/' );
}
require_once ABSPATH . 'wp-settings.php';
`)
	c, err := ReadConfig(filepath.Join(dir, "wp-config.php"), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.DBName != "blog" || c.DBUser != "blog_user" || c.DBPassword != `p'a"s$s` || c.TablePrefix != "blog_" || c.Home != "https://example.com" {
		t.Errorf("config = %+v", c)
	}
	if !strings.Contains(c.DSN(), "@unix(/run/custom.sock)/blog?") {
		t.Errorf("DSN = %s", c.DSN())
	}
}

func TestReadConfig_DynamicInclude(t *testing.T) {
	dir := t.TempDir()
	etc := filepath.Join(dir, "etc")
	// Debian's stub computes the file name from the request's host.
	write(t, filepath.Join(dir, "wp", "wp-config.php"), `<?php
$debian_server = preg_replace('/:.*/', "", $_SERVER['HTTP_HOST']);
if (isset($_SERVER['WORDPRESS_CONFIG'])) {
    $debian_file = '`+etc+`/config-'.$_SERVER['WORDPRESS_CONFIG'].'.php';
} else {
    $debian_file = '`+etc+`/config-'.strtolower($debian_server).'.php';
}
if (file_exists($debian_file)) {
    require_once($debian_file);
    define('DEBIAN_FILE', $debian_file);
} elseif (file_exists("`+etc+`/config-default.php")) {
    require_once("`+etc+`/config-default.php");
}
if (!defined('DB_NAME'))
    define('DB_NAME', 'wordpress');
if (!defined('DB_USER'))
    define('DB_USER', 'wordpress');
if (!defined('DB_HOST'))
    define('DB_HOST', 'localhost');
if (!isset($table_prefix)) {
    $table_prefix = 'wp_';
}
require_once(ABSPATH . 'wp-settings.php');
`)
	write(t, filepath.Join(etc, "config-blog.example.org.php"), `<?php
define('DB_NAME', 'site_db');
define('DB_USER', 'site');
define('DB_PASSWORD', 'secret');
define('DB_HOST', '10.0.0.5:3307');
$table_prefix = 'ex_';
`)
	c, err := ReadConfig(filepath.Join(dir, "wp", "wp-config.php"), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.DBName != "site_db" || c.DBUser != "site" || c.DBPassword != "secret" || c.TablePrefix != "ex_" {
		t.Errorf("config = %+v", c)
	}
	if !strings.Contains(c.DSN(), "@tcp(10.0.0.5:3307)/site_db?") {
		t.Errorf("DSN = %s", c.DSN())
	}

	// Two candidate files: ambiguous without a host, resolved with one.
	write(t, filepath.Join(etc, "config-other.example.org.php"), `<?php define('DB_NAME', 'other'); define('DB_USER', 'o');`)
	if _, err := ReadConfig(filepath.Join(dir, "wp", "wp-config.php"), ""); err == nil || !strings.Contains(err.Error(), "site_url") {
		t.Errorf("ambiguous include: err = %v", err)
	}
	c, err = ReadConfig(filepath.Join(dir, "wp", "wp-config.php"), "other.example.org")
	if err != nil || c.DBName != "other" {
		t.Errorf("host-picked include: %+v, %v", c, err)
	}
}

func TestReadConfig_Errors(t *testing.T) {
	dir := t.TempDir()
	if _, err := FindConfig(dir); !errors.Is(err, ErrNoConfig) {
		t.Errorf("FindConfig on empty dir: %v", err)
	}
	write(t, filepath.Join(dir, "wp-config.php"), "<?php\n$table_prefix = 'wp_';\n")
	_, err := ReadConfig(filepath.Join(dir, "wp-config.php"), "")
	if err == nil || !strings.Contains(err.Error(), "DB_NAME") {
		t.Errorf("config without DB constants: %v", err)
	}
	write(t, filepath.Join(dir, "wp-config.php"), "<?php define('DB_NAME','a'); define('DB_USER','b'); $table_prefix = 'x; DROP';")
	if _, err := ReadConfig(filepath.Join(dir, "wp-config.php"), ""); err == nil {
		t.Error("hostile table prefix accepted")
	}
}

func TestDBAddress(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"db.internal", "tcp(db.internal:3306)"},
		{"db.internal:3307", "tcp(db.internal:3307)"},
		{"127.0.0.1", "tcp(127.0.0.1:3306)"},
		{"localhost:3307", "tcp(127.0.0.1:3307)"},
		{"localhost:/tmp/my.sock", "unix(/tmp/my.sock)"},
		{":/tmp/my.sock", "unix(/tmp/my.sock)"},
		{"[::1]:3306", "tcp([::1]:3306)"},
		{"[::1]", "tcp([::1]:3306)"},
		{"fd00::5", "tcp([fd00::5]:3306)"},
		{"db.internal:/run/mysqld/mysqld.sock", "unix(/run/mysqld/mysqld.sock)"},
		// WordPress reads only digits as a port.
		{"db.internal:mysql", "tcp(db.internal:3306)"},
		{" db.internal:3307 ", "tcp(db.internal:3307)"},
	} {
		if got := dbAddress(tc.host); got != tc.want {
			t.Errorf("dbAddress(%q) = %q, want %q", tc.host, got, tc.want)
		}
	}
}

// envMap is an environment for ReadConfigEnv, so the tests touch no process
// state.
type envMap map[string]string

func (m envMap) lookup(k string) (string, bool) { v, ok := m[k]; return v, ok }

func TestReadConfig_DockerImage(t *testing.T) {
	const config = "testdata/wp-config-docker.php"
	secrets := t.TempDir()
	write(t, filepath.Join(secrets, "db_password"), "s3cr3t from file \r\n\n")
	write(t, filepath.Join(secrets, "db_user"), "file_user")

	for _, tc := range []struct {
		name                           string
		env                            envMap
		dbName, user, password, prefix string
		addr                           string
	}{
		{
			name:   "defaults alone",
			env:    envMap{},
			dbName: "wordpress", user: "example username", password: "example password", prefix: "wp_",
			addr: "@tcp(mysql:3306)/wordpress?",
		},
		{
			name: "env wins over default",
			env: envMap{
				"WORDPRESS_DB_NAME": "blog", "WORDPRESS_DB_USER": "bloguser", "WORDPRESS_DB_PASSWORD": "",
				"WORDPRESS_DB_HOST": "db:3307", "WORDPRESS_TABLE_PREFIX": "blog_",
			},
			dbName: "blog", user: "bloguser", password: "", prefix: "blog_",
			addr: "@tcp(db:3307)/blog?",
		},
		{
			name: "_FILE wins over env, trailing line breaks trimmed",
			env: envMap{
				"WORDPRESS_DB_PASSWORD_FILE": filepath.Join(secrets, "db_password"), "WORDPRESS_DB_PASSWORD": "from env",
				"WORDPRESS_DB_USER_FILE": filepath.Join(secrets, "db_user"),
			},
			dbName: "wordpress", user: "file_user", password: "s3cr3t from file ", prefix: "wp_",
			addr: "@tcp(mysql:3306)/wordpress?",
		},
		{
			// PHP tests NAME_FILE for truthiness.
			name:   "empty _FILE falls through to env",
			env:    envMap{"WORDPRESS_DB_PASSWORD_FILE": "", "WORDPRESS_DB_PASSWORD": "from env"},
			dbName: "wordpress", user: "example username", password: "from env", prefix: "wp_",
			addr: "@tcp(mysql:3306)/wordpress?",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ReadConfigEnv(config, "", tc.env.lookup)
			if err != nil {
				t.Fatal(err)
			}
			if c.DBName != tc.dbName || c.DBUser != tc.user || c.DBPassword != tc.password || c.TablePrefix != tc.prefix {
				t.Errorf("got name=%q user=%q password=%q prefix=%q", c.DBName, c.DBUser, c.DBPassword, c.TablePrefix)
			}
			if !strings.Contains(c.DSN(), tc.addr) {
				t.Errorf("DSN = %s, want it to contain %s", c.DSN(), tc.addr)
			}
		})
	}

	t.Run("DB_HOST forms", func(t *testing.T) {
		for _, tc := range []struct{ host, want string }{
			{"db", "@tcp(db:3306)/"},
			{"db:3307", "@tcp(db:3307)/"},
			{"db:/run/mysqld/mysqld.sock", "@unix(/run/mysqld/mysqld.sock)/"},
			{"localhost:/run/mysqld/mysqld.sock", "@unix(/run/mysqld/mysqld.sock)/"},
			{":/tmp/mysql.sock", "@unix(/tmp/mysql.sock)/"},
			{"[fd00::5]:3307", "@tcp([fd00::5]:3307)/"},
			{"[::1]", "@tcp([::1]:3306)/"},
			{"fd00::5", "@tcp([fd00::5]:3306)/"},
			{"10.0.0.7:3306", "@tcp(10.0.0.7:3306)/"},
		} {
			secret := filepath.Join(secrets, "host")
			write(t, secret, tc.host+"\n")
			for _, env := range []envMap{{"WORDPRESS_DB_HOST": tc.host}, {"WORDPRESS_DB_HOST_FILE": secret}} {
				c, err := ReadConfigEnv(config, "", env.lookup)
				if err != nil {
					t.Fatal(err)
				}
				if c.DBHost != tc.host || !strings.Contains(c.DSN(), tc.want) {
					t.Errorf("%v: DB_HOST = %q, DSN = %s, want %s", env, c.DBHost, c.DSN(), tc.want)
				}
			}
		}
	})

	t.Run("a generated secret survives the DSN", func(t *testing.T) {
		const pw = "k/9+Qz=@x:y?z&w"
		write(t, filepath.Join(secrets, "generated"), pw+"\n")
		c, err := ReadConfigEnv(config, "", envMap{"WORDPRESS_DB_PASSWORD_FILE": filepath.Join(secrets, "generated")}.lookup)
		if err != nil {
			t.Fatal(err)
		}
		got, err := mysql.ParseDSN(c.DSN())
		if err != nil || got.Passwd != pw || got.Addr != "mysql:3306" || got.DBName != "wordpress" {
			t.Errorf("ParseDSN(%q) = %+v, %v", c.DSN(), got, err)
		}
	})

	t.Run("WORDPRESS_CONFIG_EXTRA", func(t *testing.T) {
		c, err := ReadConfigEnv(config, "", envMap{
			"WORDPRESS_CONFIG_EXTRA": "define('WP_HOME', 'https://blog.example');\ndefine( 'ASKWPD_STATE_DIR', '/askwpd' );",
		}.lookup)
		if err != nil {
			t.Fatal(err)
		}
		if c.Home != "https://blog.example" || c.Constants["ASKWPD_STATE_DIR"] != "/askwpd" {
			t.Errorf("Home = %q, ASKWPD_STATE_DIR = %q", c.Home, c.Constants["ASKWPD_STATE_DIR"])
		}
	})

	t.Run("unreadable secret file", func(t *testing.T) {
		missing := filepath.Join(secrets, "nope")
		_, err := ReadConfigEnv(config, "", envMap{"WORDPRESS_DB_PASSWORD_FILE": missing}.lookup)
		if err == nil || !strings.Contains(err.Error(), "WORDPRESS_DB_PASSWORD_FILE="+missing) || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("err = %v", err)
		}
		// A secret askwpd has no use for may stay out of its reach.
		if _, err := ReadConfigEnv(config, "", envMap{"WORDPRESS_AUTH_KEY_FILE": missing}.lookup); err != nil {
			t.Errorf("unreadable AUTH_KEY: %v", err)
		}
	})

	t.Run("process environment", func(t *testing.T) {
		t.Setenv("WORDPRESS_DB_NAME", "from_process")
		c, err := ReadConfig(config, "")
		if err != nil || c.DBName != "from_process" {
			t.Errorf("ReadConfig: %+v, %v", c, err)
		}
	})
}

// TestReadConfig_ConnectorConstants: the constants WordPress's Connectors
// read keys from, written the ways wp-config.php files write them, and
// WP_AI_SUPPORT false, which is defined and empty.
func TestReadConfig_ConnectorConstants(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "keys.php"), `<?php define( 'GOOGLE_API_KEY', "AIza" . 'Sy-included' );`)
	write(t, filepath.Join(dir, "wp-config.php"), `<?php
define( 'DB_NAME', 'blog' );
define( 'DB_USER', 'blog' );
define( 'OPENAI_API_KEY', 'sk-proj-0123' );
define( 'ANTHROPIC_API_KEY', getenv( 'ASKWPD_TEST_ANTHROPIC' ) );
define( 'WP_AI_SUPPORT', false );
require __DIR__ . '/keys.php';
require_once ABSPATH . 'wp-settings.php';
`)
	env := func(name string) (string, bool) {
		if name == "ASKWPD_TEST_ANTHROPIC" {
			return "sk-ant-from-env", true
		}
		return "", false
	}
	c, err := ReadConfigEnv(filepath.Join(dir, "wp-config.php"), "", env)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"OPENAI_API_KEY": "sk-proj-0123", "ANTHROPIC_API_KEY": "sk-ant-from-env",
		"GOOGLE_API_KEY": "AIzaSy-included"} {
		if got := c.Constants[name]; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if v, ok := c.Constants["WP_AI_SUPPORT"]; !ok || v != "" {
		t.Errorf("WP_AI_SUPPORT = %q, %v; want defined and empty (false)", v, ok)
	}
}

// TestReadConfig_IncludeNotRegular: an include of a device or a FIFO is
// skipped, as one that cannot be read, rather than read until memory runs
// out (/dev/zero) or forever (a FIFO nobody writes); the config's own
// constants still count. Found by FuzzReadConfig.
func TestReadConfig_IncludeNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.php")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "wp-config.php")
	write(t, path, "<?php require '/dev/zero'; include '"+fifo+"'; define('DB_NAME','a'); define('DB_USER','b'); $table_prefix = 'wp_';")
	done := make(chan struct{})
	var cfg *Config
	var err error
	go func() {
		defer close(done)
		cfg, err = ReadConfig(path, "")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ReadConfig still reading after 10 s")
	}
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DBName != "a" || len(cfg.Files) != 1 {
		t.Errorf("DB_NAME %q, files %q; want a, from wp-config.php alone", cfg.DBName, cfg.Files)
	}
}
