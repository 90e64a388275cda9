package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/store"
)

// ServeAddrFile, in the state dir, holds the address a running serve
// answers on: askwpd index finds it there and hands its pass to that
// serve, whose index in memory then has it at once. A pass run beside
// serve by another process reached serve's memory only when a search
// noticed the store had moved, seconds later.
const ServeAddrFile = "serve.addr"

// handoffRetry is how often a pass that waits for another retries.
const handoffRetry = 2 * time.Second

// appliedWait bounds the wait for a site's serving index to reflect its
// pass; the commits are delivered as they are made, so it is reached
// only while the index is still loading.
const appliedWait = 2 * time.Minute

var _ api.PassRunner = (*Daemon)(nil)

// writeServeAddr records addr in the state dir, and returns the func that
// removes it at a clean shutdown. A daemon killed leaves it behind; askwpd
// index then finds nobody answering there, or a daemon that does not take
// this state dir's token, and runs its pass itself.
func writeServeAddr(stateDir string, addr net.Addr, log *slog.Logger) func() {
	v := addr.String()
	if addr.Network() == "unix" {
		v = "unix:" + v
	}
	path := filepath.Join(stateDir, ServeAddrFile)
	tmp := path + ".tmp"
	err := os.WriteFile(tmp, []byte(v+"\n"), 0o640)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		log.Warn("Unable to record the serving address; askwpd index runs its passes itself", "error", err)
		return func() {}
	}
	return func() {
		// Only ours: a serve started since (ours was stopping) wrote its own.
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == v {
			os.Remove(path)
		}
	}
}

// ServeAddr returns the address ServeAddrFile names: host:port, or
// unix:/path; "" when there is none.
func ServeAddr(stateDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, ServeAddrFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("serving address: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// IndexPass runs askwpd index's pass in the serving daemon, each site's at
// once, and returns when every site's pass is in its serving index. It
// runs in the request's context: askwpd index stopped (Ctrl-C) stops the
// pass, as it would have stopped its own; so does the daemon's shutdown.
func (d *Daemon) IndexPass(ctx context.Context, req api.IndexRequest, emit func(api.IndexEvent)) error {
	if d.cluster != nil {
		return errors.New(`cluster mode: the leader runs the passes; askwpd index is for a daemon with cluster.mode off`)
	}
	sites, err := d.passSites(req.Site)
	if err != nil {
		return err
	}
	// A shutdown stops the pass too, as it stops a scheduled one: the
	// request's context outlives the serving lifetime until the server's
	// shutdown gives up on the request.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(d.lifetime(ctx), cancel)()
	errs := make([]error, len(sites))
	var wg sync.WaitGroup
	for i, s := range sites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.handedPass(ctx, s, req, emit); err != nil {
				errs[i] = fmt.Errorf("site %d (%s): %w", s.ID, s.Home, err)
			}
		}()
	}
	wg.Wait()
	d.invalidateView()
	return errors.Join(errs...)
}

// passSites are the sites a pass asked for covers: one, or all for 0.
func (d *Daemon) passSites(id int64) ([]*Site, error) {
	all := d.allSites()
	if id == 0 {
		return all, nil
	}
	for _, s := range all {
		if s.ID == id {
			return []*Site{s}, nil
		}
	}
	return nil, fmt.Errorf("site %d is not an indexed site of this daemon", id)
}

// handedPass runs one site's pass for IndexPass: when a pass holds the
// site, it says so once and, asked to wait, retries until that one ends.
func (d *Daemon) handedPass(ctx context.Context, s *Site, req api.IndexRequest, emit func(api.IndexEvent)) error {
	opt := crawl.IndexOptions{Full: req.Full, Kind: "index", Progress: func(done, total int) {
		emit(api.IndexEvent{Event: "progress", Site: s.ID, Home: s.Home, Done: done, Total: total})
	}}
	var run *store.Run
	var err error
	for said := ""; ; {
		run, err = s.Crawler.Index(ctx, opt)
		if !errors.Is(err, crawl.ErrCrawlRunning) {
			break
		}
		if !req.Wait {
			return fmt.Errorf("%w (%w)", err, api.ErrAlreadyRunning)
		}
		if err.Error() != said {
			said = err.Error()
			emit(api.IndexEvent{Event: "running", Site: s.ID, Home: s.Home, Error: said})
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(handoffRetry):
		}
	}
	d.statusCache.forgetSite(s.ID)
	if err != nil {
		return err
	}
	if err := awaitApplied(ctx, s); err != nil {
		return err
	}
	emit(api.IndexEvent{Event: "site", Site: s.ID, Home: s.Home, Run: run})
	// As after a scheduled pass (sitePass), the changed pages' texts left
	// the caches; the answer does not wait for them to be read again. A
	// one-shot askwpd index has no index in memory to warm.
	if s.Search.Stats().Ready {
		go d.warmSite(d.lifetime(ctx), s)
	}
	return nil
}

// awaitApplied waits until the site's serving index reflects every index
// write in its store. The pass's commits reach it as they are made, so
// this waits only for an index still loading (a serve just started).
func awaitApplied(ctx context.Context, s *Site) error {
	ctx, cancel := context.WithTimeout(ctx, appliedWait)
	defer cancel()
	for {
		want, err := s.Store.IndexWrites(ctx)
		if err != nil {
			return err
		}
		if st := s.Search.Stats(); !st.Enabled || st.Ready && s.Search.Gen() >= want {
			// An index not loaded yet is loaded by the next search, from
			// the store as the pass left it.
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the serving search index did not take the pass within %v: %w", appliedWait, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
