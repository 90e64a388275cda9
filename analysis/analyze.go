// Package analysis turns text into index terms: words and identifiers,
// folded, lowercased, stopwords dropped, stemmed per language. Everything
// here is a pure function; the tables it reads are built once at init.
package analysis

import (
	"bytes"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/arabic"
	"github.com/blevesearch/snowballstem/danish"
	"github.com/blevesearch/snowballstem/dutch"
	"github.com/blevesearch/snowballstem/english"
	"github.com/blevesearch/snowballstem/finnish"
	"github.com/blevesearch/snowballstem/french"
	"github.com/blevesearch/snowballstem/german"
	"github.com/blevesearch/snowballstem/hungarian"
	"github.com/blevesearch/snowballstem/irish"
	"github.com/blevesearch/snowballstem/italian"
	"github.com/blevesearch/snowballstem/norwegian"
	"github.com/blevesearch/snowballstem/portuguese"
	"github.com/blevesearch/snowballstem/romanian"
	"github.com/blevesearch/snowballstem/russian"
	"github.com/blevesearch/snowballstem/spanish"
	"github.com/blevesearch/snowballstem/swedish"
	"github.com/blevesearch/snowballstem/tamil"
	"github.com/blevesearch/snowballstem/turkish"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// maxTokenRunes drops longer "words" (base64, hashes, minified code): they
// only bloat the vocabulary.
const maxTokenRunes = 64

// Token is one analyzed word.
type Token struct {
	// Surface is the word folded and lowercased, before stemming.
	Surface string
	// Term is the index term: Surface stemmed, or Surface itself for
	// identifiers, numbers and words shorter than 4 letters.
	Term string
	// Code is true for identifier-like tokens (snake_case, camelCase,
	// letters mixed with digits), which are never stemmed.
	Code bool
	// Parts are the pieces of a snake_case or camelCase identifier, each
	// analyzed; they are indexed after the identifier so "enqueue script"
	// finds wp_enqueue_script.
	Parts []string
}

// Analyze turns text into index terms: Unicode words and identifiers,
// lowercased, diacritics folded, stopwords of lang dropped, stemmed with
// lang's Snowball stemmer (English when lang is unknown) when at least 4
// letters long and not an identifier.
func Analyze(text, lang string) []string { return plain.Analyze(text, lang) }

// Analyze is the package's Analyze, remembering stems.
func (a *Analyzer) Analyze(text, lang string) []string {
	var terms []string
	l := languageOf(lang)
	scanTokens(text, func(raw string) {
		t, ok := l.token(raw, a)
		if !ok {
			return
		}
		terms = append(terms, t.Term)
	})
	return terms
}

// AnalyzeTokens is Analyze keeping each token's surface form and
// identifier parts.
func AnalyzeTokens(text, lang string) []Token { return plain.AnalyzeTokens(text, lang) }

// AnalyzeTokens is the package's AnalyzeTokens, remembering stems.
func (a *Analyzer) AnalyzeTokens(text, lang string) []Token {
	var toks []Token
	l := languageOf(lang)
	scanTokens(text, func(raw string) {
		if t, ok := l.token(raw, a); ok {
			toks = append(toks, t)
		}
	})
	return toks
}

func isHyphen(r rune) bool { return r == '-' || r == '\u2010' || r == '\u2011' }

// hyphenJoins calls fn with each hyphenated compound of text written as
// one word: "e-mail" → "email", "plug-in" → "plugin", "WP-CLI" →
// "WPCLI". Writers use both spellings, so the index holds the joined form
// after the pieces. Queries don't add it: a query's own compound would
// then count twice, as pieces and as a rare joined term, which measured
// worse than matching the pieces alone.
func hyphenJoins(text string, fn func(string)) {
	// Most text has few hyphens or none: jump from one to the next rather
	// than walk every rune.
	if strings.IndexByte(text, '-') < 0 && !strings.ContainsRune(text, '\u2010') && !strings.ContainsRune(text, '\u2011') {
		return
	}
	wide := strings.ContainsRune(text, '\u2010') || strings.ContainsRune(text, '\u2011')
	next := func(from int) (at, size int) {
		if !wide {
			if k := strings.IndexByte(text[from:], '-'); k >= 0 {
				return from + k, 1
			}
			return -1, 0
		}
		for i := from; i < len(text); {
			r, n := utf8.DecodeRuneInString(text[i:])
			if isHyphen(r) {
				return i, n
			}
			i += n
		}
		return -1, 0
	}
	// wordEnd is where the run of word runes starting at i ends.
	wordEnd := func(i int) int {
		for i < len(text) {
			r, n := utf8.DecodeRuneInString(text[i:])
			if !isWordRune(r) {
				break
			}
			i += n
		}
		return i
	}
	for from := 0; from < len(text); {
		h, hl := next(from)
		if h < 0 {
			return
		}
		// The compound starts at the word before its first hyphen; the
		// words before from belong to the compound before it.
		start := h
		for start > from {
			r, n := utf8.DecodeLastRuneInString(text[from:start])
			if !isWordRune(r) {
				break
			}
			start -= n
		}
		if start == h {
			from = h + hl
			continue
		}
		pieces, end := 1, h
		for {
			we := wordEnd(h + hl)
			if we == h+hl {
				break // a hyphen that no word follows ends the compound
			}
			pieces, end = pieces+1, we
			r, n := utf8.DecodeRuneInString(text[we:])
			if we == len(text) || !isHyphen(r) {
				break
			}
			h, hl = we, n
		}
		if pieces == 1 {
			from = h + hl
			continue
		}
		if c := text[start:end]; pieces <= 4 {
			fn(strings.Map(func(r rune) rune {
				if isHyphen(r) {
					return -1
				}
				return r
			}, c))
		}
		from = end
	}
}

// ExactTerms are the surface forms, not stemmed, of text's words: an
// index matches a query word against a page's known terms (title,
// categories, tags) this way, so that an exact match scores above a stem
// conflation.
func ExactTerms(text, lang string) []string {
	var out []string
	l := languageOf(lang)
	scanTokens(text, func(raw string) {
		if s, _, ok := l.surface(raw); ok {
			out = append(out, s)
		}
	})
	return out
}

// language is what analysis needs to know about one language.
type language struct {
	idx       int // in languages' order, for an Analyzer's stems
	code      string
	stem      func(*snowballstem.Env) bool
	stopwords map[string]bool
	// stopShape has bit n of entry b set when a stopword of n bytes
	// starts with byte b: most words fail that test, and skip the map.
	// stopPair is the same for words starting with two of the letters a
	// to z: "test" passes the first test, as "this" does, and fails the
	// second.
	stopShape [256]uint64
	stopPair  [26][26]uint64
	// keepsTwo says the stem of a word of ASCII letters starts with the
	// word's first two letters, lowercased (but for a 'y' second that
	// became an 'i'), or is one letter long. The Finnish stemmer undoubles
	// a consonant there ("ggui" → "gui"), and the Turkish one devoices a
	// short stem's last ("ebin" → "ep"); TestKeepsTwo checks the others.
	keepsTwo bool
}

// mayStop is stop's quick test for a word of n bytes starting with b0 and
// b1 (0 when n is 1): false means it is no stopword.
func (l *language) mayStop(b0, b1 byte, n int) bool {
	if n >= 64 {
		return true
	}
	if l.stopShape[b0]&(1<<n) == 0 {
		return false
	}
	if i, j := b0-'a', b1-'a'; n >= 2 && i < 26 && j < 26 {
		return l.stopPair[i][j]&(1<<n) != 0
	}
	return true
}

// stop reports a stopword.
func (l *language) stop(s string) bool {
	if s == "" {
		return false
	}
	var b1 byte
	if len(s) > 1 {
		b1 = s[1]
	}
	return l.mayStop(s[0], b1, len(s)) && l.stopwords[s]
}

var stemmers = map[string]func(*snowballstem.Env) bool{
	"ar": arabic.Stem, "da": danish.Stem, "nl": dutch.Stem, "en": english.Stem, "fi": finnish.Stem,
	"fr": french.Stem, "de": german.Stem, "hu": hungarian.Stem, "ga": irish.Stem, "it": italian.Stem,
	"no": norwegian.Stem, "nb": norwegian.Stem, "nn": norwegian.Stem, "pt": portuguese.Stem,
	"ro": romanian.Stem, "ru": russian.Stem, "es": spanish.Stem, "sv": swedish.Stem, "ta": tamil.Stem,
	"tr": turkish.Stem,
}

// languages holds every analyzer, built once: the stopword lists are a
// few kilobytes each, and a table that never changes needs no lock.
var languages = func() map[string]*language {
	codes := make([]string, 0, len(stemmers))
	for code := range stemmers {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	m := make(map[string]*language, len(stemmers))
	for i, code := range codes {
		l := &language{idx: i, code: code, stem: stemmers[code], stopwords: loadStopwords(code)}
		l.keepsTwo = l.suffixOnly() && code != "fi" && code != "tr"
		for w := range l.stopwords {
			if w != "" && len(w) < 64 {
				l.stopShape[w[0]] |= 1 << len(w)
				if i, j := w[0]-'a', w[min(1, len(w)-1)]-'a'; len(w) >= 2 && i < 26 && j < 26 {
					l.stopPair[i][j] |= 1 << len(w)
				}
			} else if w != "" {
				l.stopShape[w[0]] = ^uint64(0) // longer words take the map
			}
		}
		m[code] = l
	}
	return m
}()

// languageOf maps a BCP 47 tag ("en-US", "de", "pt_BR") to its analyzer;
// unknown and empty tags analyze as English.
func languageOf(tag string) *language {
	code := tag
	if i := strings.IndexAny(code, "-_"); i >= 0 {
		code = code[:i]
	}
	if l, ok := languages[code]; ok {
		return l
	}
	if l, ok := languages[strings.ToLower(code)]; ok {
		return l
	}
	return languages["en"]
}

// token analyzes one raw word from scanTokens. ok is false for stopwords.
func (l *language) token(raw string, a *Analyzer) (Token, bool) {
	if t, ok, done := l.letterToken(raw, a, false); done {
		return t, ok
	}
	if a == nil {
		return l.fullToken(raw, a)
	}
	// The other words (identifiers, acronyms, numbers with letters,
	// accented words) are remembered whole: their parts took several
	// allocations a word, and a site repeats them ("mRNA", "p53",
	// "wp_enqueue_script").
	c := &a.tokens[l.idx]
	if wt, ok := c.load(raw); ok {
		return wt.t, wt.ok
	}
	t, ok := l.fullToken(raw, a)
	// raw and the token's strings may be slices of a page's text: the
	// cache keeps copies, not the page.
	wt := wordToken{t: Token{Surface: strings.Clone(t.Surface), Code: t.Code}, ok: ok}
	wt.t.Term = wt.t.Surface
	if t.Term != t.Surface {
		wt.t.Term = strings.Clone(t.Term)
	}
	if len(t.Parts) > 0 {
		wt.t.Parts = make([]string, len(t.Parts))
		for i, p := range t.Parts {
			wt.t.Parts[i] = strings.Clone(p)
		}
	}
	if a.tn.Add(1) > maxTokens {
		for i := range a.tokens {
			a.tokens[i].clear()
		}
		a.tn.Store(0)
	}
	c.store(strings.Clone(raw), wt)
	return wt.t, wt.ok
}

// wordToken is a word's token as token returned it.
type wordToken struct {
	t  Token
	ok bool
}

// maxTokens bounds the words an Analyzer remembers the tokens of.
const maxTokens = 1 << 15

// fullToken is token without the memory: the word's surface, its term and
// an identifier's parts.
func (l *language) fullToken(raw string, a *Analyzer) (Token, bool) {
	s, camel, ok := l.surface(raw)
	if !ok {
		return Token{}, false
	}
	t := Token{Surface: s, Term: s}
	t.Code = camel || strings.ContainsAny(s, "_.") || (hasDigit(s) && hasLetter(s))
	if !t.Code && utf8.RuneCountInString(s) >= 4 && !isDigits(s) {
		t.Term = a.stem(l, s)
	}
	var parts []string
	switch {
	case camel || strings.Contains(s, "_"):
		parts = identifierParts(fold(raw))
	case t.Code && !strings.Contains(s, "."):
		parts = alnumParts(s)
	}
	for _, p := range parts {
		p = strings.ToLower(p)
		if p == "" || p == s || l.stop(p) {
			continue
		}
		if utf8.RuneCountInString(p) >= 4 && !hasDigit(p) {
			p = a.stem(l, p)
		}
		t.Parts = append(t.Parts, p)
	}
	return t, true
}

// letterToken is token for the commonest word, ASCII letters that are not
// camelCase nor an acronym's plural, in one pass over its bytes. done is
// false when the word needs the full path. With termOnly, a capitalized
// word whose stem is remembered comes back without its Surface, and
// without a lowercase copy made for it.
func (l *language) letterToken(raw string, a *Analyzer, termOnly bool) (t Token, ok, done bool) {
	if len(raw) == 0 || len(raw) > maxTokenRunes {
		return Token{}, false, false
	}
	upper, prevLower := false, false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case 'a' <= c && c <= 'z':
			prevLower = true
		case 'A' <= c && c <= 'Z' && !prevLower:
			upper = true
		default:
			return Token{}, false, false
		}
	}
	if upper && acronymPlural(raw) {
		return Token{}, false, false
	}
	if upper && termOnly && a != nil && len(raw) >= 4 {
		var low [maxTokenRunes]byte
		for i := 0; i < len(raw); i++ {
			low[i] = raw[i] | 0x20 // ASCII letters only, here
		}
		w := low[:len(raw)]
		if l.mayStop(w[0], w[1], len(w)) && l.stopwords[string(w)] {
			return Token{}, false, true
		}
		if stem, ok := a.stems[l.idx].loadBytes(w); ok {
			return Token{Term: stem}, true, true
		}
	}
	s := raw
	if upper {
		s = strings.ToLower(raw)
	}
	if l.stop(s) {
		return Token{}, false, true
	}
	t = Token{Surface: s, Term: s}
	if len(s) >= 4 {
		t.Term = a.stem(l, s)
	}
	return t, true, true
}

