package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
	"github.com/askwp/askwpd/wp"
)

// The tools over the real test WordPress (scripts/wp-up.sh), indexed
// once and shared: each test still takes the site lock, since it compares
// the index with WordPress. Without the site, these tests skip.

var (
	indexedOnce sync.Once
	indexedSvc  *tool.Service
	indexedErr  error
	indexedLogs = &wptest.SyncBuffer{}
)

// indexed is a tool.Service over the test site's index: its store, search
// index and crawler built as the daemon builds a site's, from wp_root
// alone, and a full pass run. Its logs collect in indexedLogs.
func indexed(t *testing.T) (*tool.Service, *wptest.Site) {
	t.Helper()
	site := wptest.Get(t)
	site.Lock(t)
	indexedOnce.Do(func() { indexedSvc, indexedErr = openIndexed(site) })
	if indexedErr != nil {
		t.Fatal(indexedErr)
	}
	return indexedSvc, site
}

func openIndexed(site *wptest.Site) (*tool.Service, error) {
	ctx := context.Background()
	log := slog.New(slog.NewJSONHandler(indexedLogs, nil))
	path, err := wp.FindConfig(site.Root())
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(site.URL())
	if err != nil {
		return nil, err
	}
	c, err := wp.ReadConfig(path, u.Hostname())
	if err != nil {
		return nil, err
	}
	w, err := wp.Open(ctx, c.DSN(), c.TablePrefix)
	if err != nil {
		return nil, err
	}
	info, err := w.Site(ctx)
	if err != nil {
		return nil, err
	}
	o, err := crawl.ParseOrigin(site.URL())
	if err != nil {
		return nil, err
	}
	// Not t.TempDir: the store outlives the first test that opens it.
	dir, err := os.MkdirTemp("", "askwpd-tool-test-")
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, filepath.Join(dir, "askwpd.db"))
	if err != nil {
		return nil, err
	}
	cc := config.Default().Crawl
	cr := crawl.New(crawl.Site{URL: strings.TrimRight(site.URL(), "/"), Name: html.UnescapeString(info.Name),
		Tagline: html.UnescapeString(info.Tagline), Origin: o, PageOnFront: info.PageOnFront, PageForPosts: info.PageForPosts},
		crawl.Options{Concurrency: cc.Concurrency, RatePerSec: 200, Budget: cc.Budget, Timeout: cc.Timeout.Duration,
			MaxBytes: cc.MaxBytes, UserAgent: cc.UserAgent, IndexArchives: cc.IndexArchives}, st, w, log)
	cr.StateDir = dir
	svc := &tool.Service{Log: log, Store: st, Search: search.New(st), Crawler: cr}
	st.Observe(svc)
	if _, err := cr.Index(ctx, crawl.IndexOptions{Full: true}); err != nil {
		return nil, err
	}
	return svc, nil
}

// call runs a tool and decodes its result into out.
func call(t *testing.T, c tool.Caller, name string, args any, out any) {
	t.Helper()
	raw, _ := json.Marshal(args)
	res, err := c.Call(context.Background(), name, raw)
	if err != nil {
		t.Fatalf("%s %s: %v", name, raw, err)
	}
	b, _ := json.Marshal(res)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: decode: %v", name, err)
	}
}

func firstURL(r tool.SearchResponse) string {
	if len(r.Results) == 0 {
		return "(none)"
	}
	return r.Results[0].URL
}

