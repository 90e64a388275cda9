// Package analysis turns text into index terms: words and identifiers,
// folded, lowercased, stopwords dropped, stemmed per language. Everything
// here is a pure function; the tables it reads are built once at init.
package analysis

import (
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
// one word: "co-culture" → "coculture", "plug-in" → "plugin", "IL-6" →
// "IL6". Writers use both spellings, so the index holds the joined form
// after the pieces. Queries don't add it: a query's own compound would
// then count twice, as pieces and as a rare joined term, which measured
// worse than matching the pieces alone.
func hyphenJoins(text string, fn func(string)) {
	var joined []byte
	pieces, inWord := 0, false
	flush := func() {
		// A Greek symbol splits words anyway ("TNF-α" is "tnf alpha").
		if pieces >= 2 && pieces <= 4 && !strings.ContainsFunc(string(joined), isGreek) {
			fn(string(joined))
		}
		joined, pieces, inWord = joined[:0], 0, false
	}
	prevHyphen := false
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
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
		m[code] = &language{idx: i, code: code, stem: stemmers[code], stopwords: loadStopwords(code)}
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
		if p == "" || p == s || l.stopwords[p] {
			continue
		}
		if utf8.RuneCountInString(p) >= 4 && !hasDigit(p) {
			p = a.stem(l, p)
		}
		t.Parts = append(t.Parts, p)
	}
	return t, true
}

// surface is token's first half: the folded, lowercased word, and
// whether it was camelCase. ok is false for stopwords.
func (l *language) surface(raw string) (s string, camel, ok bool) {
	camel = hasInnerUpper(raw)
	if acronymPlural(raw) {
		// "APIs", "CPUs", "VSMCs": the stemmer keeps the s when no vowel
		// precedes it, so the plural would not meet the singular.
		raw = raw[:len(raw)-1]
		camel = false
	}
	s = lower(fold(raw))
	if s == "" || utf8.RuneCountInString(s) > maxTokenRunes || l.stopwords[s] {
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
	stems []sync.Map // per language: word → stem
	n     atomic.Int64
}

// NewAnalyzer returns an Analyzer that remembers stems.
func NewAnalyzer() *Analyzer { return &Analyzer{stems: make([]sync.Map, len(languages))} }

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
	m := &a.stems[l.idx]
	if v, ok := m.Load(w); ok {
		return v.(string)
	}
	s := l.stemWord(w)
	if a.n.Add(1) > maxStems {
		a.Forget()
	}
	m.Store(strings.Clone(w), s)
	return s
}

// Forget drops the stems a remembers.
func (a *Analyzer) Forget() {
	for i := range a.stems {
		a.stems[i].Clear()
	}
	a.n.Store(0)
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
// the other, as Elasticsearch's word_delimiter does: "IL6" and "IL-6",
// "oct4" and "Oct-4", "php8" and "PHP 8" then share their parts. One-letter
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
// "s": "URLs", "SNPs".
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

// scanTokens calls fn with each raw word of text, case and diacritics
// intact. A word is a run of letters, digits, marks and '_'. Inside a word
// an apostrophe between letters is dropped ("don't" → "dont"), and a '.'
// between digits or between identifier parts is kept ("3.14", "v1.2").
func scanTokens(text string, fn func(string)) {
	var buf []byte
	flush := func() {
		if len(buf) > 0 {
			greekWord(buf, fn)
			buf = buf[:0]
		}
	}
	prev := rune(-1)
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		i += size
		switch {
		case r < utf8.RuneSelf && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_'):
			// Most text is ASCII: skip the Unicode tables.
			buf = append(buf, byte(r))
		case isIdeograph(r):
			flush()
			fn(string(r))
		case isWordRune(r):
			buf = utf8.AppendRune(buf, r)
		case (r == '\'' || r == '’') && len(buf) > 0 && unicode.IsLetter(prev):
			next, _ := utf8.DecodeRuneInString(text[i:])
			if !unicode.IsLetter(next) {
				flush()
			}
			// Otherwise skip the apostrophe and keep joining.
		case r == '.' && len(buf) > 0 && unicode.IsDigit(prev):
			next, _ := utf8.DecodeRuneInString(text[i:])
			if unicode.IsDigit(next) {
				buf = append(buf, '.')
			} else {
				flush()
			}
		default:
			flush()
		}
		prev = r
	}
	flush()
}

// greekNames spells out Greek letters: technical writing uses them as
// symbols ("TNF-α", "IL-1β", "NF-κB") as often as it writes their names
// ("TNF-alpha"), and a symbol glued to Latin letters would otherwise make
// a word nobody types.
var greekNames = map[rune]string{
	'α': "alpha", 'β': "beta", 'γ': "gamma", 'δ': "delta", 'ε': "epsilon", 'ζ': "zeta", 'η': "eta",
	'θ': "theta", 'ι': "iota", 'κ': "kappa", 'λ': "lambda", 'μ': "mu", 'ν': "nu", 'ξ': "xi",
	'ο': "omicron", 'π': "pi", 'ρ': "rho", 'σ': "sigma", 'ς': "sigma", 'τ': "tau", 'υ': "upsilon",
	'φ': "phi", 'χ': "chi", 'ψ': "psi", 'ω': "omega", 'ϕ': "phi", 'ϵ': "epsilon",
}

