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

// TestRunEval_TypesAndBaseline: queries with a type get a line each, and
// a baseline run is compared query by query.
func TestRunEval_TypesAndBaseline(t *testing.T) {
	dir := t.TempDir()
	queries := filepath.Join(dir, "queries.jsonl")
	os.WriteFile(queries, []byte(`{"_id": "q1", "text": "when should I prune apple trees", "type": "howto"}
{"_id": "q2", "text": "how often to water tomato plants", "type": "howto"}
{"_id": "q3", "text": "feeding a sourdough starter", "type": "keyword"}
{"_id": "q4", "text": "protect roses from frost in winter"}
`), 0o644)
	// The baseline ranks q1's relevant page second and misses q2's.
	baseline := filepath.Join(dir, "base.run")
	os.WriteFile(baseline, []byte("q1 Q0 d4 1 2.0 x\nq1 Q0 d1 2 1.0 x\nq2 Q0 d4 1 1.0 x\nq3 Q0 d3 1 2.0 x\nq3 Q0 d5 2 1.0 x\nq4 Q0 d6 1 1.0 x\n"), 0o644)
	var out bytes.Buffer
	if _, err := Evaluate(context.Background(), Options{
		Corpus: "testdata/beir/docs.jsonl", Queries: queries, Qrels: "testdata/beir/qrels.tsv",
		Baseline: baseline, StateDir: dir,
	}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"by type:", "howto        n=2 ", "keyword      n=1 ",
		"against the baseline", "all          n=4    Δ nDCG@10 +0.", "wins 2, losses 0, ties 2",
		"largest gains:", " q2  how often to water tomato plants",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "largest losses:") {
		t.Errorf("no query lost, yet:\n%s", out.String())
	}
}

func TestBootstrapCI(t *testing.T) {
	if lo, hi := bootstrapCI([]float64{0.1, 0.1, 0.1}, 1000, 0.95); math.Abs(lo-0.1) > 1e-12 || math.Abs(hi-0.1) > 1e-12 {
		t.Errorf("constant differences: [%v, %v], want [0.1, 0.1]", lo, hi)
	}
	xs := []float64{-0.2, 0.1, 0.3, 0.0, 0.2, -0.1, 0.4, 0.05}
	lo, hi := bootstrapCI(xs, 5000, 0.95)
	if m := mean(xs); lo >= m || hi <= m || lo < -0.2 || hi > 0.4 {
		t.Errorf("interval [%v, %v] around mean %v", lo, hi, m)
	}
}

// Each half's mean is a mean of half the differences: with every query
// gaining the same, each half gains it; with one query carrying all the
// gain, the halves without it gain nothing.
func TestPrintHalves(t *testing.T) {
	var out strings.Builder
	printHalves(&out, []float64{0.1, 0.1, 0.1, 0.1})
	if !strings.Contains(out.String(), "halves not worse: 20 of 20, worst +0.1000, best +0.1000") {
		t.Errorf("constant differences:\n%s", out.String())
	}
	out.Reset()
	printHalves(&out, []float64{0.4, 0, 0, 0})
	if !strings.Contains(out.String(), "worst +0.0000, best +0.2000") {
		t.Errorf("one query's gain:\n%s", out.String())
	}
	out.Reset()
	printHalves(&out, []float64{-0.4, 0, 0, 0})
	if !strings.Contains(out.String(), "halves not worse: 10 of 20, worst -0.2000") {
		t.Errorf("one query's loss:\n%s", out.String())
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

// TestRunEval_URLPath: pages with a url_path get URLs on a site of their
// own, which search reads, and the run still names them by corpus id.
func TestRunEval_URLPath(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.jsonl")
	queries := filepath.Join(dir, "queries.jsonl")
	qrels := filepath.Join(dir, "qrels.tsv")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(corpus, `{"_id": "returns", "title": "Returns", "text": "A coupon refunds the shipping of the parcel you send back.", "url_path": "/shop/returns/"}
{"_id": "coupons", "title": "Discounts", "text": "A coupon code takes ten percent off the cart at checkout.", "url_path": "/shop/coupons/"}
{"_id": "beans", "title": "Coffee beans", "text": "Roasted beans from the hills."}
`)
	write(queries, `{"_id": "q1", "text": "coupon"}
{"_id": "q2", "text": "roasted beans"}
`)
	write(qrels, "query-id\tcorpus-id\tscore\nq1\tcoupons\t1\nq2\tbeans\t1\n")
	run := filepath.Join(dir, "run.txt")
	m, err := Evaluate(context.Background(), Options{Corpus: corpus, Queries: queries, Qrels: qrels, Run: run, StateDir: dir}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if m.MRR10 != 1 {
		t.Errorf("MRR@10 = %.3f, want each judged page first: %+v", m.MRR10, m.PerQuery)
	}
	b, err := os.ReadFile(run)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "q1 Q0 coupons 1 ") || !strings.Contains(string(b), "q1 Q0 returns 2 ") {
		t.Errorf("run names pages by URL, not corpus id:\n%s", b)
	}
}

func TestCorpusLinks(t *testing.T) {
	all := []beirDoc{
		{ID: "sidebar", URLPath: "/docs/how-to/plugin-sidebar/"},
		{ID: "panel", URLPath: "/docs/how-to/settings-panel/"},
		{ID: "spinner", URLPath: "/docs/components/spinner/"},
		{ID: "blocks", URLPath: "/docs/reference/blocks/"},
		{ID: "blocks-pkg", URLPath: "/docs/packages/blocks/"},
	}
	cl := newCorpusLinks(all)
	for _, c := range []struct{ from, md, want string }{
		// The published site's URL, under another base.
		{"panel", "See [the sidebar](https://developer.example.org/handbook/how-to/plugin-sidebar/).",
			"See [the sidebar](https://corpus.invalid/docs/how-to/plugin-sidebar/)."},
		// The source tree's file, and a relative one with a fragment.
		{"panel", "[Spinner](/docs/components/spinner/README.md) and [sidebar](../plugin-sidebar.md#usage)",
			"[Spinner](https://corpus.invalid/docs/components/spinner/) and [sidebar](https://corpus.invalid/docs/how-to/plugin-sidebar/)"},
		// Two pages end with "blocks": only the longer suffix decides.
		{"panel", "[blocks](https://github.com/example/repo/blob/trunk/blocks/README.md)",
			"[blocks](https://github.com/example/repo/blob/trunk/blocks/README.md)"},
		{"panel", "[blocks](/docs/packages/blocks.md)", "[blocks](https://corpus.invalid/docs/packages/blocks/)"},
		// Images, other sites and links to the page itself stay.
		{"spinner", "![shot](/docs/components/spinner/shot.png) [npm](https://www.npmjs.com/package/x) [self](./README.md)",
			"![shot](/docs/components/spinner/shot.png) [npm](https://www.npmjs.com/package/x) [self](./README.md)"},
	} {
		var from beirDoc
		for _, bd := range all {
			if bd.ID == c.from {
				from = bd
			}
		}
		if got := cl.rewrite(from, c.md); got != c.want {
			t.Errorf("rewrite(%q)\n got %q\nwant %q", c.md, got, c.want)
		}
	}
	if newCorpusLinks([]beirDoc{{ID: "1", Text: "[a](b)"}}) != nil {
		t.Error("a corpus without url_path gets its links rewritten")
	}
}
