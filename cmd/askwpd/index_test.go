package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
)

// TestIndex_BesideARunningPass: while another process holds the crawl
// lease, `askwpd index` refuses in one line that names the holder and
// what to do instead; with --wait it says why it waits, and runs its pass
// once the lease is released.
func TestIndex_BesideARunningPass(t *testing.T) {
	site := wptest.Get(t)
	bin := buildBinary(t)
	state := t.TempDir()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(state, "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	host, _ := os.Hostname()
	// This test's own pid: a holder that is alive on this host.
	held := store.Lease{Name: "crawl", Holder: "test", PID: os.Getpid(), Host: host, What: "askwpd serve, nightly pass,"}
	if _, err := db.AcquireLease(ctx, held, time.Hour, nil); err != nil {
		t.Fatal(err)
	}

	var stderr bytes.Buffer
	cmd := exec.Command(bin, "index", "--wp-root", site.Root(), "--state-dir", state)
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit = %v, want status 1\n%s", err, stderr.String())
	}
	msg := strings.TrimSpace(stderr.String())
	for _, want := range []string{"askwpd serve, nightly pass,", fmt.Sprintf("pid %d on %s", os.Getpid(), host), "lapses at", "--wait", "reindex now"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("refusal is not one line: %q", msg)
	}

	stderr.Reset()
	cmd = exec.Command(bin, "index", "--wait", "--wp-root", site.Root(), "--state-dir", state)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(2 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("askwpd index --wait ended while the lease was held: %v\n%s", err, stderr.String())
	default:
	}
	if err := db.ReleaseLease(ctx, "crawl", "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("askwpd index --wait after the release: %v\n%s", err, stderr.String())
		}
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("askwpd index --wait did not finish within 3 min of the release\n%s", stderr.String())
	}
	out := stderr.String()
	if !strings.Contains(out, "waiting: ") || !strings.Contains(out, "askwpd serve, nightly pass,") || !strings.Contains(out, "indexed ") {
		t.Errorf("--wait output does not say why it waited and then what it indexed:\n%s", out)
	}
	// The pass leaves the search index's snapshot, for serve's next start.
	if fi, err := os.Stat(filepath.Join(state, "search-index.snap")); err != nil || fi.Size() == 0 {
		t.Errorf("askwpd index left no search index snapshot: %v", err)
	}
}
