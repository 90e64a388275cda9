package eval

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// printByType reports the metrics of each query type, when the queries
// carry one: a change can help how-to questions and hurt keyword searches
// while the mean hides both.
func printByType(out io.Writer, qs []QueryScore) {
	byType := map[string][]QueryScore{}
	for _, q := range qs {
		if q.Type != "" {
			byType[q.Type] = append(byType[q.Type], q)
		}
	}
	if len(byType) == 0 {
		return
	}
	types := make([]string, 0, len(byType))
	for t := range byType {
		types = append(types, t)
	}
	sort.Strings(types)
	fmt.Fprintln(out, "by type:")
	for _, t := range types {
		var n, r, m float64
		for _, q := range byType[t] {
			n, r, m = n+q.NDCG10, r+q.Recall100, m+q.MRR10
		}
		k := float64(len(byType[t]))
		fmt.Fprintf(out, "  %-12s n=%-4d nDCG@10 %.4f  Recall@100 %.4f  MRR@10 %.4f\n", t, len(byType[t]), n/k, r/k, m/k)
	}
}

// readRun reads a TREC run (qid Q0 docid rank score tag) into each
// query's ranking, ordered by rank.
func readRun(path string) (map[string][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: baseline: %w", err)
	}
	defer f.Close()
	type entry struct {
		doc  string
		rank int
	}
	byQuery := map[string][]entry{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		if len(fs) != 6 {
			return nil, fmt.Errorf("eval: baseline %s line %d: want 6 fields (qid Q0 docid rank score tag), got %d", path, line, len(fs))
		}
		rank, err := strconv.Atoi(fs[3])
		if err != nil {
			return nil, fmt.Errorf("eval: baseline %s line %d: rank %q: %w", path, line, fs[3], err)
		}
		byQuery[fs[0]] = append(byQuery[fs[0]], entry{fs[2], rank})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("eval: baseline: %w", err)
	}
	out := make(map[string][]string, len(byQuery))
	for q, es := range byQuery {
		sort.SliceStable(es, func(i, j int) bool { return es[i].rank < es[j].rank })
		for _, e := range es {
			out[q] = append(out[q], e.doc)
		}
	}
	return out, nil
}

// bootstrapSamples is how many resamples the interval takes; the seed is
// fixed so that the same two runs always print the same interval.
const bootstrapSamples = 10000

// compare prints the paired per-query nDCG@10 difference between this
// run and the baseline: the mean, wins and losses, a 95% bootstrap
// interval, the same per query type, and the queries that moved most.
func compare(out io.Writer, qs []QueryScore, base map[string][]string, qrels map[string]map[string]int) {
	type diff struct {
		q QueryScore
		d float64
	}
	var ds []diff
	for _, q := range qs {
		// A query the baseline never answered scores 0 there, as
		// trec_eval counts it.
		ds = append(ds, diff{q, q.NDCG10 - ndcgAt(base[q.ID], qrels[q.ID], 10)})
	}
	if len(ds) == 0 {
		return
	}
	report := func(label string, xs []float64) {
		wins, losses := 0, 0
		for _, x := range xs {
			switch {
			case x > 1e-9:
				wins++
			case x < -1e-9:
				losses++
			}
		}
		lo, hi := bootstrapCI(xs, bootstrapSamples, 0.95)
		fmt.Fprintf(out, "  %-12s n=%-4d Δ nDCG@10 %+.4f  95%% CI [%+.4f, %+.4f]  wins %d, losses %d, ties %d\n",
			label, len(xs), mean(xs), lo, hi, wins, losses, len(xs)-wins-losses)
	}
	fmt.Fprintln(out, "against the baseline (this run minus baseline, paired by query):")
	all := make([]float64, len(ds))
	byType := map[string][]float64{}
	for i, d := range ds {
		all[i] = d.d
		if d.q.Type != "" {
			byType[d.q.Type] = append(byType[d.q.Type], d.d)
		}
	}
	report("all", all)
	printHalves(out, all)
	types := make([]string, 0, len(byType))
	for t := range byType {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		report(t, byType[t])
	}
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].d > ds[j].d })
	show := func(title string, xs []diff) {
		if len(xs) == 0 {
			return
		}
		fmt.Fprintln(out, title)
		for _, d := range xs {
			fmt.Fprintf(out, "  %+.4f  %s  %s\n", d.d, d.q.ID, d.q.Text)
		}
	}
	var gains, drops []diff
	for i := 0; i < len(ds) && i < 5 && ds[i].d > 1e-9; i++ {
		gains = append(gains, ds[i])
	}
	for i := len(ds) - 1; i >= 0 && len(drops) < 5 && ds[i].d < -1e-9; i-- {
		drops = append(drops, ds[i])
	}
	show("largest gains:", gains)
	show("largest losses:", drops)
}

// halvesSplits is how many random halvings printHalves makes.
const halvesSplits = 10

// printHalves prints the mean difference on both halves of random splits
// of the queries: a change worth keeping holds on each half, not only on
// their union, which is what a change tuned on all of them may not do.
func printHalves(out io.Writer, ds []float64) {
	if len(ds) < 2 {
		return
	}
	rng := rand.New(rand.NewPCG(3, 4))
	idx := make([]int, len(ds))
	for i := range idx {
		idx[i] = i
	}
	var halves []float64
	for range halvesSplits {
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		var a, b []float64
		for k, i := range idx {
			if k < len(idx)/2 {
				a = append(a, ds[i])
			} else {
				b = append(b, ds[i])
			}
		}
		halves = append(halves, mean(a), mean(b))
	}
	fmt.Fprintf(out, "  halves: %d random splits in two; Δ nDCG@10 per half:", halvesSplits)
	ge := 0
	for i, h := range halves {
		if i%2 == 0 {
			fmt.Fprint(out, " ")
		} else {
			fmt.Fprint(out, "/")
		}
		fmt.Fprintf(out, "%+.4f", h)
		if h >= -1e-9 {
			ge++
		}
	}
	fmt.Fprintf(out, "\n  halves not worse: %d of %d, worst %+.4f, best %+.4f\n", ge, len(halves), slices.Min(halves), slices.Max(halves))
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// bootstrapCI is the percentile bootstrap interval of the mean of xs.
func bootstrapCI(xs []float64, samples int, level float64) (lo, hi float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	means := make([]float64, samples)
	for s := range means {
		var sum float64
		for range xs {
			sum += xs[rng.IntN(len(xs))]
		}
		means[s] = sum / float64(len(xs))
	}
	slices.Sort(means)
	tail := (1 - level) / 2
	at := func(p float64) float64 {
		return means[min(len(means)-1, max(0, int(math.Round(p*float64(len(means)-1)))))]
	}
	return at(tail), at(1 - tail)
}
