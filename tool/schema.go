package tool

import "encoding/json"

// Tool is a tool schema in OpenAI function-calling form, plus what MCP
// and WordPress abilities say about a tool beyond it. Those fields stay
// out of the OpenAI form (GET /v1/tools), whose readers refuse keys they
// do not know; ExportSchemas writes them all.
type Tool struct {
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
	// Title is the tool's name for people (MCP title, ability label).
	Title       string      `json:"-"`
	Annotations Annotations `json:"-"`
	// OutputSchema is the JSON Schema (2020-12, written with the keywords
	// WordPress's REST validator reads the same way) that every result
	// of the tool satisfies. It leaves additional properties open: a
	// newer daemon may add fields, and an older plugin must still accept
	// its results.
	OutputSchema json.RawMessage `json:"-"`
}

// Annotations are MCP's tool hints (ToolAnnotations), each stated: MCP's
// defaults for a missing hint are the cautious ones (destructive, open
// world).
type Annotations struct {
	// ReadOnlyHint: the tool changes nothing on the site. (Reading a page
	// live refreshes askwpd's own index, a cache of the site.)
	ReadOnlyHint    bool `json:"readOnlyHint"`
	DestructiveHint bool `json:"destructiveHint"`
	// IdempotentHint: calling again with the same arguments has no
	// further effect.
	IdempotentHint bool `json:"idempotentHint"`
	// OpenWorldHint: the tool's job is to reach past the index, to the
	// live site. (search_site may fetch a few linked pages of the same
	// site when the index answers weakly; that stays a closed world.)
	OpenWorldHint bool `json:"openWorldHint"`
}

