package insights_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/daemon"
	"github.com/askwp/askwpd/insights"
	"github.com/askwp/askwpd/internal/llmtest"
	"github.com/askwp/askwpd/internal/wptest"
)

// topic is a planted topic: the site answers it (from the seed's pages)
// or it does not (nothing on the seeded site is about it).
type topic struct {
	name     string
	answered bool
	cores    []string
}

// The seeded site's topics, and topics it has nothing on. Each core is
// asked as is, with a greeting or a request around it, and once with a
// typo (two letters swapped in its longest word).
var topics = []topic{
	{"popcorn", true, []string{"How do I roast coffee in a popcorn popper?", "popcorn popper roasting", "roasting Yirgacheffe beans in a popcorn popper",
		"can I roast green coffee with a popcorn popper", "popcorn popper coffee roast"}},
	{"sourdough", true, []string{"my sourdough starter has hooch on top", "sourdough starter mold", "why is my sourdough starter rising so slowly",
		"sourdough starter troubleshooting", "is grey liquid on a sourdough starter hooch"}},
	{"mariadb", true, []string{"nightly MariaDB backups", "how to back up MariaDB with mariabackup", "mariabackup and restic backups",
		"restore a MariaDB backup made with mariabackup", "MariaDB backup restic"}},
	{"grinder", true, []string{"espresso grinder retention", "how to measure grinder retention", "grinder retention with a kitchen scale",
		"measuring espresso grinder retention", "retention of my espresso grinder"}},
	{"ratelimit", true, []string{"token bucket rate limiter in Go", "rate limiter golang token bucket", "how to write a token bucket",
		"token bucket rate limiting", "Go rate limiter with a token bucket"}},
	{"worms", true, []string{"can worms eat coffee grounds", "coffee grounds in a worm farm", "feeding coffee grounds to worms",
		"balcony worm farm", "worm farm coffee grounds"}},
	{"caddy", true, []string{"Caddy reverse proxy for WordPress", "caddy json config", "Caddy JSON config reverse proxy",
		"reverse proxy WordPress with Caddy", "caddy config for wordpress"}},
	{"mastodon", true, []string{"moving a Mastodon instance to a new VPS", "mastodon vps migration", "migrate mastodon instance to a cheaper VPS",
		"cheaper VPS for Mastodon", "how to move Mastodon to another server"}},
	{"bikelight", true, []string{"bicycle commuter lighting kit", "bike lights for commuting", "cheap bicycle lighting for a commuter",
		"commuter bicycle lights under sixty euros", "bicycle lighting kit"}},
	{"phpfpm", true, []string{"PHP-FPM pools with separate users", "hardening php-fpm pools", "per-site unix accounts for php-fpm",
		"php-fpm pools with unix users", "harden PHP-FPM pool"}},
	{"wpquery", true, []string{"slow WP_Query meta query", "finding a slow WP_Query", "WP_Query meta_query slow",
		"why is my meta query slow", "slow meta query in WP_Query"}},
	{"gofmt", true, []string{"gofmt tabs versus spaces", "does gofmt use tabs or spaces", "tabs vs spaces gofmt",
		"gofmt ended the tabs argument", "gofmt tabs"}},

	{"giftcard", false, []string{"Do you sell gift cards?", "gift card", "can I buy a gift card for my brother",
		"gift cards available?", "where can I get a gift card"}},
	{"wheelchair", false, []string{"Is the entrance wheelchair accessible?", "wheelchair access", "can I come in a wheelchair",
		"wheelchair accessible entrance", "is there wheelchair access"}},
	{"student", false, []string{"student discount", "do students get a discount?", "is there a discount for students",
		"student discounts", "discount for a student"}},
	{"loyalty", false, []string{"loyalty program", "do you have a loyalty program?", "loyalty points",
		"how do loyalty points work", "join the loyalty program"}},
	{"glutenfree", false, []string{"gluten free options", "is anything gluten free?", "do you have gluten-free pastries",
		"gluten free", "gluten free pastries"}},
	{"jobs", false, []string{"job openings", "are you hiring?", "any job openings", "can I apply for a job", "hiring job openings"}},
	{"parking", false, []string{"where can I park my car", "parking nearby", "is there parking", "car parking", "parking for visitors"}},
	{"dogs", false, []string{"are dogs allowed", "can I bring my dog", "dog friendly?", "dogs allowed inside", "bring a dog"}},
}

