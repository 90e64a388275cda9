package daemon

import (
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/askwp/askwpd/search"
)

// snapshotFile is the search index's snapshot in the state dir: a restart
// reads it instead of analyzing every stored chunk again.
const snapshotFile = "search-index.snap"

// setSnapshot names a site's search index's snapshot, in its state dir.
// Its version is this build's Go build ID, since another build may
// analyze text differently, and the store's own id, so a snapshot is
// never read against another store that happens to have the same write
// count.
func setSnapshot(ctx context.Context, s *Site) error {
	build, err := buildID()
	if err != nil {
		return err
	}
	id, err := s.Store.GetMeta(ctx, "store_id")
	if err != nil {
		return err
	}
	if id == "" {
		id = rand.Text()
		if err := s.Store.SetMeta(ctx, "store_id", id); err != nil {
			return err
		}
	}
	s.Search.SetSnapshot(filepath.Join(s.dir, snapshotFile), build+" "+id)
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

// keepSnapshot writes the search index's snapshot again whenever the
// index went from one tick to the next without following a commit, until
// ctx ends. A commit removes the snapshot (it no longer matches the
// store), and a clean stop writes it; without this, a daemon killed or
// crashed after its first commit leaves none, and its next start analyzes
// every stored chunk (20 s and more of CPU on a site of 100,000 pages)
// where reading the snapshot takes about one. Waiting for a quiet tick
// keeps the write, which holds the index's read lock for a second or so
// on such a site, away from a burst of commits, which would wait for it.
// A write at a count already on disk is skipped at no cost.
func keepSnapshot(ctx context.Context, ix *search.Index, tick <-chan time.Time, log *slog.Logger) {
	k := &snapshotKeeper{ix: ix, log: log, last: -1}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			k.tick()
		}
	}
}

// snapshotKeeper is keepSnapshot's state from one tick to the next.
type snapshotKeeper struct {
	ix   *search.Index
	log  *slog.Logger
	last int64 // the index's count at the last tick
}

func (k *snapshotKeeper) tick() {
	gen := k.ix.Gen()
	if gen == k.last {
		if err := k.ix.WriteSnapshot(); err != nil {
			k.log.Warn("Unable to write the search index's snapshot", "error", err)
		}
	}
	k.last = gen
}
