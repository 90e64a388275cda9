package insights

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/store"
)

// reportOf logs the questions (all unanswered) and returns the report's
// groups as sorted lists of their phrasings.
func reportOf(t *testing.T, syn *analysis.Synonyms, questions ...string) [][]string {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var qs []*store.Question
	for _, q := range questions {
		qs = append(qs, &store.Question{At: time.Now(), Kind: "search", Text: q, Action: "no_match", Evidence: "none"})
	}
	if err := db.InsertQuestions(ctx, qs); err != nil {
		t.Fatal(err)
	}
	l := Open(db, Options{Synonyms: syn})
	r, err := l.Report(ctx, ReportOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, g := range r.Gaps {
		var ps []string
		for p := range g.Phrasings {
			ps = append(ps, p)
		}
		sort.Strings(ps)
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool { return strings.Join(out[i], "|") < strings.Join(out[j], "|") })
	return out
}

func TestGroup_FoldsTyposVariantsSynonyms(t *testing.T) {
	syn, err := analysis.ParseSynonyms(strings.NewReader("voucher, coupon\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := reportOf(t, syn,
		"do you deliver to Austria", "delivery to Austria?", "deliveries to austria", "delivery austria", "delivry to Austria",
		"gift voucher", "gift vouchers", "a gift coupon",
		"hi", "thanks!")
	want := [][]string{
		{"a gift coupon", "gift voucher", "gift vouchers"},
		{"delivery austria", "delivery to Austria?", "deliveries to austria", "delivry to Austria", "do you deliver to Austria"},
	}
	for _, w := range want {
		sort.Strings(w)
	}
	sort.Slice(want, func(i, j int) bool { return strings.Join(want[i], "|") < strings.Join(want[j], "|") })
	if len(got) != len(want) {
		t.Fatalf("groups %q, want %q", got, want)
	}
	for i := range want {
		if strings.Join(got[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("group %d = %q, want %q", i, got[i], want[i])
		}
	}
	// Without the synonym rule, a voucher is not a coupon.
	if got := reportOf(t, nil, "gift voucher", "gift vouchers", "a coupon code", "coupon codes"); len(got) != 2 {
		t.Errorf("without synonyms: %q, want 2 groups", got)
	}
}

func TestGroup_KeepsTopicsApart(t *testing.T) {
	got := reportOf(t, nil,
		"roast coffee in a popcorn popper", "popcorn popper coffee roasting",
		"coffee grounds for worms", "worm farm coffee grounds",
		"work hours", "working hours")
	if len(got) != 3 {
		t.Fatalf("groups %q, want 3 (popper, worms, work)", got)
	}
}
