package api

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDebugPprof(t *testing.T) {
	get := func(ts *httptest.Server, path, token, host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	off := newTestServer(t, &fakeBackend{})
	if code, _ := get(off, "/debug/pprof/", testToken, ""); code != http.StatusNotFound {
		t.Errorf("pprof off: /debug/pprof/ answered %d, want 404", code)
	}

	s := New(&fakeBackend{}, Options{Token: testToken, Log: slog.New(slog.NewTextHandler(tlog{t}, nil)), Pprof: true})
	on := httptest.NewServer(s.Handler())
	t.Cleanup(on.Close)
	if code, body := get(on, "/debug/pprof/", testToken, ""); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof on: /debug/pprof/ answered %d %.80q, want 200 and the list of profiles", code, body)
	}
	if code, body := get(on, "/debug/pprof/goroutine?debug=1", testToken, ""); code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Errorf("pprof on: goroutine profile answered %d %.80q", code, body)
	}
	if code, _ := get(on, "/debug/pprof/cmdline", testToken, ""); code != http.StatusOK {
		t.Errorf("pprof on: cmdline answered %d", code)
	}
	if code, _ := get(on, "/debug/pprof/", "", ""); code != http.StatusUnauthorized {
		t.Errorf("pprof on, no token: %d, want 401", code)
	}
	if code, _ := get(on, "/debug/pprof/heap", "wrong-token", ""); code != http.StatusUnauthorized {
		t.Errorf("pprof on, wrong token: %d, want 401", code)
	}
	if code, _ := get(on, "/debug/pprof/", testToken, "evil.example"); code != http.StatusForbidden {
		t.Errorf("pprof on, foreign Host: %d, want 403", code)
	}
}

func TestLocalOnly(t *testing.T) {
	s := New(&fakeBackend{}, Options{Token: testToken, Log: slog.New(slog.NewTextHandler(tlog{t}, nil)), Pprof: true})
	h := s.Handler()
	for _, c := range []struct {
		remote string
		want   int
	}{
		{"127.0.0.1:50000", http.StatusOK},
		{"[::1]:50000", http.StatusOK},
		{"192.0.2.7:50000", http.StatusNotFound},
	} {
		r := httptest.NewRequest("GET", "/debug/pprof/", nil)
		r.RemoteAddr = c.remote
		r.Header.Set("Authorization", "Bearer "+testToken)
		r.Host = "127.0.0.1:8787"
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8787}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("from %s: %d, want %d", c.remote, w.Code, c.want)
		}
	}
}