func TestTools_GetRecentMatchesWordPress(t *testing.T) {
	svc, site := indexed(t)
	truth := site.Truth(t)
	var posts []string
	newest := ""
	for _, p := range truth.Public {
		if p.Type == "post" && p.Published > newest {
			newest = p.Published
		}
	}
	for _, p := range truth.Public {
		if p.Type == "post" && p.Published == newest {
			posts = append(posts, crawl.Canonical(p.URL))
		}
	}
	if len(posts) == 0 {
		t.Fatal("WordPress has no public post")
	}
	var r tool.RecentResponse
	call(t, svc, "get_recent", map[string]any{"type": "post", "limit": 1}, &r)
	if len(r.Results) != 1 || r.Evidence != "grounded" {
		t.Fatalf("get_recent(post, 1) = %+v", r)
	}
	got := r.Results[0]
	if !slices.Contains(posts, got.URL) {
		t.Errorf("get_recent(post, 1) URL = %s, WordPress's newest post is %v", got.URL, posts)
	}
	if !strings.HasPrefix(newest, strings.TrimSuffix(got.Published, "Z")) || got.Excerpt == "" || got.Modified == "" {
		t.Errorf("get_recent(post, 1) published %s, excerpt %q; WordPress says %s", got.Published, got.Excerpt, newest)
	}

	call(t, svc, "get_recent", map[string]any{"type": "any", "limit": 50}, &r)
	for i, it := range r.Results {
		if it.URL == "" || !strings.HasPrefix(it.URL, svc.Crawler.Site.URL) {
			t.Errorf("result %d has no source URL on the site: %+v", i, it)
		}
		if i > 0 && it.Published > r.Results[i-1].Published {
			t.Errorf("get_recent(any) not newest first at %d: %s after %s", i, it.Published, r.Results[i-1].Published)
		}
	}
}

func TestTools_SearchSiteFindsEachPost(t *testing.T) {
	svc, site := indexed(t)
	truth := site.Truth(t)
	n := 0
	for _, p := range truth.Public {
		if p.Type != "post" || len(analysis.Analyze(p.Title, "")) == 0 {
			continue
		}
		n++
		var r tool.SearchResponse
		call(t, svc, "search_site", map[string]any{"query": p.Title}, &r)
		if len(r.Results) == 0 {
			t.Errorf("search_site %q: no results (evidence %s)", p.Title, r.Evidence)
			continue
		}
		if r.Results[0].URL != crawl.Canonical(p.URL) {
			t.Errorf("search_site %q: first result %s, want %s", p.Title, r.Results[0].URL, p.URL)
		}
		if r.Evidence == "none" || r.Results[0].Passage == "" || r.Results[0].End <= r.Results[0].Start {
			t.Errorf("search_site %q: evidence %s, passage %q [%d,%d]", p.Title, r.Evidence, r.Results[0].Passage,
				r.Results[0].Start, r.Results[0].End)
		}
		for _, e := range r.Results {
			if e.URL == "" || !strings.Contains(e.Hint, "get_document") {
				t.Errorf("search_site %q: result without URL or hint: %+v", p.Title, e)
			}
			if len(e.MatchExplain) == 0 || !strings.HasPrefix(e.MatchExplain[0], "bm25 ") {
				t.Errorf("search_site %q: %s explains %q", p.Title, e.URL, e.MatchExplain)
			}
		}
	}
	if n == 0 {
		t.Fatal("no public posts")
	}
	// A misspelt word is searched as the site's word, and the answer says
	// which.
	for _, p := range truth.Public {
		var word string
		for _, w := range strings.Fields(strings.ToLower(p.Title)) {
			if len(w) >= 7 && strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" {
				word = w
				break
			}
		}
		if word == "" {
			continue
		}
		typo := word[:3] + word[4:]
		var r tool.SearchResponse
		call(t, svc, "search_site", map[string]any{"query": typo}, &r)
		if r.Corrections[typo] == "" || len(r.Results) == 0 || r.Reason == "" && r.Action != "answer" {
			t.Errorf("search_site %q (%q misspelt): corrections %v, action %s (%s), %d results",
				typo, word, r.Corrections, r.Action, r.Reason, len(r.Results))
		}
		return
	}
	t.Fatal("no title with a word of seven letters")
}

