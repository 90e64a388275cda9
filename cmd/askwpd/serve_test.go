package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askwp/askwpd/internal/wptest"
)

// buildBinary compiles askwpd once per test binary run.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "askwpd")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServe_SystemdLifecycle runs the real binary as systemd would: with a
// NOTIFY_SOCKET to report READY=1 on, then SIGTERM to stop it.
func TestServe_SystemdLifecycle(t *testing.T) {
	site := wptest.Get(t)
	bin := buildBinary(t)
	state := t.TempDir()
	listen := freePort(t)

	sockPath := filepath.Join(t.TempDir(), "notify.sock")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()
	messages := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := notify.ReadFromUnix(buf)
			if err != nil {
				close(messages)
				return
			}
			messages <- string(buf[:n])
		}
	}()

	var stderr bytes.Buffer
	cmd := exec.Command(bin, "serve", "--wp-root", site.Root(), "--state-dir", state, "--listen", listen,
		"--set", "schedule.disabled=true")
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sockPath)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	}()

	select {
	case m := <-messages:
		if !strings.Contains(m, "READY=1") {
			t.Fatalf("first notification %q, want READY=1", m)
		}
	case err := <-done:
		t.Fatalf("askwpd exited before READY: %v\n%s", err, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("no READY=1 within 20s\n%s", stderr.String())
	}

	// READY means the listener is up: no retry needed.
	base := "http://" + listen
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz = %d", resp.StatusCode)
	}

	tokenBytes, err := os.ReadFile(filepath.Join(state, "token"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"token", "webhook.secret"} {
		fi, err := os.Stat(filepath.Join(state, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o640 {
			t.Errorf("%s has mode %v, want 0640", name, fi.Mode().Perm())
		}
	}
	token := strings.TrimSpace(string(tokenBytes))
	body := `{"query": "espresso grinder"}`
	for _, tc := range []struct {
		auth string
		want int
	}{
		{"", 401},
		{"Bearer wrong", 401},
		{"Bearer " + token + "x", 401},
		{"Basic " + token, 401},
		{"Bearer " + token, 200},
	} {
		req, _ := http.NewRequest("POST", base+"/v1/tools/search_site", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("auth %q: status %d, want %d", tc.auth, resp.StatusCode, tc.want)
		}
		if tc.want == 401 && fmt.Sprint(out) != "map[error:map[code:unauthorized message:unauthorized]]" {
			t.Errorf("401 body says more than unauthorized: %v", out)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("askwpd exited with %v after SIGTERM\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("askwpd did not stop within 15s of SIGTERM\n%s", stderr.String())
	}
	var stopping bool
	for m := range messages {
		stopping = stopping || strings.Contains(m, "STOPPING=1")
		if stopping {
			break
		}
	}
	if !stopping {
		t.Error("no STOPPING=1 notification")
	}
	if !strings.Contains(stderr.String(), `"msg":"Shutting down"`) {
		t.Errorf("no shutdown log line:\n%s", stderr.String())
	}
}

// TestServe_UnixSocket serves the API on a unix socket: 0660, /healthz
// and the tools answer through it, a second daemon is refused while the
// first answers, and a socket left by a killed daemon is replaced. Run as
// root, it runs the daemon a second time as the host harness's `askwpd`
// user (scripts/host-up.sh) to see the socket and secrets get the web
// server's group.
func TestServe_UnixSocket(t *testing.T) {
	site := wptest.Get(t)
	bin := buildBinary(t)
	// Reachable by another user, for the second part: t.TempDir() makes
	// two levels of 0700 directories.
	reachable := func(dir string) {
		os.Chmod(filepath.Dir(dir), 0o755)
		os.Chmod(dir, 0o755)
	}
	reachable(filepath.Dir(bin))

	start := func(t *testing.T, cred *syscall.Credential, state, sock string) (*exec.Cmd, *bytes.Buffer) {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "serve", "--wp-root", site.Root(), "--site-url", site.URL(), "--state-dir", state,
			"--listen", "unix:"+sock, "--set", "schedule.disabled=true", "--set", "crawl.budget=1")
		cmd.Stderr = &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, &stderr
	}
	client := func(sock string) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			}}}
	}
	waitHealthy := func(t *testing.T, sock string, stderr *bytes.Buffer) {
		t.Helper()
		for i := 0; i < 200; i++ {
			if resp, err := client(sock).Get("http://localhost/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("no /healthz on %s within 10s\n%s", sock, stderr.String())
	}

	t.Run("as this user", func(t *testing.T) {
		dir := t.TempDir()
		state, sock := filepath.Join(dir, "state"), filepath.Join(dir, "askwpd.sock")
		cmd, stderr := start(t, nil, state, sock)
		waitHealthy(t, sock, stderr)
		if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o660 || fi.Mode().Type() != os.ModeSocket {
			t.Errorf("socket %v, %v; want a socket with mode 0660", fi, err)
		}
		token, err := os.ReadFile(filepath.Join(state, "token"))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", "http://localhost/v1/tools/search_site", strings.NewReader(`{"query":"espresso"}`))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		resp, err := client(sock).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("search_site over the socket: %d", resp.StatusCode)
		}

		second := exec.Command(bin, "serve", "--wp-root", site.Root(), "--site-url", site.URL(), "--state-dir", t.TempDir(),
			"--listen", "unix:"+sock, "--set", "schedule.disabled=true")
		out, err := second.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "another daemon answers") {
			t.Errorf("a second daemon on the same socket: %v\n%s", err, out)
		}

		cmd.Process.Kill()
		cmd.Wait()
		if _, err := os.Lstat(sock); err != nil {
			t.Fatalf("SIGKILL should leave the socket file behind: %v", err)
		}
		_, stderr = start(t, nil, state, sock)
		waitHealthy(t, sock, stderr)
	})

	t.Run("as askwpd in the web group", func(t *testing.T) {
		u, err := user.Lookup("askwpd")
		g, gerr := user.LookupGroup("www-data")
		if os.Geteuid() != 0 || err != nil || gerr != nil {
			t.Skip("needs root and the askwpd user of scripts/host-up.sh")
		}
		gids, _ := u.GroupIds()
		if !slices.Contains(gids, g.Gid) {
			t.Skip("askwpd is not in www-data")
		}
		cred := &syscall.Credential{}
		fmt.Sscan(u.Uid, &cred.Uid)
		fmt.Sscan(u.Gid, &cred.Gid)
		for _, id := range gids {
			var n uint32
			fmt.Sscan(id, &n)
			cred.Groups = append(cred.Groups, n)
		}
		dir := t.TempDir()
		reachable(dir)
		os.Chown(dir, int(cred.Uid), int(cred.Gid))
		state, sock := filepath.Join(dir, "state"), filepath.Join(dir, "askwpd.sock")
		_, stderr := start(t, cred, state, sock)
		waitHealthy(t, sock, stderr)
		var wgid uint32
		fmt.Sscan(g.Gid, &wgid)
		for path, mode := range map[string]os.FileMode{sock: 0o660, state: 0o750,
			filepath.Join(state, "token"): 0o640, filepath.Join(state, "webhook.secret"): 0o640} {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if fi.Mode().Perm() != mode || st.Gid != wgid || st.Uid != cred.Uid {
				t.Errorf("%s: %#o %d:%d, want %#o askwpd:www-data", path, fi.Mode().Perm(), st.Uid, st.Gid, mode)
			}
		}
	})
}