// surface is token's first half: the folded, lowercased word, and
// whether it was camelCase. ok is false for stopwords.
func (l *language) surface(raw string) (s string, camel, ok bool) {
	camel = hasInnerUpper(raw)
	if acronymPlural(raw) {
		// "CPTs", "CPUs", "PRs": the stemmer keeps the s when no vowel
		// precedes it, so the plural would not meet the singular.
		raw = raw[:len(raw)-1]
		camel = false
	}
	s = lower(fold(raw))
	if s == "" || utf8.RuneCountInString(s) > maxTokenRunes || l.stop(s) {
		return "", false, false
	}
	return s, camel, true
}

// Analyzer analyzes as the package's functions do, and remembers the
// stems it computed: Snowball costs about a microsecond a word, and an
// index analyzes the same words over and over. Its owner (a search
// index) holds it; the package's functions share none. Safe for
// concurrent use.
type Analyzer struct {
	stems  []wordCache[string] // per language
	n      atomic.Int64
	tokens []wordCache[wordToken] // per language
	tn     atomic.Int64
}

// NewAnalyzer returns an Analyzer that remembers stems.
func NewAnalyzer() *Analyzer {
	return &Analyzer{stems: make([]wordCache[string], len(languages)), tokens: make([]wordCache[wordToken], len(languages))}
}

