package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const mcpPath = "/mcp"

// registerMCPRoutes mounts /mcp behind the bearer token. The SDK's
// DNS-rebinding check is off because checkHost already holds every route
// to the same rule, and honours allowed_hosts, which the SDK's would
// refuse.
func (s *Server) registerMCPRoutes(e *echo.Echo) {
	m := newMCPServer(s.b, MCPOptions{Log: s.log, Pages: s.pages, MaxResult: s.mcpMax})
	h := newMCPHTTP(m, s.log)
	e.Any(mcpPath, func(c echo.Context) error {
		h.ServeHTTP(c.Response(), c.Request())
		return nil
	}, s.requireToken)
}

// mcpHTTP serves streamable HTTP for every revision the SDK speaks. A
// client of 2026-07-28 is stateless: each request carries its version and
// capabilities, and a subscription is one long request
// (subscriptions/listen). The revisions before it keep a session, and a
// resource subscription's notifications reach the client on the session's
// standing GET stream, which a stateless handler cannot offer (it answers
// GET with 405). So each request goes to the handler of its revision:
// the SDK's stateless one, or its stateful one, whose sessions are capped
// here and closed when idle.
type mcpHTTP struct {
	m         *mcpServer
	log       *slog.Logger
	stateless http.Handler
	stateful  http.Handler
	sessions  *sessionTable
}

// The sessions of the older revisions: at most mcpMaxSessions at once, and
// one is closed after mcpSessionIdle without a request unless its GET
// stream (where notifications go) is open.
const (
	mcpMaxSessions = 1000
	mcpSessionIdle = 30 * time.Minute
)

func newMCPHTTP(m *mcpServer, log *slog.Logger) *mcpHTTP {
	get := func(*http.Request) *mcp.Server { return m.srv }
	return &mcpHTTP{m: m, log: log,
		// Responses as SSE: a subscriptions/listen answer is a stream of
		// notifications.
		stateless: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true,
			MaxRequestBodyBytes: mcpMaxBody, DisableLocalhostProtection: true, Logger: log,
			PropagateRequestCancellation: true}),
		stateful: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{JSONResponse: true,
			MaxRequestBodyBytes: mcpMaxBody, DisableLocalhostProtection: true, Logger: log}),
		sessions: newSessionTable(m.srv, mcpMaxSessions, mcpSessionIdle),
	}
}

func (h *mcpHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Method == http.MethodPost {
		// Read here, so that a body over the cap, a batch or bad JSON
		// gets a JSON-RPC error before any handler, and the revision can
		// be read from it.
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				writeRPCError(w, http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest,
					fmt.Sprintf("request body larger than %d bytes", mbe.Limit))
				return
			}
			writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "unreadable request body")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if msg, ok := checkMessage(body); !ok {
			code := jsonrpc.CodeInvalidRequest
			if msg == parseErrorMessage {
				code = jsonrpc.CodeParseError
			}
			writeRPCError(w, http.StatusBadRequest, code, msg)
			return
		}
	}
	rw := &rpcErrors{ResponseWriter: w, id: requestID(body)}
	defer rw.finish()
	if statelessRequest(r, body) {
		h.stateless.ServeHTTP(rw, r)
		return
	}
	done, ok := h.sessions.enter(rw, r, body)
	if !ok {
		return
	}
	defer done()
	h.stateful.ServeHTTP(rw, r)
}

// rpcErrors turns the SDK's plain-text refusals (an unknown method, a
// missing header, an unknown session) into JSON-RPC errors with the same
// HTTP status, so that a client reads every refusal the same way.
type rpcErrors struct {
	http.ResponseWriter
	id      json.RawMessage
	status  int
	refusal *bytes.Buffer
}

