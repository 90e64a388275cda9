package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/askwp/askwpd/store"
)

// MetricsProvider serves the Prometheus exposition. The daemon owns the
// registry, so the API does not depend on the Prometheus client.
type MetricsProvider interface {
	MetricsHandler() http.Handler
}

// Observability is the retrieval-quality and health part of /v1/status.
// Rates are 0..1 and 0 when nothing was counted yet; counts are since the
// daemon started.
type Observability struct {
	Retrieval RetrievalStats       `json:"retrieval"`
	Chat      ChatStats            `json:"chat"`
	Tools     map[string]ToolStats `json:"tools"`
	// DatabaseBytes is the store's size on disk.
	DatabaseBytes int64 `json:"database_bytes"`
	// FreshnessLagSeconds is the age of the least recently fetched page.
	FreshnessLagSeconds int64             `json:"freshness_lag_seconds"`
	FetchAges           []store.AgeBucket `json:"fetch_ages"`
	// Queue counts the crawl frontier by status.
	Queue map[string]int `json:"queue"`
	// ErrorsByClass counts frontier URLs in error by class (not_found,
	// timeout, ...), and tool calls that failed, as "tool_<code>".
	ErrorsByClass map[string]int `json:"errors_by_class"`
	// History is the index's size and freshness over time, oldest first.
	History []store.StatsSample `json:"history"`
	// Latency is the latest tool calls' latencies, oldest first.
	Latency []LatencyPoint `json:"latency"`
}

// RetrievalStats describe search_site's evidence.
type RetrievalStats struct {
	Searches int `json:"searches"`
	// SuccessRate is the share of searches with at least one evidence
	// source; NoEvidenceRate the share with none.
	SuccessRate    float64 `json:"success_rate"`
	NoEvidenceRate float64 `json:"no_evidence_rate"`
	// ThinHitRate is the share of searches and document reads whose
	// evidence was a thin page.
	ThinHitRate float64 `json:"thin_hit_rate"`
	// LiveFetchRate is the share of searches and fetch_live_url calls that
	// fetched pages live (selective expansion or the tool).
	LiveFetchRate float64 `json:"live_fetch_rate"`
	LiveFetches   int     `json:"live_fetches"`
	Expansions    int     `json:"expansions"`
	LatencyP50Ms  float64 `json:"latency_p50_ms"`
	LatencyP95Ms  float64 `json:"latency_p95_ms"`
}

// ChatStats describe chat responses, as the chat loop reports them.
type ChatStats struct {
	Responses            int     `json:"responses"`
	ToolCallsPerResponse float64 `json:"tool_calls_per_response"`
	// SuccessRate is the share of responses citing at least one source.
	SuccessRate    float64 `json:"success_rate"`
	NoEvidenceRate float64 `json:"no_evidence_rate"`
}

// ToolStats describe one tool's calls.
type ToolStats struct {
	Calls  int     `json:"calls"`
	Errors int     `json:"errors"`
	P50Ms  float64 `json:"p50_ms"`
	P95Ms  float64 `json:"p95_ms"`
}

// LatencyPoint is one tool call's latency.
type LatencyPoint struct {
	At   time.Time `json:"at"`
	Tool string    `json:"tool"`
	Ms   float64   `json:"ms"`
}

// registerMetricsRoutes mounts /metrics behind the token when the backend
// provides it.
func (s *Server) registerMetricsRoutes(g *echo.Group) {
	mp, ok := s.b.(MetricsProvider)
	if !ok {
		return
	}
	h := mp.MetricsHandler()
	getHead(g, "/metrics", echo.WrapHandler(h))
}