// plain is the Analyzer of the package's functions: nil, remembering
// nothing.
var plain *Analyzer

// maxStems bounds an Analyzer's memory: past it, it forgets every stem
// rather than track which are in use.
const maxStems = 1 << 19

func (a *Analyzer) stem(l *language, w string) string {
	if a == nil {
		return l.stemWord(w)
	}
	c := &a.stems[l.idx]
	if s, ok := c.load(w); ok {
		return s
	}
	// w may be a slice of a page's text, and a stem often a slice of its
	// word: the cache keeps copies, not the page.
	w = strings.Clone(w)
	s := l.stemWord(w)
	if a.n.Add(1) > maxStems {
		a.Forget()
	}
	c.store(w, s)
	return s
}

// Forget drops the stems and tokens a remembers.
func (a *Analyzer) Forget() {
	for i := range a.stems {
		a.stems[i].clear()
		a.tokens[i].clear()
	}
	a.n.Store(0)
	a.tn.Store(0)
}

// wordCache maps words to what analysis made of them (stems, tokens). A
// search looks up thousands of words and adds almost none, so reads go to
// an immutable map without a lock (a sync.Map's lookups were an eighth of
// a search's CPU); new words wait in a small locked map until they are a
// quarter of the big one, which is then copied with them.
type wordCache[V any] struct {
	snap   atomic.Pointer[map[string]V]
	mu     sync.Mutex
	recent map[string]V
}

