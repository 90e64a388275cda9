package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

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

// Evidence is one search_site result card.
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
	Hint         string   `json:"hint"`
}

// SearchResponse is search_site's result.
type SearchResponse struct {
	Query      string     `json:"query"`
	Terms      []string   `json:"terms"`
	Action     string     `json:"action"`
	Confidence float64    `json:"confidence"`
	Evidence   string     `json:"evidence"` // grounded | thin | none
	Results    []Evidence `json:"results"`
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
	return time.Time{}, badRequest(fmt.Sprintf("filters.%s: want a date like 2026-01-31 or RFC 3339", field))
}

// ToSearchQuery validates search_site arguments.
func (a *SearchArgs) ToSearchQuery() (store.SearchQuery, error) {
	q := store.SearchQuery{Text: strings.TrimSpace(a.Query), Limit: a.Limit, Sort: a.Sort, Passages: a.Passages}
	if q.Text == "" {
		return q, badRequest("query is required")
	}
	if !utf8.ValidString(q.Text) {
		return q, badRequest("query is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(q.Text); n > maxQueryRunes {
		q.Text = string([]rune(q.Text)[:maxQueryRunes])
	}
	switch {
	case q.Limit <= 0:
		q.Limit = 10
	case q.Limit > maxLimit:
		q.Limit = maxLimit
	}
	switch q.Sort {
	case "", "relevance", "date":
	default:
		return q, badRequest(`sort: want "relevance" or "date"`)
	}
	switch a.Filters.ChunkType {
	case "", "prose", "code", "api", "cmd", "config":
	default:
		return q, badRequest("filters.chunk_type: want prose, code, api, cmd or config")
	}
	var err error
	f := store.Filters{PostType: a.Filters.Type, ChunkType: a.Filters.ChunkType, CodeLang: strings.ToLower(a.Filters.Language),
		Lang: a.Filters.Lang, Category: a.Filters.Category, Tag: a.Filters.Tag}
	if f.After, err = parseDate("after", a.Filters.After); err != nil {
		return q, err
	}
	if f.Before, err = parseDate("before", a.Filters.Before); err != nil {
		return q, err
	}
	q.Filters = f
	return q, nil
}

// NewSearchResponse turns engine hits into result cards.
func NewSearchResponse(query string, r *store.SearchResult) *SearchResponse {
	resp := &SearchResponse{Query: query, Terms: r.Terms, Action: r.Action, Confidence: r.Confidence, Results: []Evidence{}}
	thin := 0
	for _, h := range r.Hits {
		if h.Thin {
			thin++
		}
		resp.Results = append(resp.Results, Evidence{
			URL: h.URL, Title: h.Title, Type: h.Type, Published: rfc3339(h.Published), Modified: rfc3339(h.Modified),
			Score: h.Score, Snippet: h.Snippet, Passage: h.Passage.Text, Start: h.Passage.Start, End: h.Passage.End,
			HeadingPath: nonNil(h.HeadingPath), MatchedTerms: nonNil(h.MatchedTerms), ChunkType: h.ChunkType, CodeLang: h.CodeLang,
			ContentHash: h.ContentHash, Thin: h.Thin, Source: h.Source,
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

func (s *Server) registerToolRoutes(g *echo.Group) {
	g.GET("/v1/tools", s.handleToolList)
	g.POST("/v1/tools/:name", s.handleTool)
}

// ErrUnknownTool is returned by CallTool for a name not in the contract.
func ErrUnknownTool(name string) *Error {
	return &Error{Status: http.StatusNotFound, Code: "unknown_tool", Message: "unknown tool " + strconv.Quote(name) + "; GET /v1/tools lists them"}
}

func (s *Server) handleTool(c echo.Context) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) || strings.Contains(err.Error(), "request body too large") {
			return &Error{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Message: "request body too large"}
		}
		return badRequest("unreadable request body")
	}
	out, err := s.b.CallTool(c.Request().Context(), c.Param("name"), body)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
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
			return badRequest(fmt.Sprintf("argument %q: want %s", te.Field, te.Type))
		}
		return badRequest("arguments must be a JSON object: " + err.Error())
	}
	if dec.More() {
		return badRequest("arguments must be one JSON object")
	}
	return nil
}
