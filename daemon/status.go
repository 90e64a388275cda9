package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/store"
)

// statusView is the part of /v1/status and /metrics read from the store
// with scans of whole tables: counts by type and status, fetch ages, the
// error list, the run history. Under load each read waited for a pooled
// connection and CPU behind the searches, and /v1/status took seconds, so
// these are read in the background and served from the last reading.
// What a caller acts on at once (the event queue, the frontier, the
// database and disk state, whether a pass runs) is still read per request,
// the database's within freshness.DatabaseWait.
type statusView struct {
	at time.Time
	// gen is the statusCache's gen when the reading started.
	gen     uint64
	runs    []store.Run
	stats   store.Stats
	errs    []*store.URLState
	counts  store.FrontierCounts
	ages    []store.AgeBucket
	history []store.StatsSample
	// sites holds, on a network, each site's counts and last pass, which
	// /v1/status lists and /metrics reports per site: read per request,
	// they were a full count of every site's tables each time.
	sites map[int64]siteView
	// provider is the chat's provider. The agent reads the site's
	// settings at most once per its TTL; read here, a status request
	// never waits for that reading on a slow database.
	provider chat.ProviderStatus
}

// siteView is a network site's part of the status view.
type siteView struct {
	stats store.Stats
	last  *store.Run
}

// statusCache holds the latest statusView.
type statusCache struct {
	mu         sync.Mutex
	v          *statusView
	refreshing bool
	// gen counts the store's index commits (staleOnCommit): a reading
	// older than a commit is refreshed at the next request once it is
	// freshness.StatusViewGap old, so a page made private leaves the
	// counts within that and a refresh, not freshness.StatusViewAge.
	gen uint64
	// sites keeps each network site's last reading for the next view
	// (readSite), across invalidations.
	sites map[int64]siteReading
}

// siteReading is a network site's part of a view, with its store's count
// of index writes when it was read.
type siteReading struct {
	sv     siteView
	writes int64
	at     time.Time
}

// forgetSite drops a site's reading: its pass ended, and its record is
// not an index write.
func (c *statusCache) forgetSite(id int64) {
	c.mu.Lock()
	delete(c.sites, id)
	c.mu.Unlock()
}

// staleOnCommit counts the store's index commits into the status cache.
type staleOnCommit struct{ c *statusCache }

func (o staleOnCommit) IndexCommitted(store.IndexCommit) {
	o.c.mu.Lock()
	o.c.gen++
	o.c.mu.Unlock()
}

// view returns the latest reading, starting a fresh one in the background
// when it is older than freshness.StatusViewAge. The first call reads
// synchronously.
func (d *Daemon) view(ctx context.Context) (*statusView, error) {
	c := &d.statusCache
	c.mu.Lock()
	v := c.v
	if v != nil {
		age := time.Since(v.at)
		if (age > freshness.StatusViewAge || v.gen != c.gen && age > freshness.StatusViewGap) && !c.refreshing {
			c.refreshing = true
			go d.refreshView(d.lifetime(ctx))
		}
		c.mu.Unlock()
		return v, nil
	}
	gen := c.gen
	c.mu.Unlock()
	v, err := d.readView(ctx)
	if err != nil {
		return nil, err
	}
	v.gen = gen
	c.mu.Lock()
	if c.v == nil || c.v.at.Before(v.at) {
		c.v = v
	}
	c.mu.Unlock()
	return v, nil
}

// invalidateView drops the reading, so that the next request reads the
// store: called when a pass of this daemon ends, whose record a caller
// looks for next.
func (d *Daemon) invalidateView() {
	c := &d.statusCache
	c.mu.Lock()
	c.v = nil
	c.mu.Unlock()
}

func (d *Daemon) refreshView(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c := &d.statusCache
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	v, err := d.readView(ctx)
	if err == nil {
		v.gen = gen
	}
	c.mu.Lock()
	c.refreshing = false
	if err == nil && c.v != nil && c.v.at.Before(v.at) {
		c.v = v
	}
	c.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		d.Log.Warn("Unable to read the status from the store", "error", err)
	}
}

