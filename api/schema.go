package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"
)

// Tool is a tool schema in OpenAI function-calling form.
type Tool struct {
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

// ToolFunction describes one tool.
type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Tools is the tool contract. Descriptions say when to use each tool, how,
// and show example calls: models follow worked examples far better than
// bare parameter lists.
var Tools = []Tool{
	{Type: "function", Function: ToolFunction{
		Name: "search_site",
		Description: `Search this website's published pages and posts. Returns ranked evidence: each result has the page URL, title, type, dates, a snippet, and a verbatim passage with its character offsets, which you may quote.

WHEN TO USE: any question about the site's content, products, services, people, policies or posts. Search before answering; never ask the user to paste site content.
STRATEGY: use 2-6 distinctive words (names, product terms, numbers), not a whole sentence. If "action" is "no_match" or "clarify", try other words or a broader query. For code, set filters.chunk_type="code" and filters.language. For "latest"/"newest" questions use sort="date" or get_recent. When a passage looks relevant but incomplete, read the page with get_document.
EXAMPLES:
- {"query": "refund policy"}
- {"query": "install plugin nginx", "filters": {"chunk_type": "code", "language": "bash"}}
- {"query": "conference announcement", "filters": {"type": "post", "after": "2026-01-01"}, "sort": "date"}`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "Search words."},
    "filters": {
      "type": "object",
      "properties": {
        "type": {"type": "string", "description": "Post type: post, page, or a custom type."},
        "chunk_type": {"type": "string", "enum": ["prose", "code", "api", "cmd", "config"]},
        "language": {"type": "string", "description": "Code language of code chunks, e.g. php, bash, json."},
        "lang": {"type": "string", "description": "Document language, e.g. en, de."},
        "category": {"type": "string"},
        "tag": {"type": "string"},
        "after": {"type": "string", "description": "Published on or after this date (YYYY-MM-DD)."},
        "before": {"type": "string", "description": "Published before this date (YYYY-MM-DD)."}
      },
      "additionalProperties": false
    },
    "sort": {"type": "string", "enum": ["relevance", "date"]},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50},
    "passages": {"type": "boolean", "description": "Return up to 3 passages per page instead of one card per page."}
  },
  "required": ["query"],
  "additionalProperties": false
}`),
	}},
}

func (s *Server) handleToolList(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"tools": Tools})
}
