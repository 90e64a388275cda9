package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/store"
)

func TestGaps(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var qs []*store.Question
	for i, q := range []string{"do you sell gift cards", "gift card?", "Gift cards please", "opening hours", "opening hours saturday"} {
		action, ev, top := "no_match", "none", []string(nil)
		if strings.Contains(q, "opening") {
			action, ev, top = "answer", "grounded", []string{"http://x.test/contact/"}
		}
		qs = append(qs, &store.Question{At: now.Add(-time.Duration(i) * time.Hour), Kind: "search", Text: q, Action: action, Evidence: ev, TopURLs: top})
	}
	if err := st.InsertQuestions(ctx, qs); err != nil {
		t.Fatal(err)
	}
	st.Close()

	var out bytes.Buffer
	if err := run(ctx, []string{"gaps", "--site-url", "http://x.test", "--state-dir", dir, "-v"}, &out, &out); err != nil {
		t.Fatalf("gaps: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"5 questions", "1. no_match ×3", `"gift card?" ×1`, "Write a page that answers", "1. answered ×2"} {
		if !strings.Contains(got, want) {
			t.Errorf("gaps output lacks %q:\n%s", want, got)
		}
	}
	out.Reset()
	if err := run(ctx, []string{"gaps", "--site-url", "http://x.test", "--state-dir", dir, "--csv"}, &out, &out); err != nil || !strings.HasPrefix(out.String(), "side,rank,kind") {
		t.Errorf("gaps --csv: %v %q", err, out.String())
	}
	if err := run(ctx, []string{"gaps", "--site-url", "http://x.test", "--state-dir", dir, "--days", "0"}, &out, &out); exitCode(err) != 2 {
		t.Errorf("gaps --days 0: %v, want exit 2", err)
	}
}
