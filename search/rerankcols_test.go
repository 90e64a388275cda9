package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/store"
)

// wpWords are the kinds of words WordPress pages hold that analysis treats
// apart: stopwords, derivations that share a prefix, identifiers, hyphenated
// compounds, acronyms and their plurals (some of whose singulars are
// stopwords), numbers and versions, apostrophes, diacritics, scripts
// without spaces.
var wpWords = strings.Fields(`the a on or it is as do of to in and for with not be this that
	plugin plugins plug-in theme themes widget widgets block blocks editor editing edited install installation
	installing installed partner partnership partners permalink permalinks customizer customize customizing
	e-mail email WP-CLI wp-cli re-render multi-site multisite post posts posting page pages category tags
	wp_enqueue_script wp_enqueue_style get_the_title loginHandler WP_Query register_post_type add_action()
	php8 PHP-8 es2015 utf8mb4 v1.2 3.14 2024 10% 0-dimensional TNF-α
	URLs CPTs ORs ONs ITs ASs DOs APIs IDs SNPs HTML CSS REST API
	don't it's user's O'Reilly café Łódź Straße naïve résumé Ærø über 日本
	WordPress Gutenberg Jetpack WooCommerce dying lying happy happiness generally general generous
	releases release released releas
	Mitgliedschaft Mitglied Verein Häuser`)

// wpText is a random page text of n words with punctuation and line breaks.
func wpText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString([]string{" ", " ", " ", " ", ", ", ". ", "; ", " (", ") ", " - ", " — ", "\n", "/"}[rng.IntN(13)])
		}
		w := wpWords[rng.IntN(len(wpWords))]
		switch rng.IntN(10) {
		case 0:
			w = strings.ToUpper(w)
		case 1:
			r, n := utf8.DecodeRuneInString(w)
			w = string(unicode.ToUpper(r)) + w[n:]
		}
		b.WriteString(w)
	}
	return b.String()
}

// TestRerank_FromPostings: the counts, lengths, variant counts and
// proximity the rerank reads from the index's postings are what analyzing
// each chunk's text finds, on random WordPress-shaped pages in languages
// whose stemmers change only the ends of words and in ones that do not.
func TestRerank_FromPostings(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 2))
	db := openTB(t)
	ctx := context.Background()
	langs := []string{"en", "en-US", "de", "ga", "fr"}
	var docs []*store.Document
	for i := range 120 {
		lang := langs[rng.IntN(len(langs))]
		if i == 7 {
			lang = "en"
		}
		title := wpText(rng, 2+rng.IntN(6))
		d := &store.Document{URL: fmt.Sprintf("http://x.test/p/%d/", i), Title: title, PostType: "post", Lang: lang,
			ContentHash: fmt.Sprint(i), Categories: []string{wpText(rng, 1)}, Tags: []string{wpText(rng, 2), wpText(rng, 1)}}
		var body []string
		for k := range 1 + rng.IntN(4) {
			text := wpText(rng, 20+rng.IntN(200))
			if i%3 == 0 {
				// ASCII without apostrophes, where evidence looks for a
				// stem's surface ("releas") as a substring first.
				text = strings.Map(func(r rune) rune {
					if r >= utf8.RuneSelf || r == '\'' {
						return 'x'
					}
					return r
				}, text)
			}
			if i == 7 && k == 0 {
				// Past the postings' cap of 255 a chunk is analyzed.
				text = strings.Repeat("widget ", 300)
			}
			body = append(body, text)
			d.Chunks = append(d.Chunks, store.Chunk{Ord: k, Text: text, Type: "prose", ContentHash: fmt.Sprint(i, k),
				HeadingPath: []string{wpText(rng, 3)}})
		}
		d.Body = strings.Join(body, "\n\n")
		d.Text = d.Body
		docs = append(docs, d)
	}
	if err := db.PutDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, db)
	if _, err := ix.Search(ctx, Query{Text: "plugin"}); err != nil {
		t.Fatal(err)
	}

	compared, analyzed := 0, 0
	for qi := range 300 {
		lang := langs[qi%len(langs)]
		text := wpText(rng, 3+rng.IntN(8))
		if qi%5 == 0 {
			text += " partnering zzyzx" // words on no page, one with variants
		}
		if qi%7 == 0 {
			text = "widgets " + wpText(rng, 1)
		}
		syn, rk := ix.config()
		pq := parseQuery(text, lang, syn)
		df := ix.queryStats(pq)
		for i := range pq.Terms {
			if df[pq.Terms[i].Term] == 0 && df[pq.Terms[i].Surface] == 0 {
				pq.Terms[i].Weight = 0
			}
		}
		cands := ix.candidates(pq, Query{Limit: 10, PerDoc: 1}, rk, rk.Candidates)
		top := cands[:min(len(cands), rk.RerankDepth)]
		if err := ix.loadTexts(ctx, top); err != nil {
			t.Fatal(err)
		}
		r := ix.newReranker(pq, rk, df)
		fast := ix.fromPostings(r, top)

		for i, c := range top {
			if fast[i] == nil {
				analyzed++
				continue
			}
			compared++
			want, got := r.analyze(c), fast[i]
			if !reflect.DeepEqual(want.title, got.title) || !reflect.DeepEqual(want.kw, got.kw) || !reflect.DeepEqual(want.body, got.body) {
				t.Errorf("%q chunk %d: counts title %v keywords %v body %v, analysis %v %v %v (terms %v)",
					text, c.chunkID, got.title, got.kw, got.body, want.title, want.kw, want.body, r.order)
			}
			if len(want.exact)+len(got.exact) > 0 && !reflect.DeepEqual(want.exact, got.exact) {
				t.Errorf("%q chunk %d: exact %v, analysis %v", text, c.chunkID, got.exact, want.exact)
			}
			// The body's length is the index's, every term of it counted
			// (the analysis for the query's initials leaves out the joined
			// compounds it has no use for).
			want.nb = 1 - rk.BBody + rk.BBody*float64(len(ix.an.IndexTerms(c.text, c.doc.Lang, nil)))/max(r.fs.AvgBody, 1)
			if want.nt != got.nt || want.nk != got.nk || want.nb != got.nb {
				t.Errorf("%q chunk %d: lengths %v %v %v, analysis %v %v %v", text, c.chunkID, got.nt, got.nk, got.nb,
					want.nt, want.nk, want.nb)
			}
			if pw, pg := r.proximity(want.near), r.proximity(got.near); pw != pg {
				t.Errorf("%q chunk %d: proximity %v at %v, analysis %v at %v", text, c.chunkID, pg, got.near, pw, want.near)
			}
			if vw, vg := variantCounts(want), variantCounts(got); !reflect.DeepEqual(vw, vg) {
				t.Errorf("%q chunk %d: variants %v, analysis %v", text, c.chunkID, vg, vw)
			}
			// The evidence reuses what the rerank found in the text, or,
			// for terms it does not know, skips the ones the postings say
			// the text lacks and, past the snippet, the ones found.
			var terms []string
			for _, x := range r.order {
				if _, ok := r.weights[x]; ok {
					terms = append(terms, x)
				}
			}
			for _, ts := range [][]string{terms, r.order} {
				for _, n := range []int{0, 40, 240} {
					mw, sw := evidenceReference(ix.an, ts, c.doc.Title, c.text, c.doc.Lang, n)
					mg, sg := evidence(ix.an, ts, nil, c.doc.Title, c.text, c.doc.Lang, n, c.matches)
					if !reflect.DeepEqual(mw, mg) || sw != sg {
						t.Errorf("%q chunk %d, %d bytes: evidence %q %q from %+v, %q %q in full", text, c.chunkID, n, mg, sg,
							c.matches, mw, sw)
					}
				}
			}
		}
	}
	if analyzed == 0 || compared < 20*analyzed {
		t.Errorf("%d chunks read from the postings, %d analyzed: want nearly all from the postings, and the capped one analyzed",
			compared, analyzed)
	}
}