func isGreek(r rune) bool { return r >= 0x370 && r <= 0x3ff || r >= 0x1f00 && r <= 0x1fff }

// greekWord passes word to fn, except that Greek letters used as symbols
// become their names: a Greek letter inside a word of other letters or
// digits splits it there, and a Greek word of one letter is spelled out.
// Greek-language words (two or more Greek letters alone) stay as they are.
func greekWord(word []byte, fn func(string)) {
	greek, other := 0, 0
	for _, r := range string(word) {
		if isGreek(r) {
			greek++
		} else {
			other++
		}
	}
	switch {
	case greek == 0:
		fn(string(word))
		return
	case other == 0 && greek > 1:
		fn(string(word))
		return
	}
	start := 0
	s := string(word)
	for i, r := range s {
		if !isGreek(r) {
			continue
		}
		if i > start {
			fn(s[start:i])
		}
		lr := unicode.ToLower(r)
		if name, ok := greekNames[lr]; ok {
			fn(name)
		} else if n := norm.NFD.String(string(lr)); n != "" {
			if r0, _ := utf8.DecodeRuneInString(n); greekNames[r0] != "" {
				fn(greekNames[r0]) // an accented letter: ά, ὠ
			}
		}
		start = i + utf8.RuneLen(r)
	}
	if start < len(s) {
		fn(s[start:])
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

// fold removes diacritics: "Café" → "Cafe", "Łódź" → "Lodz", "Straße" →
// "Strasse".
func fold(s string) string {
	if isASCII(s) {
		return s
	}
	// A transform.Chain keeps buffers between calls: each call gets its
	// own, and only non-ASCII words pay for it.
	folder := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
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

// Initials is the set of first runes of the terms a caller looks for.
type Initials map[rune]bool

// InitialsOf collects the first runes of terms.
func InitialsOf(terms ...[]string) Initials {
	m := Initials{}
	for _, ts := range terms {
		for _, t := range ts {
			if r, _ := utf8.DecodeRuneInString(t); t != "" {
				m[r] = true
			}
		}
	}
	return m
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
func (l *language) tokenFor(raw string, want Initials, fast bool, a *Analyzer) (Token, bool) {
	if fast && want != nil && !strings.ContainsAny(raw, "_.") && !hasInnerUpper(raw) && !hasDigit(raw) {
		s := lower(fold(raw))
		if r, _ := utf8.DecodeRuneInString(s); !want[r] {
			if s == "" || utf8.RuneCountInString(s) > maxTokenRunes || l.stopwords[s] {
				return Token{}, false
			}
			return Token{}, true
		}
	}
	return l.token(raw, a)
}

// IndexTerms are the terms an index holds for text: AnalyzeFor's, with
// each identifier's parts after it and hyphenated compounds joined at the
// end. A rescoring that analyzes the same way counts what the index
// matched.
func IndexTerms(text, lang string, want Initials) []string { return plain.IndexTerms(text, lang, want) }

// IndexTerms is the package's IndexTerms, remembering stems.
func (a *Analyzer) IndexTerms(text, lang string, want Initials) []string {
	var terms []string
	l := languageOf(lang)
	fast := l.suffixOnly()
	emit := func(raw string) {
		t, ok := l.tokenFor(raw, want, fast, a)
		if !ok {
			return
		}
		terms = append(terms, t.Term)
		terms = append(terms, t.Parts...)
	}
	scanTokens(text, emit)
	hyphenJoins(text, func(raw string) {
		if t, ok := l.tokenFor(raw, want, fast, a); ok && t.Term != "" {
			terms = append(terms, t.Term)
		}
	})
	return terms
}

// AnalyzeFor is Analyze for scoring against known terms: a word whose term
// cannot be one of them (its first letter is not one of want's) is "".
// The length and positions are Analyze's; a nil want is Analyze.
func AnalyzeFor(text, lang string, want Initials) []string { return plain.AnalyzeFor(text, lang, want) }

// AnalyzeFor is the package's AnalyzeFor, remembering stems.
func (a *Analyzer) AnalyzeFor(text, lang string, want Initials) []string {
	var terms []string
	l := languageOf(lang)
	fast := l.suffixOnly()
	scanTokens(text, func(raw string) {
		t, ok := l.tokenFor(raw, want, fast, a)
		if !ok {
			return
		}
		terms = append(terms, t.Term)
	})
	return terms
}

// Each calls fn with each analyzed token of text in lang, in order,
// stopwords left out. Like AnalyzeFor, a word whose term cannot start with
// one of want's runes comes back with an empty Term and Surface, unstemmed;
// a nil want analyzes every word.
func (a *Analyzer) Each(text, lang string, want Initials, fn func(Token)) {
	l := languageOf(lang)
	fast := l.suffixOnly()
	scanTokens(text, func(raw string) {
		if t, ok := l.tokenFor(raw, want, fast, a); ok {
			fn(t)
		}
	})
}
