package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/store"
)

// ErrStoreDamaged is what Serve returns, wrapped, after it shut down
// because a site's store was found damaged while serving: the caller
// opens the daemon again, and the store heals as it opens (OpenHealing).
var ErrStoreDamaged = errors.New("store damaged while serving")

// How often the watcher stats the store's file and runs quick_check: a
// stat costs nothing; quick_check reads the whole file.
const (
	storeStatEvery  = 2 * time.Second
	storeCheckEvery = 30 * time.Second
)

// storeDamage is what the watchers found, for the status and for the
// shutdown that follows.
type storeDamage struct {
	mu sync.Mutex
	// sites holds, by site, the damage found: a deleted store is
	// restored from its open handle at shutdown.
	sites map[*Site]storeFault
}

type storeFault struct {
	cause string
	err   error
}

// watchStores watches every site's store and sends the first damage
// found on the channel returned.
func (d *Daemon) watchStores(ctx context.Context) <-chan error {
	found := make(chan error, 1)
	for _, s := range d.allSites() {
		go s.Store.Watch(ctx, storeStatEvery, storeCheckEvery, func(cause string, err error) {
			d.damage.mu.Lock()
			if d.damage.sites == nil {
				d.damage.sites = map[*Site]storeFault{}
			}
			d.damage.sites[s] = storeFault{cause, err}
			d.damage.mu.Unlock()
			s.log.Error("The store is damaged while serving; askwpd restarts its services to heal it", "cause", cause, "error", err)
			select {
			case found <- fmt.Errorf("%w: %v", ErrStoreDamaged, err):
			default:
			}
		})
	}
	return found
}

// restoreDeleted writes each store deleted while serving back from its
// open handle, once nothing writes to it any more: the reopened daemon
// finds it whole.
func (d *Daemon) restoreDeleted(ctx context.Context) {
	d.damage.mu.Lock()
	defer d.damage.mu.Unlock()
	for s, f := range d.damage.sites {
		if f.cause != "deleted" {
			continue
		}
		h := &store.Heal{At: time.Now().UTC(), Cause: f.cause, Detail: f.err.Error(), Salvaged: map[string]int{}}
		if err := s.Store.Restore(ctx, h); err != nil {
			s.log.Error("Unable to restore the deleted store; a fresh one is started", "error", err)
			continue
		}
		s.log.Warn("The deleted store was written back whole from the open handle", "path", s.Store.Path)
	}
}

// storeStatus is the main site's store as the status tells it: sound or
// found damaged while serving, and the last heal it came from.
func (d *Daemon) storeStatus(ctx context.Context) *api.StoreStatus {
	st := &api.StoreStatus{Healthy: true, Path: d.Store.Path}
	d.damage.mu.Lock()
	if f, ok := d.damage.sites[d.Site]; ok {
		st.Healthy, st.Problem = false, f.err.Error()
	}
	d.damage.mu.Unlock()
	if h, err := d.Store.LastHeal(ctx); err != nil {
		st.Healthy, st.Problem = false, err.Error()
	} else {
		st.LastHeal = h
	}
	return st
}
