package chat

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/askwp/askwpd/internal/wptest"
)

// TestConnectors_AsWordPressNamesThem: the built-in AI connectors, their
// options, constants and environment variables are the ones WordPress's
// own connector registry names.
func TestConnectors_AsWordPressNamesThem(t *testing.T) {
	site := wptest.Get(t)
	out := site.PHP(t, `$r = array();
foreach (wp_get_connectors() as $id => $c) {
	if ('ai_provider' !== $c['type'] || 'api_key' !== $c['authentication']['method']) { continue; }
	$a = $c['authentication'];
	$r[] = array($id, $a['setting_name'], $a['constant_name'], $a['env_var_name']);
}
echo json_encode($r);`)
	var wpc [][4]string
	if err := json.Unmarshal([]byte(out), &wpc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got, want []string
	for _, c := range wpc {
		want = append(want, strings.Join(c[:], " "))
	}
	for _, c := range connectors {
		got = append(got, strings.Join([]string{c.ID, c.option(), c.constant(), c.constant()}, " "))
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("askwpd's connectors:\n%s\nWordPress's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMaskKey: keys are masked exactly as WordPress masks them on the
// Connectors screen (_wp_connectors_mask_api_key), except that a key of 8
// characters or fewer, which WordPress would show half of or whole, is
// bullets only.
func TestMaskKey(t *testing.T) {
	site := wptest.Get(t)
	keys := []string{"sk-proj-0123456789abcdefghijklmnopqrstuvwxyzABCD", "AIzaSyA-1234567890", "sk-ant-api03-abc", "123456789"}
	b, _ := json.Marshal(keys)
	out := site.PHP(t, fmt.Sprintf(`$r = array(); foreach (json_decode(%q) as $k) { $r[] = _wp_connectors_mask_api_key($k); } echo json_encode($r);`, b))
	var wpMasks []string
	if err := json.Unmarshal([]byte(out), &wpMasks); err != nil || len(wpMasks) != len(keys) {
		t.Fatalf("%v: %s", err, out)
	}
	for i, k := range keys {
		if got := maskKey(k); got != wpMasks[i] {
			t.Errorf("maskKey(%q) = %q, WordPress %q", k, got, wpMasks[i])
		}
	}
	for _, k := range []string{"", "abcd", "abcdefgh"} {
		if got := maskKey(k); got != strings.Repeat("\u2022", len(k)) {
			t.Errorf("maskKey(%q) = %q, want bullets only", k, got)
		}
	}
}
