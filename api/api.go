// Package api is askwpd's HTTP surface: the tool contract over HTTP and
// MCP, the chat endpoint (JSON or SSE), webhooks, status, metrics and the
// admin page. It adapts tool and chat to HTTP, declares the small
// interfaces it needs, and the daemon satisfies them; it knows the store
// only for its types.
package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/origin"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// Backend is what the API needs from the daemon. Optional capabilities
// (events, chat, admin actions) are separate interfaces, asserted when the
// routes are registered, so each can be built and tested on its own.
type Backend interface {
	tool.Caller
	Status(ctx context.Context) (*Status, error)
}

// Options configure the server.
type Options struct {
	Token string
	Log   *slog.Logger
	// MaxBody caps request bodies, in bytes; default 1 MiB.
	MaxBody int64
	// AllowedHosts are Host header values accepted besides the names of
	// the address a request came in on: "name" for any port, or
	// "name:port".
	AllowedHosts []string
	// ChatGate, when set, caps concurrent /v1/chat turns and their daily
	// model calls; its state shows on /v1/status and /admin.
	ChatGate *chat.Gate
	// Pprof mounts Go's profiler at /debug/pprof/ (registerDebugRoutes).
	Pprof bool
	// Pages are the site's public pages, which /mcp serves as resources;
	// nil serves no resources.
	Pages PageStore
	// MCPMaxResult caps one MCP answer (MCPOptions.MaxResult).
	MCPMaxResult int
}

// Server routes HTTP requests to the backend.
type Server struct {
	e       *echo.Echo
	b       Backend
	log     *slog.Logger
	tokenSH [32]byte
	maxBody int64
	hosts   map[string]bool
	gate    *chat.Gate
	pages   PageStore
	mcpMax  int
}

// New builds the routing table.
func New(b Backend, opt Options) *Server {
	if opt.MaxBody <= 0 {
		opt.MaxBody = 1 << 20
	}
	s := &Server{e: echo.New(), b: b, log: opt.Log, tokenSH: sha256.Sum256([]byte(opt.Token)),
		maxBody: opt.MaxBody, hosts: map[string]bool{}, gate: opt.ChatGate,
		pages: opt.Pages, mcpMax: opt.MCPMaxResult}
	for _, h := range opt.AllowedHosts {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			s.hosts[h] = true
		}
	}
	e := s.e
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	// Before routing, so that no route, not even a 404, answers a
	// foreign Host.
	e.Pre(s.checkHost)
	e.Use(s.limitBody)
	e.Use(s.recoverer)
	e.Use(requestSite)

	getHead(e, "/healthz", s.handleHealth)

	auth := e.Group("", s.requireToken)
	getHead(auth, "/v1/status", s.handleStatus)
	s.registerToolRoutes(auth)
	s.registerEventRoutes(e)
	s.registerChatRoutes(auth)
	s.registerIndexRoutes(auth)
	s.registerAdminRoutes(e, auth)
	s.registerInsightRoutes(e, auth)
	s.registerMCPRoutes(e)
	if opt.Pprof {
		s.registerDebugRoutes(auth)
	}
	return s
}

// SiteHeader carries the blog id of the network site a request came from
// (the shim sends get_current_blog_id()); tools called without a site
// argument answer from that site.
const SiteHeader = "X-AskWP-Blog-Id"

func requestSite(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if v := strings.TrimSpace(c.Request().Header.Get(SiteHeader)); v != "" {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return tool.Invalid(SiteHeader + ": want a blog id")
			}
			r := c.Request()
			c.SetRequest(r.WithContext(tool.WithSite(r.Context(), v)))
		}
		return next(c)
	}
}

// Handler returns the http.Handler.
func (s *Server) Handler() http.Handler { return s.e }

type router interface {
	Match(methods []string, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) []*echo.Route
}

// getHead routes GET and HEAD to h. The server drops the body of an answer
// to HEAD, so HEAD gets GET's status, headers and authentication.
func getHead(r router, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.Match([]string{http.MethodGet, http.MethodHead}, path, h, m...)
}

