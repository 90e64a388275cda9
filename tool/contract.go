package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

const (
	maxLimit      = 50
	maxQueryRunes = 10000
)

// SearchArgs are search_site's arguments.
type SearchArgs struct {
	Query   string       `json:"query"`
	Filters SearchFilter `json:"filters"`
	Sort    string       `json:"sort"`
	Limit   int          `json:"limit"`
	// Passages returns several passages per document instead of one card.
	Passages bool `json:"passages"`
	// Site picks a site of a network (the daemon routes by it).
	Site SiteArg `json:"site,omitempty"`
	// Lang ranks the pages in this language first, dropping none; ""
	// means the query's language when it is clear (detectLang).
	Lang string `json:"lang,omitempty"`
}

// SearchFilter are search_site's strict filters.
type SearchFilter struct {
	Type      StringList `json:"type"`
	ChunkType string     `json:"chunk_type"`
	Language  string     `json:"language"`
	Lang      string     `json:"lang"`
	Category  string     `json:"category"`
	Tag       string     `json:"tag"`
	After     string     `json:"after"`
	Before    string     `json:"before"`
	// InStock, PriceMin and PriceMax keep product pages alone, by what
	// their schema.org markup states (store.ProductFilter).
	InStock  *bool    `json:"in_stock,omitempty"`
	PriceMin *float64 `json:"price_min,omitempty"`
	PriceMax *float64 `json:"price_max,omitempty"`
}

// StringList accepts "post" or ["post", "page"].
type StringList []string

func (l *StringList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		if one != "" && one != "any" {
			*l = []string{one}
		}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings")
	}
	*l = many
	return nil
}

// Evidence is one search_site result card. It is built from a search.Hit
// (NewSearchResponse) rather than embedding one, because the wire shape
// differs on purpose: dates are RFC 3339 strings (empty when unknown), the
// passage is flattened into passage/start/end, internal ids stay out, and
// every card carries a hint. The PHP shim and MCP clients read this shape.
type Evidence struct {
	URL          string   `json:"url"`
	Title        string   `json:"title"`
	Type         string   `json:"type"`
	Published    string   `json:"published"`
	Modified     string   `json:"modified"`
	Score        float64  `json:"score"`
	Snippet      string   `json:"snippet"`
	Passage      string   `json:"passage"`
	Start        int      `json:"start"`
	End          int      `json:"end"`
	HeadingPath  []string `json:"heading_path"`
	MatchedTerms []string `json:"matched_terms"`
	ChunkType    string   `json:"chunk_type"`
	CodeLang     string   `json:"code_lang,omitempty"`
	ContentHash  string   `json:"content_hash"`
	Thin         bool     `json:"thin"`
	Source       string   `json:"source"`
	// MatchExplain says, in short phrases, why the result ranks where it
	// does ("bm25 14.01", "thin page", "variants of partner").
	MatchExplain []string `json:"match_explain"`
	Hint         string   `json:"hint"`
	// Site names the network site the page belongs to, on a search of
	// every site.
	Site *SiteTag `json:"site,omitempty"`
	// Lang is the page's language; Product its schema.org product, the
	// only source of a price or stock the answer may state.
	Lang    string           `json:"lang,omitempty"`
	Product *extract.Product `json:"product,omitempty"`
}

// SiteTag names a site of a network on a result.
type SiteTag struct {
	ID   int64  `json:"id"`
	URL  string `json:"url"`
	Name string `json:"name"`
}

// SearchResponse is search_site's result.
type SearchResponse struct {
	Query      string   `json:"query"`
	Terms      []string `json:"terms"`
	Action     string   `json:"action"`
	Confidence float64  `json:"confidence"`
	// Reason says why Action is what it is, in a few words.
	Reason string `json:"reason,omitempty"`
	// Corrections maps misspelt query words to the site's words that
	// were searched instead.
	Corrections map[string]string `json:"corrections,omitempty"`
	Evidence    string            `json:"evidence"` // grounded | thin | none
	Results     []Evidence        `json:"results"`
	// Expanded lists the pages selective expansion fetched live because
	// the index answered the query weakly; ExpansionStop says why it
	// stopped. Both are empty when no expansion ran.
	Expanded      []Expansion `json:"expanded,omitempty"`
	ExpansionStop string      `json:"expansion_stop,omitempty"`
}

// Expansion is one page selective expansion considered and fetched.
type Expansion struct {
	URL    string  `json:"url"`
	Anchor string  `json:"anchor"`
	Score  float64 `json:"score"`
	// Status is the crawler's outcome: indexed, unchanged, private, gone,
	// skipped or error.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func parseDate(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, Invalid(fmt.Sprintf("filters.%s: want a date like 2026-01-31 or RFC 3339", field))
}

