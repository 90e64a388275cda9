package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/pii"
	"github.com/askwp/askwpd/store"
)

// toolFunc runs one tool. It records what the log line should say in c.
type toolFunc func(s *Service, ctx context.Context, raw json.RawMessage, c *toolCall) (any, error)

type toolSpec struct {
	timeout time.Duration
	run     toolFunc
}

// toolSpecs are the tools of the contract (Tools describes them) with
// their time limits: a tool that overruns gives the caller a timeout, not
// a hung chat turn.
var toolSpecs = map[string]toolSpec{
	"search_site":        {20 * time.Second, (*Service).toolSearchSite},
	"get_document":       {10 * time.Second, (*Service).toolGetDocument},
	"get_recent":         {5 * time.Second, (*Service).toolGetRecent},
	"search_in_document": {10 * time.Second, (*Service).toolSearchInDocument},
	"fetch_live_url":     {0, (*Service).toolFetchLiveURL}, // the crawl timeout, plus a margin
	"verify_quote":       {5 * time.Second, (*Service).toolVerifyQuote},
}

// toolCall is one call's options and what its log line reports.
type toolCall struct {
	opt        Options
	query      string
	terms      []string
	top        []string
	confidence float64
	action     string
	evidence   string
	url        string
	results    int
	expanded   []string
	liveFetch  bool
	extra      []any
}

// Call runs one tool of the contract. HTTP, MCP and the chat loop all
// come through here. Errors of type *Error are the caller's mistake;
// failures that are facts about the site (a page is gone) come back inside
// the result.
func (s *Service) Call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	return s.CallWith(ctx, name, args, Options{})
}

// Options steer one call beyond its arguments, for askwpd's own callers.
type Options struct {
	// Lean has the tools do only their core job: search_site answers from
	// the index alone, never fetching linked pages live, and get_document
	// adds no supporting passages to a thin page. It is for callers that
	// read for themselves rather than for a model, such as a chat's
	// context builder and quote checks, where a live fetch or extra
	// searches would cost seconds.
	Lean bool
	// Slot is the CPU slot the call holds, given back while it waits on
	// the network; zero for none.
	Slot Slot
}

