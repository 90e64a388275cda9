package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"syscall"
)

// The contract's modes: the web server's group reads the secrets, so the
// PHP shim finds them with no configuration, and nobody else does.
const (
	StateDirMode = 0o750
	SecretMode   = 0o640
	SocketMode   = 0o660
)

// SecretNames are the files in the state dir that the PHP shim reads.
var SecretNames = []string{"token", "webhook.secret"}

// FPMPoolGlob is where Debian's php-fpm keeps its pools.
var FPMPoolGlob = "/etc/php/*/fpm/pool.d/*.conf"

// WebGroup is the group the web server's PHP runs as.
type WebGroup struct {
	Name string
	GID  int
	// User is the account PHP runs as, for checks made as that user; ""
	// when none is known.
	User string
	// From says how it was found: "web_group", a file's path, or "".
	From string
}

// FindWebGroup finds the web server's group: the configured name, else the
// group of the first WordPress config file (wp-config.php or an include
// such as Debian's config-HOST.php) that root does not own by group, else
// the php-fpm pool's user's group. The zero WebGroup means none was found.
func FindWebGroup(configured string, wpFiles []string) (WebGroup, error) {
	poolUser, poolFile := fpmPoolUser(FPMPoolGlob)
	if configured != "" {
		g, err := user.LookupGroup(configured)
		if err != nil {
			return WebGroup{}, fmt.Errorf("config: web_group %q: %w", configured, err)
		}
		return withUser(groupOf(g), poolUser, "web_group"), nil
	}
	for _, f := range wpFiles {
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Gid == 0 {
			continue
		}
		g, err := user.LookupGroupId(strconv.Itoa(int(st.Gid)))
		if err != nil {
			continue
		}
		return withUser(groupOf(g), poolUser, f), nil
	}
	if poolUser != "" {
		u, err := user.Lookup(poolUser)
		if err != nil {
			return WebGroup{}, nil
		}
		g, err := user.LookupGroupId(u.Gid)
		if err != nil {
			return WebGroup{}, nil
		}
		wg := groupOf(g)
		wg.User, wg.From = poolUser, poolFile
		return wg, nil
	}
	return WebGroup{}, nil
}

func groupOf(g *user.Group) WebGroup {
	gid, _ := strconv.Atoi(g.Gid)
	return WebGroup{Name: g.Name, GID: gid}
}

// withUser names the account to check as: the pool's user when it is in
// the group, else the user named like the group (www-data for www-data).
func withUser(wg WebGroup, poolUser, from string) WebGroup {
	wg.From = from
	for _, name := range []string{poolUser, wg.Name} {
		if name == "" {
			continue
		}
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		if u.Gid == strconv.Itoa(wg.GID) {
			wg.User = name
			return wg
		}
		if gids, err := u.GroupIds(); err == nil && slices.Contains(gids, strconv.Itoa(wg.GID)) {
			wg.User = name
			return wg
		}
	}
	return wg
}

var fpmUserRe = regexp.MustCompile(`^\s*user\s*=\s*"?([^"\s;]+)`)

// fpmPoolUser returns the user of the first php-fpm pool that names one,
// and the pool's file.
func fpmPoolUser(glob string) (string, string) {
	files, _ := filepath.Glob(glob)
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if m := fpmUserRe.FindStringSubmatch(sc.Text()); m != nil {
				fh.Close()
				return m[1], f
			}
		}
		fh.Close()
	}
	return "", ""
}

// webGroup finds the web group once, and decides whether this process
// gives it to the files it creates: it does when it is a member, and not
// when it runs as root, whose files should not be there at all. Either
// way it logs one line. A web_group that names no group is an error, as an
// unknown key is.
func (d *Daemon) webGroup() (WebGroup, int, error) {
	d.webOnce.Do(func() {
		d.webGID = -1
		wg, err := FindWebGroup(d.Config.WebGroup, d.wpFiles)
		if err != nil {
			d.webErr = err
			return
		}
		d.web = wg
		switch {
		case wg.Name == "":
			d.Log.Warn("No web server group found (wp-config.php's group is root, no php-fpm pool); the state dir keeps its group. Set web_group so the PHP shim can read the secrets")
		case os.Geteuid() == 0:
			d.Log.Warn("Running as root: the state dir keeps its group; run askwpd as its own user in the web server's group", "web_group", wg.Name)
		case !inGroup(wg.GID):
			d.Log.Warn("Not a member of the web server's group, so the state dir keeps its group and the PHP shim cannot read the secrets",
				"web_group", wg.Name, "fix", fmt.Sprintf("usermod -a -G %s %s", wg.Name, currentUser()))
		default:
			d.webGID = wg.GID
			d.Log.Info("Web server group", "group", wg.Name, "from", wg.From)
		}
	})
	return d.web, d.webGID, d.webErr
}

// WebGroup is the web server's group as found for this site (the zero
// WebGroup when none was found), for askwpd doctor.
func (d *Daemon) WebGroup() (WebGroup, error) {
	wg, _, err := d.webGroup()
	return wg, err
}

func inGroup(gid int) bool {
	if os.Getegid() == gid {
		return true
	}
	gids, err := os.Getgroups()
	return err == nil && slices.Contains(gids, gid)
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Geteuid())
}

// PrepareStateDir creates the state dir, and puts it and the secrets
// already in it into the contract's modes and group (gid, or -1 to leave
// the group), whatever the umask or an older version left. It changes only
// what this process owns, and logs what it changes or cannot.
func PrepareStateDir(dir string, gid int, log *slog.Logger) error {
	if err := os.MkdirAll(dir, StateDirMode); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	if err := fixMode(dir, StateDirMode|fs.ModeDir, gid, log); err != nil {
		return err
	}
	for _, name := range SecretNames {
		if err := fixMode(filepath.Join(dir, name), SecretMode, gid, log); err != nil {
			return err
		}
	}
	return nil
}

func fixMode(path string, want fs.FileMode, gid int, log *slog.Logger) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	wantPerm := want.Perm()
	if fi.Mode().Type() != want.Type() {
		return fmt.Errorf("state dir: %s is a %v, not a %v", path, fi.Mode().Type(), want.Type())
	}
	if st == nil || int(st.Uid) != os.Geteuid() {
		if fi.Mode().Perm() != wantPerm {
			log.Warn("Not the owner, so the mode stays", "path", path, "mode", fmt.Sprintf("%#o", fi.Mode().Perm()), "want", fmt.Sprintf("%#o", wantPerm))
		}
		return nil
	}
	if gid >= 0 && int(st.Gid) != gid {
		if err := os.Lchown(path, -1, gid); err != nil {
			return fmt.Errorf("state dir: chgrp %s: %w", path, err)
		}
		log.Info("Gave the web server's group", "path", path, "gid", gid)
	}
	if fi.Mode().Perm() != wantPerm {
		if err := os.Chmod(path, wantPerm); err != nil {
			return fmt.Errorf("state dir: chmod %s: %w", path, err)
		}
		log.Info("Fixed mode", "path", path, "was", fmt.Sprintf("%#o", fi.Mode().Perm()), "mode", fmt.Sprintf("%#o", wantPerm))
	}
	return nil
}
