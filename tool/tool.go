// Package tool is the tool contract askwpd offers an LLM: the arguments,
// results and schemas of search_site, get_document, get_recent,
// search_in_document, fetch_live_url and verify_quote, and the Service that
// runs them. HTTP, MCP and the chat loop all call tools through a Caller,
// so they cannot drift apart.
package tool

import (
	"context"
	"encoding/json"
)

// Caller runs one tool of the contract with its JSON arguments. Errors of
// type *Error are the caller's mistake and may be shown as is.
type Caller interface {
	Call(ctx context.Context, name string, args json.RawMessage) (any, error)
}
