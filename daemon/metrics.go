package daemon

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/store"
)

func (d *Daemon) obs() *metrics {
	d.metricsOnce.Do(func() { d.metrics = newMetrics(d) })
	return d.metrics
}

// metrics holds the Prometheus registry and, for /v1/status and the admin
// page, the same counts as plain numbers plus recent latencies (a
// histogram's quantiles are estimates; the status page shows exact ones
// over the latest calls).
type metrics struct {
	reg         *prometheus.Registry
	toolCalls   *prometheus.CounterVec
	toolLatency *prometheus.HistogramVec
	retrievals  *prometheus.CounterVec
	thinHits    prometheus.Counter
	liveFetches *prometheus.CounterVec
	expansions  prometheus.Counter
	chatResp    *prometheus.CounterVec
	chatCalls   prometheus.Histogram
	// embedFallbacks counts searches that went keyword-only because the
	// query embedding failed, by reason (error, timeout).
	embedFallbacks *prometheus.CounterVec

	mu         sync.Mutex
	calls      map[string]int
	errors     map[string]int // by tool
	errClasses map[string]int // by error code
	searches   int
	byEvidence map[string]int
	thinHit    int
	docReads   int
	liveTool   int
	expanded   int // searches whose expansion fetched pages live
	livePages  int // pages fetched live, by tool or expansion
	chatN      int
	chatCallsN int
	chatCited  int
	lat        map[string]*ring
	recent     ring
	lastSample time.Time
	lastDocs   int
}

// ring keeps the latest latencies.
type ring struct {
	pts  []api.LatencyPoint
	next int
}

const ringSize = 500

func (r *ring) add(p api.LatencyPoint) {
	if len(r.pts) < ringSize {
		r.pts = append(r.pts, p)
		return
	}
	r.pts[r.next] = p
	r.next = (r.next + 1) % ringSize
}

// ordered returns the points oldest first.
func (r *ring) ordered() []api.LatencyPoint {
	out := make([]api.LatencyPoint, 0, len(r.pts))
	out = append(out, r.pts[r.next:]...)
	return append(out, r.pts[:r.next]...)
}

func (r *ring) quantiles() (p50, p95 float64) {
	if len(r.pts) == 0 {
		return 0, 0
	}
	ms := make([]float64, len(r.pts))
	for i, p := range r.pts {
		ms[i] = p.Ms
	}
	sort.Float64s(ms)
	q := func(f float64) float64 {
		i := int(f*float64(len(ms))+0.5) - 1
		return round1(ms[min(max(i, 0), len(ms)-1)])
	}
	return q(0.50), q(0.95)
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

func newMetrics(d *Daemon) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askwpd_tool_calls_total", Help: "Tool calls by tool and outcome (ok, error, timeout).",
		}, []string{"tool", "outcome"}),
		toolLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "askwpd_tool_latency_seconds", Help: "Tool call latency.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"tool"}),
		retrievals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askwpd_retrievals_total", Help: "search_site calls by evidence (grounded, thin, none).",
		}, []string{"evidence"}),
		thinHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "askwpd_thin_hits_total", Help: "Searches and document reads whose evidence was a thin page.",
		}),
		liveFetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askwpd_live_fetches_total", Help: "Pages fetched live, by trigger (tool, expansion) and outcome.",
		}, []string{"via", "outcome"}),
		expansions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "askwpd_expansions_total", Help: "Searches whose selective expansion fetched pages live.",
		}),
		chatResp: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askwpd_chat_responses_total", Help: "Chat responses by evidence (cited, none).",
		}, []string{"evidence"}),
		chatCalls: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "askwpd_chat_tool_calls", Help: "Tool calls per chat response.",
			Buckets: []float64{0, 1, 2, 3, 4, 5, 6, 8, 10, 15},
		}),
		embedFallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askwpd_embedding_fallbacks_total", Help: "Searches answered by keywords alone because the query embedding failed, by reason (error, timeout).",
		}, []string{"reason"}),
		calls: map[string]int{}, errors: map[string]int{}, errClasses: map[string]int{},
		byEvidence: map[string]int{}, lat: map[string]*ring{},
	}
	m.reg.MustRegister(m.toolCalls, m.toolLatency, m.retrievals, m.thinHits, m.liveFetches, m.expansions,
		m.chatResp, m.chatCalls, &indexCollector{d: d}, collectors.NewGoCollector())
	m.reg.MustRegister(m.embedFallbacks)
	return m
}

