package daemon

import (
	"context"
	"net"
	"net/url"
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
		secret, err := d.WebhookSecret()
		if err != nil {
			s.log.Warn("No webhook secret to prove the origin with", "error", err)
		}
		res, err = origin.Discover(ctx, s.Home, d.Config.Origin, secret)
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
