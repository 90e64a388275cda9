package analysis

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
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
		{"Ελληνικά λέξη", "el", []string{"ελληνικα", "λεξη"}},
	}
	for _, tt := range tests {
		if got := Analyze(tt.text, tt.lang); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Analyze(%q, %q) = %q, want %q", tt.text, tt.lang, got, tt.want)
		}
	}
	indexTerms := func(text, lang string) string { return strings.Join(IndexTerms(text, lang, nil), " ") }
	if got := indexTerms("loginHandler wp_enqueue_script", "en"); got != "loginhandler login handler wp_enqueue_script wp enqueu script" {
		t.Errorf("indexTerms = %q", got)
	}
	// Letters and digits split where they meet, so each spelling finds
	// the other: "php8" ~ "PHP-8", "es2015" ~ "ES 2015".
	for text, want := range map[string]string{
		"php8 and es2015": "php8 php 8 es2015 es 2015",
		"PHP-8":           "php 8 php8",
		"h2 utf8mb4":      "h2 utf8mb4 utf 8 mb 4",
		"v1.2 3.14":       "v1.2 3.14",
		"re-render":       "re render rerend",
	} {
		if got := indexTerms(text, "en"); got != want {
			t.Errorf("indexTerms(%q) = %q, want %q", text, got, want)
		}
	}
}

