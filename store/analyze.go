package store

import (
	"strings"
	"unicode"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// analyzerVersion changes whenever Analyze produces different terms for the
// same input; the index is rebuilt from stored chunks when it differs.
const analyzerVersion = "1"

var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by for from has have how i if in into is it its
		of on or that the their there these this to was were what when where which who why will with you your
		do does did can could should would about me my we our us they them he she his her not no so than then
		too very just also`) {
		stopwords[w] = true
	}
}

// Analyze turns text into index terms: Unicode words lowercased, diacritics
// folded, stopwords dropped, English-stemmed when at least 4 letters long.
func Analyze(text, lang string) []string {
	var terms []string
	for _, tok := range tokenize(text) {
		if stopwords[tok] {
			continue
		}
		terms = append(terms, stem(tok))
	}
	return terms
}

func indexTerms(text, lang string) string {
	return strings.Join(Analyze(text, lang), " ")
}

var folder = transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)

func fold(s string) string {
	out, _, err := transform.String(folder, s)
	if err != nil {
		return s
	}
	return out
}

func tokenize(text string) []string {
	text = strings.ToLower(fold(text))
	return strings.FieldsFunc(text, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
	})
}

func stem(tok string) string {
	if len([]rune(tok)) < 4 || strings.ContainsAny(tok, "_0123456789") {
		return tok
	}
	env := snowballstem.NewEnv(tok)
	english.Stem(env)
	return env.Current()
}