func TestTools_ThinPageHasLabeledSupport(t *testing.T) {
	svc, _ := indexed(t)
	var r tool.DocumentResponse
	call(t, svc, "get_document", map[string]any{"id_or_url": svc.Crawler.Site.URL + "/workshops/"}, &r)
	if !r.Quality.Thin || r.Evidence != "thin" {
		t.Fatalf("/workshops/: thin=%v evidence=%s, want a thin page (%q)", r.Quality.Thin, r.Evidence, r.Content)
	}
	if len(r.Supporting) == 0 || len(r.Supporting) > 3 {
		t.Fatalf("/workshops/: %d supporting passages, want 1 to 3", len(r.Supporting))
	}
	for _, s := range r.Supporting {
		if s.URL == r.URL || s.URL == "" || !strings.Contains(s.Label, "not from "+r.URL) || s.Passage == "" {
			t.Errorf("supporting passage not labeled as another page's: %+v", s)
		}
	}
	if r.Quality.Source == "" || r.Quality.FetchedAt == "" {
		t.Errorf("quality flags missing: %+v", r.Quality)
	}
	// A lean read (the chat agent reading for itself) is the same page
	// without the supporting searches.
	raw, _ := json.Marshal(map[string]any{"id_or_url": svc.Crawler.Site.URL + "/workshops/"})
	res, err := svc.Lean().Call(context.Background(), "get_document", raw)
	if err != nil {
		t.Fatal(err)
	}
	lean := res.(*tool.DocumentResponse)
	if lean.Content != r.Content || lean.Evidence != "thin" || !lean.Quality.Thin || len(lean.Supporting) != 0 {
		t.Errorf("lean read: evidence %s, %d supporting, same content %v; want thin, none, true",
			lean.Evidence, len(lean.Supporting), lean.Content == r.Content)
	}
	t.Logf("thin page support: %s", func() string {
		var s []string
		for _, x := range r.Supporting {
			s = append(s, x.URL)
		}
		return strings.Join(s, ", ")
	}())
}

// passage is a verbatim quote a tool returned.
type passage struct {
	from, url, text string
	start, end      int
}

