package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/askwp/askwpd/daemon"
	"github.com/askwp/askwpd/origin"
)

// checkStore says the store is sound, or warns of a heal that is recent
// or whose damaged file is still kept.
func checkStore(ctx context.Context, w io.Writer, d *daemon.Daemon) {
	h, err := d.Store.LastHeal(ctx)
	if err != nil {
		fmt.Fprintf(w, "warn store %s: %s\n", d.Store.Path, oneLine(err.Error()))
		return
	}
	if h == nil {
		fmt.Fprintf(w, "ok   store %s\n", d.Store.Path)
		return
	}
	_, kept := os.Stat(h.Damaged)
	if time.Since(h.At) > 7*24*time.Hour && (h.Damaged == "" || kept != nil) {
		fmt.Fprintf(w, "ok   store %s (healed %s)\n", d.Store.Path, h.At.Format(time.RFC3339))
		return
	}
	what := "a fresh store was started and a full pass re-indexes the site"
	if h.Restored {
		what = "it was written back whole from the serving daemon"
	}
	fmt.Fprintf(w, "warn store %s: found %s at %s (%s); %s; salvaged %v", d.Store.Path, h.Cause, h.At.Format(time.RFC3339), oneLine(h.Detail), what, h.Salvaged)
	if h.Damaged != "" && kept == nil {
		fmt.Fprintf(w, "; the damaged file is kept at %s: remove it once you no longer need it", h.Damaged)
	}
	fmt.Fprintln(w)
}

// checkProvider prints one line: the LLM /v1/chat uses and where its key
// comes from, masked as WordPress masks it, or where to set one. No
// provider is a warning: search and the tools work without one.
func checkProvider(ctx context.Context, w io.Writer, d *daemon.Daemon) {
	ps := d.Agent.ProviderStatus(ctx)
	if !ps.Configured {
		fmt.Fprintf(w, "warn provider: %s\n", oneLine(ps.Hint))
		return
	}
	line := "ok   provider " + ps.Label
	if ps.Model != "" {
		line += " " + ps.Model
	}
	if ps.BaseURL != "" {
		line += " at " + ps.BaseURL
	}
	if ps.Key != "" {
		line += ", key " + ps.Key + " from " + ps.KeyFrom
	} else {
		line += ", no key"
	}
	fmt.Fprintln(w, line+" ("+ps.Where()+")")
}

// probeReadCmd is the hidden command doctor runs as the web server's user:
// it opens each file and exits 1 on the first it cannot read.
const probeReadCmd = "__probe-read"

func cmdProbeRead(args []string) error {
	for _, p := range args {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		f.Close()
	}
	return nil
}

// checkSecrets prints one line per secret: whether the web server's user
// can read it, as the PHP shim must. As root it asks a child running with
// that user's credentials; otherwise it works it out from the modes. It
// returns an error when one cannot be read.
func checkSecrets(w io.Writer, stateDir string, wg daemon.WebGroup) error {
	if wg.Name == "" {
		fmt.Fprintln(w, "warn secrets: no web server group found (wp-config.php's group is root, no php-fpm pool); set web_group")
		return nil
	}
	who := wg.User
	if who == "" {
		who = "group " + wg.Name
	}
	fix := fmt.Sprintf("chgrp %[1]s %[2]s %[3]s %[4]s && chmod 0750 %[2]s && chmod 0640 %[3]s %[4]s", wg.Name, stateDir,
		filepath.Join(stateDir, daemon.SecretNames[0]), filepath.Join(stateDir, daemon.SecretNames[1]))
	var failed error
	for _, name := range daemon.SecretNames {
		path := filepath.Join(stateDir, name)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(w, "warn %s: %s does not exist yet (askwpd serve writes it on first start)\n", name, path)
			continue
		}
		how := "modes"
		err := readableFromModes(path, wg)
		if os.Geteuid() == 0 && wg.User != "" {
			how = "opened as " + wg.User
			err = readAs(path, wg.User)
		}
		if err != nil {
			fmt.Fprintf(w, "FAIL %s: %s cannot read %s (%s); fix: %s\n", name, who, path, oneLine(err.Error()), fix)
			failed = fmt.Errorf("%s cannot read %s: %w", who, path, err)
			continue
		}
		fmt.Fprintf(w, "ok   %s readable by %s (%s)\n", name, who, how)
	}
	return failed
}

