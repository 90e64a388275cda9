package daemon

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// maxSiteLabels bounds the site label: the first sites seen get their
// blog id, every later one "other", so a network of 10,000 sites does not
// make 10,000 series per metric.
const maxSiteLabels = 100

// siteLabels hands out the site label values.
type siteLabels struct {
	mu  sync.Mutex
	ids map[int64]bool
}

func (l *siteLabels) of(id int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ids[id] {
		if len(l.ids) >= maxSiteLabels {
			return "other"
		}
		l.ids[id] = true
	}
	return strconv.FormatInt(id, 10)
}

// netMetrics are a network's per-site series.
type netMetrics struct {
	labels    siteLabels
	toolCalls *prometheus.CounterVec
}

var (
	descSiteDocs     = prometheus.NewDesc("askwpd_site_documents", "Indexed documents of a network site.", []string{"site"}, nil)
	descSiteChunks   = prometheus.NewDesc("askwpd_site_chunks", "Indexed chunks of a network site.", []string{"site"}, nil)
	descSiteCrawling = prometheus.NewDesc("askwpd_site_crawl_running", "1 while a network site's index pass runs.", []string{"site"}, nil)
)

// registerNetMetrics adds the per-site series to the registry, on a
// network only: a single site's metrics stay as they were.
func (d *Daemon) registerNetMetrics() *netMetrics {
	m := &netMetrics{labels: siteLabels{ids: map[int64]bool{}},
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "askwpd_site_tool_calls_total",
			Help: "Tool calls by the network site they answered from (all: a search of every site)."}, []string{"site", "tool"})}
	d.obs().reg.MustRegister(m.toolCalls, &siteCollector{d: d})
	return m
}

// siteCollector reads each site's gauges from the status view at scrape
// time; sites beyond the label bound add up under "other".
type siteCollector struct{ d *Daemon }

func (c *siteCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSiteDocs
	ch <- descSiteChunks
	ch <- descSiteCrawling
}

func (c *siteCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type sums struct{ docs, chunks, crawling float64 }
	by := map[string]*sums{}
	var order []string
	v, err := c.d.view(ctx)
	if err != nil {
		c.d.Log.Warn("Metrics: unable to read the sites' index stats", "error", err)
		return
	}
	for _, s := range c.d.allSites() {
		sv, err := v.siteView(ctx, s)
		if err != nil {
			continue
		}
		st := sv.stats
		l := c.d.net.obs.labels.of(s.ID)
		if by[l] == nil {
			by[l] = &sums{}
			order = append(order, l)
		}
		by[l].docs += float64(st.Documents)
		by[l].chunks += float64(st.Chunks)
		if s.Crawler.Running() {
			by[l].crawling = 1
		}
	}
	for _, l := range order {
		ch <- prometheus.MustNewConstMetric(descSiteDocs, prometheus.GaugeValue, by[l].docs, l)
		ch <- prometheus.MustNewConstMetric(descSiteChunks, prometheus.GaugeValue, by[l].chunks, l)
		ch <- prometheus.MustNewConstMetric(descSiteCrawling, prometheus.GaugeValue, by[l].crawling, l)
	}
}
