package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/askwp/askwpd/api"
)

// CallTool runs one tool of the contract. HTTP, MCP and the chat loop all
// come through here.
func (d *Daemon) CallTool(ctx context.Context, name string, args json.RawMessage) (any, error) {
	switch name {
	case "search_site":
		return d.toolSearchSite(ctx, args)
	}
	return nil, api.ErrUnknownTool(name)
}

func (d *Daemon) toolSearchSite(ctx context.Context, raw json.RawMessage) (*api.SearchResponse, error) {
	var args api.SearchArgs
	if err := api.DecodeArgs(raw, &args); err != nil {
		return nil, err
	}
	q, err := args.ToSearchQuery()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	r, err := d.Store.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	resp := api.NewSearchResponse(q.Text, r)
	top := make([]string, 0, 3)
	for i, e := range resp.Results {
		if i == 3 {
			break
		}
		top = append(top, fmt.Sprintf("%s %.3f %v", e.URL, e.Score, e.MatchedTerms))
	}
	d.Log.Info("Tool call", "tool", "search_site", "query", q.Text, "terms", r.Terms, "results", len(resp.Results),
		"top", top, "action", r.Action, "confidence", r.Confidence, "latency_ms", float64(time.Since(start).Microseconds())/1000)
	return resp, nil
}