// TestCLI_BadInput checks each misconfiguration ends in one clear line
// and exit status 1, never a panic.
func TestCLI_BadInput(t *testing.T) {
	bin := buildBinary(t)
	state := t.TempDir()
	noDB := t.TempDir()
	os.WriteFile(filepath.Join(noDB, "wp-config.php"), []byte("<?php\n$table_prefix = 'wp_';\n"), 0o644)
	unreadable := t.TempDir()
	os.WriteFile(filepath.Join(unreadable, "wp-config.php"), []byte("<?php define('DB_NAME','x');"), 0o000)

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing wp-config.php", []string{"--wp-root", t.TempDir()}, "wp-config.php not found"},
		{"no DB constants", []string{"--wp-root", noDB}, "defines no DB_NAME"},
		{"wrong DB password", []string{"--db-dsn", "askwpd:definitely-wrong@tcp(127.0.0.1:3306)/askwpd_wp"}, "cannot connect to the WordPress database"},
		{"site down", []string{"--site-url", "http://" + freePort(t)}, "does not answer"},
		{"unknown config key", []string{"--set", "crawl.nope=1", "--site-url", "http://127.0.0.1:1"}, "unknown key"},
		{"non-loopback listen", []string{"--site-url", "http://127.0.0.1:1", "--listen", "0.0.0.0:8787"}, "not a loopback address"},
	}
	if os.Geteuid() != 0 { // root reads mode-0 files anyway
		cases = append(cases, struct {
			name string
			args []string
			want string
		}{"unreadable wp-config.php", []string{"--wp-root", unreadable}, "cannot read"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			cmd := exec.Command(bin, append([]string{"index", "--state-dir", state}, tc.args...)...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit = %v, want status 1\n%s", err, stderr.String())
			}
			msg := strings.TrimSpace(stderr.String())
			if strings.Count(msg, "\n") != 0 || !strings.HasPrefix(msg, "askwpd: ") || !strings.Contains(msg, tc.want) {
				t.Errorf("stderr = %q, want one line containing %q", msg, tc.want)
			}
		})
	}
}

