package daemon

import (
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// snapshotFile is the search index's snapshot in the state dir: a restart
// reads it instead of analyzing every stored chunk again.
const snapshotFile = "search-index.snap"

// setSnapshot names the search index's snapshot. Its version is this
// build's Go build ID, since another build may analyze text differently,
// and the store's own id, so a snapshot is never read against another
// store that happens to have the same write count.
func (d *Daemon) setSnapshot(ctx context.Context) error {
	build, err := buildID()
	if err != nil {
		return err
	}
	id, err := d.Store.GetMeta(ctx, "store_id")
	if err != nil {
		return err
	}
	if id == "" {
		id = rand.Text()
		if err := d.Store.SetMeta(ctx, "store_id", id); err != nil {
			return err
		}
	}
	d.Search.SetSnapshot(filepath.Join(d.Config.StateDir, snapshotFile), build+" "+id)
	return nil
}

var buildIDOnce = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("build id: %w", err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		return "", fmt.Errorf("build id: %w", err)
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return "", errors.New("build id: the executable has no Go build id")
	}
	b, err := s.Data()
	if err != nil {
		return "", fmt.Errorf("build id: %w", err)
	}
	return hex.EncodeToString(b), nil
})

// buildID is the running executable's Go build ID, which changes with
// any change to the code it was built from.
func buildID() (string, error) { return buildIDOnce() }
