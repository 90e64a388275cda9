package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askwp/askwpd/tool"
)

// MCPPrefix is put before every tool name over MCP, so askwp's tools do
// not collide with other servers' in a client.
const MCPPrefix = "askwp_"

// mcpMaxBody caps an MCP request; tool arguments are small.
const mcpMaxBody = 1 << 20

// NewMCPServer returns an MCP server offering the tool contract through
// b.CallTool: the same handlers as HTTP and chat, so the results are the
// same.
func NewMCPServer(b Backend, version string, log *slog.Logger) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "askwpd", Title: "AskWP site tools", Version: version},
		&mcp.ServerOptions{
			Logger:       log,
			Instructions: "Tools over one WordPress site's public pages. Search with askwp_search_site, read pages with askwp_get_document, quote only verbatim passages (askwp_verify_quote checks them), and cite their URLs.",
		})
	for _, t := range tool.Tools {
		name := t.Function.Name
		srv.AddTool(&mcp.Tool{
			Name:        MCPPrefix + name,
			Description: t.Function.Description,
			InputSchema: t.Function.Parameters,
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcpCall(ctx, b, log, name, req.Params.Arguments)
		})
	}
	return srv
}

// mcpCall runs one tool. The caller's mistakes and timeouts are tool
// errors the model can read and act on; internal errors are logged and
// reported without detail, as over HTTP.
func mcpCall(ctx context.Context, b Backend, log *slog.Logger, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	out, err := b.Call(ctx, name, args)
	if err != nil {
		var ae *tool.Error
		msg := "internal error"
		switch {
		case errors.As(err, &ae):
			msg = ae.Code + ": " + ae.Message
		case errors.Is(err, context.DeadlineExceeded):
			msg = "timeout: the tool took too long"
		default:
			if log != nil {
				log.Error("MCP tool failed", "tool", name, "error", err)
			}
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(raw)}},
		StructuredContent: json.RawMessage(raw),
	}, nil
}

// registerMCPRoutes mounts /mcp: stateless streamable HTTP, JSON
// responses, behind the bearer token. The SDK's DNS-rebinding check is off
// because checkHost already holds every route to the same rule, and
// honours allowed_hosts, which the SDK's would refuse.
func (s *Server) registerMCPRoutes(e *echo.Echo) {
	srv := NewMCPServer(s.b, "", s.log)
	h := echo.WrapHandler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: mcpMaxBody,
			DisableLocalhostProtection: true, Logger: s.log}))
	e.Any("/mcp", func(c echo.Context) error {
		// Read here, so that a body over the cap gets the JSON 413 of
		// every other route rather than the SDK's plain text.
		r := c.Request()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return readFailed(err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		return h(c)
	}, s.requireToken)
}

// ServeMCP serves the tools over MCP on a byte stream, such as a desktop
// client's stdin and stdout, until ctx is done or the client hangs up.
func ServeMCP(ctx context.Context, b Backend, version string, log *slog.Logger, r io.ReadCloser, w io.WriteCloser) error {
	srv := NewMCPServer(b, version, log)
	return srv.Run(ctx, &mcp.IOTransport{Reader: r, Writer: w})
}
