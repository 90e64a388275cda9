package tool

import (
	"context"
	"log/slog"
	"time"

	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/embed"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

// Service runs the tools over one site's index. Set every field but
// Metrics and Embed before the first call.
type Service struct {
	Log     *slog.Logger
	Store   *store.DB
	Search  *search.Index
	Crawler *crawl.Crawler
	// Embed makes searches hybrid; nil searches with keywords alone.
	Embed *embed.Worker
	// Metrics is told about every call; nil counts nothing.
	Metrics Observer

	links linkMemo
	langs siteLangs
}

// IndexCommitted follows the store's index commits (store.DB.Observe):
// selective expansion forgets what the commit may have changed of the
// links it remembers.
func (s *Service) IndexCommitted(c store.IndexCommit) {
	s.links.committed(c)
	s.langs.committed()
}

var _ Caller = (*Service)(nil)

// Observer is what the tools report, for metrics.
type Observer interface {
	// ObserveCall counts one call: outcome is ok, error or timeout.
	ObserveCall(tool, outcome, errCode string, took time.Duration, at time.Time)
	// ObserveSearch counts one search_site answer.
	ObserveSearch(evidence string, thin, expanded bool, livePages int)
	// ObserveDocRead counts one get_document answer.
	ObserveDocRead(thin bool)
	// ObserveLiveFetch counts one live fetch; via is tool or expansion.
	ObserveLiveFetch(via, outcome string)
}

type noObserver struct{}

func (noObserver) ObserveCall(string, string, string, time.Duration, time.Time) {}
func (noObserver) ObserveSearch(string, bool, bool, int)                        {}
func (noObserver) ObserveDocRead(bool)                                          {}
func (noObserver) ObserveLiveFetch(string, string)                              {}

func (s *Service) obs() Observer {
	if s.Metrics == nil {
		return noObserver{}
	}
	return s.Metrics
}

// search is the index's search, hybrid when embeddings are configured.
func (s *Service) search(ctx context.Context, slot Slot, q search.Query) (*search.Result, error) {
	if s.Embed != nil {
		// The query's embedding comes from a provider over the network.
		if err := slot.offCPU(ctx, func() { q.Hybrid = s.Embed.Query(ctx, q.Text) }); err != nil {
			return nil, err
		}
	}
	return s.Search.Search(ctx, q)
}
