package api

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askwp/askwpd/store"
)

// pageSubs follows the store's commits for the pages clients subscribed
// to, and tells the SDK, which knows the subscribers of each URI, when one
// changed or left. The SDK sends resources/updated to the sessions of the
// older revisions on their standing GET stream, and to those of
// 2026-07-28 on their subscriptions/listen request.
//
// A commit names the documents it deleted by id alone, so the ids of the
// subscribed pages the store holds are kept (doc). A page made private or
// removed is such a delete: its subscribers learn that it changed, and a
// read then finds nothing. A page never stored (private from the start,
// or not yet published) may be subscribed to like any other, and makes no
// commit until it is public.
type pageSubs struct {
	m *mcpServer

	mu    sync.Mutex
	pages map[string]*pageSub // by page URL
	doc   map[int64]string    // document id → page URL, for pages in pages
	// observing is set once the store's commits are followed, from the
	// first subscription on.
	observing bool
	// pending are the URLs changed and not yet announced; notifying is
	// set while a goroutine announces them.
	pending   map[string]bool
	notifying bool
}

type pageSub struct {
	sessions map[*mcp.ServerSession]int
	doc      int64
}

func newPageSubs(m *mcpServer) *pageSubs {
	return &pageSubs{m: m, pages: map[string]*pageSub{}, doc: map[int64]string{}, pending: map[string]bool{}}
}

// subscribe accepts a subscription to any page URI of ours, stored or not:
// the answer is the same for a private page as for a public one.
func (m *mcpServer) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	u, ok := pageURL(req.Params.URI)
	if !ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "not a page of this site: resource URIs are " + pageURITemplate}
	}
	var id int64
	switch p, err := m.pages.ReadPage(ctx, u, 0); {
	case err == nil:
		id = p.ID
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	m.subs.add(req.Session, u, id)
	return nil
}

func (m *mcpServer) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if u, ok := pageURL(req.Params.URI); ok {
		m.subs.remove(req.Session, u)
	}
	return nil
}

func (s *pageSubs) add(ss *mcp.ServerSession, u string, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.observing {
		s.observing = true
		// For the store's life, as the daemon's other observers are:
		// with nothing subscribed a commit costs a map lookup.
		s.m.pages.Observe(s)
	}
	p := s.pages[u]
	if p == nil {
		p = &pageSub{sessions: map[*mcp.ServerSession]int{}}
		s.pages[u] = p
	}
	p.sessions[ss]++
	if id != 0 {
		p.doc = id
		s.doc[id] = u
	}
}

func (s *pageSubs) remove(ss *mcp.ServerSession, u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pages[u]
	if p == nil {
		return
	}
	if p.sessions[ss]--; p.sessions[ss] <= 0 {
		delete(p.sessions, ss)
	}
	if len(p.sessions) == 0 {
		s.drop(u, p)
	}
}

func (s *pageSubs) drop(u string, p *pageSub) {
	delete(s.pages, u)
	if p.doc != 0 && s.doc[p.doc] == u {
		delete(s.doc, p.doc)
	}
}

// IndexCommitted marks the subscribed pages a commit changed. It runs in
// the store's commit delivery, so it only marks them; a goroutine
// announces them.
func (s *pageSubs) IndexCommitted(c store.IndexCommit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pages) == 0 {
		return
	}
	marked := false
	for _, op := range c.Ops {
		if op.Add != nil {
			u := op.Add.Doc.URL
			if p := s.pages[u]; p != nil {
				p.doc = op.Add.Doc.ID
				s.doc[p.doc] = u
				s.pending[u], marked = true, true
			}
			continue
		}
		if u, ok := s.doc[op.Delete]; ok {
			// An update deletes and adds again in one commit; the add
			// puts the id back.
			delete(s.doc, op.Delete)
			if p := s.pages[u]; p != nil {
				p.doc = 0
			}
			s.pending[u], marked = true, true
		}
	}
	if marked && !s.notifying {
		s.notifying = true
		go s.announce()
	}
}

// announce sends resources/updated for each pending page until none is
// left, then ends; subscriptions of sessions gone meanwhile are dropped.
func (s *pageSubs) announce() {
	for {
		s.mu.Lock()
		if len(s.pending) == 0 {
			s.notifying = false
			s.mu.Unlock()
			return
		}
		urls := make([]string, 0, len(s.pending))
		for u := range s.pending {
			urls = append(urls, u)
		}
		clear(s.pending)
		s.mu.Unlock()
		s.prune()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for _, u := range urls {
			if err := s.m.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: PageURI(u)}); err != nil {
				s.m.log.Warn("MCP resource update not sent", "uri", PageURI(u), "error", err)
			}
		}
		cancel()
	}
}

// prune forgets the subscriptions of sessions that ended without
// unsubscribing (a client that went away).
func (s *pageSubs) prune() {
	live := map[*mcp.ServerSession]bool{}
	for ss := range s.m.srv.Sessions() {
		live[ss] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for u, p := range s.pages {
		for ss := range p.sessions {
			if !live[ss] {
				delete(p.sessions, ss)
			}
		}
		if len(p.sessions) == 0 {
			s.drop(u, p)
		}
	}
}
