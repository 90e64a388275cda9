package api

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHostAllowed(t *testing.T) {
	s := &Server{hosts: map[string]bool{"wp.example": true, "proxy.example:8443": true}}
	at := func(host string, local net.Addr) bool {
		r := httptest.NewRequest("GET", "/healthz", nil)
		r.Host = host
		if local != nil {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
		}
		return s.hostAllowed(r)
	}
	on8787 := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8787}
	on80 := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}
	lan := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 8787}
	for _, c := range []struct {
		host  string
		local net.Addr
		want  bool
	}{
		{"127.0.0.1:8787", on8787, true},
		{"localhost:8787", on8787, true},
		{"[::1]:8787", on8787, true},
		{"LOCALHOST:8787", on8787, true},
		{"localhost:8788", on8787, false},
		{"localhost", on8787, false},
		{"localhost", on80, true},
		{"evil.example:8787", on8787, false},
		{"evil.example", on80, false},
		{"192.0.2.7:8787", lan, true},
		{"192.0.2.8:8787", lan, false},
		{"wp.example", on8787, true},
		{"wp.example:1234", on8787, true},
		{"proxy.example:8443", on8787, true},
		{"proxy.example:8444", on8787, false},
		{"localhost", nil, true},
		{"evil.example", nil, false},
	} {
		if got := at(c.host, c.local); got != c.want {
			t.Errorf("Host %q on %v: %v, want %v", c.host, c.local, got, c.want)
		}
	}
}
