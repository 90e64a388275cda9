package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/askwp/askwpd/store"
)

// The benchmarks search a generated site of benchPages pages of
// benchChunks chunks each: a Zipf background vocabulary, topics whose
// words gather on a few pages, headings, tags, categories, permalinks
// made of the title's words and links between pages. The site is built
// once per process (benchOnce), so that -benchtime=1x stays quick.
const (
	benchPages  = 12500
	benchChunks = 4
	benchTopics = 400
	benchSeed   = 17
)

type benchSite struct {
	db    *store.DB
	ix    *Index
	claim []string // SciFact-like claims: a declarative sentence of 8-14 words
	chat  []string // chat questions: "how do I ..." of 10-18 words
}

var (
	benchOnce sync.Once
	benchData *benchSite
	benchErr  error
)

// benchWords makes n pronounceable words, none a stopword, from a seed.
func benchWords(rng *rand.Rand, n int) []string {
	cons, vows := "bcdfghklmnprstvz", "aeiou"
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteByte(cons[rng.IntN(len(cons))])
			b.WriteByte(vows[rng.IntN(len(vows))])
		}
		if rng.IntN(3) == 0 {
			b.WriteByte(cons[rng.IntN(len(cons))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

func buildBenchSite(dir string) (*benchSite, error) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(benchSeed, benchSeed))
	vocab := benchWords(rng, 20000)
	fillers := strings.Fields("the a of to and in is for with on that this by from as it are be can your you")
	zipf := rand.NewZipf(rng, 1.1, 8, uint64(len(vocab)-1))
	topics := make([][]string, benchTopics)
	for i := range topics {
		for range 8 {
			topics[i] = append(topics[i], vocab[rng.IntN(len(vocab))])
		}
	}
	sentence := func(topic []string, n int) string {
		ws := make([]string, n)
		for i := range ws {
			switch r := rng.IntN(10); {
			case r < 2:
				ws[i] = topic[rng.IntN(len(topic))]
			case r < 5:
				ws[i] = fillers[rng.IntN(len(fillers))]
			default:
				ws[i] = vocab[zipf.Uint64()]
			}
		}
		return strings.Join(ws, " ")
	}
	slug := func(title string) string { return strings.ReplaceAll(title, " ", "-") }
	titles := make([]string, benchPages)
	topicOf := make([]int, benchPages)
	for i := range titles {
		topicOf[i] = rng.IntN(benchTopics)
		t := topics[topicOf[i]]
		titles[i] = fmt.Sprintf("%s %s %s", t[rng.IntN(8)], t[rng.IntN(8)], vocab[rng.IntN(2000)])
	}
	url := func(i int) string { return fmt.Sprintf("https://bench.test/docs/%s-%d/", slug(titles[i]), i) }
	cats := []string{"Guides", "Reference", "News", "Plugins", "Themes"}
	var docs []*store.Document
	for i := range benchPages {
		topic := topics[topicOf[i]]
		d := &store.Document{
			URL: url(i), Title: titles[i], PostType: []string{"post", "page"}[rng.IntN(2)], Lang: "en",
			Categories:  []string{cats[rng.IntN(len(cats))]},
			Tags:        []string{topic[rng.IntN(8)], vocab[rng.IntN(500)]},
			ContentHash: fmt.Sprint("h", i),
			Published:   time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(1000)) * 24 * time.Hour),
		}
		var body strings.Builder
		for c := range benchChunks {
			var text strings.Builder
			for range 3 + rng.IntN(4) {
				text.WriteString(sentence(topic, 8+rng.IntN(14)))
				text.WriteString(". ")
			}
			if rng.IntN(4) == 0 {
				j := rng.IntN(benchPages)
				fmt.Fprintf(&text, "See [%s](%s) for %s.", titles[j], url(j), sentence(topics[topicOf[j]], 5))
			}
			ch := store.Chunk{Ord: c, Type: "prose", Text: text.String()}
			if c > 0 {
				ch.HeadingPath = []string{sentence(topic, 3)}
			}
			ch.Start = len([]rune(body.String()))
			ch.End = ch.Start + len([]rune(ch.Text))
			body.WriteString(ch.Text + "\n\n")
			d.Chunks = append(d.Chunks, ch)
		}
		d.Body, d.Text = body.String(), body.String()
		docs = append(docs, d)
	}
	db, err := store.Open(ctx, filepath.Join(dir, "askwpd.db"))
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(docs); i += 1000 {
		if err := db.PutDocuments(ctx, docs[i:min(i+1000, len(docs))]); err != nil {
			return nil, err
		}
	}
	ix := New(db)
	if err := ix.Load(ctx); err != nil {
		return nil, err
	}
	s := &benchSite{db: db, ix: ix}
	for range 64 {
		topic := topics[rng.IntN(benchTopics)]
		s.claim = append(s.claim, sentence(topic, 8+rng.IntN(7)))
		s.chat = append(s.chat, "how do I "+sentence(topic, 7+rng.IntN(9))+"?")
	}
	// A daemon warms its caches as it starts; so does the benchmark, and
	// each query is asked once so the texts it reranks are read.
	if _, err := ix.Warm(ctx, 0); err != nil {
		return nil, err
	}
	for _, q := range append(append([]string{}, s.claim...), s.chat...) {
		if _, err := ix.Search(ctx, Query{Text: q}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// benchDir holds the generated site's store, for the whole process: a
// benchmark's own TempDir would end with its first run.
var benchDir string

// TestMain removes benchDir once the tests and benchmarks are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchData != nil {
		benchData.ix.Close()
	}
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchSiteOnce returns the generated site, building it at the first call.
func benchSiteOnce(b *testing.B) *benchSite {
	b.Helper()
	benchOnce.Do(func() {
		if benchDir, benchErr = os.MkdirTemp("", "askwpd-search-bench-"); benchErr == nil {
			benchData, benchErr = buildBenchSite(benchDir)
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchData
}

func (s *benchSite) queries(kind string) []string {
	if kind == "claim" {
		return s.claim
	}
	return s.chat
}

var benchKinds = []string{"claim", "chat"}

// BenchmarkSearch is one whole search: parse, candidates, rerank,
// whole-page score, evidence and the decision.
func BenchmarkSearch(b *testing.B) {
	s := benchSiteOnce(b)
	ctx := context.Background()
	for _, kind := range benchKinds {
		b.Run(kind, func(b *testing.B) {
			qs := s.queries(kind)
			b.ReportAllocs()
			loop(b, func(i int) {
				if _, err := s.ix.Search(ctx, Query{Text: qs[i%len(qs)]}); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// benchPrepared is a query as the stages after parsing see it.
type benchPrepared struct {
	pq    *parsedQuery
	q     Query
	rk    Ranking
	df    map[string]int
	cands []*candidate
}

// prepare runs a search's steps up to the candidate pass, as search does.
func (s *benchSite) prepare(text string) *benchPrepared {
	ix := s.ix
	syn, rk := ix.config()
	p := &benchPrepared{q: Query{Text: text}.withDefaults(), rk: rk}
	p.pq, p.df, _ = ix.prepare(p.q, syn, rk)
	p.cands = p.candidates(ix)
	return p
}

func (p *benchPrepared) candidates(ix *Index) []*candidate {
	k := max(p.rk.Candidates, p.q.Limit*p.q.PerDoc*3)
	restore := p.pq.cutCommon(p.df, p.rk.MaxPostings)
	defer restore()
	return ix.candidates(p.pq, p.q, p.rk, k)
}

// fresh copies the candidates, which the rerank rescores in place.
func (p *benchPrepared) fresh() []*candidate {
	out := make([]*candidate, len(p.cands))
	all := make([]candidate, len(p.cands))
	for i, c := range p.cands {
		all[i] = *c
		all[i].variantOf, all[i].matches = nil, nil
		out[i] = &all[i]
	}
	return out
}

func (s *benchSite) prepared(kind string) []*benchPrepared {
	var out []*benchPrepared
	for _, q := range s.queries(kind) {
		out = append(out, s.prepare(q))
	}
	return out
}

// BenchmarkCandidates is the candidate pass: BM25 over the query terms'
// postings, the filters and the best k.
func BenchmarkCandidates(b *testing.B) {
	s := benchSiteOnce(b)
	for _, kind := range benchKinds {
		b.Run(kind, func(b *testing.B) {
			ps := s.prepared(kind)
			b.ReportAllocs()
			loop(b, func(i int) {
				ps[i%len(ps)].candidates(s.ix)
			})
		})
	}
}

// BenchmarkRerank is the rerank of the best candidates: BM25F from the
// postings, variants and proximity.
func BenchmarkRerank(b *testing.B) {
	s := benchSiteOnce(b)
	ctx := context.Background()
	for _, kind := range benchKinds {
		b.Run(kind, func(b *testing.B) {
			ps := s.prepared(kind)
			b.ReportAllocs()
			loop(b, func(i int) {
				p := ps[i%len(ps)]
				if err := s.ix.rerank(ctx, p.pq, p.rk, p.df, p.fresh()); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkWholePage is the whole-page score of the candidates' pages
// (docBM25, with associate).
func BenchmarkWholePage(b *testing.B) {
	s := benchSiteOnce(b)
	for _, kind := range benchKinds {
		b.Run(kind, func(b *testing.B) {
			ps := s.prepared(kind)
			docs := make([][]*docHit, len(ps))
			for i, p := range ps {
				docs[i] = groupDocs(s.ix.mem, p.fresh(), p.pq, p.q, p.rk, time.Time{}, nil)
			}
			b.ReportAllocs()
			loop(b, func(i int) {
				p := ps[i%len(ps)]
				s.ix.docBM25(p.pq, p.rk, docs[i%len(ps)])
			})
		})
	}
}

// BenchmarkEvidence is the matched terms and snippets of a search's ten
// shown hits.
func BenchmarkEvidence(b *testing.B) {
	s := benchSiteOnce(b)
	ctx := context.Background()
	for _, kind := range benchKinds {
		b.Run(kind, func(b *testing.B) {
			type shownHits struct {
				p    *benchPrepared
				docs []*docHit
			}
			var all []shownHits
			for _, p := range s.prepared(kind) {
				cands := p.fresh()
				if err := s.ix.rerank(ctx, p.pq, p.rk, p.df, cands); err != nil {
					b.Fatal(err)
				}
				docs := groupDocs(s.ix.mem, cands, p.pq, p.q, p.rk, time.Time{}, s.ix.docBM25)
				docs = docs[:min(len(docs), 10)]
				if err := s.ix.loadTexts(ctx, shown(docs, 1)); err != nil {
					b.Fatal(err)
				}
				all = append(all, shownHits{p, docs})
			}
			b.ReportAllocs()
			loop(b, func(i int) {
				h := all[i%len(all)]
				for _, d := range h.docs {
					s.ix.makeHit(d, d.chunks[0], h.p.pq, true)
				}
			})
		})
	}
}

// BenchmarkLoad is a load of the whole site from the store: every chunk
// analyzed into its postings and links.
func BenchmarkLoad(b *testing.B) {
	s := benchSiteOnce(b)
	ctx := context.Background()
	b.ReportAllocs()
	loop(b, func(int) {
		ix := New(s.db)
		defer ix.Close()
		if err := ix.Load(ctx); err != nil {
			b.Fatal(err)
		}
	})
}

// loop runs f(0), f(1), … as b.Loop asks, and reports beside the wall
// time the process's CPU time per call (getrusage: user and system, GC
// included), which a machine shared with other work inflates less.
func loop(b *testing.B, f func(i int)) {
	b.Helper()
	start := cpuTime()
	i := 0
	for b.Loop() {
		f(i)
		i++
	}
	if i > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(i), "cpu-ns/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
