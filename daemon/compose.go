package daemon

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"sync"

	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/tool"
)

// The wrappers between askwpd's callers and the sites' services are
// composed here, and nowhere else:
//
//	HTTP, MCP        Call: CPU slot → question log (a visitor's search) → route → the site's tool.Service
//	/v1/chat         Chat: question log (the turn) → the site's chat.Agent
//	a site's agent   its tools: question log (noted on the turn's row) → CPU slot → route, from the agent's site
//
// route (route.go) picks the site a call is for; a single site is a
// network of one, whose every call is its own. The site a request came
// from is the shim's (api puts it in the request's context); below the
// entry points it is an argument.

// Call runs one tool of the contract for a visitor, over HTTP or MCP.
func (d *Daemon) Call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	return d.call(ctx, tool.SiteOf(ctx), name, args, false)
}

// Lean is the daemon's tools as callers that read for themselves call
// them (tool.Options.Lean), through the same slots and routing as Call.
func (d *Daemon) Lean() tool.Caller {
	return callerFunc(func(ctx context.Context, name string, args json.RawMessage) (any, error) {
		return d.call(ctx, tool.SiteOf(ctx), name, args, true)
	})
}

func (d *Daemon) call(ctx context.Context, from, name string, args json.RawMessage, lean bool) (any, error) {
	return d.withSlot(ctx, name, func(slot tool.Slot) (any, error) {
		routed := callerFunc(func(ctx context.Context, name string, args json.RawMessage) (any, error) {
			return d.route(ctx, from, name, args, tool.Options{Lean: lean, Slot: slot})
		})
		return d.Questions.Caller(routed).Call(ctx, name, args)
	})
}

// Chat runs one turn of the agent loop, on the agent of the site the
// request came from. The agent is read at each turn: one built anew (new
// provider settings) takes over from the next turn.
func (d *Daemon) Chat(ctx context.Context, req chat.Request, emit func(chat.Event)) (*chat.Response, error) {
	from := tool.SiteOf(ctx)
	return d.Questions.Chat(func(ctx context.Context, req chat.Request, emit func(chat.Event)) (*chat.Response, error) {
		s, err := d.siteFor(from)
		if err != nil {
			return nil, err // logged as refused
		}
		return s.Agent.Chat(ctx, req, emit)
	})(ctx, req, emit)
}

// agentTools is the tool contract as the chat agent of site id calls it:
// calls without a site or page argument answer from that site, and the
// searches of a turn are its own, noted on the turn's row rather than
// logged as questions. lean is for the agent's own reads
// (chat.Agent.Reader).
func (d *Daemon) agentTools(id int64, lean bool) tool.Caller {
	from := strconv.FormatInt(id, 10)
	slotted := callerFunc(func(ctx context.Context, name string, args json.RawMessage) (any, error) {
		return d.withSlot(ctx, name, func(slot tool.Slot) (any, error) {
			return d.route(ctx, from, name, args, tool.Options{Lean: lean, Slot: slot})
		})
	})
	// The question log is read at each call: it opens after the main
	// site's agent is built.
	return callerFunc(func(ctx context.Context, name string, args json.RawMessage) (any, error) {
		return d.Questions.Tools(slotted).Call(ctx, name, args)
	})
}

// callerFunc is a func as a tool.Caller.
type callerFunc func(ctx context.Context, name string, args json.RawMessage) (any, error)

func (f callerFunc) Call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	return f(ctx, name, args)
}

// withSlot runs a call that works on the CPU (all but fetch_live_url,
// which waits on the site) on one of a few slots, twice the cores,
// queueing for it in order. Unbounded, a flood of searches kept hundreds
// of goroutines runnable, and every webhook, status request and crawl
// write waited behind them for a core: webhooks took seconds while the
// searches got no more CPU than now. The call gives its slot back while it
// waits on the network (tool.Slot).
func (d *Daemon) withSlot(ctx context.Context, name string, run func(tool.Slot) (any, error)) (any, error) {
	if name == "fetch_live_url" {
		return run(tool.Slot{})
	}
	d.slotsOnce.Do(func() { d.slots = make(chan struct{}, 2*runtime.GOMAXPROCS(0)) })
	cs := &callSlot{slots: d.slots}
	if err := cs.take(ctx); err != nil {
		return nil, err
	}
	defer cs.done()
	return run(tool.Slot{Release: cs.away, Acquire: cs.back})
}

// callSlot is one call's slot. A search of a whole network runs its
// sites' searches at once on the call's one slot, so several of them may
// wait on the network together: the slot is given back when the first
// goes away and taken again when the last comes back.
type callSlot struct {
	slots chan struct{}
	mu    sync.Mutex
	held  bool
	out   int // goroutines of the call waiting without the slot
}

func (c *callSlot) take(ctx context.Context) error {
	select {
	case c.slots <- struct{}{}:
		c.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *callSlot) away() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out++
	if c.held {
		<-c.slots
		c.held = false
	}
}

// back waits for the slot under the lock: a sibling going away meanwhile
// waits too, then gives back the slot just taken.
func (c *callSlot) back(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out--
	if c.out > 0 || c.held {
		return nil
	}
	return c.take(ctx)
}

func (c *callSlot) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held {
		<-c.slots
		c.held = false
	}
}
