package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"sync"

	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// pageArg names the argument of the tools that read one page: called
// without a site, they answer from the site the page belongs to, so a
// result of a search of every site can be read where it lives.
var pageArg = map[string]string{
	"get_document": "id_or_url", "search_in_document": "id_or_url", "fetch_live_url": "url", "verify_quote": "url",
}

// route runs a tool call on the site it is for: the one the site
// argument names, else the one the page argument belongs to, else from
// (the site the request came from: the shim's blog id, or the chat
// agent's own site), else the main site. "all" searches every site. A
// single site is a network of one: every call is its own, whatever the
// arguments say.
func (d *Daemon) route(ctx context.Context, from, name string, args json.RawMessage, opt tool.Options) (any, error) {
	if !d.net.multisite() {
		return d.Tools.CallWith(ctx, name, args, opt)
	}
	ref, err := tool.PeekSite(args)
	if err != nil {
		return nil, err
	}
	if ref == "" {
		if s := d.siteOfPage(name, args); s != nil {
			return d.callSite(ctx, s, name, args, opt)
		}
		ref = from
	}
	if ref == tool.AllSites {
		return d.callAll(ctx, name, args, opt)
	}
	s, err := d.siteFor(ref)
	if err != nil {
		return nil, err
	}
	return d.callSite(ctx, s, name, args, opt)
}

// callSite runs a tool on one site, counting it under the site's label;
// a name outside the contract is not counted, so callers cannot grow the
// series.
func (d *Daemon) callSite(ctx context.Context, s *Site, name string, args json.RawMessage, opt tool.Options) (any, error) {
	out, err := s.Tools.CallWith(ctx, name, args, opt)
	var te *tool.Error
	if !errors.As(err, &te) || te.Code != "unknown_tool" {
		obs := d.net.obs
		obs.toolCalls.WithLabelValues(obs.labels.of(s.ID), name).Inc()
	}
	return out, err
}

func (d *Daemon) siteOfPage(name string, args json.RawMessage) *Site {
	key, ok := pageArg[name]
	if !ok {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	var u string
	if json.Unmarshal(m[key], &u) != nil {
		return nil
	}
	return d.siteOwning(u)
}

// callAll runs search_site or get_recent on every site at once and merges
// the answers, each result naming its site. The sites' calls share the
// call's one slot (callSlot).
func (d *Daemon) callAll(ctx context.Context, name string, args json.RawMessage, opt tool.Options) (any, error) {
	if name != "search_site" && name != "get_recent" {
		return nil, tool.Invalid(`site "all" is for search_site and get_recent; name one site (a blog id or home URL) for ` + name)
	}
	d.net.obs.toolCalls.WithLabelValues("all", name).Inc()
	sites := d.allSites()
	outs := make([]any, len(sites))
	errs := make([]error, len(sites))
	var wg sync.WaitGroup
	for i, s := range sites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = s.Tools.CallWith(ctx, name, args, opt)
		}()
	}
	wg.Wait()
	var firstErr error
	for i, err := range errs {
		var te *tool.Error
		if errors.As(err, &te) {
			return nil, err // the caller's mistake is the same on every site
		}
		if err != nil {
			d.Log.Warn("A site's part of a network search failed", "site", sites[i].ID, "tool", name, "error", err)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	tags := make([]*tool.SiteTag, len(sites))
	for i, s := range sites {
		tags[i] = &tool.SiteTag{ID: s.ID, URL: s.Home, Name: s.Name}
	}
	var out any
	if name == "search_site" {
		out = mergeSearch(outs, tags)
	} else {
		out = mergeRecent(outs, tags)
	}
	if out == nil {
		return nil, firstErr
	}
	return out, nil
}

// mergeSearch merges the sites' results by score, keeping as many as the
// longest answer (the caller's limit). The answer's verdict is the one of
// the site with the best result.
func mergeSearch(outs []any, tags []*tool.SiteTag) *tool.SearchResponse {
	var (
		best    *tool.SearchResponse
		results []tool.Evidence
		limit   int
	)
	for i, o := range outs {
		r, ok := o.(*tool.SearchResponse)
		if !ok {
			continue
		}
		for j := range r.Results {
			r.Results[j].Site = tags[i]
		}
		limit = max(limit, len(r.Results))
		results = append(results, r.Results...)
		if best == nil || topScore(r) > topScore(best) {
			best = r
		}
	}
	if best == nil {
		return nil
	}
	sort.SliceStable(results, func(a, b int) bool { return results[a].Score > results[b].Score })
	merged := *best
	merged.Results = results[:min(limit, len(results))]
	if merged.Results == nil {
		merged.Results = []tool.Evidence{}
	}
	return &merged
}

func topScore(r *tool.SearchResponse) float64 {
	if len(r.Results) == 0 {
		return -1
	}
	return r.Results[0].Score
}

// mergeRecent merges the sites' newest pages, newest first.
func mergeRecent(outs []any, tags []*tool.SiteTag) *tool.RecentResponse {
	var (
		merged *tool.RecentResponse
		limit  int
	)
	for i, o := range outs {
		r, ok := o.(*tool.RecentResponse)
		if !ok {
			continue
		}
		if merged == nil {
			merged = &tool.RecentResponse{Type: r.Type, Evidence: "none", Results: []tool.RecentItem{}}
		}
		for j := range r.Results {
			r.Results[j].Site = tags[i]
		}
		limit = max(limit, len(r.Results))
		merged.Results = append(merged.Results, r.Results...)
	}
	if merged == nil {
		return nil
	}
	// RFC 3339 in UTC sorts as text.
	sort.SliceStable(merged.Results, func(a, b int) bool { return merged.Results[a].Published > merged.Results[b].Published })
	merged.Results = merged.Results[:min(limit, len(merged.Results))]
	if len(merged.Results) > 0 {
		merged.Evidence = "grounded"
	}
	return merged
}

// receiveEvents hands each event to the crawler of the site its blog_id
// names, else the site the request came from (from), else the main site.
// A site change reads the network's sites again; an event of a site
// askwpd does not index is accepted and dropped. A single site's crawler
// takes every event.
func (d *Daemon) receiveEvents(ctx context.Context, from string, evs []*store.Event) (int, error) {
	if !d.net.multisite() {
		return d.Crawler.ReceiveEvents(ctx, evs)
	}
	var (
		order  []*Site
		groups = map[*Site][]*store.Event{}
		resync bool
		n      int
	)
	for _, e := range evs {
		if e.Type == store.EventSiteChanged {
			resync = true
			n++
			continue
		}
		// An event without a blog_id is the requesting site's (the shim's header).
		ref := from
		if e.BlogID > 0 {
			ref = strconv.FormatInt(e.BlogID, 10)
		}
		s, err := d.siteFor(ref)
		if err != nil {
			n++
			continue
		}
		if groups[s] == nil {
			order = append(order, s)
		}
		groups[s] = append(groups[s], e)
	}
	if resync {
		if err := d.syncSites(ctx, nil); err != nil {
			return n, err
		}
	}
	for _, s := range order {
		k, err := s.Crawler.ReceiveEvents(ctx, groups[s])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