// readAs opens path in a child process running as the named user, with
// that user's groups, as php-fpm's workers do.
func readAs(path, name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return err
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	var groups []uint32
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				groups = append(groups, uint32(n))
			}
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var out strings.Builder
	cmd := exec.Command(self, probeReadCmd, path)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Stderr = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && out.Len() > 0 {
			return errors.New(strings.TrimPrefix(strings.TrimSpace(out.String()), "askwpd: "))
		}
		return fmt.Errorf("run %s as %s: %w", self, name, err)
	}
	return nil
}

// readableFromModes tells whether the web server's user (or, with none
// known, a member of its group) may search every directory above path and
// read path, from owners and permission bits alone.
func readableFromModes(path string, wg daemon.WebGroup) error {
	uid := -1
	gids := []int{wg.GID}
	if wg.User != "" {
		if u, err := user.Lookup(wg.User); err == nil {
			uid, _ = strconv.Atoi(u.Uid)
			if ids, err := u.GroupIds(); err == nil {
				for _, g := range ids {
					if n, err := strconv.Atoi(g); err == nil {
						gids = append(gids, n)
					}
				}
			}
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	allowed := func(p string, bit fs.FileMode) error {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		perm := fi.Mode().Perm()
		var ok2 bool
		switch {
		case uid == 0:
			ok2 = true
		case int(st.Uid) == uid:
			ok2 = perm&(bit<<6) != 0
		case slices.Contains(gids, int(st.Gid)):
			ok2 = perm&(bit<<3) != 0
		default:
			ok2 = perm&bit != 0
		}
		if !ok2 {
			return fmt.Errorf("%s is %#o %s:%s", p, perm, owner(st.Uid), group(st.Gid))
		}
		return nil
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if err := allowed(dir, 0o1); err != nil {
			return err
		}
		if dir == "/" {
			break
		}
	}
	return allowed(abs, 0o4)
}

func owner(uid uint32) string {
	if u, err := user.LookupId(strconv.Itoa(int(uid))); err == nil {
		return u.Username
	}
	return strconv.Itoa(int(uid))
}

func group(gid uint32) string {
	if g, err := user.LookupGroupId(strconv.Itoa(int(gid))); err == nil {
		return g.Name
	}
	return strconv.Itoa(int(gid))
}

// checkCluster prints cluster mode's line: the lease, this store's place
// in the changelog, and whether the database, on Galera its node, is
// usable (Synced in the primary component). It returns an error when the
// database is not usable.
func checkCluster(ctx context.Context, w io.Writer, d *daemon.Daemon) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st := d.ClusterCheck(ctx)
	if st == nil {
		fmt.Fprintln(w, "skip cluster (cluster.mode off)")
		return nil
	}
	db := "a single MariaDB"
	if g := st.Database.Galera; g != nil {
		db = fmt.Sprintf("Galera node %s: %s, %s, %d nodes, %d writesets to apply", g.Node, g.State, g.Status, g.Size, g.RecvQueue)
	}
	if !st.Database.Usable {
		fmt.Fprintf(w, "FAIL cluster: the database is not usable (%s): %s; this node would serve its index and not lead\n", db, oneLine(st.Database.Error))
		return errors.New("cluster: the database is not usable: " + st.Database.Error)
	}
	lease := "no leader"
	if st.LeaseValid && st.LeaseExpiresAt != nil {
		lease = fmt.Sprintf("leader %s (%s) until %s", st.Leader, st.LeaderHost, st.LeaseExpiresAt.UTC().Format(time.TimeOnly))
	}
	fmt.Fprintf(w, "ok   cluster on %s; %s; changelog %d of %d applied here\n", db, lease, st.AppliedID, st.NewestID)
	return nil
}

// checkOrigin prints where the fetcher reads the site's pages from: a
// warning when that is the public address, where a CDN or page cache may
// answer in WordPress's place.
func checkOrigin(w io.Writer, o origin.Result) {
	switch {
	case o.Warning != "":
		fmt.Fprintf(w, "warn origin: %s\n", oneLine(o.Warning))
	case o.Address == "":
		fmt.Fprintln(w, "ok   origin: the site's URL names this host")
	default:
		fmt.Fprintf(w, "ok   origin %s (%s, proven %v)\n", o.Address, o.Source, o.Proven)
	}
}
