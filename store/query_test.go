package store

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzSearchQuery(f *testing.F) {
	for _, s := range []string{
		"wrkspace", `"exact phrase" here`, "wp_enqueue_script 0x8004", "how do I do it", "the thing",
		"Łódź straße æble", "日本語のテキスト", "AND OR NOT NEAR(a b)", `"unterminated`, "{title}: x*",
		"-- ; DROP TABLE documents", "latest news this week 2024", "a & b, c vs d", "\x00\xff\xfe",
		strings.Repeat("α", 300),
	} {
		f.Add(s)
	}
	db := openTB(f)
	ctx := context.Background()
	for _, d := range siteDocs() {
		if _, err := db.PutDocument(ctx, d); err != nil {
			f.Fatal(err)
		}
	}
	// Searches run on the in-memory index, and each query's candidates
	// are checked against FTS5's (the store is fresh: bm25() is exact).
	if err := db.LoadSearchIndex(ctx); err != nil {
		f.Fatal(err)
	}
	rk := DefaultRanking()
	f.Fuzz(func(t *testing.T, q string) {
		pq := parseQuery(q, "en", nil)
		if len(pq.Terms) > maxQueryTerms {
			t.Fatalf("%d terms", len(pq.Terms))
		}
		for _, qt := range pq.Terms {
			if qt.Term == "" || strings.ContainsAny(qt.Term, " \t\n\"") || !utf8.ValidString(qt.Term) {
				t.Fatalf("bad term %q from %q", qt.Term, q)
			}
		}
		res, err := db.Search(ctx, SearchQuery{Text: q, Limit: 5})
		if err != nil {
			t.Fatalf("Search(%q): %v", q, err)
		}
		switch res.Action {
		case "answer", "clarify", "ambiguous", "no_match":
		default:
			t.Fatalf("Search(%q) action %q", q, res.Action)
		}
		if len(res.Hits) > 5 {
			t.Fatalf("Search(%q) returned %d hits, limit 5", q, len(res.Hits))
		}
		m := db.currentMem(ctx)
		if m == nil {
			t.Fatal("in-memory index not current")
		}
		for _, all := range []bool{false, true} {
			pq.requireAll = all
			ps, groups, ok := pq.memPhrases(false, rk.ExactWeight > 0 && pq.liveTerms() <= rk.ExactMaxTerms)
			if !ok {
				continue
			}
			want, err := db.candidates(ctx, pq, SearchQuery{}, rk, 1000)
			if err != nil {
				t.Fatalf("FTS5 candidates for %q: %v", q, err)
			}
			if msg := sameCandidates(want, m.candidates(ps, groups, SearchQuery{}, rk, 1000), false); msg != "" {
				t.Fatalf("%q (all %v): %s", q, all, msg)
			}
		}
	})
}
