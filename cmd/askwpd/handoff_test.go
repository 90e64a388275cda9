package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askwp/askwpd/api"
)

// TestHandOff_NoServe: askwpd index runs its own pass (errNoServe) when
// no serve.addr is there, when nobody answers at the address it names (a
// serve that was killed), and when a daemon there refuses the state
// dir's token (another one took the port since).
func TestHandOff_NoServe(t *testing.T) {
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, "token"), []byte("state-dir-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := api.IndexRequest{}
	var out bytes.Buffer
	if err := handOff(ctx, state, req, &out); !errors.Is(err, errNoServe) {
		t.Errorf("without serve.addr: %v, want errNoServe", err)
	}
	writeAddr := func(addr string) {
		if err := os.WriteFile(filepath.Join(state, "serve.addr"), []byte(addr+"\n"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	writeAddr(freePort(t)) // closed again: nobody listens
	if err := handOff(ctx, state, req, &out); !errors.Is(err, errNoServe) {
		t.Errorf("with a stale serve.addr: %v, want errNoServe", err)
	}
	writeAddr("unix:" + filepath.Join(t.TempDir(), "gone.sock"))
	if err := handOff(ctx, state, req, &out); !errors.Is(err, errNoServe) {
		t.Errorf("with a stale socket in serve.addr: %v, want errNoServe", err)
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer state-dir-token" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"event":"done"}` + "\n"))
	}))
	defer other.Close()
	writeAddr(strings.TrimPrefix(other.URL, "http://"))
	if err := os.WriteFile(filepath.Join(state, "token"), []byte("another-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := handOff(ctx, state, req, &out); !errors.Is(err, errNoServe) {
		t.Errorf("with a daemon refusing the token: %v, want errNoServe", err)
	}
	if err := os.WriteFile(filepath.Join(state, "token"), []byte("state-dir-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := handOff(ctx, state, req, &out); err != nil {
		t.Errorf("with the serve taking the token: %v, want the pass handed off", err)
	}
}

// TestFollowPass: the stream's last line decides how askwpd index ends;
// a stream cut before it is an error, not a success.
func TestFollowPass(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		err          string // "" for success
		says         []string
	}{
		{"done", `{"event":"progress","site":1,"done":1,"total":2}
{"event":"running","site":3,"error":"held by askwpd serve, nightly pass,"}
{"event":"site","site":3,"home":"http://x.test/s3","run":{"indexed":4,"removed":1}}
{"event":"done"}
`, "", []string{"waiting: held by askwpd serve, nightly pass,", "indexed http://x.test/s3 by askwpd serve in ", "4 indexed", "1 removed"}},
		{"refused", `{"event":"running","error":"an index pass is already running: held by test"}
`, "--wait", nil},
		{"failed", `{"event":"progress","site":1,"done":1,"total":2}
{"event":"error","error":"site 1: the site is failing"}
`, "the site is failing", nil},
		{"cut", `{"event":"progress","site":1,"done":1,"total":2}
`, "ended before the pass did", nil},
		{"garbled", "<html>\n", "serve's answer", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := followPass(strings.NewReader(tc.stream), false, &out)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one saying %q", err, tc.err)
			}
			for _, s := range tc.says {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output %q does not say %q", out.String(), s)
				}
			}
		})
	}
}
