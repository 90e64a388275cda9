package search

import (
	"context"
	"testing"
)

// A page may earn the guard from its passage alone, holding the query's
// words in order; the check is skipped for a passage that lacks one of
// them, which must not change the verdict.
func TestDecide_WordsInOrder(t *testing.T) {
	ix := openSite(t)
	ctx := context.Background()
	for _, tt := range []struct {
		query, reason string
	}{
		{"drag items to reorder", ""},
		{"reorder items drag", "matched in body text only, not in a title, heading or tag"},
		{"drag items to reorder columns", "matched in body text only, not in a title, heading or tag"},
	} {
		res, err := ix.Search(ctx, Query{Text: tt.query})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 || res.Hits[0].URL != "http://x.test/layout/" {
			t.Fatalf("%q: hits %+v, want /layout/ first", tt.query, res.Hits)
		}
		if res.Reason != tt.reason {
			t.Errorf("%q: %s (%q), want reason %q", tt.query, res.Action, res.Reason, tt.reason)
		}
	}
}