func (c *wordCache[V]) load(w string) (V, bool) {
	if m := c.snap.Load(); m != nil {
		if s, ok := (*m)[w]; ok {
			return s, true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.recent[w]
	return s, ok
}

// loadBytes is load for a word in a buffer, without a string made of it.
func (c *wordCache[V]) loadBytes(w []byte) (V, bool) {
	if m := c.snap.Load(); m != nil {
		if s, ok := (*m)[string(w)]; ok {
			return s, true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.recent[string(w)]
	return s, ok
}

func (c *wordCache[V]) store(w string, s V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recent == nil {
		c.recent = map[string]V{}
	}
	c.recent[w] = s
	var old map[string]V
	if m := c.snap.Load(); m != nil {
		old = *m
	}
	if len(c.recent) < max(256, len(old)/4) {
		return
	}
	merged := make(map[string]V, len(old)+len(c.recent))
	for k, v := range old {
		merged[k] = v
	}
	for k, v := range c.recent {
		merged[k] = v
	}
	c.snap.Store(&merged)
	c.recent = nil
}

func (c *wordCache[V]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.snap.Store(nil)
	c.recent = nil
}

// stemWord stems w with the language's Snowball stemmer.
func (l *language) stemWord(w string) string {
	env := snowballstem.NewEnv(w)
	l.stem(env)
	return env.Current()
}

// lower is strings.ToLower without the copy for lowercase ASCII.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || (c >= 'A' && c <= 'Z') {
			return strings.ToLower(s)
		}
	}
	return s
}

// identifierParts splits snake_case and camelCase.
func identifierParts(s string) []string {
	var parts []string
	for _, seg := range strings.FieldsFunc(s, func(r rune) bool { return r == '_' || r == '.' }) {
		start := 0
		rs := []rune(seg)
		for i := 1; i < len(rs); i++ {
			if unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i-1]) {
				parts = append(parts, string(rs[start:i]))
				start = i
			}
		}
		parts = append(parts, string(rs[start:]))
	}
	if len(parts) < 2 {
		return nil
	}
	return parts
}

// alnumParts splits a word of letters and digits where one gives way to
// the other, as Elasticsearch's word_delimiter does: "php8", "PHP-8" and
// "PHP 8", or "es2015" and "ES 2015", then share their parts. One-letter
// parts are dropped: alone they match almost anything.
func alnumParts(s string) []string {
	var parts []string
	start, prevDigit := 0, false
	emit := func(p string, digit bool) {
		if digit || utf8.RuneCountInString(p) >= 2 {
			parts = append(parts, p)
		}
	}
	for i, r := range s {
		d := unicode.IsDigit(r)
		if i > 0 && d != prevDigit {
			emit(s[start:i], prevDigit)
			start = i
		}
		prevDigit = d
	}
	emit(s[start:], prevDigit)
	if len(parts) < 2 {
		return nil
	}
	return parts
}

// acronymPlural reports an acronym of two or more capitals with a plural
// "s": "URLs", "CPTs".
func acronymPlural(raw string) bool {
	n := len(raw)
	if n < 3 || raw[n-1] != 's' {
		return false
	}
	for i := 0; i < n-1; i++ {
		if raw[i] < 'A' || raw[i] > 'Z' {
			return false
		}
	}
	return true
}

func hasInnerUpper(s string) bool {
	prevLower := false
	for _, r := range s {
		if unicode.IsUpper(r) && prevLower {
			return true
		}
		prevLower = unicode.IsLower(r)
	}
	return false
}

// Literal reports whether an index term is a number, a version or an
// identifier: never a typo target, and without variants.
func Literal(s string) bool {
	return hasDigit(s) || strings.ContainsAny(s, "_.")
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}

func hasLetter(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	for _, r := range s {
		if !unicode.IsDigit(r) && r != '.' {
			return false
		}
	}
	return true
}

// isIdeograph reports runes of scripts written without spaces; each one
// is its own token.
func isIdeograph(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) ||
		unicode.Is(unicode.Thai, r)
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || r == '_'
}

