package store

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mountTmpfs mounts a tmpfs of size bytes on a new dir, or skips (off CI)
// when this process may not mount.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("cannot mount a tmpfs: %v; CI needs one", err)
		}
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// TestOpen_ExplainsCause: a store that does not open for want of room or
// on a read-only filesystem is neither healed nor moved aside, and the
// error names the cause rather than a guess.
func TestOpen_ExplainsCause(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	t.Run("read-only filesystem", func(t *testing.T) {
		dir := mountTmpfs(t, "8m")
		path := filepath.Join(dir, "askwpd.db")
		fillHealStore(t, path, 3, 2)
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			t.Fatalf("remount read-only: %v", err)
		}
		_, h, err := OpenHealing(ctx, path, log)
		t.Logf("read-only: %v", err)
		if err == nil || h != nil || !strings.Contains(err.Error(), "is on a read-only filesystem") {
			t.Errorf("store on a read-only filesystem: heal %+v, err %v; want the cause named", h, err)
		}
	})

	t.Run("disk full", func(t *testing.T) {
		dir := mountTmpfs(t, "64k")
		path := filepath.Join(dir, "askwpd.db")
		f, err := os.Create(filepath.Join(dir, "filler"))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
		f.Close()
		_, h, err := OpenHealing(ctx, path, log)
		t.Logf("disk full: %v", err)
		if err == nil || h != nil || !strings.Contains(err.Error(), "is full: free space there") {
			t.Errorf("store on a full disk: heal %+v, err %v; want the cause named", h, err)
		}
		if m, _ := filepath.Glob(path + ".corrupt-*"); len(m) > 0 {
			t.Errorf("a store on a full disk was moved aside: %v", m)
		}
	})
}
