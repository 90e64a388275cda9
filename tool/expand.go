package tool

import (
	"context"
	"maps"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

// Selective expansion (WebRAG's targeted expansion): when the index
// answers a query weakly, the not-yet-indexed links of the best pages are
// scored against the query by anchor text and URL path; the best few are
// fetched live through the crawler's own path and the search runs again.
// It stops on the page or time budget, when no candidate is left, when a
// round brings no improvement, or once the evidence is good enough.
const (
	expandMinConfidence = 0.5
	expandFromDocs      = 5
	expandPerRound      = 3
	expandRounds        = 2
	expandBudget        = 8 * time.Second
)

// needsExpansion is the trigger: weak or no evidence.
func needsExpansion(r *SearchResponse) bool {
	if len(r.Terms) == 0 {
		return false
	}
	return r.Evidence != "grounded" || r.Confidence < expandMinConfidence
}

// linkCandidate is a link scored against the query.
type linkCandidate struct {
	url, anchor string
	score       float64
}

func (s *Service) expand(ctx context.Context, slot Slot, q search.Query, r *search.Result, resp *SearchResponse) (*SearchResponse, error) {
	bctx, cancel := context.WithTimeout(ctx, expandBudget)
	defer cancel()
	lang := q.Lang
	if lang == "" {
		lang = q.Filters.Lang
	}
	want := map[string]bool{}
	for _, t := range analysis.Analyze(q.Text, lang) {
		want[t] = true
	}
	var (
		done     []Expansion
		tried    = map[string]bool{}
		best     = resp
		bestHits = r.Hits
		stop     = "rounds"
	)
	for round := 0; round < expandRounds; round++ {
		var docIDs []int64
		seen := map[int64]bool{}
		for _, h := range bestHits {
			if !seen[h.DocID] && len(docIDs) < expandFromDocs {
				seen[h.DocID] = true
				docIDs = append(docIDs, h.DocID)
			}
		}
		cands, err := s.scoreLinks(bctx, docIDs, want, lang, tried)
		if err != nil {
			if bctx.Err() != nil {
				stop = "time"
				break
			}
			return nil, err
		}
		if len(cands) == 0 {
			stop = "no_candidates"
			break
		}
		fetched, outOfTime := 0, false
		// The fetches wait on the site: other searches use the slot
		// meanwhile.
		if err := slot.offCPU(ctx, func() {
			for _, c := range cands[:min(len(cands), expandPerRound)] {
				if bctx.Err() != nil {
					outOfTime = true
					return
				}
				tried[c.url] = true
				e := Expansion{URL: c.url, Anchor: c.anchor, Score: round3(c.score)}
				e.Status, e.Error = s.fetchAndIndex(bctx, c.url, "expansion")
				done = append(done, e)
				if e.Status == "indexed" || e.Status == "unchanged" {
					fetched++
				}
			}
		}); err != nil {
			return nil, err
		}
		if outOfTime {
			stop = "time"
			break
		}
		if fetched == 0 {
			stop = "nothing_indexed"
			continue
		}
		r2, err := s.search(ctx, slot, q)
		if err != nil {
			return nil, err
		}
		next := NewSearchResponse(q.Text, r2)
		if next.Confidence <= best.Confidence && len(next.Results) <= len(best.Results) && next.Evidence == best.Evidence {
			stop = "no_improvement"
			break
		}
		best, bestHits = next, r2.Hits
		if !needsExpansion(best) {
			stop = "enough_evidence"
			break
		}
		if bctx.Err() != nil {
			stop = "time"
			break
		}
	}
	best.Expanded, best.ExpansionStop = done, stop
	if best.Expanded == nil {
		best.Expanded = []Expansion{}
	}
	return best, nil
}

// scoreLinks returns the untried, not-indexed, same-origin links of the
// documents that share words with the query, best first.
func (s *Service) scoreLinks(ctx context.Context, docIDs []int64, want map[string]bool, lang string, tried map[string]bool) ([]linkCandidate, error) {
	if len(want) == 0 || len(docIDs) == 0 {
		return nil, nil
	}
	now := time.Now()
	known, unknown := s.links.get(docIDs, now)
	if len(unknown) > 0 {
		links, err := s.Store.UnindexedLinks(ctx, unknown)
		if err != nil {
			return nil, err
		}
		fresh := make(map[int64][]store.LinkCandidate, len(unknown))
		for _, l := range links {
			if s.Crawler.Expandable(l.URL) {
				fresh[l.FromDocID] = append(fresh[l.FromDocID], l)
			}
		}
		s.links.put(unknown, fresh, now)
		if known == nil {
			known = fresh
		} else {
			maps.Copy(known, fresh)
		}
	}
	byURL := map[string]*linkCandidate{}
	var out []*linkCandidate
	for _, id := range docIDs {
		for _, l := range known[id] {
			if tried[l.URL] {
				continue
			}
			score := 2*overlap(analysis.Analyze(l.Text, lang), want) + overlap(analysis.Analyze(pathWords(l.URL), lang), want)
			if score == 0 {
				continue
			}
			score /= float64(len(want))
			if c := byURL[l.URL]; c != nil {
				if score > c.score {
					c.score, c.anchor = score, l.Text
				}
				continue
			}
			c := &linkCandidate{url: l.URL, anchor: l.Text, score: score}
			byURL[l.URL] = c
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].score > out[j].score })
	res := make([]linkCandidate, 0, len(out))
	for _, c := range out {
		// A remembered link may have been indexed since it was read.
		if _, err := s.Store.FindDocument(ctx, c.url, false); err == nil {
			continue
		}
		// The frontier remembers pages that are private, gone or not
		// content, and failures still backing off: fetching them again
		// would not help.
		if st, err := s.Store.FindURL(ctx, c.url); err == nil {
			switch {
			case st.Status == "private", st.Status == "gone", st.Status == "skipped":
				continue
			case st.Status == "error" && st.NextTry.After(s.Store.Now()):
				continue
			}
		}
		res = append(res, *c)
	}
	return res, nil
}

// overlap counts the distinct wanted terms among terms.
func overlap(terms []string, want map[string]bool) float64 {
	seen := map[string]bool{}
	n := 0.0
	for _, t := range terms {
		if want[t] && !seen[t] {
			seen[t] = true
			n++
		}
	}
	return n
}

// pathWords turns a URL's path into words: /2026/05/token-bucket/ →
// "2026 05 token bucket".
func pathWords(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.NewReplacer("/", " ", "-", " ", "_", " ", ".", " ").Replace(u.Path)
}

// fetchAndIndex fetches one page live and indexes it through the crawler's
// own per-URL path (private-content guard included), recording the fetch
// in the frontier as a crawl would. It returns the outcome's status and,
// on failure, the error class.
func (s *Service) fetchAndIndex(ctx context.Context, u, via string) (status, class string) {
	l := s.liveIndex(ctx, u, via)
	class = l.ErrorClass
	if l.Err != nil && class == "" {
		class = crawl.ErrorClass(l.Err)
	}
	return l.Status, class
}

// liveIndex fetches and indexes one page now, counting the outcome.
func (s *Service) liveIndex(ctx context.Context, u, via string) crawl.Live {
	l := s.Crawler.FetchNow(ctx, u, via)
	label := l.Status
	if l.Status == "error" {
		label = "error_" + l.ErrorClass
	}
	s.obs().ObserveLiveFetch(via, label)
	return l
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
