// Package nettest holds the network stand-ins the same-origin tests of
// crawl and daemon share.
package nettest

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// CountingListener counts accepted connections.
type CountingListener struct {
	net.Listener
	N atomic.Int64
}

func (l *CountingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.N.Add(1)
	}
	return c, err
}

// Trap listens where an attacker would want the crawler to go and counts
// connections. It answers like a plausible page, so a fetch that got
// there would have succeeded.
func Trap(t *testing.T, addr string) *CountingListener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	cl := &CountingListener{Listener: ln}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body><main><p>OFFORIGIN secret metadata</p></main></body></html>")
	})}
	go srv.Serve(cl)
	t.Cleanup(func() { srv.Close() })
	return cl
}
