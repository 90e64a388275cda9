package insights

import (
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/askwp/askwpd/analysis"
)

// Grouping by meaning, with the project's own analysis and no model:
//
//  1. A question becomes its words: analysis's tokens, without stopwords
//     and the words that only ask ("can you tell me").
//  2. Over all the questions of the report, a rare word folds into a
//     frequent one it is a typo of, by the search's edit-distance rule
//     made one letter stricter, and at least twice as frequent, so the common spelling wins. A word
//     left alone that the search corrected to a site word takes that
//     word; a word of the site's synonym rules takes the rule's first
//     form. Words then become analysis's stems, and a stem folds into a
//     more frequent variant (one the prefix of the other, five letters or
//     more: "deliv", "deliveri").
//  3. Questions with the same terms are one key. Keys are grouped
//     greedily, most asked first. A group's core is the terms at least
//     half its questions hold; a key joins the group whose core it
//     shares most, when it holds at least half the core, the core makes
//     at least a third of its terms, and (for a key of three terms or
//     more) two terms are shared. Otherwise it starts a group.

// askWords are the words of a question that ask rather than name what is
// asked. analysis drops the general stopwords; these are what a question
// to a site adds to them.
var askWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`can could would should will may might must do does did done is are was were be been
		have has had get gets got need needs want wants wanted like find look looking search know tell show give
		please pls hi hello hey thanks thank ok okay yes info information anything something way ways
		site website web page pages much many any anyone someone`) {
		askWords[w] = true
	}
}

// placeholders are pii.Redact's replacements: they say nothing of the topic.
var placeholders = strings.NewReplacer("[email]", " ", "[phone]", " ", "[number]", " ")

// grouper turns questions into groups of keys.
type grouper struct {
	syn   *analysis.Synonyms
	stems map[string]string // a synonym's form → its term
}

// word is one content word of a question: as written (folded and
// lowercased) and as the index term.
type word struct{ surface, term string }

// words are a question's content words, each surface once.
func (g *grouper) words(text string) []word {
	var out []word
	for _, tok := range analysis.AnalyzeTokens(placeholders.Replace(text), "") {
		s := tok.Surface
		if askWords[s] || analysis.IsFiller(s) || tok.Term == "" {
			continue
		}
		dup := false
		for _, w := range out {
			dup = dup || w.surface == s
		}
		if !dup {
			out = append(out, word{s, tok.Term})
		}
	}
	return out
}

// termOf is a word's term once typos are folded (fold maps a surface to
// the surface it folds into, term a surface to its term). The search's
// correction of a word counts when one question alone spells it so, and
// more hold the site's word: a word the site lacks ("card", "work") is
// often close to one it has ("care", "worm"), and is then no typo.
func (g *grouper) termOf(w word, fold, term map[string]string, corr map[string]string, sfreq, tfreq map[string]int) string {
	s := fold[w.surface]
	t := term[s]
	if c := corr[w.surface]; s == w.surface && c != "" && sfreq[s] == 1 && tfreq[c] > 1 {
		t = c
	}
	if g.syn != nil {
		t = g.synonym(s, t)
	}
	return t
}

// synonym maps a word of the site's synonym rules to one term for all its
// forms: a rewrite's target, or the least of a set of equivalents.
func (g *grouper) synonym(surface, term string) string {
	forms, ok := g.syn.Rewrite(surface)
	if !ok {
		forms = append(g.syn.Equivalents(surface), surface)
		if len(forms) == 1 {
			return term
		}
		sort.Strings(forms)
	}
	if len(forms) == 0 {
		return term
	}
	if t, ok := g.stems[forms[0]]; ok {
		return t
	}
	t := term
	if ts := analysis.Analyze(forms[0], ""); len(ts) > 0 {
		t = strings.Join(ts, " ")
	}
	if g.stems == nil {
		g.stems = map[string]string{}
	}
	g.stems[forms[0]] = t
	return t
}

// foldWords maps each word to the word it folds into (itself when none),
// given how many questions hold each: into the most frequent word that
// match accepts.
func foldWords(freq map[string]int, match func(rare, common string) bool) map[string]string {
	order := make([]string, 0, len(freq))
	for t := range freq {
		order = append(order, t)
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if freq[a] != freq[b] {
			return freq[a] > freq[b]
		}
		if la, lb := utf8.RuneCountInString(a), utf8.RuneCountInString(b); la != lb {
			return la < lb
		}
		return a < b
	})
	to := make(map[string]string, len(order))
	var canon []string // the terms that fold into nothing, most frequent first
	for _, t := range order {
		best := ""
		for _, c := range canon {
			if match(t, c) {
				best = c
				break
			}
		}
		if best == "" {
			canon = append(canon, t)
			best = t
		}
		to[t] = best
	}
	return to
}

// variant reports one stem the prefix of the other, the shorter of five
// letters or more: stemmers keep some derivations apart.
func variant(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return utf8.RuneCountInString(a) >= 5 && strings.HasPrefix(b, a)
}