// checkHost refuses a request whose Host header is neither a name of the
// address it came in on nor a configured one. A web page whose DNS name
// is rebound to 127.0.0.1 reaches the port from the operator's browser,
// still under its own name, and could otherwise read /admin, take a
// session and start a pass. /healthz is held to the same rule: a probe
// there only learns that askwpd runs, but every legitimate caller (a
// monitor, the shim, a proxy) names the daemon by its address or a
// configured name, so no exception is needed, and one rule is easier to
// trust than a list of exceptions.
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.hostAllowed(c.Request()) {
			return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("host %q is not an address of this daemon; add it to allowed_hosts", c.Request().Host))
		}
		return next(c)
	}
}

// hostAllowed accepts the loopback names (localhost, 127.0.0.1, [::1]) and
// the IP a TCP connection came in on, each with the listener's port, and
// the configured names. An IP literal cannot be rebound, so accepting the
// connection's own IP lets a daemon listening beyond loopback
// (allow_remote) be called by address. A unix socket has no port for a
// Host to name, and clients send a placeholder such as "localhost", so
// there the loopback names count with any port or none.
func (s *Server) hostAllowed(r *http.Request) bool {
	host := strings.ToLower(r.Host)
	if s.hosts[host] {
		return true
	}
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		name, port = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), ""
	}
	if s.hosts[name] {
		return true
	}
	loopback := name == "localhost"
	ip := net.ParseIP(name)
	if ip != nil && ip.IsLoopback() {
		loopback = true
	}
	tcp, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if !ok {
		return loopback
	}
	if port == "" {
		port = "80" // a Host without a port names HTTP's default
	}
	if port != strconv.Itoa(tcp.Port) {
		return false
	}
	return loopback || ip != nil && ip.Equal(tcp.IP)
}

// limitBody caps every request body. A declared length over the cap is
// refused at once; a chunked body fails its read at the cap with an
// *http.MaxBytesError, which every handler passes on for a 413.
func (s *Server) limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > s.maxBody {
			if c.Path() == mcpPath {
				// An MCP client reads a JSON-RPC error.
				writeRPCError(c.Response(), http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest, s.tooLarge().Message)
				return nil
			}
			return s.tooLarge()
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(c.Response().Writer, r.Body, s.maxBody)
		}
		return next(c)
	}
}

func (s *Server) tooLarge() *tool.Error {
	return &tool.Error{Code: "too_large", Message: fmt.Sprintf("request body larger than %d bytes", s.maxBody)}
}

// readFailed is the answer to a request body that could not be read: too
// large, or cut off by the client.
func readFailed(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return fmt.Errorf("read request body: %w", err)
	}
	return tool.Invalid("unreadable request body")
}

// requireToken compares hashes in constant time, so neither the token's
// bytes nor its length leak through timing.
func (s *Server) requireToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header.Get("Authorization")
		tok, ok := strings.CutPrefix(h, "Bearer ")
		got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
		if !ok || subtle.ConstantTimeCompare(got[:], s.tokenSH[:]) != 1 {
			return c.JSON(http.StatusUnauthorized, errorBody{Error: errorDetail{Code: "unauthorized", Message: "unauthorized"}})
		}
		return next(c)
	}
}

func (s *Server) recoverer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("Panic in handler", "path", c.Path(), "panic", p)
				err = echo.NewHTTPError(http.StatusInternalServerError)
			}
		}()
		return next(c)
	}
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

