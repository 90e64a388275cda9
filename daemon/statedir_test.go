package daemon

import (
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// TestPrepareStateDir puts a state dir an older version or another umask
// left (0700, secrets 0600 and 0644) into the contract's modes, and keeps
// a new secret 0640 whatever the umask.
func TestPrepareStateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "token"), []byte("0123456789abcdef0123\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "webhook.secret"), []byte("0123456789abcdef0123\n"), 0o644)
	os.Chmod(filepath.Join(dir, "webhook.secret"), 0o644)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := PrepareStateDir(dir, -1, log); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o750, filepath.Join(dir, "token"): 0o640, filepath.Join(dir, "webhook.secret"): 0o640} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %#o", path, fi.Mode(), err, want)
		}
	}

	fresh := filepath.Join(t.TempDir(), "fresh")
	if _, err := EnsureSecret(fresh, "token"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(fresh, "token")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("new token: %v %v, want 0640", fi.Mode(), err)
	}
}

// TestFindWebGroup: a configured group wins; else a config file's group
// unless root's; else the php-fpm pool's user's group.
func TestFindWebGroup(t *testing.T) {
	g, err := user.LookupGroup("www-data")
	if err != nil {
		t.Skip("no www-data group")
	}
	old := FPMPoolGlob
	t.Cleanup(func() { FPMPoolGlob = old })
	pools := t.TempDir()
	FPMPoolGlob = filepath.Join(pools, "*.conf")
	os.WriteFile(filepath.Join(pools, "www.conf"), []byte("[www]\n; user = nobody\nuser = www-data\ngroup = www-data\n"), 0o644)

	rootOwned := filepath.Join(t.TempDir(), "wp-config.php")
	os.WriteFile(rootOwned, []byte("<?php\n"), 0o644)
	webOwned := filepath.Join(t.TempDir(), "config-localhost.php")
	os.WriteFile(webOwned, []byte("<?php\n"), 0o640)
	gid, _ := strconv.Atoi(g.Gid)
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files groups")
	}
	os.Chown(rootOwned, 0, 0)
	os.Chown(webOwned, 0, gid)

	wg, err := FindWebGroup("", []string{rootOwned, webOwned})
	if err != nil || wg.Name != "www-data" || wg.From != webOwned {
		t.Errorf("from the config file: %+v %v", wg, err)
	}
	os.Chown(webOwned, 0, 0)
	wg, err = FindWebGroup("", []string{rootOwned, webOwned})
	if err != nil || wg.Name != "www-data" || wg.User != "www-data" || wg.From != filepath.Join(pools, "www.conf") {
		t.Errorf("from the pool: %+v %v", wg, err)
	}
	if wg, err := FindWebGroup("root", nil); err != nil || wg.Name != "root" || wg.From != "web_group" {
		t.Errorf("configured: %+v %v", wg, err)
	}
	if _, err := FindWebGroup("no-such-group-here", nil); err == nil {
		t.Error("an unknown web_group is an error")
	}
	FPMPoolGlob = filepath.Join(t.TempDir(), "*.conf")
	if wg, err := FindWebGroup("", []string{rootOwned}); err != nil || wg.Name != "" {
		t.Errorf("nothing to go by: %+v %v", wg, err)
	}
}