// AppendSurfaces appends text to dst as its words' surfaces read for a
// text whose words are all ASCII: letters lowercased, and the apostrophes
// a word drops ("don't" → "dont") left out; every other byte stands, and
// a rune outside ASCII, which only separates words, becomes a space. ok
// is false, and dst is cut back, when a word has a rune outside ASCII.
// MayHoldSurface then finds the words of a surface.
func AppendSurfaces(dst []byte, text string) (_ []byte, ok bool) {
	n := len(dst)
	dst = slices.Grow(dst, len(text))
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf {
			// Most bytes: one table lookup, one store (the evidence reads
			// every shown passage).
			if c != '\'' || !inWordApostrophe(text, i, 1) {
				dst = append(dst, lowerASCII[c])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case isWordRune(r) || isIdeograph(r):
			return dst[:n], false
		case r == '’' && inWordApostrophe(text, i, size):
		default:
			dst = append(dst, ' ')
		}
		i += size
	}
	return dst, true
}

// lowerASCII maps each ASCII byte to its lowercase.
var lowerASCII = func() (t [utf8.RuneSelf]byte) {
	for c := range t {
		t[c] = byte(c)
		if 'A' <= c && c <= 'Z' {
			t[c] += 'a' - 'A'
		}
	}
	return t
}()

// inWordApostrophe reports whether the apostrophe at text[i:i+size] is
// between two ASCII letters, where scanWords drops it (the letters of a
// text AppendSurfaces reads are ASCII).
func inWordApostrophe(text string, i, size int) bool {
	letter := func(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
	return i > 0 && letter(text[i-1]) && i+size < len(text) && letter(text[i+size])
}

// MayHoldSurface reports whether surfaces, a text as AppendSurfaces gave
// it, may hold a word whose surface is t: false only where every place t
// is spelt lies inside a longer word. An acronym's plural ("CPTs") has
// the surface of its singular, so a place followed by an 's' that ends a
// word counts.
func MayHoldSurface(surfaces []byte, t string) bool {
	if t == "" {
		return false
	}
	for from := 0; ; {
		i := bytes.Index(surfaces[from:], []byte(t))
		if i < 0 {
			return false
		}
		i += from
		j := i + len(t)
		left := i == 0 || !asciiWordByte[surfaces[i-1]]
		right := j == len(surfaces) || !asciiWordByte[surfaces[j]] ||
			surfaces[j] == 's' && (j+1 == len(surfaces) || !asciiWordByte[surfaces[j+1]])
		if left && right {
			return true
		}
		from = i + 1
	}
}

// scanTokens calls fn with each raw word of text, case and diacritics
// intact. A word is a run of letters, digits, marks and '_'. Inside a word
// an apostrophe between letters is dropped ("don't" → "dont"), and a '.'
// between digits or between identifier parts is kept ("3.14", "v1.2").
//
// A word is passed as a slice of text, not a copy, unless an apostrophe
// was dropped from it: a search analyzes thousands of words of stored text
// per query, and a string for each was most of its allocations.
func scanTokens(text string, fn func(string)) {
	scanWords(text, func(raw string, _ int) { fn(raw) })
}

// scanWords is scanTokens telling fn where in text each word starts.
func scanWords(text string, fn func(raw string, at int)) {
	scanWordsWhile(text, func(raw string, at int) bool {
		fn(raw, at)
		return true
	})
}

// asciiWordByte holds the ASCII bytes of words: letters, digits and '_'.
var asciiWordByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
	}
	return t
}()

// scanWordsWhile is scanWords for a caller that may have seen enough: it
// stops after fn returns false.
func scanWordsWhile(text string, fn func(raw string, at int) bool) {
	var buf []byte // the word, once an apostrophe was dropped from it
	start, end := -1, 0
	split, stopped := false, false
	flush := func() {
		if start < 0 {
			return
		}
		w := text[start:end]
		if split {
			w = string(buf)
		}
		stopped = !fn(w, start)
		start, split = -1, false
	}
	add := func(i, size int) {
		if start < 0 {
			start = i
		}
		if split {
			buf = append(buf, text[i:i+size]...)
		}
		end = i + size
	}
	prev := rune(-1)
	for i := 0; i < len(text) && !stopped; {
		at := i
		if asciiWordByte[text[i]] {
			// Most text is ASCII: a run of its word bytes is taken whole,
			// without the Unicode tables or a call per byte (the scan was
			// a tenth of a search's instructions).
			j := i + 1
			for j < len(text) && asciiWordByte[text[j]] {
				j++
			}
			add(at, j-at)
			i, prev = j, rune(text[j-1])
			continue
		}
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		i += size
		switch {
		case r < utf8.RuneSelf && r != '\'' && r != '.':
			flush()
		case isIdeograph(r):
			flush()
			if !stopped {
				stopped = !fn(text[at:i], at)
			}
		case isWordRune(r):
			add(at, size)
		case (r == '\'' || r == '’') && start >= 0 && unicode.IsLetter(prev):
			next, _ := utf8.DecodeRuneInString(text[i:])
			if !unicode.IsLetter(next) {
				flush()
			} else if !split {
				// Skip the apostrophe and keep joining.
				buf, split = append(buf[:0], text[start:end]...), true
			}
		case r == '.' && start >= 0 && unicode.IsDigit(prev):
			next, _ := utf8.DecodeRuneInString(text[i:])
			if unicode.IsDigit(next) {
				add(at, size)
			} else {
				flush()
			}
		default:
			flush()
		}
		prev = r
	}
	if !stopped {
		flush()
	}
}

