package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, fi.Mode().Perm())
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
