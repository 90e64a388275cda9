package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/askwp/askwpd/store"
)

// IndexRequest asks a serving daemon for a pass (askwpd index handing
// its pass to the serve that owns the state dir).
type IndexRequest struct {
	// Full re-fetches everything and removes pages no longer found.
	Full bool
	// Site is the blog id of the one network site to index; 0 indexes
	// every site.
	Site int64
	// Wait, when a pass is already running, waits for it to end and then
	// runs this one, instead of answering "running".
	Wait bool
}

// IndexEvent is one line of POST /v1/index's NDJSON answer.
type IndexEvent struct {
	// Event is "progress" (pages done of total), "running" (a pass holds
	// the site: Error says whose), "site" (one site's pass applied: Run),
	// "done" (every site's pass applied to the serving index, so the next
	// search sees it) or "error" (the last line of a failed request). A
	// last line "running", without a Site, refuses: a pass was running
	// and the request did not ask to wait; the "running" lines of a
	// request that waits name their site.
	Event string     `json:"event"`
	Site  int64      `json:"site,omitempty"`
	Home  string     `json:"home,omitempty"`
	Done  int        `json:"done,omitempty"`
	Total int        `json:"total,omitempty"`
	Run   *store.Run `json:"run,omitempty"`
	Error string     `json:"error,omitempty"`
}

// PassRunner runs a pass while the request waits: IndexPass calls emit
// with "progress", "running" and "site" events, and returns once each
// site's pass is in the serving index.
type PassRunner interface {
	IndexPass(ctx context.Context, req IndexRequest, emit func(IndexEvent)) error
}

func (s *Server) registerIndexRoutes(g *echo.Group) {
	if _, ok := s.b.(PassRunner); ok {
		g.POST("/v1/index", s.handleIndex)
	}
}

// handleIndex streams a pass's progress as NDJSON, flushed line by line:
// a pass takes minutes and the caller shows where it is. The status is
// 200 once the stream starts; the last line says how it ended ("done" or
// "error"), and a stream that ends without one was cut.
func (s *Server) handleIndex(c echo.Context) error {
	req := IndexRequest{Full: boolParam(c.QueryParam("full")), Wait: boolParam(c.QueryParam("wait"))}
	if v := c.QueryParam("site"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 0 {
			return echo.NewHTTPError(http.StatusBadRequest, "site: want a blog id")
		}
		req.Site = id
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	emit := func(ev IndexEvent) {
		// The sites of a network run their passes at once.
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(ev) // a caller gone away cancels the request's context
		w.Flush()
	}
	if err := s.b.(PassRunner).IndexPass(c.Request().Context(), req, emit); err != nil {
		ev := "error"
		if errors.Is(err, ErrAlreadyRunning) {
			ev = "running"
		}
		emit(IndexEvent{Event: ev, Error: err.Error()})
		return nil
	}
	emit(IndexEvent{Event: "done"})
	return nil
}

func boolParam(v string) bool {
	b, err := strconv.ParseBool(v)
	return err == nil && b
}
