package insights

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// The log records what visitors ask: search_site called over HTTP or MCP,
// and chat turns with the visitor's question. The searches a chat turn
// runs for itself (its context builder's and the model's) are not
// questions of their own; they only tell the turn's row what the site
// found, so the report counts each question once.

// Caller logs every search_site call that goes through it, the calls of
// visitors, and passes every call on to next.
func (l *Log) Caller(next tool.Caller) tool.Caller {
	if !l.Enabled() {
		return next
	}
	return &caller{l: l, next: next}
}

type caller struct {
	l    *Log
	next tool.Caller
}

func (c *caller) Call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	out, err := c.next.Call(ctx, name, args)
	if name == "search_site" && err == nil {
		if r, ok := out.(*tool.SearchResponse); ok {
			e := entry{q: fromSearch(r), args: args}
			e.q.At, e.q.Kind = time.Now(), "search"
			c.l.add(e)
		}
	}
	return out, err
}

func fromSearch(r *tool.SearchResponse) (q store.Question) {
	q.Text, q.Action, q.Evidence, q.Corrections = r.Query, r.Action, r.Evidence, r.Corrections
	q.TopURLs = topURLs(r, nil)
	q.Expanded = len(r.Expanded) > 0
	q.LiveFetch = q.Expanded
	return q
}

// topURLs appends r's first distinct result pages to urls, up to 3.
func topURLs(r *tool.SearchResponse, urls []string) []string {
	for _, e := range r.Results {
		if len(urls) == 3 {
			break
		}
		dup := false
		for _, u := range urls {
			dup = dup || u == e.URL
		}
		if !dup {
			urls = append(urls, e.URL)
		}
	}
	return urls
}

// Tools wraps the chat agent's tool caller: inside a turn started through
// Chat, it notes what each search found for the turn's row. It logs
// nothing itself.
func (l *Log) Tools(next tool.Caller) tool.Caller {
	if !l.Enabled() {
		return next
	}
	return &turnTools{next: next}
}

type turnTools struct{ next tool.Caller }

func (t *turnTools) Call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	out, err := t.next.Call(ctx, name, args)
	if tn, ok := ctx.Value(turnKey{}).(*turnNotes); ok && err == nil {
		tn.note(name, out)
	}
	return out, err
}

type turnKey struct{}

// turnNotes collects what a chat turn's tool calls found. Context
// searches run in parallel, hence the lock.
type turnNotes struct {
	mu        sync.Mutex
	searched  bool
	action    string
	top       []string
	corr      map[string]string
	expanded  bool
	liveFetch bool
}

// actionRank orders search actions from the best outcome down: a turn is
// as answered as its best search.
var actionRank = map[string]int{"answer": 4, "ambiguous": 3, "clarify": 2, "no_match": 1}

func (tn *turnNotes) note(name string, out any) {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	switch name {
	case "fetch_live_url":
		tn.liveFetch = true
	case "search_site":
		r, ok := out.(*tool.SearchResponse)
		if !ok {
			return
		}
		tn.searched = true
		if actionRank[r.Action] > actionRank[tn.action] {
			tn.action = r.Action
		}
		tn.top = topURLs(r, tn.top)
		for k, v := range r.Corrections {
			if tn.corr == nil {
				tn.corr = map[string]string{}
			}
			tn.corr[k] = v
		}
		if len(r.Expanded) > 0 {
			tn.expanded, tn.liveFetch = true, true
		}
	}
}

// ChatFunc is one chat turn, the shape of chat.Agent.Chat.
type ChatFunc func(ctx context.Context, req chat.Request, emit func(chat.Event)) (*chat.Response, error)

// Chat logs every turn that goes through it with the visitor's question
// and its outcome: sourced (an answer citing the site), unsourced (an
// answer citing nothing), provider_error (the model failed or is not
// configured, and the visitor got an apology), refused (the request was
// turned down), or error (askwpd failed).
func (l *Log) Chat(next ChatFunc) ChatFunc {
	if !l.Enabled() {
		return next
	}
	return func(ctx context.Context, req chat.Request, emit func(chat.Event)) (*chat.Response, error) {
		tn := &turnNotes{}
		resp, err := next(context.WithValue(ctx, turnKey{}, tn), req, emit)
		question := lastQuestion(req)
		if question == "" || errors.Is(err, context.Canceled) {
			return resp, err
		}
		e := entry{}
		e.q.At, e.q.Kind, e.q.Text = time.Now(), "chat", question
		tn.mu.Lock()
		e.q.Action, e.q.TopURLs, e.q.Corrections = tn.action, tn.top, tn.corr
		e.q.Expanded, e.q.LiveFetch = tn.expanded, tn.liveFetch
		tn.mu.Unlock()
		var te *tool.Error
		switch {
		case err == nil:
			e.q.TurnID, e.q.Evidence = resp.TurnID, resp.Evidence
			switch {
			case resp.Degraded != "":
				e.q.Outcome = "provider_error"
			case len(resp.Sources) > 0:
				e.q.Outcome = "sourced"
			default:
				e.q.Outcome = "unsourced"
			}
		case errors.As(err, &te) && te.Code == "no_provider":
			e.q.Outcome = "provider_error"
		case errors.As(err, &te):
			e.q.Outcome = "refused"
		case errors.Is(err, context.DeadlineExceeded):
			e.q.Outcome = "provider_error"
		default:
			e.q.Outcome = "error"
		}
		if e.q.Evidence == "" && tn.searched {
			e.q.Evidence = "none"
		}
		l.add(e)
		return resp, err
	}
}

// lastQuestion is the visitor's message a turn answers.
func lastQuestion(req chat.Request) string {
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
		return req.Messages[n-1].Content
	}
	return ""
}

// validTurnID reports whether s has the shape of a chat turn id: 32
// lowercase hex digits.
func validTurnID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
