package insights

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/askwp/askwpd/store"
)

// Report is what visitors asked over a window and what the site failed
// to answer, grouped by meaning.
type Report struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// RetentionDays is how long questions are kept; 0 means the log is
	// off.
	RetentionDays int `json:"retention_days"`
	Questions     int `json:"questions"`
	Searches      int `json:"searches"`
	ChatTurns     int `json:"chat_turns"`
	// Ignored counts questions with no content words ("hi", "thanks"):
	// they are in no group.
	Ignored int `json:"ignored"`
	// ByStatus counts questions by what the site did: answered,
	// no_match, thin, clarify, down_voted.
	ByStatus map[string]int `json:"by_status"`
	// Outcomes counts chat turns by outcome (sourced, unsourced, refused,
	// provider_error, error).
	Outcomes  map[string]int `json:"chat_outcomes"`
	VotesUp   int            `json:"votes_up"`
	VotesDown int            `json:"votes_down"`
	// Gaps are the groups the site mostly fails to answer, highest Score
	// first: by count, a no_match weighing most, then thin, then clarify.
	Gaps []Group `json:"gaps"`
	// Answered are the groups the site answers, most asked first.
	Answered []Group `json:"answered"`
	// Daily counts questions by day and status, oldest first.
	Daily []Day `json:"daily"`
}