// indexRead are the hints of a tool that answers from the index alone.
var indexRead = Annotations{ReadOnlyHint: true, IdempotentHint: true}

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
	{Type: "function", Title: "Search the site", Annotations: indexRead, OutputSchema: json.RawMessage(searchOutput), Function: ToolFunction{
		Name: "search_site",
		Description: `Search this website's published pages and posts. Returns ranked evidence: each result has the page URL, title, type, dates, a snippet, and a verbatim passage with its character offsets, which you may quote.

WHEN TO USE: any question about the site's content, products, services, people, policies or posts. Search before answering; never ask the user to paste site content.
STRATEGY: use 2-6 distinctive words (names, product terms, numbers), not a whole sentence. If "action" is "no_match" or "clarify", try other words or a broader query. For code, set filters.chunk_type="code" and filters.language. For "latest"/"newest" questions use sort="date" or get_recent. When a passage looks relevant but incomplete, read the page with get_document. For shopping questions ("under 20", "in stock") set filters.price_max, filters.price_min or filters.in_stock: they keep product pages alone, and each result's "product" holds its price and stock, the only place to take them from. Set "lang" to the visitor's language (en, fr, de...) to rank pages in it first; by default the query's own language is preferred when it is clear.
EXAMPLES:
- {"query": "politique de retour", "lang": "fr"}
- {"query": "install plugin nginx", "filters": {"chunk_type": "code", "language": "bash"}}
- {"query": "blue mug", "filters": {"in_stock": true, "price_max": 20}}`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 10000, "description": "Search words."},
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
        "before": {"type": "string", "description": "Published before this date (YYYY-MM-DD)."},
        "in_stock": {"type": "boolean", "description": "Only products in stock (true) or out of stock (false), as the page's product markup states."},
        "price_min": {"type": "number", "minimum": 0, "description": "Only products whose price (or highest variant price) is at least this."},
        "price_max": {"type": "number", "minimum": 0, "description": "Only products whose price (or lowest variant price) is at most this."}
      },
      "additionalProperties": false
    },
    "lang": {"type": "string", "description": "The visitor's language (ISO 639-1, e.g. en, fr, de): pages in it rank first, none are dropped. Default: the query's language when clear."},
    "sort": {"type": "string", "enum": ["relevance", "date"]},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50},
    "passages": {"type": "boolean", "description": "Return up to 3 passages per page instead of one card per page."}
  },
  "required": ["query"],
  "additionalProperties": false
}`),
	}},
	{Type: "function", Title: "Read a page", Annotations: indexRead, OutputSchema: json.RawMessage(documentOutput), Function: ToolFunction{
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
    "id_or_url": {"type": "string", "minLength": 1, "description": "The page URL from a search result, or a WordPress post ID."},
    "mode": {"type": "string", "enum": ["markdown", "text", "outline", "chunks"]},
    "start": {"type": "integer", "minimum": 0, "description": "Character offset to start reading at (from next_start or an outline entry)."},
    "max_chars": {"type": "integer", "minimum": 1, "maximum": 40000, "description": "Characters per piece; default 8000."}
  },
  "required": ["id_or_url"],
  "additionalProperties": false
}`),
	}},
	{Type: "function", Title: "List the newest entries", Annotations: indexRead, OutputSchema: json.RawMessage(recentOutput), Function: ToolFunction{
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
	{Type: "function", Title: "Search within a page", Annotations: indexRead, OutputSchema: json.RawMessage(inDocumentOutput), Function: ToolFunction{
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
    "id_or_url": {"type": "string", "minLength": 1, "description": "The page URL, or a WordPress post ID."},
    "query": {"type": "string", "minLength": 1, "maxLength": 10000, "description": "Search words."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50}
  },
  "required": ["id_or_url", "query"],
  "additionalProperties": false
}`),
	}},
	{Type: "function", Title: "Fetch a page live", OutputSchema: json.RawMessage(liveOutput),
		Annotations: Annotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: true}, Function: ToolFunction{
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
    "url": {"type": "string", "minLength": 1, "description": "A URL on this website."},
    "max_chars": {"type": "integer", "minimum": 1, "maximum": 40000}
  },
  "required": ["url"],
  "additionalProperties": false
}`),
		}},
	{Type: "function", Title: "Verify a quote", Annotations: indexRead, OutputSchema: json.RawMessage(quoteOutput), Function: ToolFunction{
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
    "url": {"type": "string", "minLength": 1, "description": "The page URL."},
    "quote": {"type": "string", "minLength": 1, "maxLength": 20000, "description": "The exact words to find."}
  },
  "required": ["url", "quote"],
  "additionalProperties": false
}`),
	}},
})

// The output schemas. Shared parts are spliced in as text rather than
// referenced ($ref): WordPress's REST validator, which checks an ability's
// result, does not follow references.
const (
	dateSchema   = `{"type": "string", "pattern": "^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2}))?$", "description": "RFC 3339, or empty when unknown."}`
	offsetSchema = `{"type": "integer", "minimum": 0}`
	stringList   = `{"type": "array", "items": {"type": "string"}}`
	// productSchema is extract.Product: what the page's schema.org markup
	// states, each field absent when it does not.
	productSchema = `{
      "type": "object",
      "description": "The page's product, from its schema.org markup: state price and stock from these fields only. A field is absent when the page does not state it (a price of 'call us' has no price).",
      "properties": {
        "name": {"type": "string"},
        "sku": {"type": "string"},
        "brand": {"type": "string"},
        "price": {"type": "number", "description": "What a buyer pays now: the sale price when on sale, the lowest variant's for a product with options."},
        "high_price": {"type": "number", "description": "The highest variant's price."},
        "regular_price": {"type": "number", "description": "The price before the sale."},
        "sale_price": {"type": "number"},
        "currency": {"type": "string", "description": "ISO 4217, e.g. USD."},
        "availability": {"type": "string", "description": "schema.org ItemAvailability: InStock, OutOfStock, BackOrder, PreOrder..."},
        "in_stock": {"type": "boolean"},
        "rating": {"type": "number"},
        "rating_count": {"type": "integer"},
        "options": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "values": ` + stringList + `}, "required": ["name", "values"]}}
      }
    }`
	siteTagSchema = `{
  "type": "object",
  "description": "On a search of every site of a network: the site the entry belongs to.",
  "properties": {
    "id": {"type": "integer", "description": "The site's blog id."},
    "url": {"type": "string"},
    "name": {"type": "string"}
  },
  "required": ["id", "url", "name"]
}`
	documentSchema = `{
  "type": "object",
  "properties": {
    "post_id": {"type": "integer", "description": "The WordPress post ID, when known."},
    "url": {"type": "string", "description": "The page's canonical URL: cite this."},
    "title": {"type": "string"},
    "type": {"type": "string", "description": "Post type: post, page or a custom type."},
    "published": ` + dateSchema + `,
    "modified": ` + dateSchema + `,
    "lang": {"type": "string"},
    "author": {"type": "string"},
    "categories": ` + stringList + `,
    "tags": ` + stringList + `,
    "product": ` + productSchema + `,
    "translations": {
      "type": "array",
      "description": "The page in other languages: cite the one in the visitor's language.",
      "items": {"type": "object", "properties": {"lang": {"type": "string"}, "url": {"type": "string"}}, "required": ["lang", "url"]}
    },
    "mode": {"type": "string", "enum": ["markdown", "text", "outline", "chunks"]},
    "offsets_into": {"type": "string", "enum": ["markdown", "text"], "description": "The text every offset counts into, in Unicode code points: the stored Markdown body, or (mode text) the plain text."},
    "start": ` + offsetSchema + `,
    "end": ` + offsetSchema + `,
    "total_chars": ` + offsetSchema + `,
    "next_start": {"type": "integer", "minimum": 0, "description": "Where the next piece starts: call again with start set to it. Absent on the last piece."},
    "content": {"type": "string", "description": "The piece of the page from start to end (modes markdown and text)."},
    "segments": {
      "type": "array",
      "description": "Mode chunks: the indexed passages in order, with the text between them as gaps; contiguous, each verbatim at its offsets.",
      "items": {
        "type": "object",
        "properties": {
          "kind": {"type": "string", "enum": ["chunk", "gap"]},
          "ord": {"type": "integer"},
          "start": ` + offsetSchema + `,
          "end": ` + offsetSchema + `,
          "text": {"type": "string"},
          "heading_path": ` + stringList + `,
          "type": {"type": "string", "description": "Chunk type: prose, code, api, cmd or config."},
          "code_lang": {"type": "string"}
        },
        "required": ["kind", "ord", "start", "end", "text"]
      }
    },
    "outline": {
      "type": "array",
      "description": "Mode outline: the page's headings with their offsets (absent when it has none).",
      "items": {
        "type": "object",
        "properties": {
          "level": {"type": "integer", "minimum": 1, "maximum": 6},
          "heading": {"type": "string"},
          "start": ` + offsetSchema + `
        },
        "required": ["level", "heading", "start"]
      }
    },
    "quality": {
      "type": "object",
      "properties": {
        "thin": {"type": "boolean", "description": "The page has little content of its own."},
        "thin_reason": {"type": "string"},
        "source": {"type": "string", "description": "How the main content was found."},
        "fetched_at": ` + dateSchema + `,
        "stale": {"type": "boolean", "description": "The page changed after it was fetched, or was fetched long ago: fetch_live_url refreshes it."},
        "word_count": {"type": "integer", "minimum": 0}
      },
      "required": ["thin", "source", "fetched_at", "stale", "word_count"]
    },
    "evidence": {"type": "string", "enum": ["grounded", "thin"]},
    "supporting": {
      "type": "array",
      "description": "On a thin page: passages from OTHER pages, labeled so; never quote them as this page.",
      "items": {
        "type": "object",
        "properties": {
          "label": {"type": "string"},
          "url": {"type": "string"},
          "title": {"type": "string"},
          "passage": {"type": "string"},
          "start": ` + offsetSchema + `,
          "end": ` + offsetSchema + `,
          "heading_path": ` + stringList + `,
          "score": {"type": "number"}
        },
        "required": ["label", "url", "title", "passage", "start", "end", "heading_path", "score"]
      }
    },
    "hint": {"type": "string", "description": "What to call next, when there is more."}
  },
  "required": ["url", "title", "type", "published", "modified", "mode", "offsets_into", "start", "end", "total_chars", "quality", "evidence"]
}`
)

const searchOutput = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "The query as searched."},
    "terms": {"type": ["array", "null"], "items": {"type": "string"}, "description": "The query's search terms; null when it has none."},
    "action": {"type": "string", "enum": ["answer", "ambiguous", "clarify", "no_match"], "description": "What the evidence supports: answer from the results, tell apart two pages, ask or search again, or say the site does not cover it."},
    "confidence": {"type": "number", "minimum": 0, "description": "How well the best result covers the query, 0 to 1."},
    "reason": {"type": "string", "description": "Why action is what it is."},
    "corrections": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Misspelt query words mapped to the site's words searched instead."},
    "evidence": {"type": "string", "enum": ["grounded", "thin", "none"]},
    "results": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "url": {"type": "string", "description": "The page's canonical URL: cite this."},
          "title": {"type": "string"},
          "type": {"type": "string", "description": "Post type: post, page or a custom type."},
          "published": ` + dateSchema + `,
          "modified": ` + dateSchema + `,
          "score": {"type": "number"},
          "snippet": {"type": "string", "description": "A short extract with the matched words marked; not a quote."},
          "passage": {"type": "string", "description": "Verbatim text of the page, from start to end: this may be quoted."},
          "start": {"type": "integer", "minimum": 0, "description": "Where passage starts in the page's stored text, in Unicode code points (get_document mode markdown counts the same)."},
          "end": {"type": "integer", "minimum": 0, "description": "Where passage ends (exclusive)."},
          "heading_path": ` + stringList + `,
          "matched_terms": ` + stringList + `,
          "chunk_type": {"type": "string", "description": "prose, code, api, cmd or config."},
          "code_lang": {"type": "string"},
          "content_hash": {"type": "string"},
          "thin": {"type": "boolean"},
          "source": {"type": "string"},
          "match_explain": ` + stringList + `,
          "hint": {"type": "string"},
          "site": ` + siteTagSchema + `,
          "lang": {"type": "string", "description": "The page's language."},
          "product": ` + productSchema + `
        },
        "required": ["url", "title", "type", "published", "modified", "score", "snippet", "passage", "start", "end", "heading_path", "matched_terms", "chunk_type", "content_hash", "thin", "source", "match_explain", "hint"]
      }
    },
    "expanded": {
      "type": "array",
      "description": "Pages fetched live because the index answered weakly.",
      "items": {
        "type": "object",
        "properties": {
          "url": {"type": "string"},
          "anchor": {"type": "string"},
          "score": {"type": "number"},
          "status": {"type": "string", "description": "The crawler's outcome: indexed, unchanged, private, gone, skipped or error."},
          "error": {"type": "string"}
        },
        "required": ["url", "anchor", "score", "status"]
      }
    },
    "expansion_stop": {"type": "string", "description": "Why the live expansion stopped."}
  },
  "required": ["query", "terms", "action", "confidence", "evidence", "results"]
}`

