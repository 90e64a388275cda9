package api

import (
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/askwp/askwpd/tool"
)

func (s *Server) registerToolRoutes(g *echo.Group) {
	getHead(g, "/v1/tools", s.handleToolList)
	g.POST("/v1/tools/:name", s.handleTool)
}

func (s *Server) handleTool(c echo.Context) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return readFailed(err)
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
