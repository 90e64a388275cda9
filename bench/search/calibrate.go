package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/extract"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

// runCalibrate measures the confidence rules on a BEIR set. Store A holds
// the whole corpus; store B the corpus without any judged-relevant
// document, so every B query is one the site cannot answer. For each
// MinCoverage it prints how often the action is "answer" (or
// "ambiguous") when the top hit is relevant (want high), when it is not
// (want low), and on B (false answers, want low).
func runCalibrate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("calibrate", flag.ExitOnError)
	corpus := fs.String("corpus", "", "corpus.jsonl")
	queries := fs.String("queries", "", "queries.jsonl")
	qrelsPath := fs.String("qrels", "", "qrels.tsv")
	fs.Parse(args)

	qrels := map[string]map[string]bool{}
	relevant := map[string]bool{}
	f, err := os.Open(*qrelsPath)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Fields(sc.Text())
		if len(p) != 3 || p[2] == "score" {
			continue
		}
		if qrels[p[0]] == nil {
			qrels[p[0]] = map[string]bool{}
		}
		qrels[p[0]][p[1]] = true
		relevant[p[1]] = true
	}
	f.Close()

	dir, err := os.MkdirTemp("", "askwpd-calibrate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	open := func(name string, skip map[string]bool) (*store.DB, error) {
		db, err := store.Open(ctx, filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		f, err := os.Open(*corpus)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		var batch []*store.Document
		for sc.Scan() {
			var d struct{ ID, Title, Text string }
			var raw map[string]string
			if json.Unmarshal(sc.Bytes(), &raw) != nil {
				continue
			}
			d.ID, d.Title, d.Text = raw["_id"], raw["title"], raw["text"]
			if skip[d.ID] {
				continue
			}
			batch = append(batch, &store.Document{
				URL: "beir:" + d.ID, Title: d.Title, Body: d.Text, Text: d.Text, Lang: "en", PostType: "post",
				Chunks: crawl.StoreChunks(extract.ChunkMarkdown(d.Text, extract.ChunkOptions{})),
			})
			if len(batch) == 500 {
				if err := db.PutDocuments(ctx, batch); err != nil {
					return nil, err
				}
				batch = batch[:0]
			}
		}
		return db, db.PutDocuments(ctx, batch)
	}
	a, err := open("a.db", nil)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := open("b.db", relevant)
	if err != nil {
		return err
	}
	defer b.Close()
	ia, ib := search.New(a), search.New(b)
	defer ia.Close()
	defer ib.Close()
	for _, ix := range []*search.Index{ia, ib} {
		if err := ix.Load(ctx); err != nil {
			return err
		}
	}

	var qs [][2]string
	qf, err := os.Open(*queries)
	if err != nil {
		return err
	}
	qsc := bufio.NewScanner(qf)
	for qsc.Scan() {
		var q map[string]string
		if json.Unmarshal(qsc.Bytes(), &q) == nil && qrels[q["_id"]] != nil {
			qs = append(qs, [2]string{q["_id"], q["text"]})
		}
	}
	qf.Close()

	answers := func(act string) bool { return act == "answer" || act == "ambiguous" }
	fmt.Printf("%d queries; store B lacks %d relevant documents\n", len(qs), len(relevant))
	fmt.Println("min_coverage  answer|top1-relevant  answer|top1-not-relevant  answer|unanswerable(B)  actions(B)")
	for _, cov := range []float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.8} {
		rk := search.DefaultRanking()
		rk.MinCoverage = cov
		ia.SetRanking(rk)
		ib.SetRanking(rk)
		var relN, relA, irrN, irrA, bA int
		bActs := map[string]int{}
		for _, q := range qs {
			ra, err := ia.Search(ctx, search.Query{Text: q[1]})
			if err != nil {
				return err
			}
			top1 := len(ra.Hits) > 0 && qrels[q[0]][strings.TrimPrefix(ra.Hits[0].URL, "beir:")]
			if top1 {
				relN++
				if answers(ra.Action) {
					relA++
				}
			} else {
				irrN++
				if answers(ra.Action) {
					irrA++
				}
			}
			rb, err := ib.Search(ctx, search.Query{Text: q[1]})
			if err != nil {
				return err
			}
			bActs[rb.Action]++
			if answers(rb.Action) {
				bA++
			}
		}
		fmt.Printf("%.1f          %5.1f%% (%d)          %5.1f%% (%d)              %5.1f%%              %v\n",
			cov, pct(relA, relN), relN, pct(irrA, irrN), irrN, pct(bA, len(qs)), bActs)
	}
	return nil
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
