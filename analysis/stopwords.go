package analysis

import (
	"embed"
	"strings"
)

// Small per-language stopword lists, one file per language code. They are
// general lists (after Snowball's), never tuned to a corpus.
//
//go:embed stopwords/*.txt
var stopwordFS embed.FS

// loadStopwords returns the folded stopwords of a language code, or an
// empty set when the repo has no list for it.
func loadStopwords(code string) map[string]bool {
	set := map[string]bool{}
	b, err := stopwordFS.ReadFile("stopwords/" + code + ".txt")
	if err != nil {
		return set
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, w := range strings.Fields(line) {
			set[strings.ToLower(fold(w))] = true
		}
	}
	return set
}

// fillerWords are words a question is made of that say nothing about what
// is asked: "tell me about the thing".
var fillerWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`thing things stuff something anything everything explain tell show
		describe please`) {
		m[w] = true
	}
	return m
}()

// IsFiller reports a filler word (a surface form). Queries drop them, but
// only for matching and confidence; a query of fillers alone matches
// nothing.
func IsFiller(surface string) bool { return fillerWords[surface] }