// checkQuery validates a trimmed query: required, valid UTF-8, and cut to
// maxQueryRunes rather than refused, since a long paste is still a question.
func checkQuery(q string) (string, error) {
	if q == "" {
		return q, Invalid("query is required")
	}
	if !utf8.ValidString(q) {
		return q, Invalid("query is not valid UTF-8")
	}
	if utf8.RuneCountInString(q) > maxQueryRunes {
		q = string([]rune(q)[:maxQueryRunes])
	}
	return q, nil
}

// clampLimit gives a tool's result limit its default when unset and caps it.
func clampLimit(n, def int) int {
	switch {
	case n <= 0:
		return def
	case n > maxLimit:
		return maxLimit
	}
	return n
}

// ToSearchQuery validates search_site arguments.
func (a *SearchArgs) ToSearchQuery() (search.Query, error) {
	q := search.Query{Text: strings.TrimSpace(a.Query), Limit: a.Limit, Sort: a.Sort, Passages: a.Passages}
	var err error
	if q.Text, err = checkQuery(q.Text); err != nil {
		return q, err
	}
	q.Limit = clampLimit(q.Limit, 10)
	switch q.Sort {
	case "", "relevance", "date":
	default:
		return q, Invalid(`sort: want "relevance" or "date"`)
	}
	switch a.Filters.ChunkType {
	case "", "prose", "code", "api", "cmd", "config":
	default:
		return q, Invalid("filters.chunk_type: want prose, code, api, cmd or config")
	}
	f := search.Filters{PostType: a.Filters.Type, ChunkType: a.Filters.ChunkType, CodeLang: strings.ToLower(a.Filters.Language),
		Lang: a.Filters.Lang, Category: a.Filters.Category, Tag: a.Filters.Tag}
	if f.After, err = parseDate("after", a.Filters.After); err != nil {
		return q, err
	}
	if f.Before, err = parseDate("before", a.Filters.Before); err != nil {
		return q, err
	}
	if err := a.checkShop(); err != nil {
		return q, err
	}
	q.Filters = f
	return q, nil
}

// NewSearchResponse turns engine hits into result cards.
func NewSearchResponse(query string, r *search.Result) *SearchResponse {
	resp := &SearchResponse{Query: query, Terms: r.Terms, Action: r.Action, Confidence: r.Confidence,
		Reason: r.Reason, Corrections: r.Corrections, Results: make([]Evidence, 0, len(r.Hits))}
	thin := 0
	for _, h := range r.Hits {
		if h.Thin {
			thin++
		}
		resp.Results = append(resp.Results, Evidence{
			URL: h.URL, Title: h.Title, Type: h.Type, Lang: h.Lang, Published: rfc3339(h.Published), Modified: rfc3339(h.Modified),
			Score: h.Score, Snippet: h.Snippet, Passage: h.Passage.Text, Start: h.Passage.Start, End: h.Passage.End,
			HeadingPath: nonNil(h.HeadingPath), MatchedTerms: nonNil(h.MatchedTerms), ChunkType: h.ChunkType, CodeLang: h.CodeLang,
			ContentHash: h.ContentHash, Thin: h.Thin, Source: h.Source, MatchExplain: nonNil(h.MatchExplain),
			Hint: `get_document {"id_or_url": "` + h.URL + `"} reads the whole page`,
		})
	}
	switch {
	case len(r.Hits) == 0 || r.Action == "no_match":
		resp.Evidence = "none"
	case thin == len(r.Hits) || r.Action == "clarify":
		resp.Evidence = "thin"
	default:
		resp.Evidence = "grounded"
	}
	return resp
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// DecodeArgs reads tool arguments strictly: unknown fields and wrong
// types are the caller's mistake and get a 400 that says which. An empty
// body is an empty object.
func DecodeArgs(args json.RawMessage, v any) error {
	if len(strings.TrimSpace(string(args))) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Invalid(fmt.Sprintf("argument %q: want %s", te.Field, te.Type))
		}
		return Invalid("arguments must be a JSON object: " + err.Error())
	}
	if dec.More() {
		return Invalid("arguments must be one JSON object")
	}
	return nil
}

// DocumentArgs are get_document's arguments.
type DocumentArgs struct {
	IDOrURL string `json:"id_or_url"`
	// Mode is markdown (default), text, outline or chunks.
	Mode     string  `json:"mode"`
	Start    int     `json:"start"`
	MaxChars int     `json:"max_chars"`
	Site     SiteArg `json:"site,omitempty"`
}

// Document modes and paging limits.
const (
	DefaultMaxChars = 8000
	MaxMaxChars     = 40000
)