// frames wrap a core in words that only ask.
var frames = []string{"Hi, %s", "Can you tell me %s", "Hello! %s Thanks!", "I want to know: %s", "Please, %s"}

// misspell swaps two letters of the longest word of four letters or
// more, the first pair after its first letter that differ.
func misspell(s string) string {
	words := strings.Fields(s)
	best, at := -1, 0
	for i, w := range words {
		r := []rune(w)
		if len(r) < 4 || (best >= 0 && len(r) <= len([]rune(words[best]))) {
			continue
		}
		for j := 1; j+1 < len(r); j++ {
			if r[j] != r[j+1] && unicode.IsLetter(r[j]) && unicode.IsLetter(r[j+1]) {
				best, at = i, j
				break
			}
		}
	}
	if best < 0 {
		return s
	}
	r := []rune(words[best])
	r[at], r[at+1] = r[at+1], r[at]
	words[best] = string(r)
	return strings.Join(words, " ")
}

type phrasing struct {
	text, topic string
}

// phrasings are the 300 questions: 20 topics, 5 cores each, each asked 3
// ways.
func phrasings(t *testing.T) []phrasing {
	var out []phrasing
	seen := map[string]string{}
	for _, tp := range topics {
		for i, c := range tp.cores {
			for _, q := range []string{c, fmt.Sprintf(frames[i%len(frames)], c), misspell(c)} {
				if prev, ok := seen[q]; ok {
					t.Fatalf("phrasing %q is planted twice (%s, %s)", q, prev, tp.name)
				}
				seen[q] = tp.name
				out = append(out, phrasing{q, tp.name})
			}
		}
	}
	// Interleave the topics, as visitors would.
	mixed := make([]phrasing, 0, len(out))
	for i := 0; i < 15; i++ {
		for j := range topics {
			mixed = append(mixed, out[j*15+i])
		}
	}
	return mixed
}

