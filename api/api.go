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
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

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
	// MaxBody caps request bodies; default 1 MiB.
	MaxBody string
}

// Server routes HTTP requests to the backend.
type Server struct {
	e       *echo.Echo
	b       Backend
	log     *slog.Logger
	tokenSH [32]byte
}

// New builds the routing table.
func New(b Backend, opt Options) *Server {
	if opt.MaxBody == "" {
		opt.MaxBody = "1M"
	}
	s := &Server{e: echo.New(), b: b, log: opt.Log, tokenSH: sha256.Sum256([]byte(opt.Token))}
	e := s.e
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(middleware.BodyLimit(opt.MaxBody))
	e.Use(s.recoverer)

	e.GET("/healthz", s.handleHealth)

	auth := e.Group("", s.requireToken)
	auth.GET("/v1/status", s.handleStatus)
	s.registerToolRoutes(auth)
	s.registerEventRoutes(e)
	s.registerChatRoutes(auth)
	s.registerAdminRoutes(e, auth)
	s.registerMCPRoutes(e)
	return s
}

// Handler returns the http.Handler.
func (s *Server) Handler() http.Handler { return s.e }

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
	case "unknown_tool", "not_indexed":
		return http.StatusNotFound
	case "too_large":
		return http.StatusRequestEntityTooLarge
	case "no_provider", "disk_full":
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
		te *tool.Error
		he *echo.HTTPError
	)
	status, body := http.StatusInternalServerError, errorBody{Error: errorDetail{Code: "internal", Message: "internal error"}}
	switch {
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
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
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
	// SearchIndex is the in-memory search index's state.
	SearchIndex search.Stats   `json:"search_index"`
	Extra       map[string]any `json:"extra,omitempty"`
	// Observability is retrieval quality, latency and index health.
	Observability *Observability `json:"observability,omitempty"`
	// Freshness is the event queue, frontier and schedule.
	Freshness *Freshness `json:"freshness,omitempty"`
}

func (s *Server) handleStatus(c echo.Context) error {
	st, err := s.b.Status(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}
