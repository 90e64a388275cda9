package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/insights"
	"github.com/askwp/askwpd/store"
)

// cmdGaps prints the gap report from the store: what visitors asked that
// the site does not answer, worst first, then the questions it answers.
func cmdGaps(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gaps", flag.ContinueOnError)
	var c common
	c.register(fs)
	days := fs.Int("days", 30, "the window, in days up to now")
	limit := fs.Int("limit", 20, "groups per list")
	asJSON := fs.Bool("json", false, "print the report as JSON (as GET /v1/insights)")
	asCSV := fs.Bool("csv", false, "print the groups as CSV (as GET /v1/insights?format=csv)")
	verbose := fs.Bool("v", false, "list every phrasing of each group")
	site := fs.String("site", "", "only the questions of this site of a network (a blog id or home URL)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *days < 1 || *limit < 1 {
		return &exitError{2, fmt.Errorf("gaps: --days and --limit must be at least 1")}
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	// The report needs only the store: it works with WordPress and the
	// daemon down.
	st, err := store.Open(ctx, filepath.Join(cfg.StateDir, "askwpd.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	var syn *analysis.Synonyms
	if cfg.Search.Synonyms != "" {
		if syn, err = analysis.LoadSynonyms(cfg.Search.Synonyms); err != nil {
			return fmt.Errorf("config: search.synonyms: %w", err)
		}
	}
	// A zero retention reads what is there; this process logs nothing.
	l := insights.Open(st, insights.Options{Synonyms: syn})
	defer l.Close()
	r, err := l.Report(ctx, insights.ReportOptions{Days: *days, Limit: *limit, Site: *site})
	if err != nil {
		return err
	}
	// This process's log has no retention; the daemon's is configured.
	rep := *r
	rep.RetentionDays = cfg.Insights.RetentionDays
	r = &rep
	switch {
	case *asJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case *asCSV:
		return r.WriteCSV(stdout)
	}
	printGaps(stdout, r, *verbose)
	return nil
}

func printGaps(w io.Writer, r *insights.Report, verbose bool) {
	fmt.Fprintf(w, "%d questions from %s to %s (%d searches, %d chat turns; %d without content words)\n",
		r.Questions, r.Since.Format("2006-01-02"), r.Until.Format("2006-01-02"), r.Searches, r.ChatTurns, r.Ignored)
	fmt.Fprintf(w, "answered %d, no match %d, thin %d, unclear %d, voted down %d\n",
		r.ByStatus["answered"], r.ByStatus["no_match"], r.ByStatus["thin"], r.ByStatus["clarify"], r.ByStatus["down_voted"])
	if r.RetentionDays == 0 {
		fmt.Fprintln(w, "the question log is off (insights.retention_days = 0)")
	}
	group := func(i int, g insights.Group) {
		fmt.Fprintf(w, "\n%2d. %s ×%d (%d failed) · %s to %s · %s\n", i+1, g.Kind, g.Count, g.Failed,
			g.FirstSeen.Format("Jan 2"), g.LastSeen.Format("Jan 2"), g.Trend)
		phr := g.Examples
		if verbose {
			phr = make([]string, 0, len(g.Phrasings))
			for p := range g.Phrasings {
				phr = append(phr, p)
			}
			sort.Slice(phr, func(a, b int) bool {
				if g.Phrasings[phr[a]] != g.Phrasings[phr[b]] {
					return g.Phrasings[phr[a]] > g.Phrasings[phr[b]]
				}
				return phr[a] < phr[b]
			})
		}
		for _, p := range phr {
			if verbose {
				fmt.Fprintf(w, "    %q ×%d\n", p, g.Phrasings[p])
			} else {
				fmt.Fprintf(w, "    %q\n", p)
			}
		}
		if g.Prompt != "" {
			fmt.Fprintf(w, "    → %s\n", g.Prompt)
		}
		if len(g.Pages) > 0 {
			fmt.Fprintf(w, "    answered by %s\n", strings.Join(g.Pages, ", "))
		}
		for _, c := range g.Comments {
			fmt.Fprintf(w, "    comment: %q\n", c)
		}
	}
	fmt.Fprintln(w, "\nWhat the site does not answer:")
	if len(r.Gaps) == 0 {
		fmt.Fprintln(w, "    nothing")
	}
	for i, g := range r.Gaps {
		group(i, g)
	}
	fmt.Fprintln(w, "\nMost asked, answered:")
	if len(r.Answered) == 0 {
		fmt.Fprintln(w, "    nothing yet")
	}
	for i, g := range r.Answered {
		group(i, g)
	}
}