// TestTools_VerifyQuoteFindsEveryPassage is the citation property: every
// passage any tool returns is found by verify_quote at its offsets.
func TestTools_VerifyQuoteFindsEveryPassage(t *testing.T) {
	svc, _ := indexed(t)
	ctx := context.Background()
	urls, err := svc.Store.DocumentURLs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	var docs []string
	for u := range urls {
		docs = append(docs, u)
	}
	sort.Strings(docs)
	for _, u := range docs {
		doc, err := svc.Store.FindDocument(ctx, u, false)
		if err != nil {
			t.Fatal(err)
		}
		queries = append(queries, doc.Title)
		words := strings.Fields(doc.Text)
		for i := 0; i+3 <= len(words) && i < 60; i += 20 {
			queries = append(queries, strings.Join(words[i:i+3], " "))
		}
	}
	queries = append(queries, "coffee", "backup restic", "go rate limiter", "nginx php-fpm", "visiting hours", "sourdough")

	var ps []passage
	for _, q := range queries {
		var r tool.SearchResponse
		call(t, svc, "search_site", map[string]any{"query": q, "passages": true, "limit": 10}, &r)
		for _, e := range r.Results {
			ps = append(ps, passage{"search_site", e.URL, e.Passage, e.Start, e.End})
		}
	}
	for _, u := range docs {
		var r tool.InDocumentResponse
		doc, _ := svc.Store.FindDocument(ctx, u, false)
		call(t, svc, "search_in_document", map[string]any{"id_or_url": u, "query": doc.Title + " " + strings.Join(strings.Fields(doc.Text)[:min(6, len(strings.Fields(doc.Text)))], " ")}, &r)
		for _, e := range r.Results {
			ps = append(ps, passage{"search_in_document", r.URL, e.Passage, e.Start, e.End})
		}
		for start := 0; ; {
			var g tool.DocumentResponse
			call(t, svc, "get_document", map[string]any{"id_or_url": u, "mode": "chunks", "start": start, "max_chars": 1500}, &g)
			for _, s := range g.Segments {
				if s.Kind == "chunk" {
					ps = append(ps, passage{"get_document", g.URL, s.Text, s.Start, s.End})
				}
			}
			for _, s := range g.Supporting {
				ps = append(ps, passage{"get_document supporting", s.URL, s.Passage, s.Start, s.End})
			}
			if g.NextStart == nil {
				break
			}
			start = *g.NextStart
		}
	}
	if len(ps) < 100 {
		t.Fatalf("only %d passages collected", len(ps))
	}
	bad := 0
	for _, p := range ps {
		if strings.TrimSpace(p.text) == "" {
			continue
		}
		var q tool.QuoteResponse
		call(t, svc, "verify_quote", map[string]any{"url": p.url, "quote": p.text}, &q)
		ok := q.Found && q.Match == "exact" && (q.Start == p.start || containsInt(q.Starts, p.start)) &&
			(q.Start != p.start || q.End == p.end)
		if !ok {
			bad++
			if bad <= 5 {
				t.Errorf("%s passage of %s at [%d,%d] %.60q: verify_quote = %+v", p.from, p.url, p.start, p.end, p.text, q)
			}
		}
	}
	t.Logf("%d passages from %d queries and %d documents checked; %d failed", len(ps), len(queries), len(docs), bad)

	// A passage quoted with its whitespace and Markdown emphasis flattened
	// is still found, at the original offsets.
	var r tool.SearchResponse
	call(t, svc, "search_site", map[string]any{"query": "coffee"}, &r)
	if len(r.Results) > 0 {
		e := r.Results[0]
		flat := strings.NewReplacer("*", "", "`", "").Replace(strings.Join(strings.Fields(e.Passage), " "))
		var q tool.QuoteResponse
		call(t, svc, "verify_quote", map[string]any{"url": e.URL, "quote": flat}, &q)
		if !q.Found || q.Start != e.Start || q.End != e.End {
			t.Errorf("flattened passage: verify_quote = %+v, want [%d,%d]", q, e.Start, e.End)
		}
	}
	var q tool.QuoteResponse
	call(t, svc, "verify_quote", map[string]any{"url": svc.Crawler.Site.URL + "/workshops/", "quote": "We offer free espresso classes every day"}, &q)
	if q.Found || q.Status != "not_found" {
		t.Errorf("invented quote: %+v, want not_found", q)
	}
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestTools_GetDocumentStitches pages through every document in chunks
// mode and in markdown mode: both give back the stored body exactly.
func TestTools_GetDocumentStitches(t *testing.T) {
	svc, _ := indexed(t)
	ctx := context.Background()
	urls, err := svc.Store.DocumentURLs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for u := range urls {
		doc, err := svc.Store.FindDocument(ctx, u, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"chunks", "markdown"} {
			var b strings.Builder
			pos, pages := 0, 0
			for {
				var g tool.DocumentResponse
				call(t, svc, "get_document", map[string]any{"id_or_url": u, "mode": mode, "start": pos, "max_chars": 700}, &g)
				if g.Start != pos {
					t.Fatalf("%s %s: page starts at %d, asked %d", u, mode, g.Start, pos)
				}
				if mode == "chunks" {
					for _, s := range g.Segments {
						if s.Start != pos || len([]rune(s.Text)) != s.End-s.Start {
							t.Fatalf("%s: segment [%d,%d] does not continue at %d", u, s.Start, s.End, pos)
						}
						b.WriteString(s.Text)
						pos = s.End
					}
				} else {
					b.WriteString(g.Content)
					pos = g.End
				}
				pages++
				if g.NextStart == nil {
					break
				}
				if *g.NextStart != pos || pages > 10000 {
					t.Fatalf("%s %s: next_start %d, at %d", u, mode, *g.NextStart, pos)
				}
			}
			if b.String() != doc.Body {
				t.Errorf("%s %s: stitched text (%d chars) differs from the body (%d chars)", u, mode, len(b.String()), len(doc.Body))
			}
		}
	}
	var o tool.DocumentResponse
	call(t, svc, "get_document", map[string]any{"id_or_url": svc.Crawler.Site.URL + "/pricing-faq/", "mode": "outline"}, &o)
	t.Logf("outline of %s: %+v", o.URL, o.Outline)
}

func TestTools_FetchLiveURL(t *testing.T) {
	svc, site := indexed(t)
	cases := []struct {
		url, code string
	}{
		{"https://example.org/", "off_origin"},
		{"http://" + site.Host() + "@example.org/", "off_origin"},
		{svc.Crawler.Site.URL + "/no-such-page-" + fmt.Sprint(time.Now().UnixNano()) + "/", "not_found"},
		{svc.Crawler.Site.URL + "/wp-admin/", "login_wall"},
		{svc.Crawler.Site.URL + "/wp-sitemap.xml", "not_html"},
		{"ftp://" + site.Host() + "/", "bad_url"},
	}
	for _, c := range cases {
		var r tool.LiveResponse
		call(t, svc, "fetch_live_url", map[string]any{"url": c.url}, &r)
		if r.OK || r.Error == nil || r.Error.Code != c.code {
			t.Errorf("fetch_live_url %s = ok %v status %s error %+v, want %s", c.url, r.OK, r.Status, r.Error, c.code)
		}
	}
	// A password-protected post is private: not indexed, not returned.
	for _, p := range site.Truth(t).Private {
		if !p.Password || p.URL == "" {
			continue
		}
		var r tool.LiveResponse
		call(t, svc, "fetch_live_url", map[string]any{"url": p.URL}, &r)
		if r.OK || r.Error == nil || r.Error.Code != "private" || r.Document != nil {
			t.Errorf("fetch_live_url of password-protected %s = %+v, want private", p.URL, r)
		}
	}
	var r tool.LiveResponse
	call(t, svc, "fetch_live_url", map[string]any{"url": "/workshops/"}, &r)
	if !r.OK || r.Document == nil || r.Document.URL != svc.Crawler.Site.URL+"/workshops/" || !r.Document.Quality.Thin {
		t.Fatalf("fetch_live_url /workshops/ = %+v", r)
	}
}

// unindexSeeded deletes the seeded page at path from the index for the
// test, and fetches it back when the test ends. It returns its URL.
func unindexSeeded(t *testing.T, svc *tool.Service, path string) string {
	t.Helper()
	ctx := context.Background()
	target := svc.Crawler.Site.URL + path
	if _, err := svc.Store.FindDocument(ctx, target, false); err != nil {
		// CI's site is seeded with the page: its absence there is a failure.
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not indexed on this site: %v", target, err)
		}
		t.Skipf("%s is not indexed on this site: %v", target, err)
	}
	if _, err := svc.Store.DeleteDocument(ctx, target); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Crawler.FetchNow(context.Background(), target, "test") })
	return target
}

