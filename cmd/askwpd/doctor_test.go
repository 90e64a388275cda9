package main

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/askwp/askwpd/daemon"
)

// TestReadableFromModes is doctor's check when it cannot switch users:
// the web server's user must search every directory and read the file.
func TestReadableFromModes(t *testing.T) {
	g, err := user.LookupGroup("www-data")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root, to give files www-data's group")
	}
	gid, _ := strconv.Atoi(g.Gid)
	wg := daemon.WebGroup{Name: "www-data", GID: gid, User: "www-data"}
	top := t.TempDir()
	for _, d := range []string{top, filepath.Dir(top)} {
		os.Chmod(d, 0o755)
	}
	dir := filepath.Join(top, "state")
	os.Mkdir(dir, 0o700)
	file := filepath.Join(dir, "token")
	os.WriteFile(file, []byte("x\n"), 0o600)

	if err := readableFromModes(file, wg); err == nil || !strings.Contains(err.Error(), dir+" is 0700") {
		t.Errorf("0700 dir: %v", err)
	}
	os.Chown(dir, 0, gid)
	os.Chmod(dir, 0o750)
	if err := readableFromModes(file, wg); err == nil || !strings.Contains(err.Error(), file+" is 0600") {
		t.Errorf("0600 file: %v", err)
	}
	os.Chown(file, 0, gid)
	os.Chmod(file, 0o640)
	if err := readableFromModes(file, wg); err != nil {
		t.Errorf("0640 www-data in 0750 www-data: %v", err)
	}
	// With no user known, membership of the group is what counts.
	if err := readableFromModes(file, daemon.WebGroup{Name: "www-data", GID: gid}); err != nil {
		t.Errorf("by group alone: %v", err)
	}
}
