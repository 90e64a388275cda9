// Command extract scores extract.Extract on the third-party evaluation sets in
// ../shared/evaldata (never copied into this repo):
//
//	go run ./bench/extract -set article      # article-extraction-benchmark: 4-gram shingle F1, macro
//	go run ./bench/extract -set trafilatura  # trafilatura-eval: with/without segments, micro F
//	go run ./bench/extract -set all
//
// Both metrics follow the SOURCE.md of each set; the plain-text output
// (Result.Text) is what is scored. It prints the score, the page count and the
// per-page extraction time (extract + chunk) p50/p95. When the data is absent it
// says so and exits 0.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/askwp/askwpd/extract"
)

func main() {
	set := flag.String("set", "all", "article, trafilatura or all")
	data := flag.String("data", "../shared/evaldata", "evaluation data directory")
	worst := flag.Int("worst", 0, "list the N worst pages")
	dump := flag.String("dump", "", "print the extracted text of the page whose id/file contains this string")
	file := flag.String("file", "", "extract one HTML file (optionally .gz) and print the Result as JSON")
	pageURL := flag.String("url", "", "page URL for -file")
	flag.Parse()
	if *file != "" {
		extractFile(*file, *pageURL)
		return
	}
	if _, err := os.Stat(*data); err != nil {
		fmt.Printf("evaluation data not found at %s (set -data); nothing to do\n", *data)
		return
	}
	ran := false
	if *set == "article" || *set == "all" {
		ran = runArticle(filepath.Join(*data, "article-extraction-benchmark"), *worst, *dump) || ran
	}
	if *set == "trafilatura" || *set == "all" {
		ran = runTrafilatura(filepath.Join(*data, "trafilatura-eval"), *worst, *dump) || ran
	}
	if !ran {
		fmt.Println("no evaluation set found; nothing to do")
	}
}

func readGz(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// timed runs Extract and returns the result and the elapsed milliseconds.
func timed(page []byte, u string) (*extract.Result, float64, error) {
	t0 := time.Now()
	res, err := extract.Extract(context.Background(), bytes.NewReader(page), extract.Options{URL: u})
	return res, float64(time.Since(t0).Microseconds()) / 1000, err
}

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(p * float64(len(s)-1))
	return s[i]
}

// tokens implements Python's re.findall(r"\w+") on str: letters, numbers, underscore.
func tokens(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_')
	})
}

// shingles returns the multiset of 4-token shingles; shorter texts give one shingle.
func shingles(s string) map[string]int {
	t := tokens(s)
	m := map[string]int{}
	if len(t) == 0 {
		return m
	}
	if len(t) < 4 {
		m[strings.Join(t, "\x00")]++
		return m
	}
	for i := 0; i+4 <= len(t); i++ {
		m[strings.Join(t[i:i+4], "\x00")]++
	}
	return m
}

type pageScore struct {
	id   string
	p, r float64
	hasP bool
	hasR bool
	ms   float64
	src  string
}

func runArticle(dir string, worst int, dump string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, "ground-truth.json"))
	if err != nil {
		fmt.Printf("article-extraction-benchmark not found in %s; skipped\n", dir)
		return false
	}
	var gt map[string]struct {
		ArticleBody string `json:"articleBody"`
		URL         string `json:"url"`
	}
	if err := json.Unmarshal(raw, &gt); err != nil {
		fmt.Println("ground-truth.json:", err)
		return false
	}
	ids := make([]string, 0, len(gt))
	for id := range gt {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var scores []pageScore
	var times []float64
	for _, id := range ids {
		page, err := readGz(filepath.Join(dir, "html", id+".html.gz"))
		if err != nil {
			continue // held-out page
		}
		res, ms, err := timed(page, gt[id].URL)
		times = append(times, ms)
		pred, src := "", ""
		if err == nil {
			pred, src = res.Text, res.Source
		}
		if dump != "" && strings.Contains(id, dump) {
			fmt.Printf("=== %s %s source=%s\n", id, gt[id].URL, src)
			diffLines(pred, gt[id].ArticleBody)
		}
		truth := shingles(gt[id].ArticleBody)
		got := shingles(pred)
		var tp, fp, fn float64
		for k, c := range got {
			t := truth[k]
			tp += float64(min(c, t))
			fp += float64(max(0, c-t))
		}
		for k, t := range truth {
			fn += float64(max(0, t-got[k]))
		}
		ps := pageScore{id: id, ms: ms, src: src}
		if fp == 0 && fn == 0 {
			ps.p, ps.r, ps.hasP, ps.hasR = 1, 1, true, true
		} else {
			if tp+fp > 0 {
				ps.p, ps.hasP = tp/(tp+fp), true
			}
			if tp+fn > 0 {
				ps.r, ps.hasR = tp/(tp+fn), true
			}
		}
		scores = append(scores, ps)
	}
	if len(scores) == 0 {
		fmt.Println("article-extraction-benchmark: no pages found; skipped")
		return false
	}
	var sp, sr float64
	var np, nr int
	srcs := map[string]int{}
	for _, s := range scores {
		if s.hasP {
			sp += s.p
			np++
		}
		if s.hasR {
			sr += s.r
			nr++
		}
		srcs[s.src]++
	}
	P, R := sp/float64(max(np, 1)), sr/float64(max(nr, 1))
	F := 0.0
	if P+R > 0 {
		F = 2 * P * R / (P + R)
	}
	fmt.Printf("article-extraction-benchmark: pages=%d F1=%.4f P=%.4f R=%.4f  ms/page p50=%.2f p95=%.2f  sources=%v\n",
		len(scores), F, P, R, percentile(times, .5), percentile(times, .95), srcs)
	if worst > 0 {
		sort.Slice(scores, func(i, j int) bool { return f1(scores[i]) < f1(scores[j]) })
		for _, s := range scores[:min(worst, len(scores))] {
			fmt.Printf("  %s F1=%.3f P=%.3f R=%.3f src=%s\n", s.id[:12], f1(s), s.p, s.r, s.src)
		}
	}
	return true
}