const documentOutput = documentSchema

const recentOutput = `{
  "type": "object",
  "properties": {
    "type": {"type": "string", "description": "The post type listed."},
    "evidence": {"type": "string", "enum": ["grounded", "none"]},
    "results": {
      "type": "array",
      "description": "Newest first.",
      "items": {
        "type": "object",
        "properties": {
          "url": {"type": "string"},
          "title": {"type": "string"},
          "type": {"type": "string"},
          "published": ` + dateSchema + `,
          "modified": ` + dateSchema + `,
          "excerpt": {"type": "string"},
          "categories": ` + stringList + `,
          "thin": {"type": "boolean"},
          "hint": {"type": "string"},
          "site": ` + siteTagSchema + `
        },
        "required": ["url", "title", "type", "published", "modified", "excerpt", "thin", "hint"]
      }
    }
  },
  "required": ["type", "evidence", "results"]
}`

const inDocumentOutput = `{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "The page's canonical URL."},
    "title": {"type": "string"},
    "query": {"type": "string"},
    "terms": ` + stringList + `,
    "evidence": {"type": "string", "enum": ["grounded", "thin", "none"]},
    "results": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "passage": {"type": "string", "description": "Verbatim text of the page, from start to end: this may be quoted."},
          "start": {"type": "integer", "minimum": 0, "description": "In Unicode code points, into the page's stored text."},
          "end": ` + offsetSchema + `,
          "heading_path": {"type": ["array", "null"], "items": {"type": "string"}},
          "chunk_type": {"type": "string"},
          "code_lang": {"type": "string"},
          "score": {"type": "number"},
          "matched_terms": ` + stringList + `,
          "snippet": {"type": "string"}
        },
        "required": ["passage", "start", "end", "heading_path", "chunk_type", "score", "matched_terms", "snippet"]
      }
    },
    "hint": {"type": "string"}
  },
  "required": ["url", "title", "query", "terms", "evidence", "results"]
}`

