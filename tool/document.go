package tool

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

func (s *Service) toolGetDocument(ctx context.Context, raw json.RawMessage, c *toolCall) (any, error) {
	var a DocumentArgs
	if err := DecodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	c.url = a.IDOrURL
	doc, err := s.findDocument(ctx, a.IDOrURL, a.Mode == "chunks")
	if err != nil {
		return nil, err
	}
	resp, err := s.documentResponse(ctx, doc, a, c.opt)
	if err != nil {
		return nil, err
	}
	s.obs().ObserveDocRead(doc.Thin)
	c.url, c.evidence, c.results = doc.URL, resp.Evidence, len(resp.Supporting)
	c.extra = append(c.extra, "mode", a.Mode, "start", resp.Start, "end", resp.End, "thin", doc.Thin)
	return resp, nil
}

// documentResponse renders a stored document in one of get_document's
// modes. Every offset is into the stored body (or, in text mode, the plain
// text), in Unicode code points.
func (s *Service) documentResponse(ctx context.Context, doc *store.Document, a DocumentArgs, opt Options) (*DocumentResponse, error) {
	resp := &DocumentResponse{
		PostID: doc.PostID, URL: doc.URL, Title: doc.Title, Type: doc.PostType,
		Published: rfc3339(doc.Published), Modified: rfc3339(doc.Modified), Lang: doc.Lang, Author: doc.Author,
		Categories: doc.Categories, Tags: doc.Tags, Mode: a.Mode, OffsetsInto: "markdown",
		Product: decodeProduct(doc.Product), Translations: doc.Translations,
		Quality: Quality{Thin: doc.Thin, ThinReason: doc.ThinReason, Source: doc.Source,
			FetchedAt: rfc3339(doc.FetchedAt), WordCount: doc.WordCount},
		Evidence: "grounded",
	}
	resp.Quality.Stale = s.stale(ctx, doc)
	body := []rune(doc.Body)
	switch a.Mode {
	case "markdown":
		resp.Start, resp.End, resp.Content = pageOf(body, a.Start, a.MaxChars)
		resp.TotalChars = len(body)
	case "text":
		text := []rune(doc.Text)
		resp.OffsetsInto = "text"
		resp.Start, resp.End, resp.Content = pageOf(text, a.Start, a.MaxChars)
		resp.TotalChars = len(text)
	case "outline":
		resp.Outline = outline(doc.Body)
		resp.End, resp.TotalChars = len(body), len(body)
	case "chunks":
		resp.Segments = segments(body, doc.Chunks, a.Start, a.MaxChars)
		resp.Start, resp.End, resp.TotalChars = min(a.Start, len(body)), min(a.Start, len(body)), len(body)
		if n := len(resp.Segments); n > 0 {
			resp.Start, resp.End = resp.Segments[0].Start, resp.Segments[n-1].End
		}
	}
	if a.Mode != "outline" && resp.End < resp.TotalChars {
		next := resp.End
		resp.NextStart = &next
		resp.Hint = `more follows: get_document {"id_or_url": "` + doc.URL + `", "mode": "` + a.Mode + `", "start": ` + itoa(next) + `}`
	}
	if doc.Thin {
		resp.Evidence = "thin"
	}
	if doc.Thin && !opt.Lean {
		sup, err := s.supporting(ctx, opt.Slot, doc)
		if err != nil {
			return nil, err
		}
		resp.Supporting = sup
		if resp.Hint == "" {
			resp.Hint = "this page has little content of its own; the supporting passages come from other pages and must be labeled as such"
		}
	}
	return resp, nil
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// stale reports a page the site changed after it was fetched, or that
// was fetched long ago.
func (s *Service) stale(ctx context.Context, doc *store.Document) bool {
	if doc.FetchedAt.IsZero() || s.Store.Now().Sub(doc.FetchedAt) > freshness.PageStaleAfter {
		return true
	}
	if st, err := s.Store.FindURL(ctx, doc.URL); err == nil && st.LastMod.After(doc.FetchedAt) {
		return true
	}
	return !doc.Modified.IsZero() && doc.Modified.After(doc.FetchedAt.Add(freshness.ModifiedSlack))
}

// pageOf cuts text[start:start+max], ending at a line break when one is
// near the end, so a page rarely stops mid-sentence.
func pageOf(text []rune, start, maxChars int) (int, int, string) {
	start = min(start, len(text))
	end := min(start+maxChars, len(text))
	if end < len(text) {
		for i := end - 1; i > start+maxChars*4/5; i-- {
			if text[i] == '\n' {
				end = i + 1
				break
			}
		}
		// A page that ends on an escaping backslash would render the
		// next page's first character as markup.
		if backslashesBefore(text, end)%2 == 1 {
			if end-1 > start {
				end--
			} else {
				end++ // a page of the backslash alone: take what it escapes too
			}
		}
	}
	return start, end, string(text[start:end])
}

// backslashesBefore counts the backslashes right before text[i].
func backslashesBefore(text []rune, i int) int {
	n := 0
	for i > 0 && text[i-1] == '\\' {
		n++
		i--
	}
	return n
}

// outline lists the Markdown headings of body outside code fences.
func outline(body string) []OutlineEntry {
	out := []OutlineEntry{}
	for _, h := range extract.Outline(body) {
		out = append(out, OutlineEntry{Level: h.Level, Heading: h.Title, Start: h.Start})
	}
	return out
}

// segments returns whole chunks from the one holding start on, up to
// about maxChars characters, with the text between chunks as gap segments, so
// that the segments are contiguous and their texts are the body's. Each
// text is cut from the body itself: a segment is always verbatim at its
// offsets.
func segments(body []rune, chunks []store.Chunk, start, maxChars int) []Segment {
	sort.SliceStable(chunks, func(i, j int) bool { return chunks[i].Start < chunks[j].Start })
	start = min(start, len(body))
	out := []Segment{}
	pos, used := start, 0
	add := func(s Segment) {
		s.Text = string(body[s.Start:s.End])
		out = append(out, s)
		used += s.End - s.Start
		pos = s.End
	}
	for _, c := range chunks {
		cs, ce := min(max0(c.Start), len(body)), min(max0(c.End), len(body))
		if ce <= pos {
			continue
		}
		if used > 0 && used+(ce-max0(cs, pos)) > maxChars {
			return out
		}
		if cs > pos {
			add(Segment{Kind: "gap", Ord: c.Ord, Start: pos, End: cs})
		}
		add(Segment{Kind: "chunk", Ord: c.Ord, Start: max0(cs, pos), End: ce, HeadingPath: c.HeadingPath,
			Type: c.Type, CodeLang: c.CodeLang})
	}
	if pos < len(body) {
		add(Segment{Kind: "gap", Ord: len(chunks), Start: pos, End: len(body)})
	}
	return out
}

func max0(xs ...int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// supporting finds up to 3 passages on other pages related to a thin
// page, by its title, headings and terms.
func (s *Service) supporting(ctx context.Context, slot Slot, doc *store.Document) ([]Supporting, error) {
	queries := []string{doc.Title}
	if kw := strings.Join(append(append([]string{}, doc.Categories...), doc.Tags...), " "); kw != "" {
		queries = append(queries, kw)
	}
	if doc.Description != "" {
		queries = append(queries, doc.Description)
	}
	out := []Supporting{}
	seen := map[int64]bool{doc.ID: true}
	for _, q := range queries {
		if strings.TrimSpace(q) == "" || len(out) == 3 {
			continue
		}
		r, err := s.search(ctx, slot, search.Query{Text: q, Limit: 8, Lang: doc.Lang})
		if err != nil {
			return nil, err
		}
		for _, h := range r.Hits {
			if len(out) == 3 {
				break
			}
			if seen[h.DocID] || h.Thin || h.Passage.Text == "" {
				continue
			}
			seen[h.DocID] = true
			out = append(out, Supporting{
				Label: "supporting passage from a related page (" + h.Title + "), not from " + doc.URL,
				URL:   h.URL, Title: h.Title, Passage: h.Passage.Text, Start: h.Passage.Start, End: h.Passage.End,
				HeadingPath: nonNil(h.HeadingPath), Score: h.Score,
			})
		}
	}
	return out, nil
}

func (s *Service) toolSearchInDocument(ctx context.Context, raw json.RawMessage, c *toolCall) (any, error) {
	var a InDocumentArgs
	if err := DecodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	c.url, c.query = a.IDOrURL, a.Query
	doc, err := s.findDocument(ctx, a.IDOrURL, false)
	if err != nil {
		return nil, err
	}
	ps, terms, err := s.Search.SearchDocument(ctx, doc.ID, a.Query, doc.Lang, a.Limit)
	if err != nil {
		return nil, err
	}
	resp := &InDocumentResponse{URL: doc.URL, Title: doc.Title, Query: a.Query, Terms: nonNil(terms),
		Evidence: "grounded", Results: []DocPassage{}}
	for _, p := range ps {
		resp.Results = append(resp.Results, DocPassage{
			Passage: p.Text, Start: p.Start, End: p.End, HeadingPath: p.HeadingPath, ChunkType: p.Type,
			CodeLang: p.CodeLang, Score: p.Score, MatchedTerms: nonNil(p.MatchedTerms), Snippet: p.Snippet,
		})
	}
	switch {
	case len(ps) == 0:
		resp.Evidence = "none"
		resp.Hint = `no query word occurs on this page; try other words, or read it: get_document {"id_or_url": "` + doc.URL + `"}`
	case doc.Thin:
		resp.Evidence = "thin"
	}
	c.url, c.terms, c.evidence, c.results = doc.URL, terms, resp.Evidence, len(resp.Results)
	for i, p := range resp.Results {
		if i == 3 {
			break
		}
		c.top = append(c.top, itoa(p.Start)+"-"+itoa(p.End)+" "+strings.Join(p.MatchedTerms, ","))
	}
	return resp, nil
}

func (s *Service) toolVerifyQuote(ctx context.Context, raw json.RawMessage, c *toolCall) (any, error) {
	var a QuoteArgs
	if err := DecodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	c.url = a.URL
	resp := &QuoteResponse{URL: a.URL, Status: "not_found"}
	doc, err := s.findDocument(ctx, a.URL, false)
	var ae *Error
	if errors.As(err, &ae) && ae.Code == "not_indexed" {
		resp.Status = "not_indexed"
		c.extra = append(c.extra, "status", resp.Status)
		return resp, nil
	}
	if err != nil {
		return nil, err
	}
	resp.URL = doc.URL
	m := findQuote(doc.Body, a.Quote)
	if m.found {
		resp.Found, resp.Status, resp.Start, resp.End, resp.Match = true, "found", m.start, m.end, m.kind
		resp.Text, resp.Occurrences = string([]rune(doc.Body)[m.start:m.end]), len(m.starts)
		if len(m.starts) > 1 {
			resp.Starts = m.starts
		}
	}
	c.extra = append(c.extra, "status", resp.Status, "match", resp.Match, "quote_chars", len([]rune(a.Quote)))
	return resp, nil
}