func f1(s pageScore) float64 {
	if s.p+s.r == 0 {
		return 0
	}
	return 2 * s.p * s.r / (s.p + s.r)
}

func normWS(s string) string { return strings.Join(strings.Fields(s), " ") }

func runTrafilatura(dir string, worst int, dump string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, "evaldata.json"))
	if err != nil {
		fmt.Printf("trafilatura-eval not found in %s; skipped\n", dir)
		return false
	}
	var ev map[string]struct {
		File    string   `json:"file"`
		With    []string `json:"with"`
		Without []string `json:"without"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		fmt.Println("evaldata.json:", err)
		return false
	}
	urls := make([]string, 0, len(ev))
	for u := range ev {
		urls = append(urls, u)
	}
	sort.Strings(urls)
	var tp, fn, fp, tn, pages int
	var times []float64
	type bad struct {
		file   string
		missed []string
		leaked []string
	}
	var bads []bad
	srcs := map[string]int{}
	bySrc := map[string][2]int{}
	for _, u := range urls {
		e := ev[u]
		page, err := readGz(filepath.Join(dir, "html", e.File+".gz"))
		if err != nil {
			continue // held-out page
		}
		pages++
		res, ms, err := timed(page, u)
		times = append(times, ms)
		out := ""
		if err == nil {
			out = normWS(res.Text)
			srcs[res.Source]++
		}
		if dump != "" && strings.Contains(e.File, dump) {
			fmt.Printf("=== %s %s\n%s\n=== with %q\n=== without %q\n", e.File, u, res.Text, e.With, e.Without)
		}
		var b bad
		b.file = e.File
		if res != nil {
			b.file += " [" + res.Source + "]"
		}
		for _, w := range e.With {
			if out != "" && strings.Contains(out, normWS(w)) {
				tp++
			} else {
				fn++
				b.missed = append(b.missed, w)
			}
		}
		for _, w := range e.Without {
			if out != "" && strings.Contains(out, normWS(w)) {
				fp++
				b.leaked = append(b.leaked, w)
			} else {
				tn++
			}
		}
		if len(b.missed)+len(b.leaked) > 0 {
			bads = append(bads, b)
		}
		if res != nil {
			bySrc[res.Source] = [2]int{bySrc[res.Source][0] + len(b.missed), bySrc[res.Source][1] + len(b.leaked)}
		}
	}
	if pages == 0 {
		fmt.Println("trafilatura-eval: no pages found; skipped")
		return false
	}
	P := float64(tp) / float64(max(tp+fp, 1))
	R := float64(tp) / float64(max(tp+fn, 1))
	A := float64(tp+tn) / float64(max(tp+tn+fp+fn, 1))
	F := 2 * float64(tp) / float64(max(2*tp+fp+fn, 1))
	fmt.Printf("trafilatura-eval: pages=%d F=%.4f P=%.4f R=%.4f Acc=%.4f (tp=%d fp=%d fn=%d tn=%d)  ms/page p50=%.2f p95=%.2f  sources=%v\n",
		pages, F, P, R, A, tp, fp, fn, tn, percentile(times, .5), percentile(times, .95), srcs)
	fmt.Printf("  missed/leaked by source: %v\n", bySrc)
	if worst > 0 {
		sort.Slice(bads, func(i, j int) bool {
			return len(bads[i].missed)+len(bads[i].leaked) > len(bads[j].missed)+len(bads[j].leaked)
		})
		for _, b := range bads[:min(worst, len(bads))] {
			fmt.Printf("  %s missed=%q leaked=%q\n", b.file, b.missed, b.leaked)
		}
	}
	return true
}

func extractFile(path, u string) {
	var page []byte
	var err error
	if strings.HasSuffix(path, ".gz") {
		page, err = readGz(path)
	} else {
		page, err = os.ReadFile(path)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	res, ms, err := timed(page, u)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	res.Links = nil
	_ = enc.Encode(res)
	fmt.Fprintf(os.Stderr, "%.2f ms\n", ms)
}

// diffLines prints each extracted line marked "+" when most of its shingles are in
// the truth and "-" (extra) otherwise, then the truth lines that were missed.
func diffLines(pred, truth string) {
	ts := shingles(truth)
	ps := shingles(pred)
	for _, l := range strings.Split(pred, "\n") {
		mark := "+"
		sh := shingles(l)
		hit, all := 0, 0
		for k, c := range sh {
			all += c
			if ts[k] > 0 {
				hit += c
			}
		}
		if all > 0 && hit*2 < all {
			mark = "-"
		}
		fmt.Printf("%s %s\n", mark, l)
	}
	fmt.Println("=== missed truth lines")
	for _, l := range strings.Split(truth, "\n") {
		sh := shingles(l)
		hit, all := 0, 0
		for k, c := range sh {
			all += c
			if ps[k] > 0 {
				hit += c
			}
		}
		if all > 0 && hit*2 < all {
			fmt.Printf("! %s\n", l)
		}
	}
}
