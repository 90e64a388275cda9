package daemon

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/askwp/askwpd/origin"
)

// originState is the address each site's fetcher dials, as found at open.
type originState struct {
	mu  sync.Mutex
	res map[int64]origin.Result
}

// pinOrigin finds the web server that serves s on this host and pins its
// fetcher to it, and turns the cache bypass on or off from the config. A
// site whose URL already names this host (a loopback address, localhost)
// has nothing in between to avoid, unless an origin is configured.
func (d *Daemon) pinOrigin(ctx context.Context, s *Site) {
	f := s.Crawler.Fetcher
	f.SetCacheBypass(d.Config.Crawl.CacheBypass)
	res := origin.Result{Source: "site"}
	if d.Config.Origin != "" || !localURL(s.Home) {
		// Read, not made: doctor or a one-shot index run as root must not
		// leave a secret the daemon's user cannot read. Serve makes it and
		// proves again (reprove).
		secret, err := os.ReadFile(filepath.Join(d.Config.StateDir, "webhook.secret"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("Unable to read the webhook secret to prove the origin with", "error", err)
		}
		res, err = origin.Discover(ctx, s.Home, d.Config.Origin, bytes.TrimSpace(secret))
		if err != nil {
			s.log.Warn("Unable to look for the site's origin", "error", err)
			res = origin.Result{Source: "public", Warning: err.Error()}
		}
	}
	f.PinOrigin(res.Address, res.Scheme)
	if res.Warning != "" {
		s.log.Warn("Fetching the site through its public address", "warning", res.Warning)
	} else if res.Address != "" {
		s.log.Info("Fetching the site from its origin", "address", res.Address, "proven", res.Proven)
	}
	d.origins.mu.Lock()
	if d.origins.res == nil {
		d.origins.res = map[int64]origin.Result{}
	}
	d.origins.res[s.ID] = res
	d.origins.mu.Unlock()
}

// reprove looks for the main site's origin again once serve has made the
// webhook secret, when the look at open had none to check a proof with.
func (d *Daemon) reprove(ctx context.Context) {
	if o := d.Origin(); !o.Proven && strings.Contains(o.Warning, origin.NoSecret) {
		d.pinOrigin(ctx, d.Site)
	}
}

// Origin is what the fetcher of the main site dials.
func (d *Daemon) Origin() origin.Result {
	d.origins.mu.Lock()
	defer d.origins.mu.Unlock()
	return d.origins.res[d.Site.ID]
}

// localURL says whether a site URL names this host itself.
func localURL(home string) bool {
	u, err := url.Parse(home)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
