package store

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
)

func TestAnalyze(t *testing.T) {
	tests := []struct {
		text, lang string
		want       []string
	}{
		{"The Workspaces are running", "en", []string{"workspac", "run"}},
		{"wp_enqueue_script and 0x8004", "en", []string{"wp_enqueue_script", "0x8004"}},
		{"Łódź Straße Æsir Ørsted café", "en", []string{"lodz", "strass", "aesir", "orst", "cafe"}},
		{"Die Häuser sind groß", "de-DE", []string{"haus", "gross"}},
		{"version 3.14 of v1.2", "en", []string{"version", "3.14", "v1.2"}},
		{"don't stop", "en", []string{"dont", "stop"}},
		{"日本", "ja", []string{"日", "本"}},
		{"TNF-α and IL-1β, NF-κB", "en", []string{"tnf", "alpha", "il", "1", "beta", "nf", "kappa", "b"}},
		{"Ελληνικά λέξη α", "el", []string{"ελληνικα", "λεξη", "alpha"}},
	}
	for _, tt := range tests {
		if got := Analyze(tt.text, tt.lang); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Analyze(%q, %q) = %q, want %q", tt.text, tt.lang, got, tt.want)
		}
	}
	if got := indexTerms("loginHandler wp_enqueue_script", "en"); got != "loginhandler login handler wp_enqueue_script wp enqueu script" {
		t.Errorf("indexTerms = %q", got)
	}
	// Letters and digits split where they meet, so each spelling finds
	// the other: "IL6" ~ "IL-6", "Oct4" ~ "OCT3/4".
	for text, want := range map[string]string{
		"IL6 and Oct4": "il6 il 6 oct4 oct 4",
		"IL-6":         "il 6 il6",
		"p53 HNF4A":    "p53 hnf4a hnf 4",
		"v1.2 3.14":    "v1.2 3.14",
		"co-culture":   "co cultur cocultur",
	} {
		if got := indexTerms(text, "en"); got != want {
			t.Errorf("indexTerms(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestVocabulary_Correct(t *testing.T) {
	v := &vocabulary{byKey: map[vocabKey][]vocabTerm{}, docCount: map[string]int{}}
	for _, w := range []string{"workspace", "workspac", "widget", "notes", "panel", "café"} {
		v.add(vocabTerm{w, 3})
	}
	for in, want := range map[string]string{"wrkspace": "workspace", "widgte": "widget", "ntoes": "notes", "notse": "notes", "cafés": "café"} {
		if got, ok := v.correct(in); !ok || got != want {
			t.Errorf("correct(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if got, ok := v.correct("calendar"); ok {
		t.Errorf("correct(calendar) = %q", got)
	}
}

func TestDB_EnsureIndex(t *testing.T) {
	ctx := context.Background()
	db := openSite(t)
	if err := db.EnsureIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := db.GetMeta(ctx, "analyzer_version"); v != analyzerVersion {
		t.Fatalf("analyzer_version = %q", v)
	}
	// A stale version rebuilds the index from the chunks.
	if err := db.SetMeta(ctx, "analyzer_version", "0"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.write.ExecContext(ctx, `INSERT INTO chunks_fts(chunks_fts) VALUES('delete-all')`); err != nil {
		t.Fatal(err)
	}
	if err := db.EnsureIndex(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := db.Search(ctx, SearchQuery{Text: "quick links"})
	if err != nil || len(res.Hits) == 0 {
		t.Fatalf("after rebuild: %+v, %v", res, err)
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkVocabulary_Correct times one typo lookup over a vocabulary the
// size of a 50k-chunk site's (150k terms).
func BenchmarkVocabulary_Correct(b *testing.B) {
	v := &vocabulary{byKey: map[vocabKey][]vocabTerm{}, docCount: map[string]int{}}
	letters := "abcdefghijklmnopqrstuvwxyz"
	seed := uint32(1)
	next := func() int { seed = seed*1664525 + 1013904223; return int(seed >> 8) }
	for i := 0; i < 150000; i++ {
		n := 3 + next()%10
		w := make([]byte, n)
		for j := range w {
			w[j] = letters[next()%26]
		}
		v.add(vocabTerm{string(w), 1 + next()%50})
	}
	v.add(vocabTerm{"workspace", 10})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got, ok := v.correct("wrkspace"); !ok || got != "workspace" {
			b.Fatalf("correct = %q, %v", got, ok)
		}
	}
}

// analyzeFor skips stemming words that cannot match; it must agree with
// Analyze on every term it was asked for and keep Analyze's positions.
func TestAnalyzeFor(t *testing.T) {
	text := "The Workspaces are running; wp_enqueue_script loginHandler version 3.14 Łódź Straße " +
		"don't Die Häuser sind groß workspace runs 日本 WORKSPACES"
	for _, lang := range []string{"en", "de", "ga", "ar"} {
		full := Analyze(text, lang)
		for _, want := range [][]string{{"workspac", "run"}, {"wp_enqueue_script"}, {"lodz", "haus"}, {}} {
			got := analyzeFor(text, lang, initialsOf(want))
			if len(got) != len(full) {
				t.Fatalf("%s %v: %d terms, Analyze has %d", lang, want, len(got), len(full))
			}
			need := map[string]bool{}
			for _, w := range want {
				need[w] = true
			}
			for i := range full {
				if need[full[i]] && got[i] != full[i] || got[i] != "" && got[i] != full[i] {
					t.Errorf("%s %v: term %d = %q, Analyze %q", lang, want, i, got[i], full[i])
				}
			}
		}
		if got := analyzeFor(text, lang, nil); !reflect.DeepEqual(got, full) {
			t.Errorf("%s: analyzeFor(nil) = %q, want %q", lang, got, full)
		}
	}
}

// TestAnalyze_Concurrent: searches analyze queries concurrently; folding
// diacritics must not share state between them (run with -race).
func TestAnalyze_Concurrent(t *testing.T) {
	want := Analyze("Café Łódź straße naïve résumé", "en")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if got := Analyze("Café Łódź straße naïve résumé", "en"); !slices.Equal(got, want) {
					t.Errorf("got %v, want %v", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
