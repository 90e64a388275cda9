package analysis

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// Synonyms is a site's synonym configuration, read from a file in the
// Solr format:
//
//	# comment
//	shortcuts => quick links      (rewrite: the left side is replaced)
//	homepage, home page => home   (several left sides)
//	docs, documentation, manual   (equivalents: each adds the others)
//
// Entries of several words are phrase rules and run on the query text
// before it is tokenized; single words run on the tokens after.
type Synonyms struct {
	phraseRewrite map[string]string   // "home page" → "home"
	wordRewrite   map[string][]string // "homepage" → ["home"]
	equivalents   map[string][]string // "docs" → ["documentation", "manual"]
}

// LoadSynonyms reads a synonyms file.
func LoadSynonyms(path string) (*Synonyms, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("analysis: synonyms: %w", err)
	}
	defer f.Close()
	s, err := ParseSynonyms(f)
	if err != nil {
		return nil, fmt.Errorf("analysis: synonyms %s: %w", path, err)
	}
	return s, nil
}

// ParseSynonyms reads synonym rules from r.
func ParseSynonyms(r io.Reader) (*Synonyms, error) {
	s := &Synonyms{
		phraseRewrite: map[string]string{},
		wordRewrite:   map[string][]string{},
		equivalents:   map[string][]string{},
	}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if lhs, rhs, ok := strings.Cut(line, "=>"); ok {
			to := normPhrase(rhs)
			if to == "" {
				return nil, fmt.Errorf("line %d: empty right side", n)
			}
			for _, from := range strings.Split(lhs, ",") {
				from = normPhrase(from)
				switch {
				case from == "":
					return nil, fmt.Errorf("line %d: empty left side", n)
				case strings.Contains(from, " "):
					s.phraseRewrite[from] = to
				default:
					s.wordRewrite[from] = strings.Fields(to)
				}
			}
			continue
		}
		var group []string
		for _, w := range strings.Split(line, ",") {
			if w = normPhrase(w); w != "" {
				group = append(group, w)
			}
		}
		if len(group) < 2 {
			return nil, fmt.Errorf("line %d: want \"a, b\" or \"a => b\"", n)
		}
		for _, w := range group {
			for _, o := range group {
				if o != w {
					s.equivalents[w] = append(s.equivalents[w], o)
				}
			}
		}
	}
	return s, sc.Err()
}

// normPhrase folds, lowercases and single-spaces words, stopwords kept.
func normPhrase(s string) string {
	return strings.Join(Words(s), " ")
}

// Rewrite returns the words a rewrite rule replaces word (a folded,
// lowercased surface form) with.
func (s *Synonyms) Rewrite(word string) ([]string, bool) {
	if s == nil {
		return nil, false
	}
	to, ok := s.wordRewrite[word]
	return to, ok
}

// Equivalents returns the words and phrases an equivalence rule adds to
// word.
func (s *Synonyms) Equivalents(word string) []string {
	if s == nil {
		return nil
	}
	return s.equivalents[word]
}

// RewritePhrases applies the phrase rules to a query's normalized text.
// Multi-word equivalents are appended, so "quick links" also finds pages
// that say "shortcuts".
func (s *Synonyms) RewritePhrases(text string) string {
	if s == nil || (len(s.phraseRewrite) == 0 && len(s.equivalents) == 0) {
		return text
	}
	padded := " " + normPhrase(text) + " "
	changed := false
	for from, to := range s.phraseRewrite {
		if strings.Contains(padded, " "+from+" ") {
			padded = strings.ReplaceAll(padded, " "+from+" ", " "+to+" ")
			changed = true
		}
	}
	var extra []string
	for from, others := range s.equivalents {
		if strings.Contains(from, " ") && strings.Contains(padded, " "+from+" ") {
			extra = append(extra, others...)
			changed = true
		}
	}
	if !changed {
		return text
	}
	return strings.TrimSpace(padded + " " + strings.Join(extra, " "))
}
