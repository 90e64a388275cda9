package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Filters narrow a search. They are strict WHERE clauses: a filtered search
// never returns a hit that does not match, however well it scores.
type Filters struct {
	PostType  []string  `json:"type,omitempty"`
	ChunkType string    `json:"chunk_type,omitempty"`
	CodeLang  string    `json:"language,omitempty"`
	Lang      string    `json:"lang,omitempty"`
	Category  string    `json:"category,omitempty"`
	Tag       string    `json:"tag,omitempty"`
	After     time.Time `json:"after,omitempty"`
	Before    time.Time `json:"before,omitempty"`
}

// SearchQuery is one search_site call.
type SearchQuery struct {
	Text    string
	Filters Filters
	// Sort is "relevance" (default) or "date".
	Sort  string
	Limit int
	// Passages returns up to PerDoc passages per document instead of one
	// card per document.
	Passages bool
	PerDoc   int
}

// Passage is a verbatim slice of a document's Body.
type Passage struct {
	Text  string `json:"text"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// Hit is one piece of evidence.
type Hit struct {
	DocID        int64     `json:"doc_id"`
	URL          string    `json:"url"`
	Title        string    `json:"title"`
	Type         string    `json:"type"`
	Published    time.Time `json:"published"`
	Modified     time.Time `json:"modified"`
	Score        float64   `json:"score"`
	Snippet      string    `json:"snippet"`
	Passage      Passage   `json:"passage"`
	HeadingPath  []string  `json:"heading_path"`
	MatchedTerms []string  `json:"matched_terms"`
	ChunkID      int64     `json:"chunk_id"`
	ChunkType    string    `json:"chunk_type"`
	CodeLang     string    `json:"code_lang,omitempty"`
	ContentHash  string    `json:"content_hash"`
	Thin         bool      `json:"thin"`
	Source       string    `json:"source"`
}

// SearchResult is the ranked evidence for a query.
type SearchResult struct {
	Hits       []Hit    `json:"hits"`
	Terms      []string `json:"terms"`
	Action     string   `json:"action"`
	Confidence float64  `json:"confidence"`
}

// Search runs BM25 over chunks and groups the chunks by document.
func (db *DB) Search(ctx context.Context, q SearchQuery) (*SearchResult, error) {
	if q.Limit <= 0 {
		q.Limit = 10
	}
	if q.PerDoc <= 0 {
		q.PerDoc = 1
		if q.Passages {
			q.PerDoc = 3
		}
	}
	terms := uniq(Analyze(q.Text, ""))
	res := &SearchResult{Terms: terms, Action: "no_match"}
	if len(terms) == 0 {
		return res, nil
	}
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	where := []string{`chunks_fts MATCH ?`}
	args := []any{strings.Join(quoted, " OR ")}
	where, args = q.Filters.sql(where, args)

	order := `score`
	if q.Sort == "date" {
		order = `d.published DESC, score`
	}
	rows, err := db.read.QueryContext(ctx, `
		SELECT c.id, c.doc_id, c.start, c.end, c.text, c.heading_path, c.type, c.code_lang, c.content_hash,
			d.url, d.title, d.post_type, d.published, d.modified, d.thin,
			bm25(chunks_fts, 4.0, 2.0, 1.0) AS score
		FROM chunks_fts
		JOIN chunks c ON c.id = chunks_fts.rowid
		JOIN documents d ON d.id = c.doc_id
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY `+order+` LIMIT ?`, append(args, 50*q.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	defer rows.Close()
	perDoc := map[int64]int{}
	for rows.Next() {
		var (
			h        Hit
			hp       string
			pub, mod string
			thin     int
		)
		if err := rows.Scan(&h.ChunkID, &h.DocID, &h.Passage.Start, &h.Passage.End, &h.Passage.Text, &hp,
			&h.ChunkType, &h.CodeLang, &h.ContentHash, &h.URL, &h.Title, &h.Type, &pub, &mod, &thin, &h.Score); err != nil {
			return nil, fmt.Errorf("store: search: %w", err)
		}
		if perDoc[h.DocID] >= q.PerDoc {
			continue
		}
		if len(perDoc) >= q.Limit && perDoc[h.DocID] == 0 {
			continue
		}
		perDoc[h.DocID]++
		h.Score = -h.Score // bm25() is lower-is-better
		h.HeadingPath = parseList(hp)
		h.Published, h.Modified = parseTime(pub), parseTime(mod)
		h.Thin = thin != 0
		h.Source = "keyword"
		h.MatchedTerms = matched(terms, h.Title+" "+h.Passage.Text+" "+strings.Join(h.HeadingPath, " "))
		h.Snippet = snippet(h.Passage.Text, h.MatchedTerms, 240)
		res.Hits = append(res.Hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	if q.Sort != "date" {
		sort.SliceStable(res.Hits, func(i, j int) bool { return res.Hits[i].Score > res.Hits[j].Score })
	}
	if len(res.Hits) > 0 {
		res.Action = "answer"
		res.Confidence = float64(len(res.Hits[0].MatchedTerms)) / float64(len(terms))
	}
	return res, nil
}

func (f Filters) sql(where []string, args []any) ([]string, []any) {
	if len(f.PostType) > 0 {
		ph := strings.TrimSuffix(strings.Repeat("?,", len(f.PostType)), ",")
		where = append(where, `d.post_type IN (`+ph+`)`)
		for _, t := range f.PostType {
			args = append(args, t)
		}
	}
	if f.ChunkType != "" {
		where = append(where, `c.type = ?`)
		args = append(args, f.ChunkType)
	}
	if f.CodeLang != "" {
		where = append(where, `c.code_lang = ?`)
		args = append(args, strings.ToLower(f.CodeLang))
	}
	if f.Lang != "" {
		where = append(where, `(d.lang = ? OR d.lang LIKE ? || '-%')`)
		args = append(args, f.Lang, f.Lang)
	}
	if f.Category != "" {
		where = append(where, `EXISTS (SELECT 1 FROM json_each(d.categories) WHERE lower(value) = lower(?))`)
		args = append(args, f.Category)
	}
	if f.Tag != "" {
		where = append(where, `EXISTS (SELECT 1 FROM json_each(d.tags) WHERE lower(value) = lower(?))`)
		args = append(args, f.Tag)
	}
	if !f.After.IsZero() {
		where = append(where, `d.published >= ?`)
		args = append(args, fmtTime(f.After))
	}
	if !f.Before.IsZero() {
		where = append(where, `d.published != '' AND d.published < ?`)
		args = append(args, fmtTime(f.Before))
	}
	return where, args
}

func uniq(xs []string) []string {
	seen := map[string]bool{}
	out := xs[:0:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func matched(terms []string, text string) []string {
	have := map[string]bool{}
	for _, t := range Analyze(text, "") {
		have[t] = true
	}
	var out []string
	for _, t := range terms {
		if have[t] {
			out = append(out, t)
		}
	}
	return out
}

// snippet returns about n runes of text around the first matched term, with
// matched words wrapped in ** so a reader sees why the passage matched.
func snippet(text string, terms []string, n int) string {
	words := strings.Fields(text)
	want := map[string]bool{}
	for _, t := range terms {
		want[t] = true
	}
	first := -1
	for i, w := range words {
		if a := Analyze(w, ""); len(a) == 1 && want[a[0]] {
			first = i
			break
		}
	}
	start := 0
	if first > 8 {
		start = first - 8
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	for i := start; i < len(words) && b.Len() < n; i++ {
		if i > start {
			b.WriteByte(' ')
		}
		w := words[i]
		if a := Analyze(w, ""); len(a) == 1 && want[a[0]] {
			b.WriteString("**" + w + "**")
		} else {
			b.WriteString(w)
		}
		if i == len(words)-1 {
			return b.String()
		}
	}
	b.WriteString("…")
	return b.String()
}
