package wptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ConnectorOption is the option WordPress 7 keeps a built-in AI
// connector's key in (Settings → Connectors).
func ConnectorOption(id string) string { return "connectors_ai_" + id + "_api_key" }

// SaveConnectorKey saves an API key for an AI connector (openai,
// anthropic, google) the way the Connectors screen does: a POST to the
// REST settings route, as the site's admin, through WordPress's own
// sanitizing, validation and masking. It returns the value the route
// answers with (masked by WordPress). The caller holds the site lock;
// the option is deleted when the test ends.
//
// WordPress registers a connector's setting only while a provider plugin
// for it is active, so a must-use plugin standing in for one
// (connectors-provider.php) is in place meanwhile.
func (s *Site) SaveConnectorKey(t testing.TB, id, key string) string {
	t.Helper()
	s.installAIProviders(t)
	user, pass := s.appPassword(t)
	body, _ := json.Marshal(map[string]string{ConnectorOption(id): key})
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/?rest_route=/wp/v2/settings", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(user, pass)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST /wp/v2/settings: HTTP %d: %.300s", res.StatusCode, b)
	}
	var settings map[string]any
	if err := json.Unmarshal(b, &settings); err != nil {
		t.Fatalf("POST /wp/v2/settings: %v: %.300s", err, b)
	}
	got, ok := settings[ConnectorOption(id)].(string)
	if !ok {
		t.Fatalf("WordPress's settings route has no %s: the connector's setting is not registered (%.300s)", ConnectorOption(id), b)
	}
	t.Cleanup(func() { s.PHP(t, fmt.Sprintf("delete_option(%q);", ConnectorOption(id))) })
	return got
}

// installAIProviders puts connectors-provider.php among the site's
// must-use plugins until the test ends.
func (s *Site) installAIProviders(t testing.TB) {
	t.Helper()
	content := s.Env["WP_CONTENT_DIR"]
	if content == "" {
		content = filepath.Join(s.Root(), "wp-content")
	}
	dir := filepath.Join(content, "mu-plugins")
	dst := filepath.Join(dir, "askwpd-test-ai-providers.php")
	if _, err := os.Stat(dst); err == nil {
		return
	}
	src, err := os.ReadFile(filepath.Join(RepoRoot(), "internal", "wptest", "connectors-provider.php"))
	if err != nil {
		t.Fatal(err)
	}
	_, dirErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, src, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Remove(dst)
		if dirErr != nil {
			os.Remove(dir) // made here, and empty again
		}
	})
}

// appPassword makes an application password for the site's admin,
// revoked when the test ends.
func (s *Site) appPassword(t testing.TB) (user, pass string) {
	t.Helper()
	user = s.Env["WP_ADMIN_USER"]
	out := s.PHP(t, fmt.Sprintf(`$u = get_user_by('login', %q);
$r = WP_Application_Passwords::create_new_application_password($u->ID, array('name' => 'askwpd-test-'.wp_generate_password(8, false)));
if (is_wp_error($r)) { fwrite(STDERR, $r->get_error_message()); exit(1); }
echo $u->ID, ' ', $r[1]['uuid'], ' ', $r[0];`, user))
	f := strings.Fields(strings.TrimSpace(out))
	if len(f) != 3 {
		t.Fatalf("application password: %q", out)
	}
	t.Cleanup(func() {
		s.PHP(t, fmt.Sprintf("WP_Application_Passwords::delete_application_password(%s, %q);", f[0], f[1]))
	})
	return user, f[2]
}