// AnalyzeFor skips stemming words that cannot match; it must agree with
// Analyze on every term it was asked for and keep Analyze's positions.
func TestAnalyzeFor(t *testing.T) {
	text := "The Workspaces are running; wp_enqueue_script loginHandler version 3.14 Łódź Straße " +
		"don't Die Häuser sind groß workspace runs 日本 WORKSPACES"
	for _, lang := range []string{"en", "de", "ga", "ar"} {
		full := Analyze(text, lang)
		for _, want := range [][]string{{"workspac", "run"}, {"wp_enqueue_script"}, {"lodz", "haus"}, {}} {
			got := AnalyzeFor(text, lang, InitialsOf(want))
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
		if got := AnalyzeFor(text, lang, nil); !reflect.DeepEqual(got, full) {
			t.Errorf("%s: AnalyzeFor(nil) = %q, want %q", lang, got, full)
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

func TestSynonyms(t *testing.T) {
	syn, err := ParseSynonyms(strings.NewReader("# a site's rules\nshortcuts => quick links\nhomepage, home page => home\ndocs, documentation, manual\n"))
	if err != nil {
		t.Fatal(err)
	}
	if to, ok := syn.Rewrite("shortcuts"); !ok || !reflect.DeepEqual(to, []string{"quick", "links"}) {
		t.Errorf("Rewrite(shortcuts) = %q, %v", to, ok)
	}
	if got := syn.Equivalents("docs"); !reflect.DeepEqual(got, []string{"documentation", "manual"}) {
		t.Errorf("Equivalents(docs) = %q", got)
	}
	if got := syn.RewritePhrases("Where is the Home Page?"); got != "where is the home" {
		t.Errorf("RewritePhrases = %q", got)
	}
	var none *Synonyms
	if _, ok := none.Rewrite("docs"); ok || none.Equivalents("docs") != nil || none.RewritePhrases("x y") != "x y" {
		t.Error("nil Synonyms rewrote")
	}
	if _, err := ParseSynonyms(strings.NewReader("lonely\n")); err == nil {
		t.Error("a one-word group parsed")
	}
}

// An Analyzer remembers stems and analyzes exactly as the package does,
// in any language, from many goroutines (run with -race).
func TestAnalyzer(t *testing.T) {
	a := NewAnalyzer()
	texts := map[string]string{"en": "The Workspaces are running; wp_enqueue_script loginHandler", "de": "Die Häuser sind groß",
		"fr": "Les maisons anciennes", "pt-BR": "As casas antigas"}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				for lang, text := range texts {
					if got, want := a.IndexTerms(text, lang, nil), IndexTerms(text, lang, nil); !slices.Equal(got, want) {
						t.Errorf("%s: %q, want %q", lang, got, want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if a.n.Load() == 0 {
		t.Error("nothing remembered")
	}
}

// An Analyzer's remembered tokens are the ones token makes, before and
// after the cache is cleared for its size.
func TestAnalyzer_Tokens(t *testing.T) {
	a := NewAnalyzer()
	words := strings.Fields(`mRNA p53 CD4+ IL-6 wp_enqueue_script loginHandler WP_Query PHP8 utf8mb4 v1.2 ONs
		CPTs café Łódź naïve don't DNA the plugin 3.14 TNF-α iOS getTheTitle`)
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 3 {
		for range 300 {
			var b strings.Builder
			for range 1 + rng.IntN(12) {
				b.WriteString(words[rng.IntN(len(words))] + " ")
			}
			text, lang := b.String(), []string{"en", "de", "fr"}[rng.IntN(3)]
			if got, want := a.AnalyzeTokens(text, lang), AnalyzeTokens(text, lang); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %q: %+v, want %+v", lang, text, got, want)
			}
		}
		if a.tn.Load() == 0 {
			t.Fatal("no token remembered")
		}
		if round == 1 {
			a.tn.Store(maxTokens) // the next one clears the cache
		}
	}
}

// EachAt's offsets point at the word each token comes from, through
// apostrophes, identifiers, non-Latin letters and ideographs, so a caller can
// highlight the word a match came from.
func TestEachAt(t *testing.T) {
	text := "Don't enqueue wp_enqueue_script twice; see v6.5 and the blockEditor API’s β-test 日本 café."
	type got struct {
		surface string
		at      int
	}
	var gots []got
	NewAnalyzer().EachAt(text, "en", nil, func(tok Token, at int) { gots = append(gots, got{tok.Surface, at}) })
	want := []got{
		{"dont", 0}, {"enqueue", 6}, {"wp_enqueue_script", 14}, {"twice", 32}, {"see", 39}, {"v6.5", 43},
		{"blockeditor", 56}, {"api", 68}, {"β", strings.Index(text, "β")}, {"test", strings.Index(text, "test")},
		{"日", strings.Index(text, "日")}, {"本", strings.Index(text, "本")}, {"cafe", strings.Index(text, "café")},
	}
	if !reflect.DeepEqual(gots, want) {
		t.Errorf("EachAt = %v\nwant     %v", gots, want)
	}
}

// hyphenJoinsWalk is hyphenJoins as it was first written, walking every
// rune: the faster one, which jumps between hyphens, must join the same
// compounds.
func hyphenJoinsWalk(text string, fn func(string)) {
	var joined []byte
	pieces, inWord := 0, false
	flush := func() {
		if pieces >= 2 && pieces <= 4 {
			fn(string(joined))
		}
		joined, pieces, inWord = joined[:0], 0, false
	}
	prevHyphen := false
	for _, r := range text {
		switch {
		case isWordRune(r):
			if !inWord {
				if pieces > 0 && !prevHyphen {
					flush()
				}
				pieces++
				inWord = true
			}
			joined = utf8.AppendRune(joined, r)
			prevHyphen = false
		case isHyphen(r) && inWord:
			inWord, prevHyphen = false, true
		default:
			flush()
			prevHyphen = false
		}
	}
	flush()
}

func TestHyphenJoins(t *testing.T) {
	collect := func(join func(string, func(string)), text string) []string {
		var out []string
		join(text, func(s string) { out = append(out, s) })
		return out
	}
	texts := []string{
		"plug-in and co-author", "a-b--c-d", "re-re-re-re-run", "one-two-three-four-five", "wp-cli-",
		"-lead trailing- x", "β-test", "pre\u2010built non\u2011breaking", "über-schön", "a - b", "x_y-z", "",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "B", "7", "-", "-", "\u2010", " ", ".", "α", "_", "日", "é", "'"}
	for range 5000 {
		var b strings.Builder
		for range rng.IntN(20) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		if got, want := collect(hyphenJoins, text), collect(hyphenJoinsWalk, text); !slices.Equal(got, want) {
			t.Fatalf("hyphenJoins(%q) = %q, want %q", text, got, want)
		}
	}
	if got := collect(hyphenJoins, "use the plug-in's wp-cli command"); !slices.Equal(got, []string{"plugin", "wpcli"}) {
		t.Errorf("hyphenJoins = %q", got)
	}
}

// LocateIndexTerms finds the terms it is given exactly where
// AppendIndexTerms(want) lists them among the words, on random
// text mixing what analysis treats apart: stopwords, numbers, identifiers,
// compounds, acronyms and their plurals, diacritics.
func TestLocateIndexTerms(t *testing.T) {
	words := strings.Fields(`the on or it as do of and plugin plugins plug-in e-mail WP-CLI re-render installing
		install wp_enqueue_script loginHandler php8 PHP-8 3.14 2024 v1.2 10 0-dimensional URLs ORs ONs ITs DOs SNPs
		HTML don't user's café Łódź Straße naïve über 日本 dying happy partners Häuser TNF-α`)
	rng := rand.New(rand.NewPCG(1, 2))
	a := NewAnalyzer()
	for range 2000 {
		var b strings.Builder
		for i := range 5 + rng.IntN(40) {
			if i > 0 {
				b.WriteString([]string{" ", ", ", ". ", " (", ") ", "-", "\n"}[rng.IntN(7)])
			}
			w := words[rng.IntN(len(words))]
			if rng.IntN(5) == 0 {
				w = strings.ToUpper(w)
			}
			b.WriteString(w)
		}
		text, lang := b.String(), []string{"en", "de", "ga"}[rng.IntN(3)]
		all := a.IndexTerms(text, lang, nil)
		var asked []string
		for _, x := range all {
			if rng.IntN(4) == 0 && !slices.Contains(asked, x) {
				asked = append(asked, x)
			}
		}
		want := InitialsOf(asked, []string{words[rng.IntN(len(words))]})
		list := a.AppendIndexTerms(nil, text, lang, want)
		count := make([]int, len(asked))
		var wantAt [][2]int
		for pos, x := range list {
			if i := slices.Index(asked, x); i >= 0 {
				count[i]++
				wantAt = append(wantAt, [2]int{i, pos})
			}
		}
		// The joined compounds come last, and are not looked for.
		words := len(a.AppendWordTerms(nil, text, lang, want))
		for len(wantAt) > 0 && wantAt[len(wantAt)-1][1] >= words {
			wantAt = wantAt[:len(wantAt)-1]
		}
		var got [][2]int
		a.LocateIndexTerms(text, lang, want, asked, count, func(i, pos, at int) {
			got = append(got, [2]int{i, pos})
			word := ""
			scanWords(text[at:], func(raw string, _ int) {
				if word == "" {
					word = raw
				}
			})
			if !slices.Contains(a.IndexTerms(word, lang, nil), asked[i]) {
				t.Errorf("%q: %q is not in the word at %d, %q", text, asked[i], at, word)
			}
		})
		if !slices.Equal(got, wantAt) {
			t.Fatalf("%s %q asking %q: terms at %v, AppendIndexTerms at %v", lang, text, asked, got, wantAt)
		}
	}
}

// What AppendTermsAt lists, cut as its comment says, is what
// LocateIndexTerms reports, on TestLocateIndexTerms' random texts.
func TestAppendTermsAt(t *testing.T) {
	words := strings.Fields(`the on or it as do of and plugin plugins plug-in e-mail WP-CLI re-render installing
		install wp_enqueue_script loginHandler php8 PHP-8 3.14 2024 v1.2 10 0-dimensional URLs ORs ONs ITs DOs SNPs
		HTML don't user's café Łódź Straße naïve über 日本 dying happy partners Häuser TNF-α`)
	rng := rand.New(rand.NewPCG(3, 4))
	a := NewAnalyzer()
	checked, plurals := 0, 0
	for range 3000 {
		var b strings.Builder
		for i := range 5 + rng.IntN(40) {
			if i > 0 {
				b.WriteString([]string{" ", ", ", ". ", " (", ") ", "-", "\n"}[rng.IntN(7)])
			}
			w := words[rng.IntN(len(words))]
			if rng.IntN(5) == 0 {
				w = strings.ToUpper(w)
			}
			b.WriteString(w)
		}
		text, lang := b.String(), []string{"en", "de", "ga", "fi", "tr"}[rng.IntN(5)]
		list, ok := a.AppendTermsAt(nil, text, lang)
		if ok && (lang == "fi" || lang == "tr") {
			t.Fatalf("%s %q: ok", lang, text)
		}
		if !ok {
			continue
		}
		if lang != "ga" && (strings.Contains(text, "SNPs") || strings.Contains(text, "URLs")) {
			plurals++
		}
		all := a.IndexTerms(text, lang, nil)
		var asked []string
		for _, x := range all {
			if rng.IntN(4) == 0 && !slices.Contains(asked, x) {
				asked = append(asked, x)
			}
		}
		want := InitialsOf(asked, []string{words[rng.IntN(len(words))]})
		count := make([]int, len(asked))
		left := 0
		for _, x := range a.AppendIndexTerms(nil, text, lang, want) {
			if i := slices.Index(asked, x); i >= 0 {
				count[i]++
				left++
			}
		}
		if left == 0 {
			continue
		}
		var got, fromList [][3]int
		a.LocateIndexTerms(text, lang, want, asked, count, func(i, pos, at int) { got = append(got, [3]int{i, pos, at}) })
		stop := -1
		for _, e := range list {
			if stop >= 0 && e.At != stop {
				break
			}
			if i := slices.Index(asked, e.Term); i >= 0 {
				fromList = append(fromList, [3]int{i, e.Pos, e.At})
				if left--; left == 0 {
					stop = e.At
				}
			}
		}
		if !slices.Equal(got, fromList) {
			t.Fatalf("%s %q asking %q: LocateIndexTerms %v, from the list %v", lang, text, asked, got, fromList)
		}
		checked++
	}
	if checked < 500 || plurals < 100 {
		t.Fatalf("only %d texts compared, %d with an acronym's plural", checked, plurals)
	}
}

// Every word of a text AppendSurfaces reads has its surface found by
// MayHoldSurface, and the texts it refuses have a word outside ASCII; a
// word's first letters, where they are not a word of the text, are
// mostly not found.
func TestAppendSurfaces(t *testing.T) {
	parts := []string{"word", "Word", "increase", "3.14", "wp_query", "getElementById", "CPTs", "URLs", "p53",
		" ", ", ", ".", " — ", "“", "”", "…", "→", "\u00ad", "don't", "don’t", "rock'n'roll", "'", "’", "s", "x",
		"café", "日本", "e\u0301"}
	rng := rand.New(rand.NewPCG(5, 6))
	a := NewAnalyzer()
	l := languageOf("en")
	accepted, refused, prefixes, prefixesFound := 0, 0, 0, 0
	for range 5000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		text := b.String()
		surfaces, ok := AppendSurfaces([]byte("kept:"), text)
		if !strings.HasPrefix(string(surfaces), "kept:") {
			t.Fatalf("AppendSurfaces(%q) lost dst: %q", text, surfaces)
		}
		surfaces = surfaces[len("kept:"):]
		ascii := true
		var words []string
		scanWords(text, func(raw string, _ int) {
			ascii = ascii && isASCII(raw)
			words = append(words, raw)
		})
		if ok != ascii {
			t.Fatalf("AppendSurfaces(%q): ok = %v", text, ok)
		}
		if !ok {
			if len(surfaces) != 0 {
				t.Fatalf("AppendSurfaces(%q) refused but appended %q", text, surfaces)
			}
			refused++
			continue
		}
		accepted++
		for _, raw := range words {
			tok, ok := l.token(raw, a)
			if ok && !MayHoldSurface(surfaces, tok.Surface) {
				t.Fatalf("%q (surfaces %q): the surface %q of %q not found", text, surfaces, tok.Surface, raw)
			}
			low := strings.ToLower(raw)
			if len(low) >= 6 && !slices.Contains(words, low[:4]) {
				prefixes++
				if MayHoldSurface(surfaces, low[:4]) {
					prefixesFound++
				}
			}
		}
	}
	if accepted < 500 || refused < 500 || prefixes < 500 {
		t.Fatalf("%d accepted, %d refused, %d prefixes: the test's texts are too alike", accepted, refused, prefixes)
	}
	if prefixesFound > prefixes/4 {
		t.Fatalf("%d of %d words' first letters found as words", prefixesFound, prefixes)
	}
}

// stop's quick tests let every stopword through to the map.
func TestStopShapes(t *testing.T) {
	for code, l := range languages {
		for w := range l.stopwords {
			if !l.stop(w) {
				t.Errorf("%s: %q is a stopword that stop does not see", code, w)
			}
		}
		if l.stop("test") || l.stop("zzyzx") {
			t.Errorf("%s: a word that is no stopword is one", code)
		}
	}
}

// The two-letter shortcut of skipLetters holds where keepsTwo says so:
// random words of letters, vowels weighted as in prose, stem to a term
// that starts with their first two letters (or 'i' for a 'y' second), or
// to a single letter. Any stemmer rule that reaches the start of a word
// shows in short ones; whole-word exceptions (English's) are listed.
func TestKeepsTwo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const letters, vowels = "abcdefghijklmnopqrstuvwxyz", "aeiouy"
	exceptions := []string{"skis", "skies", "dying", "lying", "tying", "idly", "gently", "ugly", "early",
		"only", "singly", "news", "howe", "atlas", "cosmos", "bias", "andes", "inning", "outing", "canning",
		"herring", "earring", "proceed", "exceed", "succeed", "generate", "communism", "arsenal"}
	for code, l := range languages {
		if !l.keepsTwo {
			continue
		}
		bad := 0
		check := func(w string) {
			s := l.stemWord(w)
			if len(s) == 1 && s[0] == w[0] || len(s) >= 2 && s[0] == w[0] && (s[1] == w[1] || s[1] == 'i' && w[1] == 'y') || s == "" {
				return
			}
			if bad++; bad <= 3 {
				t.Errorf("%s: %q stems to %q", code, w, s)
			}
		}
		for _, w := range exceptions {
			check(w)
		}
		for range 20000 {
			b := make([]byte, 4+rng.IntN(9))
			for j := range b {
				if rng.IntN(2) == 0 {
					b[j] = vowels[rng.IntN(len(vowels))]
				} else {
					b[j] = letters[rng.IntN(len(letters))]
				}
			}
			check(string(b))
		}
	}
}