// openSite opens a daemon on the seeded site with a fresh state dir,
// indexes it, and serves its API.
func openSite(t *testing.T) (*daemon.Daemon, *httptest.Server, string) {
	t.Helper()
	site := wptest.Get(t)
	site.Lock(t)
	cfg := config.Default()
	cfg.WPRoot = site.Root()
	cfg.StateDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.Crawl.RatePerSec = 200
	cfg.Schedule.Disabled = true
	ctx := context.Background()
	d, err := daemon.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	if _, err := d.Index(ctx, crawl.IndexOptions{Full: true}); err != nil {
		t.Fatalf("Index: %v", err)
	}
	const token = "insights-test-token-0123456789"
	srv := httptest.NewServer(api.New(d, api.Options{Token: token, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	t.Cleanup(srv.Close)
	return d, srv, token
}

func do(t *testing.T, srv *httptest.Server, token, method, path, body string, hdr ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestReport_300Questions asks the seeded site 300 questions over HTTP
// and checks the acceptance rules of the gap report: the unanswered
// topics rank first, at least 80% of each topic's phrasings land in one
// group, and no group mixes two topics.
func TestReport_300Questions(t *testing.T) {
	d, srv, token := openSite(t)
	qs := phrasings(t)
	if len(qs) != 300 {
		t.Fatalf("%d phrasings, want 300", len(qs))
	}
	topicOf := map[string]string{}
	for _, q := range qs {
		body, _ := json.Marshal(map[string]any{"query": q.text})
		if st, b := do(t, srv, token, "POST", "/v1/tools/search_site", string(body)); st != 200 {
			t.Fatalf("search_site %q: %d %s", q.text, st, b)
		}
		topicOf[q.text] = q.topic
	}
	ctx := context.Background()
	if err := d.Questions.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := d.Questions.Report(ctx, insights.ReportOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Questions != 300 || rep.Searches != 300 {
		t.Fatalf("report counts %d questions, %d searches; want 300", rep.Questions, rep.Searches)
	}

	// Which group holds each phrasing, and what each group holds.
	groupOf := map[string]int{}
	all := append(append([]insights.Group{}, rep.Gaps...), rep.Answered...)
	for gi, g := range all {
		topicsIn := map[string]int{}
		for p, n := range g.Phrasings {
			groupOf[p] = gi
			topicsIn[topicOf[p]] += n
		}
		if len(topicsIn) > 1 {
			t.Errorf("group %v mixes topics %v: %v", g.Terms, topicsIn, g.Examples)
		}
	}
	mainGroup := map[string]int{}
	for _, tp := range topics {
		in := map[int]int{}
		n := 0
		for _, q := range qs {
			if q.topic != tp.name {
				continue
			}
			n++
			gi, ok := groupOf[q.text]
			if !ok {
				t.Errorf("topic %s: %q is in no group", tp.name, q.text)
				continue
			}
			in[gi]++
		}
		best := -1
		for gi, c := range in {
			if best < 0 || c > in[best] {
				best = gi
			}
		}
		mainGroup[tp.name] = best
		share := float64(in[best]) / float64(n)
		t.Logf("topic %-10s %2d/%d in group %v (%s, %d questions)", tp.name, in[best], n, all[best].Terms, all[best].Kind, all[best].Count)
		if share < 0.8 {
			var spread []string
			for gi, c := range in {
				spread = append(spread, fmt.Sprintf("%v×%d", all[gi].Terms, c))
			}
			t.Errorf("topic %s: only %d of %d phrasings in one group; spread: %v", tp.name, in[best], n, spread)
		}
	}
	// The unanswered topics rank first, each in its own gap group.
	var gapTopics int
	for _, tp := range topics {
		if !tp.answered {
			gapTopics++
		}
	}
	for i, g := range rep.Gaps {
		if i < 12 {
			t.Logf("gap %d: %s score %d count %d %v near miss %q", i+1, g.Kind, g.Score, g.Count, g.Examples[:min(2, len(g.Examples))], g.NearMiss)
		}
	}
	if len(rep.Gaps) < gapTopics {
		t.Fatalf("%d gap groups, want at least %d", len(rep.Gaps), gapTopics)
	}
	for i := 0; i < gapTopics; i++ {
		g := rep.Gaps[i]
		var tp string
		for p := range g.Phrasings {
			tp = topicOf[p]
		}
		found := false
		for _, x := range topics {
			if x.name == tp && !x.answered && mainGroup[tp] == i {
				found = true
			}
		}
		if !found {
			t.Errorf("gap rank %d is %v (topic %s), not an unanswered topic's group", i+1, g.Examples, tp)
		}
		if g.Prompt == "" || g.FirstSeen.IsZero() || g.LastSeen.Before(g.FirstSeen) || g.Trend != "new" {
			t.Errorf("gap %v: prompt %q, seen %v–%v, trend %s", g.Terms, g.Prompt, g.FirstSeen, g.LastSeen, g.Trend)
		}
	}
	for _, tp := range topics {
		if tp.answered && all[mainGroup[tp.name]].Kind != "answered" {
			t.Errorf("answered topic %s is reported as a gap (%s)", tp.name, all[mainGroup[tp.name]].Kind)
		}
		if tp.answered && len(all[mainGroup[tp.name]].Pages) == 0 {
			t.Errorf("answered topic %s has no answering page", tp.name)
		}
	}

	// The same report over HTTP, as JSON and as CSV.
	st, b := do(t, srv, token, "GET", "/v1/insights?limit=1000", "")
	var jr insights.Report
	if st != 200 || json.Unmarshal(b, &jr) != nil || jr.Questions != 300 || len(jr.Gaps) != len(rep.Gaps) {
		t.Fatalf("GET /v1/insights: %d %.300s", st, b)
	}
	st, b = do(t, srv, token, "GET", "/v1/insights?format=csv&limit=1000", "")
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if st != 200 || err != nil || len(recs) != 1+len(rep.Gaps)+len(rep.Answered) || recs[1][0] != "gap" {
		t.Fatalf("CSV: %d %v %d rows", st, err, len(recs))
	}
	if st, b := do(t, srv, token, "GET", "/metrics", ""); st != 200 || !strings.Contains(string(b), "askwpd_questions_logged_total 300") ||
		!strings.Contains(string(b), "askwpd_questions_dropped_total 0") {
		t.Errorf("/metrics: %d, want the log's counters:\n%.500s", st, b)
	}
	var other insights.Report
	if st, b := do(t, srv, token, "GET", "/v1/insights?site=7", ""); st != 200 || json.Unmarshal(b, &other) != nil || other.Questions != 0 {
		t.Errorf("another site's report: %d %.200s", st, b)
	}
	if st, _ := do(t, srv, "wrong", "GET", "/v1/insights", ""); st != 401 {
		t.Errorf("GET /v1/insights with a wrong token: %d, want 401", st)
	}
	if st, b := do(t, srv, token, "GET", "/v1/insights?days=abc", ""); st != 400 || !strings.Contains(string(b), "days") {
		t.Errorf("days=abc: %d %s", st, b)
	}
}

// TestLog_Redacts checks that what a visitor typed in the way of contact
// details never reaches the state dir's files, while the question does.
func TestLog_Redacts(t *testing.T) {
	d, srv, token := openSite(t)
	q := "call me on +49 30 9876543 or at visitor.name@example.org about order 77889911 and gift cards"
	body, _ := json.Marshal(map[string]any{"query": q})
	if st, b := do(t, srv, token, "POST", "/v1/tools/search_site", string(body)); st != 200 {
		t.Fatalf("search: %d %s", st, b)
	}
	if err := d.Questions.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep, err := d.Questions.Report(context.Background(), insights.ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, g := range append(rep.Gaps, rep.Answered...) {
		for p := range g.Phrasings {
			got = p
		}
	}
	want := "call me on [phone] or at [email] about order [number] and gift cards"
	if got != want {
		t.Fatalf("logged %q, want %q", got, want)
	}
	d.Close() // checkpoint, so the files hold everything written
	if files := wptest.FilesHolding(t, d.Config.StateDir, "9876543", "visitor.name", "77889911"); len(files) > 0 {
		t.Errorf("the state dir holds what was redacted: %v", files)
	}
	if _, err := os.Stat(d.Config.StateDir); err != nil {
		t.Fatal(err)
	}
}

// TestFeedback_ChatTurns asks through /v1/chat (a scripted provider),
// JSON and SSE, checks that both answers carry a turn id, votes on them
// through /v1/feedback, and finds the down vote in the report.
func TestFeedback_ChatTurns(t *testing.T) {
	d, srv, token := openSite(t)
	p := llmtest.New(t, "openai", llmtest.Say("The site has nothing on gift vouchers."), llmtest.Say("Nothing about gift vouchers, sorry."))
	d.Agent.Provider = p.Config()
	ask := `{"messages": [{"role": "user", "content": "Do you sell gift vouchers? Mail me: a.b@example.com"}]}`

	st, b := do(t, srv, token, "POST", "/v1/chat", ask)
	var jr chat.Response
	if st != 200 || json.Unmarshal(b, &jr) != nil || len(jr.TurnID) != 32 {
		t.Fatalf("JSON chat: %d %.300s", st, b)
	}
	st, b = do(t, srv, token, "POST", "/v1/chat", ask, "Accept", "text/event-stream")
	var sseTurn string
	for _, block := range strings.Split(string(b), "\n\n") {
		if data, ok := strings.CutPrefix(block, "event: done\ndata: "); ok {
			var r chat.Response
			if json.Unmarshal([]byte(data), &r) == nil {
				sseTurn = r.TurnID
			}
		}
	}
	if st != 200 || len(sseTurn) != 32 || sseTurn == jr.TurnID {
		t.Fatalf("SSE chat: %d, turn %q (JSON's %q): %.300s", st, sseTurn, jr.TurnID, b)
	}

	for _, c := range []struct {
		body string
		want int
	}{
		{fmt.Sprintf(`{"turn_id": %q, "vote": "down", "comment": "no answer; call 0171 2345678"}`, jr.TurnID), 200},
		{fmt.Sprintf(`{"turn_id": %q, "vote": "up"}`, sseTurn), 200},
		{fmt.Sprintf(`{"turn_id": %q, "vote": "sideways"}`, sseTurn), 400},
		{fmt.Sprintf(`{"turn_id": %q, "vote": "up", "comment": %q}`, sseTurn, strings.Repeat("x", 501)), 400},
		{fmt.Sprintf(`{"turn_id": %q, "vote": "up", "extra": 1}`, sseTurn), 400},
		{`{"turn_id": "0123456789abcdef0123456789abcdef", "vote": "up"}`, 404},
		{`{"turn_id": "../../etc", "vote": "up"}`, 400},
		{`not json`, 400},
	} {
		if st, b := do(t, srv, token, "POST", "/v1/feedback", c.body); st != c.want {
			t.Errorf("feedback %s: %d %s, want %d", c.body, st, b, c.want)
		}
	}
	if st, _ := do(t, srv, "wrong", "POST", "/v1/feedback", `{}`); st != 401 {
		t.Errorf("feedback with a wrong token: %d, want 401", st)
	}

	rep, err := d.Questions.Report(context.Background(), insights.ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ChatTurns != 2 || rep.VotesDown != 1 || rep.VotesUp != 1 || rep.Outcomes["unsourced"] != 2 {
		t.Fatalf("report: %d chat turns, votes %d up %d down, outcomes %v", rep.ChatTurns, rep.VotesUp, rep.VotesDown, rep.Outcomes)
	}
	if len(rep.Gaps) != 1 || rep.Gaps[0].Count != 2 || len(rep.Gaps[0].Comments) != 1 ||
		rep.Gaps[0].Comments[0] != "no answer; call [phone]" || rep.Gaps[0].Examples[0] != "Do you sell gift vouchers? Mail me: [email]" {
		t.Fatalf("gaps: %+v", rep.Gaps)
	}
}

// TestPurge deletes what is older than the retention, and everything
// when the log is turned off.
func TestPurge(t *testing.T) {
	d, srv, token := openSite(t)
	for _, q := range []string{"gift cards", "opening hours"} {
		body, _ := json.Marshal(map[string]any{"query": q})
		do(t, srv, token, "POST", "/v1/tools/search_site", string(body))
	}
	ctx := context.Background()
	if err := d.Questions.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Questions.Purge(ctx); err != nil || n != 0 {
		t.Fatalf("purge of fresh questions: %d, %v", n, err)
	}
	now := d.Store.Now
	d.Store.Now = func() time.Time { return now().Add(31 * 24 * time.Hour) }
	defer func() { d.Store.Now = now }()
	if n, err := d.Questions.Purge(ctx); err != nil || n != 2 {
		t.Fatalf("purge after 31 days: %d, %v; want 2", n, err)
	}
	off := insights.Open(d.Store, insights.Options{})
	defer off.Close()
	if off.Enabled() {
		t.Fatal("a log with retention 0 is enabled")
	}
}
