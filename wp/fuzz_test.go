package wp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzReadConfig parses arbitrary bytes as wp-config.php. Property: the
// parse ends within seconds, never panics, lists the file read first, and
// reads nothing but regular files.
func FuzzReadConfig(f *testing.F) {
	for _, s := range []string{
		`<?php define('DB_NAME', 'wp'); define( "DB_USER", 'u' ); define('DB_PASSWORD', 'p\'q'); define('DB_HOST', 'localhost:3307'); $table_prefix = 'wp_';`,
		`<?php define('DB_NAME', getenv('WORDPRESS_DB_NAME') ?: 'x'); define('WP_HOME', 'https://' . $_SERVER['HTTP_HOST']);`,
		`<?php require_once __DIR__ . '/inc.php'; $table_prefix = PREFIX . 'x_';`,
		`<?php include '/etc/wordpress/config-' . strtolower($_SERVER['HTTP_HOST']) . '.php';`,
		`<?php if (file_exists(ABSPATH . 'local.php')) { require ABSPATH . 'local.php'; } eval('define("A", 1);');`,
		`<?php require '/dev/zero';`, `<?php require '/dev/stdin';`,
		`<?php define(`, `<?php /* unterminated`, "<?php $x = <<<EOT\nheredoc\nEOT;\ndefine('B', $x);", ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		dir := t.TempDir()
		path := filepath.Join(dir, "wp-config.php")
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "inc.php"), []byte(`<?php define('PREFIX', 'p_');`), 0o600); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		cfg, err := ReadConfigEnv(path, "example.test", func(name string) (string, bool) {
			return "env-" + strings.ToLower(name), name != "UNSET"
		})
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("parse took %v for %q", d, src)
		}
		if err != nil {
			return
		}
		if len(cfg.Files) == 0 || cfg.Files[0] != path {
			t.Fatalf("files read %q, want %s first", cfg.Files, path)
		}
		for _, p := range cfg.Files {
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("read %s, not a regular file (%v)", p, err)
			}
		}
	})
}
