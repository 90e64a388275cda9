package daemon

import (
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestServeAddr_File: serve records its address, TCP or unix socket, and
// its clean shutdown removes the file, but not one a newer serve wrote.
func TestServeAddr_File(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if got, err := ServeAddr(dir); got != "" || err != nil {
		t.Fatalf("before serve: %q, %v; want none", got, err)
	}
	tcp := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8787}
	remove := writeServeAddr(dir, tcp, log)
	if got, _ := ServeAddr(dir); got != "127.0.0.1:8787" {
		t.Errorf("TCP: %q, want 127.0.0.1:8787", got)
	}
	remove()
	if _, err := os.Stat(filepath.Join(dir, ServeAddrFile)); !os.IsNotExist(err) {
		t.Errorf("after the shutdown: %v, want the file removed", err)
	}

	remove = writeServeAddr(dir, &net.UnixAddr{Name: "/run/askwpd/askwpd.sock", Net: "unix"}, log)
	if got, _ := ServeAddr(dir); got != "unix:/run/askwpd/askwpd.sock" {
		t.Errorf("socket: %q, want unix:/run/askwpd/askwpd.sock", got)
	}
	writeServeAddr(dir, tcp, log) // a serve started while the first stopped
	remove()
	if got, _ := ServeAddr(dir); got != "127.0.0.1:8787" {
		t.Errorf("the first serve's shutdown left %q, want the second's address kept", got)
	}
}