// Group is questions that ask the same thing.
type Group struct {
	// Terms are the analyzed words the group's questions share.
	Terms []string `json:"terms"`
	// Kind is the group's status: its most common failure for a gap,
	// "answered" otherwise.
	Kind   string `json:"kind"`
	Count  int    `json:"count"`
	Failed int    `json:"failed"`
	// Score ranks the gaps: each failed question counts by its kind, a
	// no match 3, a thin answer or a down vote 2, a clarification 1, so
	// that the worst failures lead at equal counts and a frequent
	// question leads a rare one.
	Score int `json:"score"`
	// ByStatus counts the group's questions by status.
	ByStatus map[string]int `json:"by_status"`
	// Examples are the group's phrasings, most asked first.
	Examples []string `json:"examples"`
	// Phrasings counts every phrasing of the group (askwpd gaps -v lists
	// them); the JSON report keeps to the examples.
	Phrasings map[string]int `json:"-"`
	// NearMiss is the page searches found most often for a gap's
	// questions without answering them; empty when they found nothing.
	NearMiss string `json:"near_miss,omitempty"`
	// Pages are the pages that answer an answered group, most often
	// first.
	Pages     []string  `json:"pages,omitempty"`
	Comments  []string  `json:"comments,omitempty"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// Trend compares the last 7 days with the 7 before: new, rising,
	// falling or steady.
	Trend    string `json:"trend"`
	Recent   int    `json:"recent"`
	Previous int    `json:"previous"`
	// Prompt is what to write so that the site answers a gap.
	Prompt string `json:"prompt,omitempty"`
}

// Day is one day's questions by status.
type Day struct {
	Date     string         `json:"date"` // YYYY-MM-DD, UTC
	ByStatus map[string]int `json:"by_status"`
}

// failWeight is what a failed question of each kind adds to its group's
// Score.
var failWeight = map[string]int{"no_match": 3, "thin": 2, "down_voted": 2, "clarify": 1}

// Statuses, worst first; answered last.
var kinds = []string{"no_match", "thin", "clarify", "down_voted", "answered"}

func kindRank(k string) int {
	for i, x := range kinds {
		if x == k {
			return i
		}
	}
	return len(kinds)
}

// statusOf says what the site did for one question.
func statusOf(q *store.Question) string {
	switch {
	case q.Action == "no_match" || q.Evidence == "none":
		return "no_match"
	case q.Evidence == "thin":
		return "thin"
	case q.Action == "clarify" || q.Action == "ambiguous":
		return "clarify"
	case q.Vote < 0:
		return "down_voted"
	}
	return "answered"
}

// ReportOptions shape a report.
type ReportOptions struct {
	// Days is the window, ending now; default 30.
	Days int
	// Limit caps each list of groups; default 50.
	Limit int
	// Now is the end of the window; default the store's clock.
	Now time.Time
	// Site, when set, keeps the questions of one site (a blog id or home
	// URL, as logged) on a multisite network.
	Site string
}

// cachedReport is the last report: grouping a month of questions takes
// a good part of a second, and /admin asks on every load.
type cachedReport struct {
	days, limit int
	site        string
	gen         int64
	at          time.Time
	r           *Report
}

// reportReuse is how long a report is reused while nothing changed.
const reportReuse = time.Minute

// Report reads the log over the window and groups it. The caller must
// not change the report: it may be handed out again.
func (l *Log) Report(ctx context.Context, opt ReportOptions) (*Report, error) {
	if opt.Days <= 0 {
		opt.Days = 30
	}
	if opt.Limit <= 0 {
		opt.Limit = 50
	}
	if !opt.Now.IsZero() {
		return l.report(ctx, opt)
	}
	opt.Now = l.db.Now()
	gen := l.gen.Load()
	l.cacheMu.Lock()
	c := l.cache
	l.cacheMu.Unlock()
	if c != nil && c.days == opt.Days && c.limit == opt.Limit && c.site == opt.Site && c.gen == gen && opt.Now.Sub(c.at) < reportReuse && !opt.Now.Before(c.at) {
		return c.r, nil
	}
	r, err := l.report(ctx, opt)
	if err != nil {
		return nil, err
	}
	l.cacheMu.Lock()
	l.cache = &cachedReport{days: opt.Days, limit: opt.Limit, site: opt.Site, gen: gen, at: opt.Now, r: r}
	l.cacheMu.Unlock()
	return r, nil
}

func (l *Log) report(ctx context.Context, opt ReportOptions) (*Report, error) {
	r := &Report{Until: opt.Now.UTC(), Since: opt.Now.Add(-time.Duration(opt.Days) * 24 * time.Hour).UTC(),
		RetentionDays: int(l.opt.Retention / (24 * time.Hour)), ByStatus: map[string]int{}, Outcomes: map[string]int{},
		Gaps: []Group{}, Answered: []Group{}}
	g := &grouper{syn: l.opt.Synonyms}
	rows, voc, err := l.collect(ctx, opt, r, g)
	if err != nil {
		return nil, err
	}
	keys, counts, keyOf := groupKeys(rows, g, voc)
	groupOf := cluster(keys, counts)
	accs := map[int]*groupAcc{}
	recentFrom, previousFrom := opt.Now.Add(-7*24*time.Hour), opt.Now.Add(-14*24*time.Hour)
	for i, rw := range rows {
		gi := groupOf[keyOf[i]]
		a := accs[gi]
		if a == nil {
			a = &groupAcc{g: Group{Terms: keys[gi], ByStatus: map[string]int{}, FirstSeen: rw.q.At.UTC()},
				phrasing: map[string]int{}, nearMiss: map[string]int{}, pages: map[string]int{}}
			accs[gi] = a
		}
		a.add(rw, recentFrom, previousFrom)
	}
	l.finish(ctx, r, accs, recentFrom, opt.Limit)
	return r, nil
}

// reportRow is one question the report groups.
type reportRow struct {
	q      *store.Question
	status string
	words  []word
}

// vocabulary is how often the questions use each word: by surface form,
// the surface's term, and by term.
type vocabulary struct {
	sfreq    map[string]int
	sterm    map[string]string
	rawTerms map[string]int
}

// collect reads the window's questions into r's counts and its daily
// series, and returns those with words to group.
func (l *Log) collect(ctx context.Context, opt ReportOptions, r *Report, g *grouper) ([]reportRow, vocabulary, error) {
	var rows []reportRow
	voc := vocabulary{sfreq: map[string]int{}, sterm: map[string]string{}, rawTerms: map[string]int{}}
	days := map[string]map[string]int{}
	err := l.db.EachQuestion(ctx, r.Since, func(q *store.Question) error {
		if q.At.After(opt.Now) || (opt.Site != "" && q.Site != opt.Site) {
			return nil
		}
		st := statusOf(q)
		r.Questions++
		r.ByStatus[st]++
		if q.Kind == "chat" {
			r.ChatTurns++
			r.Outcomes[q.Outcome]++
		} else {
			r.Searches++
		}
		switch {
		case q.Vote > 0:
			r.VotesUp++
		case q.Vote < 0:
			r.VotesDown++
		}
		day := q.At.UTC().Format("2006-01-02")
		if days[day] == nil {
			days[day] = map[string]int{}
		}
		days[day][st]++
		ws := g.words(q.Text)
		if len(ws) == 0 {
			r.Ignored++
			return nil
		}
		for _, w := range ws {
			voc.sfreq[w.surface]++
			voc.sterm[w.surface] = w.term
			voc.rawTerms[w.term]++
		}
		rows = append(rows, reportRow{q, st, ws})
		return nil
	})
	if err != nil {
		return nil, voc, err
	}
	for d := r.Since.Truncate(24 * time.Hour); !d.After(r.Until); d = d.Add(24 * time.Hour) {
		key := d.Format("2006-01-02")
		by := days[key]
		if by == nil {
			by = map[string]int{}
		}
		r.Daily = append(r.Daily, Day{Date: key, ByStatus: by})
	}
	return rows, voc, nil
}

// groupKeys gives each row its key, the sorted list of its folded terms,
// and returns the distinct keys, how many rows hold each, and each row's
// key.
func groupKeys(rows []reportRow, g *grouper, voc vocabulary) ([][]string, []int, []int) {
	// Typos fold into the questions' common spellings first; the
	// search's corrections, to the site's words, apply to what is left.
	sfreq := voc.sfreq
	sfold := foldWords(sfreq, func(rare, common string) bool { return sfreq[common] >= 2*sfreq[rare] && typo(rare, common) })
	terms := make([][]string, len(rows))
	tfreq := map[string]int{}
	for i, rw := range rows {
		for _, w := range rw.words {
			if t := g.termOf(w, sfold, voc.sterm, rw.q.Corrections, sfreq, voc.rawTerms); !containsStr(terms[i], t) {
				terms[i] = append(terms[i], t)
				tfreq[t]++
			}
		}
	}
	tfold := foldWords(tfreq, variant)
	keyIndex := map[string]int{}
	var keys [][]string
	var counts []int
	keyOf := make([]int, len(rows))
	for i := range rows {
		var ts []string
		for _, t := range terms[i] {
			if f := tfold[t]; !containsStr(ts, f) {
				ts = append(ts, f)
			}
		}
		sort.Strings(ts)
		k := strings.Join(ts, " ")
		n, ok := keyIndex[k]
		if !ok {
			n = len(keys)
			keyIndex[k] = n
			keys = append(keys, ts)
			counts = append(counts, 0)
		}
		counts[n]++
		keyOf[i] = n
	}
	return keys, counts, keyOf
}

// groupAcc gathers one group's questions.
type groupAcc struct {
	g        Group
	phrasing map[string]int
	nearMiss map[string]int
	pages    map[string]int
}

func (a *groupAcc) add(rw reportRow, recentFrom, previousFrom time.Time) {
	q := rw.q
	a.g.Count++
	a.g.ByStatus[rw.status]++
	a.g.LastSeen = q.At.UTC()
	a.phrasing[strings.Join(strings.Fields(q.Text), " ")]++
	if rw.status != "answered" {
		a.g.Failed++
		if len(q.TopURLs) > 0 {
			a.nearMiss[q.TopURLs[0]]++
		}
	} else if len(q.TopURLs) > 0 {
		a.pages[q.TopURLs[0]]++
	}
	if q.Vote < 0 && q.Comment != "" && len(a.g.Comments) < 5 {
		a.g.Comments = append(a.g.Comments, q.Comment)
	}
	switch {
	case !q.At.Before(recentFrom):
		a.g.Recent++
	case !q.At.Before(previousFrom):
		a.g.Previous++
	}
}

// finish turns the groups into r's gaps and answered questions, ranked
// and cut to limit.
func (l *Log) finish(ctx context.Context, r *Report, accs map[int]*groupAcc, recentFrom time.Time, limit int) {
	// A page that left the index (made private, deleted) is no longer
	// shown as a near miss or an answer.
	live := map[string]bool{}
	indexed := func(m map[string]int) map[string]int {
		out := map[string]int{}
		for u, n := range m {
			ok, seen := live[u]
			if !seen {
				_, err := l.db.FindDocument(ctx, u, false)
				ok = err == nil
				live[u] = ok
			}
			if ok {
				out[u] = n
			}
		}
		return out
	}
	for _, a := range accs {
		gr := a.g
		gr.Examples, gr.Phrasings = ranked(a.phrasing, 5), a.phrasing
		gr.Trend = trend(gr.Recent, gr.Previous, gr.FirstSeen, recentFrom)
		if 2*gr.Failed >= gr.Count {
			gr.Kind = worstCommon(gr.ByStatus)
			for k, n := range gr.ByStatus {
				gr.Score += failWeight[k] * n
			}
			if nm := ranked(indexed(a.nearMiss), 1); len(nm) > 0 {
				gr.NearMiss = nm[0]
			}
			gr.Prompt = prompt(gr)
			r.Gaps = append(r.Gaps, gr)
		} else {
			gr.Kind = "answered"
			gr.Pages = ranked(indexed(a.pages), 3)
			r.Answered = append(r.Answered, gr)
		}
	}
	sort.Slice(r.Gaps, func(i, j int) bool {
		a, b := r.Gaps[i], r.Gaps[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if ka, kb := kindRank(a.Kind), kindRank(b.Kind); ka != kb {
			return ka < kb
		}
		return moreAsked(a, b)
	})
	sort.Slice(r.Answered, func(i, j int) bool { return moreAsked(r.Answered[i], r.Answered[j]) })
	if len(r.Gaps) > limit {
		r.Gaps = r.Gaps[:limit]
	}
	if len(r.Answered) > limit {
		r.Answered = r.Answered[:limit]
	}
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func moreAsked(a, b Group) bool {
	if a.Count != b.Count {
		return a.Count > b.Count
	}
	if !a.LastSeen.Equal(b.LastSeen) {
		return a.LastSeen.After(b.LastSeen)
	}
	return strings.Join(a.Terms, " ") < strings.Join(b.Terms, " ")
}

// worstCommon is a gap's kind: its most common failure, the worse one on
// a tie.
func worstCommon(by map[string]int) string {
	best, n := "", 0
	for _, k := range kinds[:len(kinds)-1] {
		if by[k] > n {
			best, n = k, by[k]
		}
	}
	return best
}

// ranked returns the n most frequent keys of m, ties in order.
func ranked(m map[string]int, n int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if m[out[i]] != m[out[j]] {
			return m[out[i]] > m[out[j]]
		}
		return out[i] < out[j]
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func trend(recent, previous int, first, recentFrom time.Time) string {
	switch {
	case previous == 0 && !first.Before(recentFrom):
		return "new"
	case 2*recent >= 3*previous && recent >= previous+2:
		return "rising"
	case 2*previous >= 3*recent && previous >= recent+2:
		return "falling"
	}
	return "steady"
}

// prompt is the "write this page" suggestion for a gap.
func prompt(g Group) string {
	q := ""
	if len(g.Examples) > 0 {
		q = g.Examples[0]
	}
	switch g.Kind {
	case "thin":
		if g.NearMiss != "" {
			return fmt.Sprintf("Expand %s, which has too little text, so that it answers %q.", g.NearMiss, q)
		}
		return fmt.Sprintf("Write a page that answers %q in full.", q)
	case "clarify":
		return fmt.Sprintf("Several pages touch on %q without one answering it: write one page that does, and link the others to it.", q)
	case "down_voted":
		return fmt.Sprintf("Visitors voted the answer to %q down: check what the site says about it.", q)
	}
	if g.NearMiss != "" {
		return fmt.Sprintf("Write a page that answers %q. The closest page, %s, does not.", q, g.NearMiss)
	}
	return fmt.Sprintf("Write a page that answers %q: nothing on the site does.", q)
}

// WriteCSV writes the report's groups, gaps first, one row each.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"side", "rank", "kind", "count", "failed", "no_match", "thin", "clarify", "down_voted",
		"first_seen", "last_seen", "trend", "recent_7d", "previous_7d", "terms", "examples", "page", "prompt"})
	write := func(side string, gs []Group) {
		for i, g := range gs {
			page := g.NearMiss
			if side == "answered" {
				page = strings.Join(g.Pages, " ")
			}
			_ = cw.Write([]string{side, strconv.Itoa(i + 1), g.Kind, strconv.Itoa(g.Count), strconv.Itoa(g.Failed),
				strconv.Itoa(g.ByStatus["no_match"]), strconv.Itoa(g.ByStatus["thin"]), strconv.Itoa(g.ByStatus["clarify"]),
				strconv.Itoa(g.ByStatus["down_voted"]), g.FirstSeen.Format(time.RFC3339), g.LastSeen.Format(time.RFC3339),
				g.Trend, strconv.Itoa(g.Recent), strconv.Itoa(g.Previous), strings.Join(g.Terms, " "),
				csvSafe(strings.Join(g.Examples, " | ")), csvSafe(page), csvSafe(g.Prompt)})
		}
	}
	write("gap", r.Gaps)
	write("answered", r.Answered)
	cw.Flush()
	return cw.Error()
}

// csvSafe keeps a spreadsheet from reading a visitor's text as a formula.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