func TestTools_ExpansionFetchesMissingPage(t *testing.T) {
	svc, _ := indexed(t)
	ctx := context.Background()
	target := unindexSeeded(t, svc, "/pricing-faq/")
	// A lean search (the chat's context builder) answers from the index
	// alone: nothing is fetched.
	raw, _ := json.Marshal(map[string]any{"query": "pricing frequently asked questions"})
	res, err := svc.Lean().Call(ctx, "search_site", raw)
	if err != nil {
		t.Fatal(err)
	}
	if lr := res.(*tool.SearchResponse); len(lr.Expanded) != 0 || lr.ExpansionStop != "" {
		t.Fatalf("lean search expanded %+v (stop %q)", lr.Expanded, lr.ExpansionStop)
	}
	if _, err := svc.Store.FindDocument(ctx, target, false); err == nil {
		t.Fatalf("lean search fetched %s", target)
	}
	var r tool.SearchResponse
	call(t, svc, "search_site", map[string]any{"query": "pricing frequently asked questions"}, &r)
	t.Logf("expanded %+v stop %s confidence %.2f evidence %s", r.Expanded, r.ExpansionStop, r.Confidence, r.Evidence)
	found := false
	for _, e := range r.Expanded {
		if e.URL == target && e.Status == "indexed" {
			found = true
		}
	}
	if !found {
		t.Fatalf("expansion did not fetch %s: %+v (stop %s)", target, r.Expanded, r.ExpansionStop)
	}
	if len(r.Results) == 0 || r.Results[0].URL != target {
		t.Errorf("after expansion the first result is %v, want %s", firstURL(r), target)
	}
}

