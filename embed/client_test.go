package embed

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/internal/fakeembed"
)

func TestEmbedder_WireFormat(t *testing.T) {
	srv := fakeembed.NewServer(t)
	cfg := srv.Config(srv.Model)
	e := NewClient(cfg, nil)
	inputs := []string{"alpha automobile", "beta lubricant", "gamma", "delta maintenance", "epsilon", "zeta car", "eta"}
	vs, err := e.Embed(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(inputs) {
		t.Fatalf("%d vectors for %d inputs", len(vs), len(inputs))
	}
	if os.Getenv("ASKWPD_TEST_EMBED_URL") == "" {
		for i, in := range inputs {
			if !slices.Equal(vs[i], fakeembed.Vector(in)) {
				t.Fatalf("vector %d is not the one for %q: placed by position, not index?", i, in)
			}
		}
	}
	nreq := srv.RequestCount()
	if want := (len(inputs) + cfg.BatchSize - 1) / cfg.BatchSize; nreq != want {
		t.Errorf("%d requests for %d inputs in batches of %d, want %d", nreq, len(inputs), cfg.BatchSize, want)
	}
	// Base URLs with and without the API path reach the same endpoint.
	for base, want := range map[string]string{
		"http://h:1":                "http://h:1/v1/embeddings",
		"http://h:1/v1":             "http://h:1/v1/embeddings",
		"http://h:1/v1/":            "http://h:1/v1/embeddings",
		"http://h:1/api/v1":         "http://h:1/api/v1/embeddings",
		"http://h:1/v1/embeddings/": "http://h:1/v1/embeddings",
	} {
		if got := NewClient(config.EmbeddingsConfig{BaseURL: base}, nil).url; got != want {
			t.Errorf("base %s: %s, want %s", base, got, want)
		}
	}
	// A wrong key is an error that does not carry the key.
	bad := cfg
	bad.APIKey = "sk-wrong-0123456789"
	if _, err := NewClient(bad, nil).Embed(context.Background(), []string{"x"}); err == nil || strings.Contains(err.Error(), bad.APIKey) {
		t.Errorf("wrong key: %v", err)
	}
}