// statusOf maps a tool.Error's code to an HTTP status.
func statusOf(code string) int {
	switch code {
	case "invalid":
		return http.StatusBadRequest
	case "unauthorized":
		return http.StatusUnauthorized
	case "unknown_tool", "not_indexed", "unknown_turn":
		return http.StatusNotFound
	case "too_large":
		return http.StatusRequestEntityTooLarge
	case "no_provider", "disk_full", "insights_off":
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// errorHandler shows callers only messages written for them; anything else
// is logged and reported as an internal error without detail.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var (
		te  *tool.Error
		he  *echo.HTTPError
		mbe *http.MaxBytesError
	)
	status, body := http.StatusInternalServerError, errorBody{Error: errorDetail{Code: "internal", Message: "internal error"}}
	switch {
	case errors.As(err, &mbe):
		status, body.Error = http.StatusRequestEntityTooLarge,
			errorDetail{Code: "too_large", Message: fmt.Sprintf("request body larger than %d bytes", mbe.Limit)}
	case errors.As(err, &te):
		status, body.Error = statusOf(te.Code), errorDetail{Code: te.Code, Message: te.Message}
	case errors.As(err, &he):
		status = he.Code
		body.Error = errorDetail{Code: strings.ToLower(strings.ReplaceAll(http.StatusText(he.Code), " ", "_")), Message: http.StatusText(he.Code)}
		if m, ok := he.Message.(string); ok && he.Code < 500 {
			body.Error.Message = m
		}
	case errors.Is(err, context.DeadlineExceeded):
		status, body.Error = http.StatusGatewayTimeout, errorDetail{Code: "timeout", Message: "the tool took too long"}
	}
	if status >= 500 {
		s.log.Error("Request failed", "method", c.Request().Method, "path", c.Path(), "error", err)
	}
	// To HEAD as well: the server drops the body and keeps the headers
	// GET would have.
	_ = c.JSON(status, body)
}

func (s *Server) handleHealth(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// Status is the daemon's state for /v1/status and the admin page.
type Status struct {
	Site      any               `json:"site"`
	Version   string            `json:"version"`
	StartedAt time.Time         `json:"started_at"`
	Index     store.Stats       `json:"index"`
	LastRun   *store.Run        `json:"last_crawl,omitempty"`
	Runs      []store.Run       `json:"runs,omitempty"`
	Errors    []*store.URLState `json:"errors"`
	Crawling  bool              `json:"crawling"`
	Database  string            `json:"database"`
	// Store is the SQLite store's health and the last heal it came from.
	Store *StoreStatus `json:"store,omitempty"`
	// SearchIndex is the in-memory search index's state.
	SearchIndex search.Stats   `json:"search_index"`
	Extra       map[string]any `json:"extra,omitempty"`
	// Observability is retrieval quality, latency and index health.
	Observability *Observability `json:"observability,omitempty"`
	// Freshness is the event queue, frontier and schedule.
	Freshness *Freshness `json:"freshness,omitempty"`
	// Chat is the chat gate: turns in use of the cap, model calls of the
	// day's budget.
	Chat *chat.GateStatus `json:"chat,omitempty"`
	// Provider is the LLM /v1/chat uses, where its key comes from (the
	// key masked), or where to set one.
	Provider *chat.ProviderStatus `json:"provider,omitempty"`
	// Network lists a multisite network's sites; nil for a single site.
	Network *NetworkStatus `json:"network,omitempty"`
	// Cluster is this node's part in cluster mode; nil when it is off.
	Cluster *ClusterStatus `json:"cluster,omitempty"`
	// Origin is the address the fetcher dials for the site, whether the
	// plugin proved it, and a warning when that is the public address.
	Origin *origin.Result `json:"origin,omitempty"`
}

// StoreStatus is the store's health: Healthy is false while damage found
// while serving is being healed (Problem says what); LastHeal is the
// last time a damaged store was moved aside and a fresh one started.
type StoreStatus struct {
	Healthy  bool        `json:"healthy"`
	Path     string      `json:"path"`
	Problem  string      `json:"problem,omitempty"`
	LastHeal *store.Heal `json:"last_heal,omitempty"`
}

// withChat adds the chat gate's state to a status.
func (s *Server) withChat(st *Status) *Status {
	if s.gate != nil {
		g := s.gate.Status()
		st.Chat = &g
	}
	return st
}

// NetworkStatus is each site of a network and the network's total.
type NetworkStatus struct {
	Sites []SiteStatus `json:"sites"`
	Total store.Stats  `json:"total"`
}

// SiteStatus is one site of a network.
type SiteStatus struct {
	ID       int64       `json:"id"`
	URL      string      `json:"url"`
	Name     string      `json:"name"`
	Index    store.Stats `json:"index"`
	Crawling bool        `json:"crawling"`
	LastRun  *store.Run  `json:"last_crawl,omitempty"`
}

func (s *Server) handleStatus(c echo.Context) error {
	st, err := s.b.Status(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.withChat(st))
}
