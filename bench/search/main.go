// Command search benchmarks askwpd's search: relevance on a BEIR data set
// (through daemon.Evaluate, the `askwpd eval` code) and in-process latency
// on a generated store.
//
//	go run ./bench/search eval -corpus corpus.jsonl -queries queries.jsonl -qrels qrels.tsv [ranking flags]
//	go run ./bench/search latency [-docs 10000] [-chunks 5]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/askwp/askwpd/eval"
	"github.com/askwp/askwpd/search"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: search eval|latency [flags]")
		os.Exit(2)
	}
	ctx := context.Background()
	var err error
	switch os.Args[1] {
	case "eval":
		err = runEval(ctx, os.Args[2:])
	case "tool":
		err = runTool(ctx, os.Args[2:])
	case "calibrate":
		err = runCalibrate(ctx, os.Args[2:])
	case "latency":
		err = runLatency(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func rankingFlags(fs *flag.FlagSet) *search.Ranking {
	r := search.DefaultRanking()
	fs.Float64Var(&r.TitleWeight, "wt", r.TitleWeight, "title weight")
	fs.Float64Var(&r.KeywordWeight, "wk", r.KeywordWeight, "keywords weight")
	fs.Float64Var(&r.BodyWeight, "wb", r.BodyWeight, "body weight")
	fs.Float64Var(&r.ExactWeight, "wx", r.ExactWeight, "exact column weight")
	fs.Float64Var(&r.SecondChunk, "second", r.SecondChunk, "second chunk share")
	fs.Float64Var(&r.TitlePhraseBonus, "tpb", r.TitlePhraseBonus, "title phrase bonus")
	fs.IntVar(&r.RerankDepth, "rerank", r.RerankDepth, "rerank depth")
	fs.Float64Var(&r.K1, "k1", r.K1, "BM25F k1")
	fs.Float64Var(&r.BTitle, "bt", r.BTitle, "BM25F b for titles")
	fs.Float64Var(&r.BBody, "bb", r.BBody, "BM25F b for body and keywords")
	fs.Float64Var(&r.Proximity, "prox", r.Proximity, "proximity weight")
	fs.IntVar(&r.ProximityWindow, "win", r.ProximityWindow, "proximity window")
	fs.IntVar(&r.ExactMaxTerms, "xmax", r.ExactMaxTerms, "exact column for queries up to this many terms")
	fs.IntVar(&r.Candidates, "cand", r.Candidates, "chunks the full-text query returns (at least 3 × limit × per-doc)")
	fs.IntVar(&r.MaxPostings, "maxpost", r.MaxPostings, "leave common terms out of the full-text query above this many postings (0: off)")
	fs.IntVar(&r.VariantPrefix, "vpre", r.VariantPrefix, "variant prefix runes (0: off)")
	fs.Float64Var(&r.VariantWeight, "vw", r.VariantWeight, "variant weight")
	fs.Float64Var(&r.DocWeight, "dw", r.DocWeight, "weight of the whole page's BM25F")
	fs.Float64Var(&r.URLWeight, "uw", r.URLWeight, "weight of the URL path's words in the page's BM25F")
	fs.Float64Var(&r.AnchorWeight, "aw", r.AnchorWeight, "weight of the words around links to the page in its BM25F")
	fs.Float64Var(&r.AssocWeight, "asw", r.AssocWeight, "weight of the ties of the page's title and URL words to the query words it lacks, in its BM25F")
	fs.Float64Var(&r.IntroBoost, "intro", r.IntroBoost, "raise the chunks that introduce their pages (before the first heading) by this share (0: off)")
	fs.IntVar(&r.RerankMinTerms, "rerankmin", r.RerankMinTerms, "rerank queries of at least this many terms")
	return &r
}

func runEval(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("eval", flag.ExitOnError)
	var opt eval.Options
	fs.StringVar(&opt.Corpus, "corpus", "", "corpus.jsonl")
	fs.StringVar(&opt.Queries, "queries", "", "queries.jsonl")
	fs.StringVar(&opt.Qrels, "qrels", "", "qrels.tsv")
	fs.StringVar(&opt.Run, "run", "", "TREC run output")
	fs.StringVar(&opt.Baseline, "baseline", "", "a TREC run to compare with, query by query, on all queries and on random halves")
	fs.IntVar(&opt.Limit, "limit", 0, "queries")
	fs.IntVar(&opt.ChunkTokens, "chunk", 0, "chunk target tokens")
	fs.IntVar(&opt.Depth, "depth", 0, "documents per query (0: 100)")
	opt.Ranking = rankingFlags(fs)
	prof := fs.String("cpuprofile", "", "write a CPU profile")
	fs.Parse(args)
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	return eval.Run(ctx, opt, os.Stdout)
}