func TestTools_CallerMistakes(t *testing.T) {
	svc, _ := indexed(t)
	for _, c := range []struct {
		name, args, code string
	}{
		{"no_such_tool", `{}`, "unknown_tool"},
		{"search_site", `{}`, "invalid"},
		{"search_site", `{"query": "x", "bogus": 1}`, "invalid"},
		{"search_site", `{"query": 5}`, "invalid"},
		{"get_document", `{"id_or_url": "https://example.org/nope"}`, "not_indexed"},
		{"get_document", `{"id_or_url": "/workshops/", "mode": "pdf"}`, "invalid"},
		{"get_recent", `{"type": "x y"}`, "invalid"},
		{"verify_quote", `{"url": "/workshops/"}`, "invalid"},
		{"search_in_document", `{"id_or_url": "/workshops/"}`, "invalid"},
	} {
		_, err := svc.Call(context.Background(), c.name, json.RawMessage(c.args))
		var ae *tool.Error
		if !errors.As(err, &ae) || ae.Code != c.code {
			t.Errorf("%s %s: err %v, want code %s", c.name, c.args, err, c.code)
		}
	}
	var r tool.SearchResponse
	call(t, svc, "search_site", map[string]any{"query": "coffee", "limit": 500}, &r)
	if len(r.Results) > 50 {
		t.Errorf("limit 500 gave %d results, want at most 50", len(r.Results))
	}
	// One log line per call, with the query, terms, top results, action
	// and latency.
	logs := indexedLogs.String()
	for _, want := range []string{`"msg":"Tool call"`, `"tool":"search_site"`, `"terms":[`, `"top":[`, `"confidence":`, `"action":`, `"latency_ms":`, `"expanded":`, `"live_fetch":`} {
		if !strings.Contains(logs, want) {
			t.Errorf("tool logs lack %s", want)
		}
	}

	// What a visitor typed to say who they are stays out of the log, as
	// it stays out of the question log: in the query and in its terms.
	call(t, svc, "search_site", map[string]any{"query": "coffee refund for jane.roe@example.com order 73914622"}, &r)
	var inDoc map[string]any
	call(t, svc, "search_in_document", map[string]any{"id_or_url": "/workshops/", "query": "call me on 0171 5550143"}, &inDoc)
	// So is what a URL a caller passed carries in its query, encoded or not.
	var live map[string]any
	call(t, svc, "fetch_live_url", map[string]any{"url": "https://elsewhere.test/?s=refund+jane.roe%40example.com"}, &live)
	if _, err := svc.Call(context.Background(), "get_document", json.RawMessage(`{"id_or_url": "https://example.org/nope?order=73914622"}`)); err == nil {
		t.Error("get_document of a page not indexed: no error")
	}
	logs = indexedLogs.String()
	for _, secret := range []string{"jane.roe", "example.com", "73914622", "5550143"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
	for _, want := range []string{`"query":"coffee refund for [email] order [number]"`, `"query":"call me on [phone]"`, `"redacted":true`,
		`"url":"https://elsewhere.test/?s=refund [email]"`, `"url":"https://example.org/nope?order=[number]"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("tool logs lack %s", want)
		}
	}
}

// TestToolLog_KeepsSiteURLs: a URL of the site, its port and a
// permalink's date included, is logged as it is: read as one run of
// digits, 127.0.0.1:8120/2025/03/15 was logged as a phone number. What a
// visitor wrote into a URL's query is still cut.
func TestToolLog_KeepsSiteURLs(t *testing.T) {
	svc, site := indexed(t)
	u := site.URL() + "/2025/03/15/freshra25a06g/"
	args, _ := json.Marshal(map[string]string{"id_or_url": u + "?phone=0171%205550143"})
	if _, err := svc.Call(context.Background(), "get_document", args); err == nil {
		t.Fatal("get_document of a page that does not exist: no error")
	}
	logs := indexedLogs.String()
	if want := `"url":"` + u + `?phone=[phone]"`; !strings.Contains(logs, want) {
		t.Errorf("tool logs lack %s", want)
	}
	if strings.Contains(logs, "5550143") {
		t.Error("the log holds the phone number")
	}
}