// MetricsHandler serves /metrics.
func (d *Daemon) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(d.obs().reg, promhttp.HandlerOpts{})
}

var _ api.MetricsProvider = (*Daemon)(nil)

// ObserveCall counts one tool call.
func (m *metrics) ObserveCall(tool, outcome, errCode string, took time.Duration, at time.Time) {
	m.toolCalls.WithLabelValues(tool, outcome).Inc()
	m.toolLatency.WithLabelValues(tool).Observe(took.Seconds())
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[tool]++
	if outcome != "ok" {
		m.errors[tool]++
		m.errClasses["tool_"+errCode]++
	}
	p := api.LatencyPoint{At: at.UTC(), Tool: tool, Ms: float64(took.Microseconds()) / 1000}
	r := m.lat[tool]
	if r == nil {
		r = &ring{}
		m.lat[tool] = r
	}
	r.add(p)
	m.recent.add(p)
}

// ObserveSearch counts one search_site result.
func (m *metrics) ObserveSearch(evidence string, thin, expanded bool, livePages int) {
	m.retrievals.WithLabelValues(evidence).Inc()
	if thin {
		m.thinHits.Inc()
	}
	if expanded {
		m.expansions.Inc()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.searches++
	m.byEvidence[evidence]++
	if thin {
		m.thinHit++
	}
	if expanded {
		m.expanded++
	}
	m.livePages += livePages
}

func (m *metrics) ObserveDocRead(thin bool) {
	if thin {
		m.thinHits.Inc()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.docReads++
	if thin {
		m.thinHit++
	}
}

func (m *metrics) ObserveLiveFetch(via, outcome string) {
	m.liveFetches.WithLabelValues(via, outcome).Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	if via == "tool" {
		m.liveTool++
		m.livePages++
	}
}

// observeChat records one chat response: how many tools it called and how
// many sources it cited.
func (m *metrics) observeChat(toolCalls, sources int) {
	ev := "cited"
	if sources == 0 {
		ev = "none"
	}
	m.chatResp.WithLabelValues(ev).Inc()
	m.chatCalls.Observe(float64(toolCalls))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.chatN++
	m.chatCallsN += toolCalls
	if sources > 0 {
		m.chatCited++
	}
}

func ratio(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(int64(float64(n)/float64(of)*10000+0.5)) / 10000
}

// snapshot is the counts for /v1/status.
func (m *metrics) snapshot() *api.Observability {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := &api.Observability{Tools: map[string]api.ToolStats{}, ErrorsByClass: map[string]int{}}
	r := &o.Retrieval
	r.Searches = m.searches
	r.SuccessRate = ratio(m.byEvidence["grounded"]+m.byEvidence["thin"], m.searches)
	r.NoEvidenceRate = ratio(m.byEvidence["none"], m.searches)
	r.ThinHitRate = ratio(m.thinHit, m.searches+m.docReads)
	r.LiveFetchRate = ratio(m.expanded+m.liveTool, m.searches+m.liveTool)
	r.LiveFetches, r.Expansions = m.livePages, m.expanded
	if s := m.lat["search_site"]; s != nil {
		r.LatencyP50Ms, r.LatencyP95Ms = s.quantiles()
	}
	o.Chat = api.ChatStats{Responses: m.chatN, SuccessRate: ratio(m.chatCited, m.chatN), NoEvidenceRate: ratio(m.chatN-m.chatCited, m.chatN)}
	if m.chatN > 0 {
		o.Chat.ToolCallsPerResponse = ratio(m.chatCallsN, m.chatN)
	}
	for tool, n := range m.calls {
		ts := api.ToolStats{Calls: n, Errors: m.errors[tool]}
		ts.P50Ms, ts.P95Ms = m.lat[tool].quantiles()
		o.Tools[tool] = ts
	}
	for k, v := range m.errClasses {
		o.ErrorsByClass[k] = v
	}
	pts := m.recent.ordered()
	if len(pts) > 60 {
		pts = pts[len(pts)-60:]
	}
	o.Latency = pts
	return o
}

// fillStatus adds the observability block to a status.
func (d *Daemon) fillStatus(st *api.Status, v *statusView) {
	m := d.obs()
	o := m.snapshot()
	o.DatabaseBytes = d.Store.Size()
	if !st.Index.OldestFetch.IsZero() {
		o.FreshnessLagSeconds = int64(d.Store.Now().Sub(st.Index.OldestFetch).Seconds())
	}
	o.Queue = v.counts.ByStatus
	for k, n := range v.counts.ErrorsByClass {
		o.ErrorsByClass[k] += n
	}
	o.FetchAges, o.History = v.ages, v.history
	st.Observability = o
	if since, e := d.Crawler.DiskFullSince(); e != "" {
		if st.Extra == nil {
			st.Extra = map[string]any{}
		}
		st.Extra["disk_full"] = map[string]any{"since": since.UTC(), "error": e,
			"hint": "the state dir " + d.Config.StateDir + " is out of space: search answers from the index, nothing new is indexed until space is freed"}
	}
	// A site that asked the crawl to slow down (429 or 503 with
	// Retry-After) is a site fault the owner can act on: a security
	// plugin or host limit that throttles the crawler.
	if th, ok := d.Crawler.Throttled(); ok && time.Since(th.Until) < freshness.ThrottleShown {
		if st.Extra == nil {
			st.Extra = map[string]any{}
		}
		st.Extra["site_fault"] = map[string]any{"class": "throttled", "since": th.Since.UTC(), "until": th.Until.UTC(),
			"retry_after_seconds": th.RetryAfter.Seconds(), "pauses": th.Count,
			"hint": "the site answered 429 or 503 with Retry-After: the crawl pauses as asked; a limit that keeps throttling it (a security plugin, the host) may need an exception for its user agent"}
	}
}

// sampleIndex records the index's size for the growth chart: when the
// document count changed, every 15 minutes otherwise, or when forced.
func (d *Daemon) sampleIndex(ctx context.Context, s store.Stats, lag int64, force bool) error {
	m := d.obs()
	now := d.Store.Now()
	m.mu.Lock()
	due := force || s.Documents != m.lastDocs || now.Sub(m.lastSample) >= freshness.IndexSampleEvery
	if due {
		m.lastSample, m.lastDocs = now, s.Documents
	}
	m.mu.Unlock()
	if !due {
		return nil
	}
	return d.Store.AddStatsSample(ctx, store.StatsSample{At: now, Documents: s.Documents, Chunks: s.Chunks,
		Thin: s.Thin, LagSeconds: lag}, 500)
}

// indexCollector reads the index's gauges from the store at scrape time.
type indexCollector struct{ d *Daemon }

var (
	descDocs     = prometheus.NewDesc("askwpd_index_documents", "Indexed documents.", nil, nil)
	descChunks   = prometheus.NewDesc("askwpd_index_chunks", "Indexed chunks.", nil, nil)
	descThin     = prometheus.NewDesc("askwpd_index_thin_documents", "Indexed documents flagged thin.", nil, nil)
	descBytes    = prometheus.NewDesc("askwpd_index_bytes", "Size of the store on disk.", nil, nil)
	descLag      = prometheus.NewDesc("askwpd_index_freshness_lag_seconds", "Age of the least recently fetched page.", nil, nil)
	descLastIdx  = prometheus.NewDesc("askwpd_index_last_indexed_timestamp_seconds", "When a page was last indexed.", nil, nil)
	descCrawling = prometheus.NewDesc("askwpd_crawl_running", "1 while an index pass runs.", nil, nil)
	descQueue    = prometheus.NewDesc("askwpd_crawl_urls", "Crawl frontier URLs by status.", []string{"status"}, nil)
	descErrors   = prometheus.NewDesc("askwpd_crawl_errors", "Crawl frontier URLs in error by class.", []string{"class"}, nil)
	descLastRun  = prometheus.NewDesc("askwpd_crawl_last_run", "Counts of the last index pass.", []string{"count"}, nil)
	descLastEnd  = prometheus.NewDesc("askwpd_crawl_last_run_finished_timestamp_seconds", "When the last index pass finished.", nil, nil)
	descFree     = prometheus.NewDesc("askwpd_state_dir_free_bytes", "Space left on the state dir's filesystem.", nil, nil)
	descFull     = prometheus.NewDesc("askwpd_store_disk_full", "1 while the store refuses writes because the state dir is full.", nil, nil)
	descDBUp     = prometheus.NewDesc("askwpd_wp_database_up", "1 when the WordPress database answers a ping.", nil, nil)
	descMemReady = prometheus.NewDesc("askwpd_search_index_ready", "1 while searches can run on the in-memory index.", nil, nil)
	descMemLoads = prometheus.NewDesc("askwpd_search_index_loads_total", "Builds of the in-memory search index (start-up, and after writes it could not follow).", nil, nil)
	descReread   = prometheus.NewDesc("askwpd_search_reread_texts_total", "Chunk texts the search index's reloads read again into its cache.", nil, nil)
	descSearches = prometheus.NewDesc("askwpd_searches_total", "Searches by the index they ran on (memory: the only one).", []string{"index"}, nil)
)

func (c *indexCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDocs, descChunks, descThin, descBytes, descLag, descLastIdx, descCrawling,
		descQueue, descErrors, descLastRun, descLastEnd, descFree, descFull, descDBUp, descMemReady, descMemLoads, descReread, descSearches} {
		ch <- d
	}
}

func (c *indexCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	d := c.d
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	v, err := d.view(ctx)
	if err == nil {
		s := v.stats
		gauge(descDocs, float64(s.Documents))
		gauge(descChunks, float64(s.Chunks))
		gauge(descThin, float64(s.Thin))
		if !s.OldestFetch.IsZero() {
			gauge(descLag, d.Store.Now().Sub(s.OldestFetch).Seconds())
		}
		if !s.LastIndexedAt.IsZero() {
			gauge(descLastIdx, float64(s.LastIndexedAt.Unix()))
		}
	} else {
		d.Log.Warn("Metrics: unable to read index stats", "error", err)
	}
	gauge(descBytes, float64(d.Store.Size()))
	si := d.Search.Stats()
	ready := 0.0
	if si.Ready {
		ready = 1
	}
	gauge(descMemReady, ready)
	counter := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, v, labels...)
	}
	counter(descMemLoads, float64(si.Loads))
	counter(descReread, float64(si.Reread))
	counter(descSearches, float64(si.Memory), "memory")
	var fs syscall.Statfs_t
	if err := syscall.Statfs(d.Config.StateDir, &fs); err == nil {
		gauge(descFree, float64(fs.Bavail)*float64(fs.Bsize))
	}
	full := 0.0
	if _, e := d.Crawler.DiskFullSince(); e != "" {
		full = 1
	}
	gauge(descFull, full)
	if d.WP != nil {
		// At most one ping a scrape: a database that is down costs a
		// connection attempt per scrape, no more.
		up := 0.0
		if d.databaseErr(ctx) == nil {
			up = 1
		}
		gauge(descDBUp, up)
	}
	crawling := 0.0
	if d.Crawler.Running() {
		crawling = 1
	}
	gauge(descCrawling, crawling)
	if v == nil {
		return
	}
	for k, n := range v.counts.ByStatus {
		gauge(descQueue, float64(n), k)
	}
	for k, n := range v.counts.ErrorsByClass {
		gauge(descErrors, float64(n), k)
	}
	if len(v.runs) > 0 {
		r := v.runs[0]
		for k, v := range map[string]int{"discovered": r.Discovered, "fetched": r.Fetched, "indexed": r.Indexed,
			"unchanged": r.Unchanged, "removed": r.Removed, "errors": r.Errors} {
			gauge(descLastRun, float64(v), k)
		}
		if !r.FinishedAt.IsZero() {
			gauge(descLastEnd, float64(r.FinishedAt.Unix()))
		}
	}
}
