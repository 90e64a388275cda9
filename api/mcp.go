package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askwp/askwpd/internal/version"
	"github.com/askwp/askwpd/tool"
)

// MCPPrefix is put before every tool name over MCP, so askwp's tools do
// not collide with other servers' in a client.
const MCPPrefix = "askwp_"

// mcpMaxBody caps an MCP request; tool arguments are small.
const mcpMaxBody = 1 << 20

// DefaultMCPMaxResult is MCPOptions.MaxResult's default.
const DefaultMCPMaxResult = 1 << 20

// codeTooLarge is the JSON-RPC error of an answer over its cap, in the
// range JSON-RPC leaves to servers (MCP takes -32002 and -32020 to -32042).
const codeTooLarge = -32010

// MCPOptions configure the MCP server.
type MCPOptions struct {
	Log *slog.Logger
	// Pages are the site's public pages, served as resources; nil serves
	// tools and the prompt alone.
	Pages PageStore
	// MaxResult caps one answer: a tool result's JSON, in bytes, and a
	// page read as a resource, in characters. Default DefaultMCPMaxResult.
	MaxResult int
}

// mcpServer is one MCP server: the tools, the pages as resources, the
// prompt, and the subscriptions to pages.
type mcpServer struct {
	srv   *mcp.Server
	b     Backend
	pages PageStore
	log   *slog.Logger
	max   int
	subs  *pageSubs
}

// NewMCPServer returns an MCP server offering the tool contract through
// b.Call (the same handlers as HTTP and chat, so the results are the
// same), the pages of opt.Pages as resources, and the answer_from_site
// prompt. serverInfo names askwpd and the build's version.
func NewMCPServer(b Backend, opt MCPOptions) *mcp.Server {
	return newMCPServer(b, opt).srv
}

func newMCPServer(b Backend, opt MCPOptions) *mcpServer {
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.MaxResult <= 0 {
		opt.MaxResult = DefaultMCPMaxResult
	}
	m := &mcpServer{b: b, pages: opt.Pages, log: opt.Log, max: opt.MaxResult}
	so := &mcp.ServerOptions{
		// The SDK logs each notification it sends at Info; the daemon's
		// log keeps the tool calls, which say more.
		Logger:       slog.New(&minLevel{opt.Log.Handler(), slog.LevelWarn}),
		Instructions: mcpInstructions,
		// Logging is the SDK's default, which setting Capabilities drops.
		//lint:ignore SA1019 clients of the revisions before 2026-07-28 may set a log level (the conformance suite does)
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}},
	}
	if m.pages != nil {
		m.subs = newPageSubs(m)
		// The list of pages changes with every crawl: its changes are
		// not announced (listChanged false); a page's own are, to its
		// subscribers.
		so.Capabilities.Resources = &mcp.ResourceCapabilities{Subscribe: true}
		so.SubscribeHandler = m.subscribe
		so.UnsubscribeHandler = m.unsubscribe
	}
	m.srv = mcp.NewServer(&mcp.Implementation{Name: "askwpd", Title: "AskWP site tools", Version: version.String()}, so)
	m.addTools()
	m.addPrompt()
	if m.pages != nil {
		m.addResources()
	}
	return m
}

const mcpInstructions = "Tools and pages of one WordPress site's public content. Search with askwp_search_site, read pages with askwp_get_document " +
	"or as resources (askwpd://page/{url}, linked from each search hit), quote only verbatim passages (askwp_verify_quote checks them), " +
	"and cite their URLs. The answer_from_site prompt sets out the whole policy."

func (m *mcpServer) addTools() {
	for _, t := range tool.Tools {
		name := t.Function.Name
		a := t.Annotations
		mt := &mcp.Tool{
			Name:        MCPPrefix + name,
			Title:       t.Title,
			Description: t.Function.Description,
			InputSchema: t.Function.Parameters,
			Annotations: &mcp.ToolAnnotations{Title: t.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: &a.DestructiveHint,
				IdempotentHint: a.IdempotentHint, OpenWorldHint: &a.OpenWorldHint},
		}
		if len(t.OutputSchema) > 0 {
			// The result's JSON is the structuredContent, so the
			// contract's schema of the result is the output schema.
			mt.OutputSchema = t.OutputSchema
		}
		m.srv.AddTool(mt, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return m.call(ctx, name, req.Params.Arguments)
		})
	}
}

// call runs one tool. The caller's mistakes and timeouts are tool errors
// the model can read and act on; internal errors are logged and reported
// without detail, as over HTTP. A result over the cap is a JSON-RPC error:
// the tool ran once, and its answer is not cut into something else.
func (m *mcpServer) call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	out, err := m.b.Call(ctx, name, args)
	if err != nil {
		var ae *tool.Error
		msg := "internal error"
		switch {
		case errors.As(err, &ae):
			msg = ae.Code + ": " + ae.Message
		case errors.Is(err, context.DeadlineExceeded):
			msg = "timeout: the tool took too long"
		default:
			m.log.Error("MCP tool failed", "tool", name, "error", err)
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	if len(raw) > m.max {
		return nil, &jsonrpc.Error{Code: codeTooLarge,
			Message: fmt.Sprintf("the %s result is %d bytes, over this server's cap of %d: ask for less (a smaller limit or max_chars)", name, len(raw), m.max),
			Data:    json.RawMessage(fmt.Sprintf(`{"size":%d,"limit":%d}`, len(raw), m.max))}
	}
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(raw)}},
		StructuredContent: json.RawMessage(raw),
	}
	if name == "search_site" && m.pages != nil {
		res.Content = append(res.Content, hitLinks(raw)...)
	}
	return res, nil
}

// ServeMCP serves the tools and pages over MCP on a byte stream, such as
// a desktop client's stdin and stdout, until ctx is done or the client
// hangs up.
func ServeMCP(ctx context.Context, b Backend, opt MCPOptions, r io.ReadCloser, w io.WriteCloser) error {
	return NewMCPServer(b, opt).Run(ctx, &mcp.IOTransport{Reader: r, Writer: w})
}

// minLevel drops records below its level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h *minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h *minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return &minLevel{h.Handler.WithAttrs(as), h.level}
}

func (h *minLevel) WithGroup(name string) slog.Handler {
	return &minLevel{h.Handler.WithGroup(name), h.level}
}