// TestDoctor_Secrets: doctor says whether the web server's user can read
// both secrets, and when it cannot, prints the command that fixes it; that
// command works. As root, the check opens the files as that user.
func TestDoctor_Secrets(t *testing.T) {
	site := wptest.Get(t)
	g, err := user.LookupGroup("www-data")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and www-data")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(filepath.Dir(bin)), dir, filepath.Dir(dir)} {
		os.Chmod(d, 0o755)
	}
	state := filepath.Join(dir, "state")
	os.Mkdir(state, 0o700)
	for _, name := range []string{"token", "webhook.secret"} {
		os.WriteFile(filepath.Join(state, name), []byte("0123456789abcdef0123456789abcdef\n"), 0o600)
	}
	doctor := func() string {
		out, _ := exec.Command(bin, "doctor", "--wp-root", site.Root(), "--site-url", site.URL(), "--state-dir", state,
			"--set", "web_group=www-data").Output()
		return string(out)
	}
	out := doctor()
	var fix string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "FAIL token: www-data cannot read") {
			_, fix, _ = strings.Cut(line, "; fix: ")
		}
	}
	if fix == "" || !strings.Contains(out, "FAIL webhook.secret") {
		t.Fatalf("doctor on a 0700 dir of 0600 files, owned by root:\n%s", out)
	}
	if want := "chgrp www-data " + state; !strings.HasPrefix(fix, want) {
		t.Errorf("fix %q, want it to start with %q", fix, want)
	}
	if b, err := exec.Command("sh", "-c", fix).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", fix, err, b)
	}
	out = doctor()
	for _, name := range []string{"token", "webhook.secret"} {
		if !strings.Contains(out, "ok   "+name+" readable by www-data (opened as www-data)") {
			t.Errorf("after the fix, %s:\n%s", name, out)
		}
	}
	fi, _ := os.Stat(filepath.Join(state, "token"))
	if st := fi.Sys().(*syscall.Stat_t); fmt.Sprint(st.Gid) != g.Gid || fi.Mode().Perm() != 0o640 {
		t.Errorf("token after the fix: %v gid %d", fi.Mode(), st.Gid)
	}
}
