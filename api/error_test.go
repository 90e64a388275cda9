package api

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/askwp/askwpd/tool"
)

// TestErrorHandler_ToolErrors: every tool.Error code the daemon returns
// keeps the HTTP status it had when api owned the error type, and its
// message reaches the caller as is.
func TestErrorHandler_ToolErrors(t *testing.T) {
	s := &Server{e: echo.New(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for code, want := range map[string]int{
		"invalid": 400, "unauthorized": 401, "unknown_tool": 404, "not_indexed": 404,
		"too_large": 413, "no_provider": 503, "disk_full": 503,
	} {
		rec := httptest.NewRecorder()
		c := s.e.NewContext(httptest.NewRequest("POST", "/v1/tools/x", nil), rec)
		s.errorHandler(&tool.Error{Code: code, Message: "says " + code}, c)
		var body errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: body %q: %v", code, rec.Body.String(), err)
		}
		if rec.Code != want || body.Error.Code != code || body.Error.Message != "says "+code {
			t.Errorf("%s: status %d body %+v, want %d and the error as is", code, rec.Code, body, want)
		}
	}
}
