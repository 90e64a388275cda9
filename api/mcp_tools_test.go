package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/tool"
)

// TestMCP_ToolContract: each MCP tool carries the contract's title,
// hints and output schema (tool.Tools, the one source for HTTP, MCP and
// the WordPress abilities), and every tool's structuredContent validates
// against its output schema, a hit and a miss alike.
func TestMCP_ToolContract(t *testing.T) {
	site := newBareSite(t, bareOptions{pages: 60})
	ctx := context.Background()
	rec := &recorder{token: site.Token}
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "askwpd-test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: site.Srv.URL + "/mcp", HTTPClient: &http.Client{Transport: rec}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	lt, err := sess.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, mt := range lt.Tools {
		byName[mt.Name] = mt
	}
	for _, ct := range tool.Tools {
		name := api.MCPPrefix + ct.Function.Name
		mt := byName[name]
		if mt == nil {
			t.Fatalf("%s is not listed", name)
		}
		a := mt.Annotations
		if mt.Title == "" || mt.Title != ct.Title || a == nil || !a.ReadOnlyHint || a.IdempotentHint != ct.Annotations.IdempotentHint ||
			a.OpenWorldHint == nil || *a.OpenWorldHint != (ct.Function.Name == "fetch_live_url") || a.DestructiveHint == nil || *a.DestructiveHint {
			t.Errorf("%s: title %q, annotations %+v; want the contract's (%q, %+v)", name, mt.Title, a, ct.Title, ct.Annotations)
		}
		b, _ := json.Marshal(mt.OutputSchema)
		var got, want any
		if json.Unmarshal(b, &got) != nil || json.Unmarshal(ct.OutputSchema, &want) != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: output schema differs from the contract's:\n%s\n%s", name, b, ct.OutputSchema)
		}
	}

	schemas := outputSchemas(t)
	// The validator refuses what the schema does not allow.
	if schemas[api.MCPPrefix+"search_site"].Validate(map[string]any{"query": 1, "results": "none"}) == nil {
		t.Fatal("a search_site result with a numeric query and no results array validates")
	}
	page := barePage(site.URL, 7, "").URL
	calls := []struct {
		name string
		args map[string]any
	}{
		{"search_site", map[string]any{"query": "lighthouse keeper 7 wick"}},
		{"search_site", map[string]any{"query": "lighthouse", "passages": true, "limit": 5}},
		{"search_site", map[string]any{"query": "zebra accordion"}}, // no match
		{"get_document", map[string]any{"id_or_url": page}},
		{"get_document", map[string]any{"id_or_url": page, "mode": "outline"}},
		{"get_document", map[string]any{"id_or_url": page, "mode": "chunks", "max_chars": 100}},
		{"get_document", map[string]any{"id_or_url": page, "mode": "text"}},
		{"get_recent", map[string]any{"type": "any", "limit": 3}},
		{"get_recent", map[string]any{"type": "product"}}, // none
		{"search_in_document", map[string]any{"id_or_url": page, "query": "weather ships"}},
		{"search_in_document", map[string]any{"id_or_url": page, "query": "zebra"}},
		{"verify_quote", map[string]any{"url": page, "quote": "trims the lamp wick every evening"}},
		{"verify_quote", map[string]any{"url": page, "quote": "sells ice cream"}},
		{"fetch_live_url", map[string]any{"url": site.URL + "/page-00007/"}}, // the made-up site does not answer
	}
	for _, c := range calls {
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: api.MCPPrefix + c.name, Arguments: c.args})
		if err != nil || res.IsError {
			t.Fatalf("%s %v: %v %+v", c.name, c.args, err, res)
		}
		checkOutput(t, schemas, api.MCPPrefix+c.name, res.StructuredContent)
	}
}