// readView reads the store's part of the status. The runs are read first:
// a view that shows a pass finished shows its documents too.
func (d *Daemon) readView(ctx context.Context) (*statusView, error) {
	v := &statusView{at: time.Now()}
	var err error
	if v.runs, err = d.Store.Runs(ctx, 10); err != nil {
		return nil, err
	}
	if v.stats, err = d.Store.Stats(ctx); err != nil {
		return nil, err
	}
	if v.errs, err = d.Store.ListURLs(ctx, store.URLFilter{WithErrors: true, Limit: 20}); err != nil {
		return nil, err
	}
	if v.errs == nil {
		v.errs = []*store.URLState{}
	}
	if v.counts, err = d.Store.CountURLs(ctx); err != nil {
		return nil, err
	}
	if v.ages, err = d.Store.FetchAges(ctx); err != nil {
		return nil, err
	}
	var lag int64
	if !v.stats.OldestFetch.IsZero() {
		lag = int64(d.Store.Now().Sub(v.stats.OldestFetch).Seconds())
	}
	// The growth chart's sample is a write: here, off the request path,
	// it never waits for the write connection while a caller does.
	if err := d.sampleIndex(ctx, v.stats, lag, false); err != nil {
		d.Log.Warn("Unable to record an index sample", "error", err)
	}
	if v.history, err = d.Store.StatsSamples(ctx, 96); err != nil {
		return nil, err
	}
	if d.Agent != nil {
		v.provider = d.Agent.ProviderStatus(ctx)
	}
	if d.net.multisite() {
		v.sites = map[int64]siteView{}
		for _, s := range d.allSites() {
			sv := siteView{stats: v.stats}
			if s.Store != d.Store {
				// A site that fails here (its store closed as it leaves
				// the network) is left to the request, as one that joined
				// after the reading is: the rest of the view stands.
				if sv, err = d.readSite(ctx, s); err != nil {
					continue
				}
			} else if len(v.runs) > 0 {
				sv.last = &v.runs[0]
			}
			v.sites[s.ID] = sv
		}
		c := &d.statusCache
		c.mu.Lock()
		for id := range c.sites {
			if _, ok := v.sites[id]; !ok { // it left, or its read failed
				delete(c.sites, id)
			}
		}
		c.mu.Unlock()
	}
	return v, nil
}

// readSite is a network site's part of a view: its last reading while
// its store had no index write since and the reading is younger than
// freshness.SiteReadingAge, else read now.
func (d *Daemon) readSite(ctx context.Context, s *Site) (siteView, error) {
	writes, err := s.Store.IndexWrites(ctx)
	if err != nil {
		return siteView{}, err
	}
	c := &d.statusCache
	c.mu.Lock()
	r, ok := c.sites[s.ID]
	c.mu.Unlock()
	if ok && r.writes == writes && time.Since(r.at) < freshness.SiteReadingAge {
		return r.sv, nil
	}
	at := time.Now()
	sv, err := readSiteView(ctx, s)
	if err != nil {
		return sv, err
	}
	c.mu.Lock()
	if c.sites == nil {
		c.sites = map[int64]siteReading{}
	}
	c.sites[s.ID] = siteReading{sv: sv, writes: writes, at: at}
	c.mu.Unlock()
	return sv, nil
}

// readSiteView reads a network site's counts and last pass.
func readSiteView(ctx context.Context, s *Site) (siteView, error) {
	var sv siteView
	var err error
	if sv.stats, err = s.Store.Stats(ctx); err != nil {
		return sv, err
	}
	if runs, err := s.Store.Runs(ctx, 1); err == nil && len(runs) > 0 {
		sv.last = &runs[0]
	}
	return sv, nil
}

// siteView returns s's part of v, read now for a site that joined the
// network after v was, or whose read failed.
func (v *statusView) siteView(ctx context.Context, s *Site) (siteView, error) {
	if sv, ok := v.sites[s.ID]; ok {
		return sv, nil
	}
	return readSiteView(ctx, s)
}

// dbState is the database's state as the last ping found it.
type dbState struct {
	mu  sync.Mutex
	err error
	// at is when the last ping answered; zero before the first.
	at time.Time
	// pinging is closed when the ping in flight answers; nil when none is.
	pinging chan struct{}
}

// databaseErr pings the WordPress database, once however many requests
// ask at a time, and returns the last answer: a fresh one if the last is
// a failure or older than freshness.DatabaseStale and the ping answers
// within freshness.DatabaseWait (the first ever is waited for).
func (d *Daemon) databaseErr(ctx context.Context) error {
	s := &d.dbState
	s.mu.Lock()
	done := s.pinging
	if done == nil {
		done = make(chan struct{})
		s.pinging = done
		w, life := d.WP, d.lifetime(ctx)
		go func() {
			pctx, cancel := context.WithTimeout(life, 2*time.Second)
			err := w.Ping(pctx)
			cancel()
			s.mu.Lock()
			s.err, s.at, s.pinging = err, time.Now(), nil
			s.mu.Unlock()
			close(done)
		}()
	}
	first := s.at.IsZero()
	if !first && s.err == nil && time.Since(s.at) < freshness.DatabaseStale {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	var late <-chan time.Time
	if !first {
		t := time.NewTimer(freshness.DatabaseWait)
		defer t.Stop()
		late = t.C
	}
	select {
	case <-done:
	case <-late:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
