package tool

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/askwp/askwpd/store"
)

func (s *Service) toolGetRecent(ctx context.Context, raw json.RawMessage, c *toolCall) (any, error) {
	var a RecentArgs
	if err := DecodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	docs, err := s.Store.ListDocuments(ctx, store.DocumentFilter{PostType: a.Type, Limit: a.Limit, OrderBy: "published"})
	if err != nil {
		return nil, err
	}
	resp := &RecentResponse{Type: a.Type, Evidence: "grounded", Results: []RecentItem{}}
	for _, doc := range docs {
		resp.Results = append(resp.Results, RecentItem{
			URL: doc.URL, Title: doc.Title, Type: doc.PostType, Published: rfc3339(doc.Published),
			Modified: rfc3339(doc.Modified), Excerpt: excerpt(doc), Categories: doc.Categories, Thin: doc.Thin,
			Hint: `get_document {"id_or_url": "` + doc.URL + `"} reads it`,
		})
	}
	if len(resp.Results) == 0 {
		resp.Evidence = "none"
	}
	c.extra = append(c.extra, "type", a.Type, "limit", a.Limit)
	c.evidence, c.results = resp.Evidence, len(resp.Results)
	for i, r := range resp.Results {
		if i == 3 {
			break
		}
		c.top = append(c.top, r.URL+" "+r.Published)
	}
	return resp, nil
}

// excerpt is the page's description, else the start of its text, cut at a
// word boundary.
func excerpt(doc *store.Document) string {
	s := strings.TrimSpace(doc.Description)
	if s == "" {
		s = strings.Join(strings.Fields(doc.Text), " ")
	}
	r := []rune(s)
	if len(r) <= 280 {
		return s
	}
	cut := 280
	for i := cut; i > 200; i-- {
		if r[i] == ' ' {
			cut = i
			break
		}
	}
	return string(r[:cut]) + "…"
}
