package search

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSearchQuery: any query text parses into sane terms, searches
// without error into a valid action, and its candidates are those a
// brute-force BM25 finds, with the same scores.
func FuzzSearchQuery(f *testing.F) {
	for _, s := range []string{
		"wrkspace", `"exact phrase" here`, "wp_enqueue_script 0x8004", "how do I do it", "the thing",
		"Łódź straße æble", "日本語のテキスト", "AND OR NOT NEAR(a b)", `"unterminated`, "{title}: x*",
		"-- ; DROP TABLE documents", "latest news this week 2024", "a & b, c vs d", "\x00\xff\xfe",
		strings.Repeat("α", 300), `"quick links" star`,
	} {
		f.Add(s)
	}
	ix := openSite(f)
	ctx := context.Background()
	if err := ix.Load(ctx); err != nil {
		f.Fatal(err)
	}
	o := newOracle(f, ix.db)
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
		res, err := ix.Search(ctx, Query{Text: q, Limit: 5})
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
		for _, all := range []bool{false, true} {
			pq.requireAll = all
			ps, groups := pq.memPhrases(rk.ExactWeight > 0 && pq.liveTerms() <= rk.ExactMaxTerms)
			got := ix.matchChunks(ps, groups, Query{}, rk, 1000, nil)
			if msg := sameScores(o.scores(ps, groups, Filters{}, rk), got); msg != "" {
				t.Fatalf("%q (all %v): %s", q, all, msg)
			}
		}
	})
}