// Validate checks get_document's arguments and fills the defaults.
func (a *DocumentArgs) Validate() error {
	a.IDOrURL = strings.TrimSpace(a.IDOrURL)
	if a.IDOrURL == "" {
		return Invalid("id_or_url is required")
	}
	switch a.Mode {
	case "":
		a.Mode = "markdown"
	case "markdown", "text", "outline", "chunks":
	default:
		return Invalid(`mode: want "markdown", "text", "outline" or "chunks"`)
	}
	if a.Start < 0 {
		return Invalid("start: want 0 or more")
	}
	switch {
	case a.MaxChars <= 0:
		a.MaxChars = DefaultMaxChars
	case a.MaxChars > MaxMaxChars:
		a.MaxChars = MaxMaxChars
	}
	return nil
}

// Quality are a document's quality flags.
type Quality struct {
	Thin       bool   `json:"thin"`
	ThinReason string `json:"thin_reason,omitempty"`
	// Source is how the main content was found (e.g. "selector", "readability").
	Source    string `json:"source"`
	FetchedAt string `json:"fetched_at"`
	// Stale is true when the page changed on the site after it was
	// fetched, or when it was fetched long ago; fetch_live_url refreshes it.
	Stale     bool `json:"stale"`
	WordCount int  `json:"word_count"`
}

// Segment is a piece of a document in chunks mode. Segments are in order
// and contiguous: each starts where the previous ended, and their texts
// joined are the document's text from start to end. Kind is "chunk" for an
// indexed chunk and "gap" for the (blank) text between two chunks.
type Segment struct {
	Kind        string   `json:"kind"`
	Ord         int      `json:"ord"`
	Start       int      `json:"start"`
	End         int      `json:"end"`
	Text        string   `json:"text"`
	HeadingPath []string `json:"heading_path,omitempty"`
	Type        string   `json:"type,omitempty"`
	CodeLang    string   `json:"code_lang,omitempty"`
}

// OutlineEntry is one heading of a document.
type OutlineEntry struct {
	Level   int    `json:"level"`
	Heading string `json:"heading"`
	Start   int    `json:"start"`
}

// Supporting is a passage from another page, offered when the requested
// page is thin. It is labeled so that it is never quoted as the requested
// page's content.
type Supporting struct {
	Label       string   `json:"label"`
	URL         string   `json:"url"`
	Title       string   `json:"title"`
	Passage     string   `json:"passage"`
	Start       int      `json:"start"`
	End         int      `json:"end"`
	HeadingPath []string `json:"heading_path"`
	Score       float64  `json:"score"`
}

