package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
)

// TestSnapshot_DiskFullAndCutShort writes the search index's snapshot on
// a full disk, then cuts a good one short, and reopens the daemon each
// time: the write fails leaving no file behind, the bad snapshot is not
// read, the index is rebuilt from the store, and no page is lost.
func TestSnapshot_DiskFullAndCutShort(t *testing.T) {
	site := wptest.Get(t)
	ctx := context.Background()
	dir := t.TempDir()
	how := mountTiny(t, dir, 16<<20)
	if how == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("cannot mount a small filesystem (no tmpfs, no loop device); CI needs one")
		}
		t.Skip("cannot mount a small filesystem here (no tmpfs, no loop device)")
	}
	cfg := config.Default()
	cfg.WPRoot = site.Root()
	cfg.StateDir = dir
	cfg.Listen = "127.0.0.1:0"
	cfg.Crawl.RatePerSec = 200
	cfg.Schedule.Disabled = true
	logs := newFaultLog()
	open := func() *Daemon {
		t.Helper()
		d, err := Open(ctx, cfg, logs.logger())
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if err := d.Search.Load(ctx); err != nil {
			t.Fatalf("load: %v", err)
		}
		return d
	}
	d := open()
	if _, err := d.Index(ctx, crawl.IndexOptions{Full: true}); err != nil {
		d.Close()
		t.Fatalf("index: %v", err)
	}
	docs := docURLs(t, d)
	chunks := d.Search.Stats().Chunks
	snap := filepath.Join(dir, snapshotFile)

	// The disk full as the snapshot is written (the close writes it).
	filler := filepath.Join(dir, "filler")
	filled := fill(t, filler)
	werr := d.Search.WriteSnapshot()
	d.Close()
	left := snapshotLeftovers(t, dir)
	t.Logf("state dir on %s, %d documents, %d chunks; snapshot on a full disk (%d bytes filled): %v; left: %v", how, len(docs), chunks, filled, werr, left)
	if werr == nil || !strings.Contains(werr.Error(), "no space") {
		t.Errorf("snapshot write on a full disk: %v, want no space left", werr)
	}
	if len(left) > 0 {
		t.Errorf("a snapshot write on a full disk left %v", left)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	d = open()
	if d.Search.FromSnapshot() || d.Search.Stats().Chunks != chunks {
		t.Errorf("after the full disk: from snapshot %v, %d chunks, want the store's %d", d.Search.FromSnapshot(), d.Search.Stats().Chunks, chunks)
	}
	sameDocs(t, d, docs, "after the snapshot write on a full disk")
	d.Close() // writes a good snapshot

	// A snapshot cut short, as a crash mid-copy or a restore leaves it.
	fi, err := os.Stat(snap)
	if err != nil {
		t.Fatalf("no snapshot after a clean stop: %v", err)
	}
	if err := os.Truncate(snap, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	d = open()
	defer d.Close()
	t.Logf("snapshot of %d bytes cut to %d: from snapshot %v, %d chunks", fi.Size(), fi.Size()/2, d.Search.FromSnapshot(), d.Search.Stats().Chunks)
	if d.Search.FromSnapshot() || d.Search.Stats().Chunks != chunks {
		t.Errorf("a snapshot cut short: from snapshot %v, %d chunks, want the store's %d", d.Search.FromSnapshot(), d.Search.Stats().Chunks, chunks)
	}
	sameDocs(t, d, docs, "after a snapshot cut short")
	if m, _ := filepath.Glob(filepath.Join(dir, "askwpd.db.corrupt-*")); len(m) > 0 {
		t.Errorf("a bad snapshot moved the sound store aside: %v", m)
	}
}

// snapshotLeftovers lists the snapshot's files in dir: the snapshot and
// a write's temporary file.
func snapshotLeftovers(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{snapshotFile, ".snapshot-*"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}
