package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"

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
	return writeJSON(c, out)
}

// jsonBufs hold encoded answers until they are written.
var jsonBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// writeJSON answers 200 with v as c.JSON does, byte for byte, but with
// its length declared: a search's answer runs to tens of kilobytes, and
// written as it was encoded it went out chunked, in one write to the
// socket more than it needs.
func writeJSON(c echo.Context, v any) error {
	if c.Request().URL.RawQuery != "" {
		return c.JSON(http.StatusOK, v) // ?pretty
	}
	buf := jsonBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 1<<20 {
			buf.Reset()
			jsonBufs.Put(buf)
		}
	}()
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	h.Set(echo.HeaderContentLength, strconv.Itoa(buf.Len()))
	c.Response().WriteHeader(http.StatusOK)
	_, err := c.Response().Write(buf.Bytes())
	return err
}

func (s *Server) handleToolList(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"tools": tool.Tools})
}
