package wptest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// NetSite is one site of the test network, as scripts/network-up.sh made it.
type NetSite struct {
	BlogID int64  `json:"blog_id"`
	Home   string `json:"home"`
	Name   string `json:"name"`
	// PublicMarker is a word only this site's public posts hold;
	// PrivateMarker one only its draft, private and protected posts hold.
	PublicMarker  string `json:"public_marker"`
	PrivateMarker string `json:"private_marker"`
	OptedOut      bool   `json:"opted_out"`
}

// Network is the running test network.
type Network struct {
	*Site
	Sites []NetSite
}

// GetNetwork returns the test network that scripts/network-up.sh brings
// up (ASKWPD_TEST_NETWORK_ENV, else .wp-network/env), or skips.
func GetNetwork(t testing.TB) *Network {
	t.Helper()
	path := os.Getenv("ASKWPD_TEST_NETWORK_ENV")
	if path == "" {
		path = filepath.Join(RepoRoot(), ".wp-network", "env")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("the test network is not up (%v); run scripts/network-up.sh", err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = strings.Trim(v, `"'`)
		}
	}
	n := &Network{Site: &Site{Env: env}}
	b, err = os.ReadFile(n.Env["WP_NETWORK_MANIFEST"])
	if err != nil {
		t.Fatalf("wptest: the network's manifest: %v", err)
	}
	if err := json.Unmarshal(b, &n.Sites); err != nil {
		t.Fatalf("wptest: the network's manifest: %v", err)
	}
	return n
}
