package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/askwp/askwpd/insights"
	"github.com/askwp/askwpd/tool"
)

// Insighter is the backend capability behind /v1/insights and
// /v1/feedback: the question log's report, and visitors' votes on chat
// answers.
type Insighter interface {
	Insights(ctx context.Context, opt insights.ReportOptions) (*insights.Report, error)
	Feedback(ctx context.Context, turnID, vote, comment string) error
}

func (s *Server) registerInsightRoutes(e *echo.Echo, g *echo.Group) {
	in, ok := s.b.(Insighter)
	if !ok {
		return
	}
	getHead(g, "/v1/insights", func(c echo.Context) error { return s.handleInsights(c, in) })
	g.POST("/v1/feedback", func(c echo.Context) error { return s.handleFeedback(c, in) })
	// The admin page's download link: its session cookie is scoped to
	// /admin.
	getHead(e, "/admin/insights.csv", func(c echo.Context) error {
		adminHeaders(c)
		if s.session(c) == "" && !s.bearerOK(c) {
			return adminDenied(c)
		}
		return s.handleInsights(c, in)
	})
}

// handleInsights answers the report as JSON, or as CSV with
// ?format=csv (and at /admin/insights.csv). ?days= sets the window
// (default 30), ?limit= the groups per list (default 50), ?site= one
// site of a network (a blog id or home URL).
func (s *Server) handleInsights(c echo.Context, in Insighter) error {
	days, err := intParam(c, "days", 30, 3650)
	if err != nil {
		return err
	}
	limit, err := intParam(c, "limit", 50, 1000)
	if err != nil {
		return err
	}
	site := c.QueryParam("site")
	if len(site) > 200 {
		return tool.Invalid("site: at most 200 characters")
	}
	r, err := in.Insights(c.Request().Context(), insights.ReportOptions{Days: days, Limit: limit, Site: site})
	if err != nil {
		return err
	}
	if c.QueryParam("format") == "csv" || c.Path() == "/admin/insights.csv" {
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, "text/csv; charset=utf-8")
		h.Set(echo.HeaderContentDisposition, `attachment; filename="askwpd-insights.csv"`)
		c.Response().WriteHeader(http.StatusOK)
		return r.WriteCSV(c.Response())
	}
	return c.JSON(http.StatusOK, r)
}

func intParam(c echo.Context, name string, def, maxV int) (int, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxV {
		return 0, tool.Invalid(name + ": want a whole number from 1 to " + strconv.Itoa(maxV))
	}
	return n, nil
}

// feedback is POST /v1/feedback's body.
type feedback struct {
	TurnID  string `json:"turn_id"`
	Vote    string `json:"vote"`
	Comment string `json:"comment"`
}

func (s *Server) handleFeedback(c echo.Context, in Insighter) error {
	var f feedback
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return readFailed(err)
		}
		return tool.Invalid(`body must be a JSON object {"turn_id": "…", "vote": "up"|"down", "comment": "…"}: ` + err.Error())
	}
	if err := in.Feedback(c.Request().Context(), f.TurnID, f.Vote, f.Comment); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"ok": true, "turn_id": f.TurnID, "vote": f.Vote})
}