// foldMap covers letters that are not a base letter plus a combining mark,
// so NFD leaves them alone.
var foldMap = map[rune]string{
	'ł': "l", 'Ł': "L", 'ø': "o", 'Ø': "O", 'ß': "ss", 'ẞ': "SS", 'æ': "ae", 'Æ': "AE",
	'œ': "oe", 'Œ': "OE", 'đ': "d", 'Đ': "D", 'ð': "d", 'Ð': "D", 'þ': "th", 'Þ': "TH", 'ı': "i",
	'ħ': "h", 'Ħ': "H", 'ŋ': "ng", 'Ŋ': "NG",
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// folders are fold's transformers; one is not safe for concurrent use.
var folders = sync.Pool{New: func() any {
	return transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
}}

// fold removes diacritics: "Café" → "Cafe", "Łódź" → "Lodz", "Straße" →
// "Strasse".
func fold(s string) string {
	if isASCII(s) {
		return s
	}
	// A transform.Chain holds two 4 KB buffers and state: a call takes
	// one from the pool rather than allocate them for every word.
	folder := folders.Get().(transform.Transformer)
	defer folders.Put(folder)
	out, _, err := transform.String(folder, s)
	if err != nil {
		out = s
	}
	if strings.IndexFunc(out, func(r rune) bool { _, ok := foldMap[r]; return ok }) < 0 {
		return out
	}
	var b strings.Builder
	for _, r := range out {
		if m, ok := foldMap[r]; ok {
			b.WriteString(m)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Words returns the folded, lowercased words of text, stopwords kept.
func Words(text string) []string {
	var out []string
	scanTokens(text, func(raw string) {
		out = append(out, strings.ToLower(fold(raw)))
	})
	return out
}

// Initials is the set of first runes of the terms a caller looks for. It
// is asked about nearly every word of a text, so ASCII runes are looked up
// in an array, not a map.
type Initials struct {
	ascii [utf8.RuneSelf]bool
	other map[rune]bool
	// next holds, for a term starting with an ASCII letter, the letter
	// after it, a bit each (bit 26 when what follows is no letter a to z,
	// or nothing). A word of letters whose first two match no term is
	// not stemmed, in the languages whose stems keep a word's first two
	// letters (keepsTwo): words whose first letter is wanted were half of
	// a search's scanned words, those whose first two are a few in ten.
	next [26]uint32
}

// anyNext marks an initial whose terms' second letters are not all known.
const anyNext = 1 << 26

// InitialsOf collects the first runes of terms.
func InitialsOf(terms ...[]string) *Initials {
	m := &Initials{}
	for _, ts := range terms {
		for _, t := range ts {
			m.Add(t)
		}
	}
	return m
}

// Add adds term t's first rune to the set, and its second letter.
func (m *Initials) Add(t string) {
	if t == "" {
		return
	}
	r, size := utf8.DecodeRuneInString(t)
	if r >= utf8.RuneSelf {
		if m.other == nil {
			m.other = map[rune]bool{}
		}
		m.other[r] = true
		return
	}
	m.ascii[r] = true
	if 'a' <= r && r <= 'z' {
		if size < len(t) && 'a' <= t[size] && t[size] <= 'z' {
			m.next[r-'a'] |= 1 << (t[size] - 'a')
			if t[size] == 'i' {
				// English's "dying", "lying" and "tying" stem to "die",
				// "lie" and "tie".
				m.next[r-'a'] |= 1 << ('y' - 'a')
			}
		} else {
			m.next[r-'a'] |= anyNext
		}
	}
}

// Remove takes r out of the set.
func (m *Initials) Remove(r rune) {
	if r >= 0 && r < utf8.RuneSelf {
		m.ascii[r] = false
		return
	}
	delete(m.other, r)
}

func (m *Initials) has(r rune) bool {
	if r >= 0 && r < utf8.RuneSelf {
		return m.ascii[r]
	}
	return m.other[r]
}

// hasPair reports whether a term may start with the lowercase ASCII
// letters first and second, as stems that keep a word's first two
// letters do: first is in the set and some term under it has second next,
// or one under it has no second letter a to z.
func (m *Initials) hasPair(first, second byte) bool {
	next := m.next[first-'a']
	return next&anyNext != 0 || next&(1<<(second-'a')) != 0
}

// suffixOnly lists the stemmers that change only the ends of words, so
// that a word's term starts with the word's first letter. Irish removes
// initial mutations, Arabic and Tamil prefixes.
func (l *language) suffixOnly() bool {
	return l.code != "ga" && l.code != "ar" && l.code != "ta"
}

// tokenFor is token for a caller that only needs the terms starting with
// one of want's runes: any other word comes back as "" (still counted, as
// it occupies a position), without the stemming that is most of
// analysis's cost. ok is false for stopwords, as with token.
func (l *language) tokenFor(raw string, want *Initials, fast, termOnly bool, a *Analyzer) (Token, bool) {
	if asciiNumber(raw) {
		// A number is its own term, with no parts, in every language:
		// it needs none of the checks below, and costs nothing to return
		// whatever want holds (as token always did).
		if len(raw) > maxTokenRunes || l.stop(raw) {
			return Token{}, false
		}
		return Token{Surface: raw, Term: raw, Code: strings.IndexByte(raw, '.') >= 0}, true
	}
	letters := false
	if fast && want != nil {
		var skip, ok bool
		if skip, ok, letters = l.skipLetters(raw, want); skip {
			return Token{}, ok
		}
	}
	if fast && want != nil && !letters && !strings.ContainsAny(raw, "_.") && !hasInnerUpper(raw) && !hasDigit(raw) {
		s := lower(fold(raw))
		if r, _ := utf8.DecodeRuneInString(s); !want.has(r) {
			if s == "" || utf8.RuneCountInString(s) > maxTokenRunes || l.stop(s) {
				return Token{}, false
			}
			return Token{}, true
		}
	}
	if termOnly {
		if t, ok, done := l.letterToken(raw, a, true); done {
			return t, ok
		}
	}
	return l.token(raw, a)
}

// asciiNumber reports a word of ASCII digits and dots that starts with a
// digit.
func asciiNumber(raw string) bool {
	if raw == "" || raw[0] < '0' || raw[0] > '9' {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}

// skipLetters is tokenFor's shortcut for the commonest word, ASCII letters
// that are not camelCase, whose first letter is not wanted: it decides in
// one pass over the bytes, without a copy. skip is false when the word
// needs the full path; ok is false for stopwords. letters says the word is
// such a word, wanted: tokenFor's other shortcut has nothing to add.
func (l *language) skipLetters(raw string, want *Initials) (skip, ok, letters bool) {
	if len(raw) == 0 || len(raw) > maxTokenRunes {
		return false, false, false
	}
	prevLower := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case 'a' <= c && c <= 'z':
			prevLower = true
		case 'A' <= c && c <= 'Z' && !prevLower:
		default:
			return false, false, false
		}
	}
	first := raw[0] | 0x20 // a letter, lowercased
	n := len(raw)
	var second byte
	if n > 1 {
		second = raw[1] | 0x20
	}
	if want.ascii[first] && (n == 1 || !l.keepsTwo || want.hasPair(first, second)) {
		return false, false, true
	}
	if !l.mayStop(first, second, n) {
		return true, true, false
	}
	var low [maxTokenRunes]byte
	for i := 0; i < n; i++ {
		low[i] = raw[i] | 0x20
	}
	return true, !l.stopwords[string(low[:n])], false
}

// IndexTerms are the terms an index holds for text: AnalyzeFor's, with
// each identifier's parts after it and hyphenated compounds joined at the
// end. A rescoring that analyzes the same way counts what the index
// matched.
func IndexTerms(text, lang string, want *Initials) []string {
	return plain.IndexTerms(text, lang, want)
}

// IndexTerms is the package's IndexTerms, remembering stems.
func (a *Analyzer) IndexTerms(text, lang string, want *Initials) []string {
	// About one term in seven bytes of English prose: growing the slice
	// from nothing was a third of a search's allocated bytes.
	return a.AppendIndexTerms(make([]string, 0, len(text)/7+1), text, lang, want)
}

// AppendIndexTerms is IndexTerms appending to terms, for a caller that
// reuses one slice for many texts.
func (a *Analyzer) AppendIndexTerms(terms []string, text, lang string, want *Initials) []string {
	return a.AppendJoinedTerms(a.AppendWordTerms(terms, text, lang, want), text, lang, want)
}

// AppendWordTerms appends the terms of text's words, in order, each
// identifier's parts after it: AppendIndexTerms without the joined
// compounds, the part of its list where a term's place is where its word
// is.
func (a *Analyzer) AppendWordTerms(terms []string, text, lang string, want *Initials) []string {
	l := languageOf(lang)
	fast := l.suffixOnly()
	scanWords(text, func(raw string, _ int) {
		t, ok := l.tokenFor(raw, want, fast, true, a)
		if !ok {
			return
		}
		terms = append(terms, t.Term)
		terms = append(terms, t.Parts...)
	})
	return terms
}

// AppendJoinedTerms appends the terms of text's hyphenated compounds,
// joined ("plug-in" is "plugin"): the rest of AppendIndexTerms' list.
func (a *Analyzer) AppendJoinedTerms(terms []string, text, lang string, want *Initials) []string {
	l := languageOf(lang)
	fast := l.suffixOnly()
	hyphenJoins(text, func(raw string) {
		if t, ok := l.tokenFor(raw, want, fast, true, a); ok && t.Term != "" {
			terms = append(terms, t.Term)
		}
	})
	return terms
}

// LocateIndexTerms finds where terms are among text's index terms as
// AppendIndexTerms(want) lists them: fn gets the term's place in terms,
// its place in that list and the byte offset in text of the word it comes
// from, in order. terms must start with want's runes, and count[i] must
// be how many times terms[i] is in the index's list of text's terms (an
// index knows). Only words whose term may be one of terms are stemmed,
// and only until every occurrence of the terms sharing their initial was
// found; the text is read no further than the last occurrence. The joined
// compounds AppendIndexTerms lists after the words are not looked for:
// they have no place in the text's word order, so nothing near them, and
// no offset to quote. A term that is one of them keeps the scan going to
// the text's end.
func (a *Analyzer) LocateIndexTerms(text, lang string, want *Initials, terms []string, count []int, fn func(i, pos, at int)) {
	l := languageOf(lang)
	fast := l.suffixOnly()
	index := func(t string) int {
		for i, x := range terms {
			if x == t {
				return i
			}
		}
		return -1
	}
	// find holds the initials of the terms with occurrences still to
	// find, and pending how many there are under each.
	find := &Initials{}
	var pending runeCounts
	left := 0
	for i, t := range terms {
		if count[i] > 0 {
			r, _ := utf8.DecodeRuneInString(t)
			find.Add(t)
			*pending.at(r) += count[i]
			left += count[i]
		}
	}
	n := 0
	emit := func(t string, at int) {
		i := index(t)
		if i < 0 {
			return
		}
		fn(i, n, at)
		r, _ := utf8.DecodeRuneInString(t)
		p := pending.at(r)
		if *p > 0 {
			left--
		}
		if *p--; *p == 0 {
			find.Remove(r)
		}
	}
	scanWordsWhile(text, func(raw string, at int) bool {
		// Whether a word counts, and how many parts it has, is the same
		// whatever the initials asked for, but for an acronym's plural:
		// tokenFor's shortcuts ask whether "ONs" is a stopword, the full
		// analysis whether "on" is. Those are taken as want has them.
		f := find
		if fast && acronymPlural(raw) {
			f = want
		}
		t, ok := l.tokenFor(raw, f, fast, true, a)
		if !ok {
			return true
		}
		if t.Term != "" {
			emit(t.Term, at)
		}
		n++
		for _, p := range t.Parts {
			emit(p, at)
			n++
		}
		return left > 0
	})
}

// TermAt is a term of a text with its place among the text's index terms
// and the byte offset of the word it comes from, as LocateIndexTerms
// reports them.
type TermAt struct {
	Term    string
	Pos, At int
}

// AppendTermsAt appends to dst every term LocateIndexTerms may report of
// text, in text order, with the place and offset it reports them at: a
// list a caller keeps, to locate a text's terms again and again without
// analyzing it each time. Given counts that are right, LocateIndexTerms
// reports exactly the entries whose term it was asked for, stopping after
// the word where the last occurrence was found.
//
// ok is false where LocateIndexTerms' answer depends on more than the
// terms and counts it is asked: in a language whose stemmer may change a
// word's first two letters (its initials shortcut then skips words the
// full analysis matches), and in a text holding an acronym's plural that
// the shortcut and the full analysis count differently ("ONs" is a
// stopword to one and not the other, which moves the places after it;
// "APIs" is not).
func (a *Analyzer) AppendTermsAt(dst []TermAt, text, lang string) (_ []TermAt, ok bool) {
	l := languageOf(lang)
	fast := l.suffixOnly()
	if fast && !l.keepsTwo {
		return dst, false
	}
	n := 0
	ok = true
	scanWordsWhile(text, func(raw string, at int) bool {
		t, counted := l.tokenFor(raw, nil, fast, true, a)
		if fast && acronymPlural(raw) {
			// Unwanted, the word is counted by the shortcut, with no
			// parts.
			if _, short := l.tokenFor(raw, &Initials{}, fast, true, a); short != counted || len(t.Parts) > 0 {
				ok = false
				return false
			}
		}
		if !counted {
			return true
		}
		if t.Term != "" {
			dst = append(dst, TermAt{t.Term, n, at})
		}
		n++
		for _, p := range t.Parts {
			dst = append(dst, TermAt{p, n, at})
			n++
		}
		return true
	})
	return dst, ok
}

// runeCounts counts by rune, ASCII in an array: LocateIndexTerms counts
// at every occurrence it finds.
type runeCounts struct {
	ascii [utf8.RuneSelf]int
	other map[rune]*int
}

func (c *runeCounts) at(r rune) *int {
	if r >= 0 && r < utf8.RuneSelf {
		return &c.ascii[r]
	}
	if c.other == nil {
		c.other = map[rune]*int{}
	}
	p := c.other[r]
	if p == nil {
		p = new(int)
		c.other[r] = p
	}
	return p
}

// OwnTerm reports whether a word whose folded, lowercased form is s has s
// for its term, or is a stopword: then a text whose terms lack s holds no
// word of that form either.
func (a *Analyzer) OwnTerm(s, lang string) bool {
	t, ok := languageOf(lang).token(s, a)
	return !ok || t.Term == s
}

// AnalyzeFor is Analyze for scoring against known terms: a word whose term
// cannot be one of them (its first letter is not one of want's) is "".
// The length and positions are Analyze's; a nil want is Analyze.
func AnalyzeFor(text, lang string, want *Initials) []string {
	return plain.AnalyzeFor(text, lang, want)
}

// AnalyzeFor is the package's AnalyzeFor, remembering stems.
func (a *Analyzer) AnalyzeFor(text, lang string, want *Initials) []string {
	terms := make([]string, 0, len(text)/7+1) // as IndexTerms
	l := languageOf(lang)
	fast := l.suffixOnly()
	scanTokens(text, func(raw string) {
		t, ok := l.tokenFor(raw, want, fast, true, a)
		if !ok {
			return
		}
		terms = append(terms, t.Term)
	})
	return terms
}

// EachAt calls fn with each analyzed token of text in lang, in order,
// stopwords left out, and the byte offset in text of the word it comes
// from. Like AnalyzeFor, a word whose term cannot start with one of want's
// runes comes back with an empty Term and Surface, unstemmed; a nil want
// analyzes every word.
func (a *Analyzer) EachAt(text, lang string, want *Initials, fn func(t Token, at int)) {
	l := languageOf(lang)
	fast := l.suffixOnly()
	scanWords(text, func(raw string, at int) {
		if t, ok := l.tokenFor(raw, want, fast, false, a); ok {
			fn(t, at)
		}
	})
}
