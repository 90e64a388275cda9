package api

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/askwp/askwpd/tool"
)

func (s *Server) registerToolRoutes(g *echo.Group) {
	g.GET("/v1/tools", s.handleToolList)
	g.POST("/v1/tools/:name", s.handleTool)
}

func (s *Server) handleTool(c echo.Context) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) || strings.Contains(err.Error(), "request body too large") {
			return &tool.Error{Code: "too_large", Message: "request body too large"}
		}
		return tool.Invalid("unreadable request body")
	}
	out, err := s.b.Call(c.Request().Context(), c.Param("name"), body)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) handleToolList(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"tools": tool.Tools})
}
