package tool

import "encoding/json"

// Tool is a tool schema in OpenAI function-calling form.
type Tool struct {
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

// ToolFunction describes one
type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Tools is the tool contract. Descriptions say when to use each tool, how,
// and show example calls: models follow worked examples far better than
// bare parameter lists.
var Tools = withSiteArg([]Tool{
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
	{Type: "function", Function: ToolFunction{
		Name: "get_document",
		Description: `Read one page of this website in full: its Markdown content in order, its title, type, dates and quality flags. Long pages come in pieces: call again with "start" set to the returned "next_start".

WHEN TO USE: a search_site or get_recent result looks relevant but its passage is cut off; the user asks to read, summarize or compare a specific page; you need the exact wording around a passage.
STRATEGY: pass the exact "url" from a search result (or a WordPress post ID). mode="markdown" (default) is the page as stored; "outline" lists its headings with offsets, to jump to a section with "start"; "chunks" returns the indexed passages with their offsets, contiguous and in order; "text" is plain text. If "quality.thin" is true the page has little content: its "supporting" passages come from OTHER pages and are labeled so; say so when you use them, and never quote them as this page.
EXAMPLES:
- {"id_or_url": "https://example.com/refund-policy/"}
- {"id_or_url": "https://example.com/docs/install/", "mode": "outline"}
- {"id_or_url": "https://example.com/docs/install/", "start": 8000, "max_chars": 8000}`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "id_or_url": {"type": "string", "description": "The page URL from a search result, or a WordPress post ID."},
    "mode": {"type": "string", "enum": ["markdown", "text", "outline", "chunks"]},
    "start": {"type": "integer", "minimum": 0, "description": "Character offset to start reading at (from next_start or an outline entry)."},
    "max_chars": {"type": "integer", "minimum": 1, "maximum": 40000, "description": "Characters per piece; default 8000."}
  },
  "required": ["id_or_url"],
  "additionalProperties": false
}`),
	}},
	{Type: "function", Function: ToolFunction{
		Name: "get_recent",
		Description: `List the newest published entries of this website, newest first, with real URLs, published and modified dates, and a short excerpt.

WHEN TO USE: "what's new", "latest post", "most recent news", "what did they publish last", or when a question depends on what is current. Never guess dates: use this.
STRATEGY: type="post" (default) for blog posts, "page" for pages, "any" for every public type, or a custom post type name. Use a small limit (1-5) for "the latest"; read the entry with get_document when the excerpt is not enough.
EXAMPLES:
- {"type": "post", "limit": 1}
- {"type": "any", "limit": 10}
- {"type": "product", "limit": 5}`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "type": {"type": "string", "description": "post (default), page, any, or a custom post type."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50}
  },
  "additionalProperties": false
}`),
	}},
	{Type: "function", Function: ToolFunction{
		Name: "search_in_document",
		Description: `Find the best passages inside ONE page of this website, each a verbatim quote with its character offsets.

WHEN TO USE: you already know the page (from search_site, get_recent or the user) and need the part that answers the question, without reading the whole page; long pages, FAQs, documentation.
STRATEGY: use 2-6 distinctive words, as for search_site. If "evidence" is "none", the words do not occur on that page: try other words, or read it with get_document.
EXAMPLES:
- {"id_or_url": "https://example.com/faq/", "query": "shipping abroad"}
- {"id_or_url": "https://example.com/docs/config/", "query": "timeout setting", "limit": 3}
- {"id_or_url": "42", "query": "opening hours"}`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "id_or_url": {"type": "string", "description": "The page URL, or a WordPress post ID."},
    "query": {"type": "string", "description": "Search words."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50}
  },
  "required": ["id_or_url", "query"],
  "additionalProperties": false
}`),
	}},
	{Type: "function", Function: ToolFunction{
		Name: "fetch_live_url",
		Description: `Fetch one page of THIS website live, re-index it, and return it as get_document does. Only this site's own address is allowed; any other site is refused.

WHEN TO USE: a page is missing from search results but you have its URL (from the user or a link); get_document says "quality.stale"; the user says a page was just changed.
STRATEGY: prefer search_site and get_document, which are instant. When "ok" is false, "error.code" says why (not_found, forbidden, timeout, too_large, not_html, login_wall, private, off_origin, ...): tell the user briefly, do not retry the same URL.
EXAMPLES:
- {"url": "https://example.com/events/summer-sale/"}
- {"url": "https://example.com/?p=123"}`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "A URL on this website."},
    "max_chars": {"type": "integer", "minimum": 1, "maximum": 40000}
  },
  "required": ["url"],
  "additionalProperties": false
}`),
	}},
	{Type: "function", Function: ToolFunction{
		Name: "verify_quote",
		Description: `Check that a quote really appears on a page of this website, and where. Returns found with the character offsets and the stored text, or not_found.

WHEN TO USE: before presenting text in quotation marks as the site's words; to check a citation you are unsure of.
STRATEGY: pass the page URL and the exact words. Small differences in spaces, quote marks and Markdown emphasis are tolerated ("match": "normalized"); anything else is not_found, so do not present it as a quote.
EXAMPLES:
- {"url": "https://example.com/refund-policy/", "quote": "Refunds are issued within 14 days"}
- {"url": "https://example.com/about/", "quote": "founded in 2009"}`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "The page URL."},
    "quote": {"type": "string", "description": "The exact words to find."}
  },
  "required": ["url", "quote"],
  "additionalProperties": false
}`),
	}},
})
