package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askwp/askwpd/internal/llmtest"
	"github.com/askwp/askwpd/internal/wptest"
)

// TestServe_ConnectorsKey is the owner of issue #47: WordPress 7.1, an
// OpenAI key saved under Settings → Connectors (through the REST route
// the screen uses) and nothing else. The real binary, its config
// pointing the openai kind at a scripted provider (base_url, no key),
// answers /v1/chat with that key; /v1/status, /admin and doctor say where
// the key comes from, masked, and never show it.
func TestServe_ConnectorsKey(t *testing.T) {
	site := wptest.Get(t)
	site.Lock(t)
	for _, id := range []string{"OPENAI", "ANTHROPIC", "GOOGLE"} {
		t.Setenv(id+"_API_KEY", "") // empty is unset, for WordPress and askwpd
	}
	clear := `delete_option('askwp_llm_provider'); delete_option('askwp_api_key'); delete_option('connectors_ai_openai_api_key');`
	site.PHP(t, clear)
	t.Cleanup(func() { site.PHP(t, clear) })
	const key = "sk-proj-owner-saved-this-0123456789abcdefQRST"
	site.SaveConnectorKey(t, "openai", key)

	p := llmtest.New(t, "openai")
	p.Loop = llmtest.Say("Hello from the scripted OpenAI.")
	p.WantKey(key)
	bin := buildBinary(t)
	state, listen := t.TempDir(), freePort(t)
	flags := []string{"--wp-root", site.Root(), "--state-dir", state, "--set", "schedule.disabled=true",
		"--set", "provider.kind=openai", "--set", "provider.base_url=" + p.BaseURL()}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, append([]string{"serve", "--listen", listen}, flags...)...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	base := "http://" + listen
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get(base + "/healthz"); err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("askwpd serve did not answer within 20 s\n%s", stderr.String())
		}
	}
	tok, err := os.ReadFile(filepath.Join(state, "token"))
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if strings.Contains(string(b), key) {
			t.Errorf("%s %s shows the key", method, path)
		}
		return res.StatusCode, string(b)
	}

	code, body := call("POST", "/v1/chat", `{"messages": [{"role": "user", "content": "Hello?"}]}`)
	var resp struct {
		Reply    string `json:"reply"`
		Provider string `json:"provider"`
	}
	if err := json.Unmarshal([]byte(body), &resp); code != 200 || err != nil || resp.Reply != "Hello from the scripted OpenAI." {
		t.Fatalf("/v1/chat: HTTP %d: %s", code, body)
	}
	if seen := p.Seen(); len(seen) != 1 || seen[0].Key != key {
		t.Fatalf("the provider received %d requests, want 1 with the Connectors key", len(seen))
	}
	t.Logf("/v1/chat: %s answered %q with the Connectors key", resp.Provider, resp.Reply)

	masked := strings.Repeat("\u2022", 16) + key[len(key)-4:]
	code, body = call("GET", "/v1/status", "")
	var st struct {
		Provider json.RawMessage `json:"provider"`
	}
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		t.Fatalf("/v1/status: HTTP %d: %.300s", code, body)
	}
	want := fmt.Sprintf(`{"configured":true,"kind":"openai","label":"OpenAI","model":"gpt-4o-mini","base_url":%q,"source":"connectors","key_from":"option connectors_ai_openai_api_key","key":%q}`,
		p.BaseURL(), masked)
	if string(st.Provider) != want {
		t.Errorf("/v1/status provider:\n got %s\nwant %s", st.Provider, want)
	}
	t.Logf("/v1/status provider: %s", st.Provider)
	if code, body = call("GET", "/admin", ""); code != 200 || !strings.Contains(body, masked) ||
		!strings.Contains(body, "Key from option connectors_ai_openai_api_key") {
		t.Errorf("/admin: HTTP %d, without the masked key and its origin", code)
	}

	doctor := func(flags ...string) string {
		out, _ := exec.Command(bin, append([]string{"doctor", "--site-url", site.URL()}, flags...)...).Output()
		if strings.Contains(string(out), key) {
			t.Errorf("doctor shows the key:\n%s", out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, " provider") {
				return line
			}
		}
		t.Fatalf("doctor says nothing of the provider:\n%s", out)
		return ""
	}
	wantLine := "ok   provider OpenAI gpt-4o-mini at " + p.BaseURL() + ", key " + masked +
		" from option connectors_ai_openai_api_key (WordPress's Settings → Connectors)"
	if got := doctor(flags...); got != wantLine {
		t.Errorf("doctor:\n got %s\nwant %s", got, wantLine)
	}
	// With no key anywhere, doctor warns and says where to set one.
	site.PHP(t, clear)
	if got := doctor("--wp-root", site.Root(), "--state-dir", t.TempDir()); !strings.HasPrefix(got, "warn provider: no LLM provider is configured") ||
		!strings.Contains(got, "Settings → Connectors") {
		t.Errorf("doctor without a key: %s", got)
	}
}
