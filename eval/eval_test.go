package eval

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunEval(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run.txt")
	var out bytes.Buffer
	m, err := Evaluate(context.Background(), Options{
		Corpus:   "testdata/beir/docs.jsonl",
		Queries:  "testdata/beir/queries.jsonl",
		Qrels:    "testdata/beir/qrels.tsv",
		Run:      run,
		StateDir: dir,
	}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Docs != 6 || m.Queries != 4 {
		t.Fatalf("Docs=%d Queries=%d, want 6 and 4 (only judged queries)", m.Docs, m.Queries)
	}
	if m.NDCG10 < 0.9 || m.MRR10 < 0.9 || m.Recall100 != 1 {
		t.Errorf("metrics = %+v, want each judged document found first", m)
	}
	for _, want := range []string{"nDCG@10:", "Recall@100:", "MRR@10:", "latency: p50"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	b, err := os.ReadFile(run)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if !strings.HasPrefix(lines[0], "q1 Q0 d1 1 ") || !strings.HasSuffix(lines[0], " askwpd") {
		t.Errorf("first run line = %q", lines[0])
	}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) != 6 || f[1] != "Q0" {
			t.Errorf("bad run line %q", l)
		}
	}
}

// TestRunEval_NoRunFile is the command as most people type it: no --run.
func TestRunEval_NoRunFile(t *testing.T) {
	dir := t.TempDir()
	m, err := Evaluate(context.Background(), Options{
		Corpus:   "testdata/beir/docs.jsonl",
		Queries:  "testdata/beir/queries.jsonl",
		Qrels:    "testdata/beir/qrels.tsv",
		StateDir: dir,
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if m.Queries != 4 || m.NDCG10 < 0.9 {
		t.Errorf("metrics = %+v", m)
	}
}

func TestNDCG(t *testing.T) {
	rel := map[string]int{"a": 2, "b": 1}
	// Ideal: a then b.
	if got := ndcgAt([]string{"a", "b"}, rel, 10); math.Abs(got-1) > 1e-9 {
		t.Errorf("ideal nDCG = %v", got)
	}
	// b then a: (1 + 2/log2(3)) / (2 + 1/log2(3)).
	want := (1 + 2/math.Log2(3)) / (2 + 1/math.Log2(3))
	if got := ndcgAt([]string{"b", "a"}, rel, 10); math.Abs(got-want) > 1e-9 {
		t.Errorf("nDCG = %v, want %v", got, want)
	}
	if got := mrrAt([]string{"x", "b"}, rel, 10); got != 0.5 {
		t.Errorf("MRR = %v", got)
	}
	if got := recallAt([]string{"a", "x"}, rel, 100); got != 0.5 {
		t.Errorf("Recall = %v", got)
	}
}
