package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/version"
	"github.com/askwp/askwpd/search"
)

// Version is askwpd's version, as internal/version finds it (the linker
// sets it there).
var Version = version.String()

// Status reports the daemon's state. Its counts of the store come from
// the status view (status.go), at most a few seconds old; the rest is
// read per call.
func (d *Daemon) Status(ctx context.Context) (*api.Status, error) {
	v, err := d.view(ctx)
	if err != nil {
		return nil, err
	}
	st := &api.Status{
		Site: d.Crawler.Site, Version: Version, StartedAt: d.startedAt, Index: v.stats, Runs: v.runs,
		Errors: v.errs, Database: "none", SearchIndex: d.Search.Stats(),
	}
	if len(v.runs) > 0 {
		st.LastRun = &v.runs[0]
	}
	if d.Agent != nil {
		p := v.provider
		st.Provider = &p
	}
	st.Crawling = d.Crawler.Running()
	if d.WP != nil {
		st.Database = "ok"
		if err := d.databaseErr(ctx); err != nil {
			st.Database = "unreachable: " + err.Error()
		}
	}
	d.fillStatus(st, v)
	st.Store = d.storeStatus(ctx)
	st.Cluster = d.clusterStatus()
	o := d.Origin()
	st.Origin = &o
	if st.Freshness, err = d.freshness(ctx); err != nil {
		return nil, err
	}
	if d.net.multisite() {
		if st.Network, err = d.networkStatus(ctx, v); err != nil {
			return nil, err
		}
	}
	return st, nil
}

var _ api.Backend = (*Daemon)(nil)

// Serve runs the HTTP API and the schedule until ctx is done, then shuts
// down gracefully. It tells systemd READY=1 once the listener is up.
func (d *Daemon) Serve(ctx context.Context) error {
	_, gid, err := d.webGroup()
	if err != nil {
		return err
	}
	if err := PrepareStateDir(d.Config.StateDir, gid, d.Log); err != nil {
		return err
	}
	token, err := EnsureSecret(d.Config.StateDir, "token")
	if err != nil {
		return err
	}
	if _, err := EnsureSecret(d.Config.StateDir, "webhook.secret"); err != nil {
		return err
	}
	d.reprove(ctx)
	srv := api.New(d, api.Options{Token: token, Log: d.Log, AllowedHosts: d.Config.AllowedHosts, ChatGate: d.Agent.Gate,
		Pprof: d.Config.Debug.Pprof, Pages: d.Store})

	ln, err := listen(d.Config.Listen, gid)
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	defer writeServeAddr(d.Config.StateDir, ln.Addr(), d.Log)()
	d.Log.Info("Serving", "listen", ln.Addr().String(), "site", d.Crawler.Site.URL, "state_dir", d.Config.StateDir)

	bg, cancelBG := context.WithCancel(ctx)
	defer cancelBG()
	d.lifeMu.Lock()
	d.life = bg
	d.lifeMu.Unlock()
	go d.purgeQuestions(bg)
	sched := d.schedule(bg)
	// The main site as every other: its events, its index, a first pass
	// when its store is empty; the others' are serveNetwork's. Its index
	// in memory sets the heap's limit (LimitMemory).
	d.startSite(bg, d.Site, LimitMemory)
	stopNetwork := d.serveNetwork(bg)

	if _, err := sddaemon.SdNotify(false, sddaemon.SdNotifyReady); err != nil {
		d.Log.Warn("Unable to notify systemd", "error", err)
	}
	stopWatchdog := d.watchdog(bg)

	// In a cluster, a fresh store is filled from the changelog, and by
	// whichever node leads.
	waitCluster := d.serveCluster(bg)
	damaged := d.watchStores(bg)

	var healErr error
	select {
	case <-ctx.Done():
	case healErr = <-damaged:
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			cancelBG()
			return fmt.Errorf("http server: %w", err)
		}
	}
	d.Log.Info("Shutting down")
	if healErr == nil {
		_, _ = sddaemon.SdNotify(false, sddaemon.SdNotifyStopping)
	}
	stopWatchdog()
	cancelBG()
	d.stopEvents()
	stopNetwork()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if sched != nil {
		select {
		case <-sched.Stop().Done():
		case <-sctx.Done():
		}
	}
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	// Wait for a running pass to see the cancellation and finish its write.
	d.Crawler.Wait()
	waitCluster()
	if healErr != nil {
		d.restoreDeleted(sctx)
	}
	return healErr
}

// listen opens host:port, or a unix socket for unix:/path. The socket is
// 0660 in the web server's group (gid, or -1 to leave the group): its
// directory (RuntimeDirectory=, 0750) keeps everyone else out in the
// moment between bind and chmod.
func listen(addr string, gid int) (net.Listener, error) {
	path, ok := config.SocketPath(addr)
	if !ok {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w (is another askwpd running? change listen)", addr, err)
		}
		return ln, nil
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("listen on %s: %s exists and is not a socket", addr, path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen on %s: another daemon answers on it (is another askwpd running? change listen)", addr)
		}
		// A socket nobody answers on is left by a daemon that was killed.
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("listen on %s: remove the stale socket: %w", addr, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w (does its directory exist, writable by askwpd?)", addr, err)
	}
	if gid >= 0 {
		if err := os.Chown(path, -1, gid); err != nil {
			ln.Close()
			return nil, fmt.Errorf("listen on %s: chgrp: %w", addr, err)
		}
	}
	if err := os.Chmod(path, SocketMode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen on %s: chmod: %w", addr, err)
	}
	return ln, nil
}

// warmSearch reads into ix's caches what they lack, up to maxBytes (0:
// as far as they go), and returns the bytes it took: what the next
// visitors' searches would each read.
func (d *Daemon) warmSearch(ctx context.Context, ix *search.Index, maxBytes int, log *slog.Logger) int {
	start := time.Now()
	w, err := ix.Warm(ctx, maxBytes)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("Unable to warm the search caches; searches fill them as they come", "error", err)
		}
		return w.Bytes
	}
	if w != (search.Warmed{}) {
		log.Info("Search caches warmed", "texts", w.Texts, "term_lists", w.Lists, "mb", math.Round(float64(w.Bytes)/1e5)/10,
			"full", w.Full, "took_ms", time.Since(start).Milliseconds())
	}
	return w.Bytes
}

// runPass runs a scheduled pass: one schedule for the whole network,
// every site's pass at once, drawing on the shared crawl budget; a site
// with a schedule of its own is left to it.
func (d *Daemon) runPass(ctx context.Context, opt crawl.IndexOptions) {
	var wg sync.WaitGroup
	for _, s := range d.allSites() {
		if d.ownSchedule(s, opt.Kind) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.sitePass(ctx, s, opt)
		}()
	}
	wg.Wait()
}

// watchdog pings systemd at half the WatchdogSec interval when set.
func (d *Daemon) watchdog(ctx context.Context) func() {
	interval, err := sddaemon.SdWatchdogEnabled(false)
	if err != nil || interval == 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(interval / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := d.Store.Ping(ctx); err == nil {
					_, _ = sddaemon.SdNotify(false, sddaemon.SdNotifyWatchdog)
				}
			}
		}
	}()
	return cancel
}
