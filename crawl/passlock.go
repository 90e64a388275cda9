package crawl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// passLockName is the file in the state dir that one pass at a time holds.
// passMu keeps two passes of one process apart; this keeps apart the
// daemon's scheduled pass and an `askwpd index` run beside it, which would
// otherwise both resume the same interrupted pass. An flock dies with its
// process, so a killed pass never leaves the next one locked out.
const passLockName = "crawl.lock"

// lockPass takes the state dir's pass lock without waiting; it returns
// ErrCrawlRunning when another process holds it. With no state dir (an
// evaluation's temporary crawler) there is nothing to share, and no lock.
func lockPass(stateDir string) (unlock func(), err error) {
	if stateDir == "" {
		return func() {}, nil
	}
	f, err := os.OpenFile(filepath.Join(stateDir, passLockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pass lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w in another process (%s is held)", ErrCrawlRunning, f.Name())
		}
		return nil, fmt.Errorf("pass lock: %w", err)
	}
	return func() { f.Close() }, nil
}