// typo reports whether a may be a misspelling of b: the search's rule,
// one letter stricter, since two questions' words are both real words
// more often than a query word and the site's: within edit distance 1
// for words of 5–6 letters and 2 for longer ones ("work" and "worm" stay
// apart), with the first letter right or swapped with the second.
func typo(a, b string) bool {
	ra, rb := []rune(a), []rune(b)
	n := min(len(ra), len(rb))
	if n < 5 || isNumeric(a) || isNumeric(b) {
		return false
	}
	k := 1
	if n >= 7 {
		k = 2
	}
	if ra[0] != rb[0] && !(len(ra) > 1 && len(rb) > 1 && ra[0] == rb[1] && ra[1] == rb[0]) {
		return false
	}
	return analysis.Distance(ra, rb, k) <= k
}

func isNumeric(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// cluster groups keys (sorted term lists) given how many questions each
// has. It returns, for each key, the index of its group's first key.
func cluster(keys [][]string, count []int) []int {
	groups, groupOf := seedGroups(keys, count)
	into := mergeGroups(groups)
	for k, gi := range groupOf {
		for {
			next, ok := into[gi]
			if !ok {
				break
			}
			gi = next
		}
		groupOf[k] = gi
	}
	return groupOf
}

// termGroup is a group of keys as cluster builds it.
type termGroup struct {
	n     int
	terms map[string]int // questions holding each term
	core  []string
}

// seedOrder is the order keys are placed in: among keys asked as often,
// the most central first, the one whose terms the other questions hold
// most.
func seedOrder(keys [][]string, count []int) []int {
	tfreq := map[string]int{}
	for k, key := range keys {
		for _, t := range key {
			tfreq[t] += count[k]
		}
	}
	central := make([]float64, len(keys))
	idx := make([]int, len(keys))
	for k, key := range keys {
		idx[k] = k
		for _, t := range key {
			central[k] += float64(tfreq[t])
		}
		central[k] /= float64(len(key))
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ka, kb := idx[a], idx[b]
		if count[ka] != count[kb] {
			return count[ka] > count[kb]
		}
		if central[ka] != central[kb] {
			return central[ka] > central[kb]
		}
		return strings.Join(keys[ka], " ") < strings.Join(keys[kb], " ")
	})
	return idx
}

// seedGroups places each key, in seedOrder, into the group whose core it
// is most like, or a group of its own. The groups are keyed by their
// first key.
func seedGroups(keys [][]string, count []int) (map[int]*termGroup, []int) {
	groups := map[int]*termGroup{}
	byTerm := map[string][]int{}
	groupOf := make([]int, len(keys))
	for _, k := range seedOrder(keys, count) {
		key := keys[k]
		best, bestSim := -1, 0.0
		seen := map[int]bool{}
		for _, t := range key {
			for _, gi := range byTerm[t] {
				if seen[gi] {
					continue
				}
				seen[gi] = true
				g := groups[gi]
				shared := intersect(key, g.core)
				if !joins(shared, len(key), len(g.core)) {
					continue
				}
				sim := float64(shared) / math.Sqrt(float64(len(key)*len(g.core)))
				if sim > bestSim || (sim == bestSim && g.n > groups[best].n) {
					best, bestSim = gi, sim
				}
			}
		}
		if best < 0 {
			best = k
			groups[k] = &termGroup{terms: map[string]int{}}
		}
		g := groups[best]
		g.n += count[k]
		for _, t := range key {
			if g.terms[t] == 0 {
				byTerm[t] = append(byTerm[t], best)
			}
			g.terms[t] += count[k]
		}
		g.core = coreOf(g.terms, g.n)
		groupOf[k] = best
	}
	return groups, groupOf
}

// mergeGroups joins groups that ask what a larger one asks: a group that
// began from a less central key joins a larger one when its core would
// join it as a key. It returns where each joined group went.
func mergeGroups(groups map[int]*termGroup) map[int]int {
	order := make([]int, 0, len(groups))
	for gi := range groups {
		order = append(order, gi)
	}
	sort.Slice(order, func(a, b int) bool {
		if groups[order[a]].n != groups[order[b]].n {
			return groups[order[a]].n < groups[order[b]].n
		}
		return order[a] < order[b]
	})
	into := map[int]int{}
	for i, small := range order {
		sg := groups[small]
		best, bestSim := -1, 0.0
		for _, big := range order[i+1:] {
			bg := groups[big]
			shared := intersect(sg.core, bg.core)
			if shared == 0 || !joins(shared, len(sg.core), len(bg.core)) {
				continue
			}
			if sim := float64(shared) / math.Sqrt(float64(len(sg.core)*len(bg.core))); sim > bestSim {
				best, bestSim = big, sim
			}
		}
		if best < 0 {
			continue
		}
		bg := groups[best]
		for t, n := range sg.terms {
			bg.terms[t] += n
		}
		bg.n += sg.n
		bg.core = coreOf(bg.terms, bg.n)
		into[small] = best
	}
	return into
}

// joins is the rule by which a key of n terms, sharing shared of them
// with a group's core of c terms, joins the group.
func joins(shared, n, c int) bool {
	return 2*shared >= c && 3*shared >= n && (shared >= 2 || n <= 2)
}

// coreOf is the terms at least half of a group's n questions hold.
func coreOf(terms map[string]int, n int) []string {
	var core []string
	for t, c := range terms {
		if 2*c >= n {
			core = append(core, t)
		}
	}
	sort.Strings(core)
	return core
}

// intersect counts the terms two sorted, distinct lists share.
func intersect(a, b []string) int {
	i, j, n := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			n++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return n
}
