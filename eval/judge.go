package eval

import (
	"context"
	"fmt"
	"io"
)

// Ranker is a search system measured from outside: it returns a query's
// document ids (the corpus's _id), best first.
type Ranker func(ctx context.Context, text string) ([]string, error)

// Judge runs opt.Queries through rank and scores the rankings against
// opt.Qrels exactly as Evaluate scores askwpd's engine, so another
// system (WordPress core search, askwpd over HTTP on a real site) lands
// in the same table. opt.Corpus is not read: the system under test holds
// the documents. opt.Run and opt.Baseline work as they do for Evaluate.
func Judge(ctx context.Context, opt Options, rank Ranker, out io.Writer) (*Metrics, error) {
	if opt.Queries == "" || opt.Qrels == "" {
		return nil, fmt.Errorf("eval: judging needs queries and qrels")
	}
	queries, qrels, err := loadQueries(opt)
	if err != nil {
		return nil, err
	}
	byRank := func(ctx context.Context, text string) ([]string, []float64, error) {
		ids, err := rank(ctx, text)
		scores := make([]float64, len(ids))
		for i := range ids {
			scores[i] = float64(len(ids) - i)
		}
		return ids, scores, err
	}
	m := &Metrics{}
	if err := runQueries(ctx, byRank, queries, qrels, opt.Run, m); err != nil {
		return nil, err
	}
	if err := m.report(out, opt, qrels); err != nil {
		return nil, err
	}
	return m, nil
}