// DocumentResponse is get_document's result.
type DocumentResponse struct {
	PostID     int64    `json:"post_id,omitempty"`
	URL        string   `json:"url"`
	Title      string   `json:"title"`
	Type       string   `json:"type"`
	Published  string   `json:"published"`
	Modified   string   `json:"modified"`
	Lang       string   `json:"lang,omitempty"`
	Author     string   `json:"author,omitempty"`
	Categories []string `json:"categories,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	// Product is the page's schema.org product; Translations its
	// versions in other languages.
	Product      *extract.Product    `json:"product,omitempty"`
	Translations []store.Translation `json:"translations,omitempty"`
	Mode         string              `json:"mode"`
	// OffsetsInto names the text that start, end and every offset refer
	// to: "markdown" (the stored body, in Unicode code points) or "text".
	OffsetsInto string `json:"offsets_into"`
	Start       int    `json:"start"`
	End         int    `json:"end"`
	TotalChars  int    `json:"total_chars"`
	// NextStart is where the next page starts; absent on the last page.
	NextStart *int           `json:"next_start,omitempty"`
	Content   string         `json:"content,omitempty"`
	Segments  []Segment      `json:"segments,omitempty"`
	Outline   []OutlineEntry `json:"outline,omitempty"`
	Quality   Quality        `json:"quality"`
	// Evidence is "grounded", or "thin" for a thin page.
	Evidence   string       `json:"evidence"`
	Supporting []Supporting `json:"supporting,omitempty"`
	Hint       string       `json:"hint,omitempty"`
}

// RecentArgs are get_recent's arguments.
type RecentArgs struct {
	Type  string  `json:"type"`
	Limit int     `json:"limit"`
	Site  SiteArg `json:"site,omitempty"`
}

// Validate checks get_recent's arguments and fills the defaults.
func (a *RecentArgs) Validate() error {
	a.Type = strings.TrimSpace(a.Type)
	if a.Type == "" {
		a.Type = "post"
	}
	if len(a.Type) > 40 || strings.Trim(a.Type, "abcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
		return Invalid("type: want a post type such as post, page or any")
	}
	a.Limit = clampLimit(a.Limit, 5)
	return nil
}

// RecentItem is one of get_recent's entries.
type RecentItem struct {
	URL        string   `json:"url"`
	Title      string   `json:"title"`
	Type       string   `json:"type"`
	Published  string   `json:"published"`
	Modified   string   `json:"modified"`
	Excerpt    string   `json:"excerpt"`
	Categories []string `json:"categories,omitempty"`
	Thin       bool     `json:"thin"`
	Hint       string   `json:"hint"`
	Site       *SiteTag `json:"site,omitempty"`
}

// RecentResponse is get_recent's result.
type RecentResponse struct {
	Type     string       `json:"type"`
	Evidence string       `json:"evidence"`
	Results  []RecentItem `json:"results"`
}

// InDocumentArgs are search_in_document's arguments.
type InDocumentArgs struct {
	IDOrURL string  `json:"id_or_url"`
	Query   string  `json:"query"`
	Limit   int     `json:"limit"`
	Site    SiteArg `json:"site,omitempty"`
}

// Validate checks search_in_document's arguments.
func (a *InDocumentArgs) Validate() error {
	a.IDOrURL, a.Query = strings.TrimSpace(a.IDOrURL), strings.TrimSpace(a.Query)
	if a.IDOrURL == "" {
		return Invalid("id_or_url is required")
	}
	var err error
	if a.Query, err = checkQuery(a.Query); err != nil {
		return err
	}
	a.Limit = clampLimit(a.Limit, 5)
	return nil
}

// DocPassage is a passage of search_in_document.
type DocPassage struct {
	Passage      string   `json:"passage"`
	Start        int      `json:"start"`
	End          int      `json:"end"`
	HeadingPath  []string `json:"heading_path"`
	ChunkType    string   `json:"chunk_type"`
	CodeLang     string   `json:"code_lang,omitempty"`
	Score        float64  `json:"score"`
	MatchedTerms []string `json:"matched_terms"`
	Snippet      string   `json:"snippet"`
}

// InDocumentResponse is search_in_document's result.
type InDocumentResponse struct {
	URL      string       `json:"url"`
	Title    string       `json:"title"`
	Query    string       `json:"query"`
	Terms    []string     `json:"terms"`
	Evidence string       `json:"evidence"`
	Results  []DocPassage `json:"results"`
	Hint     string       `json:"hint,omitempty"`
}

// LiveArgs are fetch_live_url's arguments.
type LiveArgs struct {
	URL      string  `json:"url"`
	MaxChars int     `json:"max_chars"`
	Site     SiteArg `json:"site,omitempty"`
}

// ToolError is a failure reported inside a tool's result, for failures
// that are facts about the world (a page is gone) rather than mistakes in
// the call. Code is one of not_found, forbidden, timeout, too_large,
// not_html, login_wall, private, off_origin, server_error, redirects,
// not_content, bad_url, other.
type ToolError struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	HTTPStatus int    `json:"http_status,omitempty"`
}

// LiveResponse is fetch_live_url's result.
type LiveResponse struct {
	OK  bool   `json:"ok"`
	URL string `json:"url"`
	// Status is the crawler's outcome: indexed (new or changed),
	// unchanged, or the error's kind.
	Status   string            `json:"status"`
	Error    *ToolError        `json:"error,omitempty"`
	Document *DocumentResponse `json:"document,omitempty"`
}

// QuoteArgs are verify_quote's arguments.
type QuoteArgs struct {
	URL   string  `json:"url"`
	Quote string  `json:"quote"`
	Site  SiteArg `json:"site,omitempty"`
}

// Validate checks verify_quote's arguments.
func (a *QuoteArgs) Validate() error {
	a.URL = strings.TrimSpace(a.URL)
	if a.URL == "" {
		return Invalid("url is required")
	}
	if strings.TrimSpace(a.Quote) == "" {
		return Invalid("quote is required")
	}
	if !utf8.ValidString(a.Quote) {
		return Invalid("quote is not valid UTF-8")
	}
	if utf8.RuneCountInString(a.Quote) > 20000 {
		return Invalid("quote: at most 20000 characters")
	}
	return nil
}

// QuoteResponse is verify_quote's result.
type QuoteResponse struct {
	Found bool `json:"found"`
	// Status is "found", "not_found", or "not_indexed" when the URL is
	// not a stored page.
	Status string `json:"status"`
	URL    string `json:"url"`
	// Start and End are code point offsets into the stored Markdown body;
	// Text is the stored text there, which may differ from the quote in
	// whitespace, quote marks or emphasis when Match is "normalized".
	Start       int    `json:"start"`
	End         int    `json:"end"`
	Match       string `json:"match,omitempty"`
	Text        string `json:"text,omitempty"`
	Occurrences int    `json:"occurrences"`
	// Starts lists where each occurrence starts, when there are several.
	Starts []int `json:"starts,omitempty"`
}