const liveOutput = `{
  "type": "object",
  "properties": {
    "ok": {"type": "boolean", "description": "The page was fetched and indexed; document holds it."},
    "url": {"type": "string"},
    "status": {"type": "string", "description": "indexed (new or changed), unchanged, or the error's code."},
    "error": {
      "type": "object",
      "description": "Why the page could not be fetched (or, with ok, that only its beginning was: too_large).",
      "properties": {
        "code": {"type": "string", "description": "not_found, forbidden, timeout, too_large, not_html, login_wall, private, off_origin, server_error, unreachable, redirects, not_content, bad_url, extract or other."},
        "message": {"type": "string"},
        "http_status": {"type": "integer"}
      },
      "required": ["code", "message"]
    },
    "document": ` + documentSchema + `
  },
  "required": ["ok", "url", "status"]
}`

const quoteOutput = `{
  "type": "object",
  "properties": {
    "found": {"type": "boolean"},
    "status": {"type": "string", "enum": ["found", "not_found", "not_indexed"], "description": "not_indexed: the URL is not a stored page."},
    "url": {"type": "string", "description": "The page's canonical URL."},
    "start": {"type": "integer", "minimum": 0, "description": "Where the first occurrence starts, in Unicode code points into the stored text."},
    "end": ` + offsetSchema + `,
    "match": {"type": "string", "enum": ["exact", "normalized"], "description": "normalized: found once spaces, quote marks, dashes and Markdown emphasis were made equal."},
    "text": {"type": "string", "description": "The stored text at start..end, which is what to quote."},
    "occurrences": {"type": "integer", "minimum": 0},
    "starts": {"type": "array", "items": ` + offsetSchema + `, "description": "Where each occurrence starts, when there are several."}
  },
  "required": ["found", "status", "url", "start", "end", "occurrences"]
}`