func variantCounts(d *rdoc) map[string][3]float64 {
	out := map[string][3]float64{}
	for p, n := range d.variant {
		out[p] = *n
	}
	return out
}

// evidenceReference is evidence as it was before it skipped words: every
// word with a term's initial analyzed.
func evidenceReference(an *analysis.Analyzer, terms []string, meta, text, lang string, n int) ([]string, string) {
	want := make(map[string]bool, len(terms))
	for _, t := range terms {
		want[t] = true
	}
	initials := analysis.InitialsOf(terms)
	have := map[string]bool{}
	wanted := func(t analysis.Token) bool {
		if t.Term == "" {
			return false
		}
		hit := false
		for _, x := range t.Parts {
			if want[x] {
				have[x], hit = true, true
			}
		}
		for _, x := range [2]string{t.Term, t.Surface} {
			if want[x] {
				have[x], hit = true, true
			}
		}
		return hit
	}
	an.EachAt(meta, lang, initials, func(t analysis.Token, _ int) { wanted(t) })
	// The text is analyzed in one pass; a token's offset says which of
	// its space-separated words to highlight (no token spans a space).
	words, starts := fieldsByRune(text)
	hits := make([]bool, len(words))
	first := -1
	if len(want) > 0 {
		w := 0
		an.EachAt(text, lang, initials, func(t analysis.Token, at int) {
			for w+1 < len(starts) && starts[w+1] <= at {
				w++
			}
			if wanted(t) {
				hits[w] = true
				if first < 0 {
					first = w
				}
			}
		})
	}
	out := []string{}
	for _, t := range terms {
		if have[t] {
			out = append(out, t)
		}
	}
	if n <= 0 {
		return out, ""
	}
	start := 0
	if first > 8 {
		start = first - 8
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	for i := start; i < len(words) && b.Len() < n; i++ {
		if i > start {
			b.WriteByte(' ')
		}
		if hits[i] {
			b.WriteString("**" + words[i] + "**")
		} else {
			b.WriteString(words[i])
		}
		if i == len(words)-1 {
			return out, b.String()
		}
	}
	if len(words) > 0 {
		b.WriteString("…")
	}
	return out, b.String()
}