func (w *rpcErrors) WriteHeader(status int) {
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") && w.refusal == nil {
		w.status, w.refusal = status, new(bytes.Buffer)
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *rpcErrors) Write(b []byte) (int, error) {
	if w.refusal != nil {
		return w.refusal.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets the SDK's http.ResponseController flush SSE events.
func (w *rpcErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *rpcErrors) finish() {
	if w.refusal == nil {
		return
	}
	msg := strings.TrimSpace(w.refusal.String())
	code := jsonrpc.CodeInvalidRequest
	if strings.Contains(msg, "not handled") {
		code = jsonrpc.CodeMethodNotFound
	}
	w.Header().Del("X-Content-Type-Options")
	w.Header().Set("Content-Type", "application/json")
	w.ResponseWriter.WriteHeader(w.status)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": w.id, "error": map[string]any{"code": code, "message": msg}})
	w.ResponseWriter.Write(b)
}

// requestID is the id of the request in body, or null.
func requestID(body []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &m) != nil || len(m.ID) == 0 {
		return json.RawMessage("null")
	}
	return m.ID
}

const parseErrorMessage = "the body is not JSON"

// checkMessage refuses what no revision accepts: a body that is not JSON,
// and a batch. Batches left JSON-RPC with 2025-06-18, and the revisions
// before it that allowed them are not worth the second path.
func checkMessage(body []byte) (string, bool) {
	b := bytes.TrimLeft(body, " \t\r\n")
	if !json.Valid(b) {
		return parseErrorMessage, false
	}
	if len(b) > 0 && b[0] == '[' {
		return "JSON-RPC batches are not supported: send one message per request", false
	}
	if len(b) == 0 || b[0] != '{' {
		return "the body must be one JSON-RPC message, an object", false
	}
	return "", true
}

// statelessRequest reports whether r is of 2026-07-28 or later: a header
// that says so, a request only that revision has, or the version in the
// request's _meta, which every request of it carries.
func statelessRequest(r *http.Request, body []byte) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return v >= "2026-07-28"
	}
	if len(body) == 0 {
		return false
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false
	}
	switch msg.Method {
	case "server/discover", "subscriptions/listen":
		return true
	}
	_, ok := msg.Params.Meta[mcp.MetaKeyProtocolVersion]
	return ok
}

func writeRPCError(w http.ResponseWriter, status int, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
	w.Write(b)
}

// sessionTable bounds the stateful sessions: how many, and how long one
// lives idle. The SDK's own idle timeout counts only POSTs, and would
// close a subscriber that just listens on its GET stream.
type sessionTable struct {
	srv  *mcp.Server
	max  int
	idle time.Duration

	mu        sync.Mutex
	seen      map[string]time.Time // session id → last request
	listening map[string]int       // session id → open GET streams
	swept     time.Time
}

func newSessionTable(srv *mcp.Server, max int, idle time.Duration) *sessionTable {
	return &sessionTable{srv: srv, max: max, idle: idle, seen: map[string]time.Time{}, listening: map[string]int{}}
}

// enter records a request to the stateful handler and returns the func
// to call when it ends. A new session beyond the cap, when no idle one
// can make room, is refused with 503.
func (t *sessionTable) enter(w http.ResponseWriter, r *http.Request, body []byte) (func(), bool) {
	id := r.Header.Get("Mcp-Session-Id")
	now := time.Now()
	t.mu.Lock()
	sweep := now.Sub(t.swept) > time.Minute
	if sweep {
		t.swept = now
	}
	t.mu.Unlock()
	newSession := id == "" && r.Method == http.MethodPost && bytes.Contains(body, []byte(`"initialize"`))
	if sweep || newSession {
		if !t.sweep(now, newSession) {
			writeRPCError(w, http.StatusServiceUnavailable, jsonrpc.CodeInternalError,
				fmt.Sprintf("this server holds its most sessions (%d): try again later", t.max))
			return nil, false
		}
	}
	if id == "" {
		return func() {}, true
	}
	get := r.Method == http.MethodGet
	t.mu.Lock()
	t.seen[id] = now
	if get {
		t.listening[id]++
	}
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.seen[id] = time.Now()
		if get {
			if t.listening[id]--; t.listening[id] <= 0 {
				delete(t.listening, id)
			}
		}
	}, true
}

// sweep closes the sessions idle too long, and reports whether there is
// room for one more when room is wanted, closing the longest idle session
// to make it.
func (t *sessionTable) sweep(now time.Time, room bool) bool {
	var live []*mcp.ServerSession
	for ss := range t.srv.Sessions() {
		if ss.ID() != "" { // a stateless request's session has none
			live = append(live, ss)
		}
	}
	t.mu.Lock()
	ids := make(map[string]bool, len(live))
	var close []*mcp.ServerSession
	var oldest *mcp.ServerSession
	var oldestAt time.Time
	n := 0
	for _, ss := range live {
		id := ss.ID()
		ids[id] = true
		at, ok := t.seen[id]
		if !ok {
			at, t.seen[id] = now, now // begun by a request still in flight
		}
		if t.listening[id] > 0 {
			n++
			continue
		}
		if now.Sub(at) > t.idle {
			close = append(close, ss)
			continue
		}
		n++
		if oldest == nil || at.Before(oldestAt) {
			oldest, oldestAt = ss, at
		}
	}
	for id := range t.seen {
		if !ids[id] {
			delete(t.seen, id)
		}
	}
	ok := !room || n < t.max
	if room && !ok && oldest != nil {
		close, ok = append(close, oldest), true
	}
	t.mu.Unlock()
	for _, ss := range close {
		ss.Close()
	}
	return ok
}