// CallWith is Call with opt.
func (s *Service) CallWith(ctx context.Context, name string, args json.RawMessage, opt Options) (any, error) {
	spec, ok := toolSpecs[name]
	if !ok {
		return nil, ErrUnknownTool(name)
	}
	timeout := spec.timeout
	if timeout == 0 {
		timeout = s.Crawler.Opts.Timeout + 10*time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	c := &toolCall{opt: opt}
	out, err := spec.run(s, ctx, args, c)
	took := time.Since(start)
	outcome, code := "ok", ""
	var ae *Error
	switch {
	case err == nil:
	case errors.As(err, &ae):
		outcome, code = "error", ae.Code
	case errors.Is(err, context.DeadlineExceeded):
		outcome, code = "timeout", "timeout"
	default:
		outcome, code = "error", "internal"
	}
	s.obs().ObserveCall(name, outcome, code, took, start)
	attrs := []any{"tool", name, "outcome", outcome, "latency_ms", float64(took.Microseconds()) / 1000}
	if c.query != "" {
		// The log outlives the question log's retention and redaction:
		// what a visitor typed is cut here as it is there, and then the
		// query's terms, which would spell it again, are left out.
		if q := pii.Redact(c.query); q != c.query {
			attrs = append(attrs, "query", q, "redacted", true)
		} else {
			attrs = append(attrs, "query", c.query, "terms", c.terms)
		}
	}
	if c.url != "" {
		// A URL a caller passed may carry a visitor's words in its query.
		attrs = append(attrs, "url", pii.RedactURL(c.url))
	}
	if c.action != "" {
		attrs = append(attrs, "action", c.action, "confidence", c.confidence)
	}
	if c.evidence != "" {
		attrs = append(attrs, "evidence", c.evidence, "results", c.results, "top", c.top)
	}
	attrs = append(attrs, "expanded", c.expanded, "live_fetch", c.liveFetch)
	attrs = append(attrs, c.extra...)
	level := slog.LevelInfo
	if outcome != "ok" {
		attrs = append(attrs, "error_code", code)
		if code == "internal" {
			level = slog.LevelError
			attrs = append(attrs, "error", err)
		}
	}
	s.Log.Log(ctx, level, "Tool call", attrs...)
	return out, err
}

func (s *Service) toolSearchSite(ctx context.Context, raw json.RawMessage, c *toolCall) (any, error) {
	var args SearchArgs
	if err := DecodeArgs(raw, &args); err != nil {
		return nil, err
	}
	q, err := args.ToSearchQuery()
	if err != nil {
		return nil, err
	}
	if err := s.filterProducts(ctx, &q, args.productFilter()); err != nil {
		return nil, err
	}
	c.query = q.Text
	r, err := s.searchLang(ctx, c.opt.Slot, q, args.Lang)
	if err != nil {
		return nil, err
	}
	resp := NewSearchResponse(q.Text, r)
	if needsExpansion(resp) && !c.opt.Lean {
		resp, err = s.expand(ctx, c.opt.Slot, q, r, resp)
		if err != nil {
			return nil, err
		}
	}
	if err := s.addFacts(ctx, resp); err != nil {
		return nil, err
	}
	c.terms, c.action, c.confidence, c.evidence, c.results = resp.Terms, resp.Action, resp.Confidence, resp.Evidence, len(resp.Results)
	c.top = topResults(resp.Results)
	live := 0
	for _, e := range resp.Expanded {
		c.expanded = append(c.expanded, e.URL+" "+e.Status)
		live++
	}
	c.liveFetch = live > 0
	thin := len(resp.Results) > 0 && resp.Results[0].Thin
	s.obs().ObserveSearch(resp.Evidence, thin || resp.Evidence == "thin", live > 0, live)
	return resp, nil
}

// topResults are the first results for the log line.
func topResults(rs []Evidence) []string {
	top := make([]string, 0, 3)
	for i, e := range rs {
		if i == 3 {
			break
		}
		top = append(top, fmt.Sprintf("%s %.3f %v", e.URL, e.Score, e.MatchedTerms))
	}
	return top
}

// findDocument resolves id_or_url: a WordPress post ID, an absolute URL
// of the site, or a path on it.
func (s *Service) findDocument(ctx context.Context, ref string, withChunks bool) (*store.Document, error) {
	ref = strings.TrimSpace(ref)
	var tries []string
	switch {
	case isDigits(ref):
		tries = []string{ref}
	case strings.HasPrefix(ref, "/"):
		tries = []string{crawl.Canonical(s.Crawler.Site.URL + ref)}
	default:
		tries = []string{crawl.Canonical(ref), ref}
	}
	for _, t := range append([]string(nil), tries...) {
		if t == "" || isDigits(t) {
			continue
		}
		// A missing or extra trailing slash names the same WordPress page.
		if u, err := url.Parse(t); err == nil && u.RawQuery == "" {
			if strings.HasSuffix(u.Path, "/") {
				u.Path = strings.TrimSuffix(u.Path, "/")
			} else {
				u.Path += "/"
			}
			if u.Path != "" {
				tries = append(tries, u.String())
			}
		}
	}
	for _, t := range tries {
		if t == "" {
			continue
		}
		doc, err := s.Store.FindDocument(ctx, t, withChunks)
		if err == nil {
			return doc, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	return nil, &Error{Code: "not_indexed",
		Message: fmt.Sprintf("no indexed page %q: use a url from search_site or get_recent, or fetch_live_url for a page of this site that is not indexed yet", ref)}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Lean is s as callers that read for themselves call it: every call with
// Options.Lean.
func (s *Service) Lean() Caller { return leanService{s} }

type leanService struct{ s *Service }

func (l leanService) Call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	return l.s.CallWith(ctx, name, args, Options{Lean: true})
}
