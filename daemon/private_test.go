package daemon

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// privateKinds are the seeded non-public items (scripts/wp/seed.php), one
// of each way WordPress keeps a post from visitors.
var privateKinds = []string{
	"secret-draft", "secret-pending", "secret-private", "secret-future", "secret-trash", "secret-autodraft",
	"secret-password-post", "secret-password-page", "secret-members-page", "secret-attachment",
}

type seedItem struct {
	Key        string `json:"key"`
	ID         int64  `json:"id"`
	Type       string `json:"type"`
	Status     string `json:"status"`
	Public     bool   `json:"public"`
	Marker     string `json:"marker"`
	BodyMarker string `json:"body_marker"`
	Title      string `json:"title"`
	URL        string `json:"url"`
}

type seedManifest struct {
	Items []seedItem `json:"items"`
	Terms []struct {
		Taxonomy string `json:"taxonomy"`
		ID       int64  `json:"id"`
		Slug     string `json:"slug"`
	} `json:"terms"`
}

func readSeed(t *testing.T, site *wptest.Site) *seedManifest {
	t.Helper()
	path := site.Env["WP_SEED_MANIFEST"]
	if path == "" {
		path = filepath.Join(wptest.RepoRoot(), ".wp-test", "seed.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("seed manifest: %v (run scripts/wp-up.sh)", err)
	}
	var m seedManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("seed manifest %s: %v", path, err)
	}
	return &m
}

// leakCheck finds marker words in what a caller or an operator can see.
type leakCheck struct {
	markers []string
	// private maps the items' addresses (canonical) to their keys. A tool
	// must never offer one as a result; the operator's views and the logs
	// may name them (a fetch that found a login wall or a 404 is news for
	// the operator), as long as no text of the item comes along.
	private map[string]string
}

// echoKeys are the fields where a response or a log line repeats the
// caller's own input (the query, the URL asked for, an error naming it).
// Only there is the input itself allowed; everywhere else a marker is a leak.
var echoKeys = map[string]bool{
	"query": true, "terms": true, "matched_terms": true, "id_or_url": true, "url": true,
	"message": true, "hint": true, "quote": true, "error": true, "top": true,
}

// inText lists the markers in s.
func (lc *leakCheck) inText(s string) []string {
	var found []string
	for _, m := range lc.markers {
		if strings.Contains(s, m) {
			found = append(found, m)
		}
	}
	return found
}

// inJSON lists the markers in a JSON document, outside echoes of inputs.
func (lc *leakCheck) inJSON(raw []byte, inputs ...string) []string {
	return lc.scanJSON(raw, false, inputs)
}

// inResult is inJSON for a tool's result, which may not even name a
// private page as a url unless the caller asked for that one.
func (lc *leakCheck) inResult(raw []byte, inputs ...string) []string {
	return lc.scanJSON(raw, true, inputs)
}

func (lc *leakCheck) scanJSON(raw []byte, urls bool, inputs []string) []string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return lc.inText(string(raw))
	}
	var found []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(k, e)
			}
		case []any:
			for _, e := range x {
				walk(key, e)
			}
		case string:
			s := x
			if echoKeys[key] {
				for _, in := range inputs {
					if in != "" && strings.Contains(s, in) {
						s = dropWord(s, in)
					}
				}
			}
			for _, m := range lc.inText(s) {
				found = append(found, key+": "+m)
			}
			if urls && key == "url" && !slices.ContainsFunc(inputs, func(in string) bool { return crawl.Canonical(in) == crawl.Canonical(x) }) {
				if k, ok := lc.private[crawl.Canonical(x)]; ok {
					found = append(found, "url of "+k+": "+x)
				}
			}
		}
	}
	walk("", v)
	return found
}

// dropWord removes the input w from s where it stands as a whole word, so
// that an echoed "SECRETX" hides neither "SECRETXBODY" nor "xSECRETX".
func dropWord(s, w string) string {
	re := regexp.MustCompile(`(^|[^\pL\pN])` + regexp.QuoteMeta(w) + `($|[^\pL\pN])`)
	for {
		t := re.ReplaceAllString(s, "${1} ${2}")
		if t == s {
			return s
		}
		s = t
	}
}

// privClient speaks to the daemon's HTTP API as a tool caller, an operator
// and the shim do.
type privClient struct {
	t      *testing.T
	base   string
	token  string
	secret []byte
	n      int
}

func (c *privClient) do(method, path string, body []byte, auth bool) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, b
}

func (c *privClient) tool(name string, args map[string]any) (int, []byte) {
	c.t.Helper()
	b, _ := json.Marshal(args)
	return c.do("POST", "/v1/tools/"+name, b, true)
}

func (c *privClient) status() *api.Status {
	c.t.Helper()
	code, b := c.do("GET", "/v1/status", nil, true)
	if code != 200 {
		c.t.Fatalf("/v1/status answered %d: %s", code, b)
	}
	var st api.Status
	if err := json.Unmarshal(b, &st); err != nil {
		c.t.Fatalf("/v1/status: %v", err)
	}
	return &st
}

// events sends one signed batch, as the shim does.
func (c *privClient) events(evs ...map[string]any) {
	c.t.Helper()
	for _, ev := range evs {
		if !store.KnownEventType(ev["type"].(string)) {
			c.t.Fatalf("event type %q is not one the daemon knows", ev["type"])
		}
		c.n++
		ev["id"] = fmt.Sprintf("private-%d-%d", time.Now().UnixNano(), c.n)
	}
	body, _ := json.Marshal(map[string]any{"events": evs})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequest("POST", c.base+"/v1/events", bytes.NewReader(body))
	req.Header.Set(api.HeaderTimestamp, ts)
	req.Header.Set(api.HeaderSignature, api.Sign(c.secret, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 {
		c.t.Fatalf("events answered %d: %s", resp.StatusCode, b)
	}
}

// settle waits until no pass runs, no event is pending, no re-crawl is
// owed and every run kind in kinds has finished.
func (c *privClient) settle(kinds ...string) {
	c.t.Helper()
	c.settleFor(true, kinds)
}

// settleAny is settle for one of kinds.
func (c *privClient) settleAny(kinds ...string) {
	c.t.Helper()
	c.settleFor(false, kinds)
}

func (c *privClient) settleFor(all bool, kinds []string) {
	c.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		st := c.status()
		done := !st.Crawling && st.Freshness != nil && st.Freshness.PendingEvents == 0 && st.Freshness.RecrawlPending == ""
		some := len(kinds) == 0
		for _, k := range kinds {
			seen := false
			for _, r := range st.Runs {
				seen = seen || r.Kind == k && !r.FinishedAt.IsZero()
			}
			some = some || seen
			done = done && (seen || !all)
		}
		done = done && some
		if done {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("daemon not settled (want runs %v): crawling %v, runs %+v, freshness %+v", kinds, st.Crawling, st.Runs, st.Freshness)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var adminDocsRe = regexp.MustCompile(`id="documents" data-value="(\d+)"`)

// TestPrivate_NothingLeaks is the privacy acceptance on the real WordPress:
// with one item of every non-public kind seeded (draft, pending, private,
// scheduled, trashed, auto-draft, password-protected post and page, a page
// behind a login redirect, an image attached to a private post), discovery,
// a pass, a full re-crawl, every event type for every item, fetch_live_url on each
// of their addresses and every tool with their marker words leave no trace
// of them in the store, in any tool result, in /admin, /v1/status,
// /metrics or the logs. Then a public post made private through WordPress
// and the shim's event leaves search, get_document, get_recent and the
// admin's count within a second.
func TestPrivate_NothingLeaks(t *testing.T) {
	site := wptest.Get(t)
	site.Lock(t)
	t0 := time.Now()
	phase := func(name string) {
		t.Logf("%-24s done at %5.1f s", name, time.Since(t0).Seconds())
	}
	seed := readSeed(t, site)
	truth := site.Truth(t)

	// The seed, checked against WordPress itself: each item is one it
	// keeps from visitors, and its page does not show the body.
	byKey := map[string]seedItem{}
	for _, it := range seed.Items {
		byKey[it.Key] = it
	}
	truePrivate := map[int64]bool{}
	for _, p := range truth.Private {
		truePrivate[p.ID] = true
	}
	truePublic := map[int64]bool{}
	for _, p := range truth.Public {
		truePublic[p.ID] = true
	}
	lc := &leakCheck{private: map[string]string{}}
	var items []seedItem
	for _, k := range privateKinds {
		it, ok := byKey[k]
		if !ok || it.Marker == "" || it.BodyMarker == "" {
			t.Fatalf("the seed lacks %s with markers: re-run scripts/wp-up.sh", k)
		}
		if it.Public || !truePrivate[it.ID] || truePublic[it.ID] {
			t.Fatalf("%s (post %d): seed says public=%v, WordPress private=%v public=%v; want private only",
				k, it.ID, it.Public, truePrivate[it.ID], truePublic[it.ID])
		}
		items = append(items, it)
		lc.markers = append(lc.markers, it.BodyMarker, it.Marker) // longer first: reports name the body
	}
	truthURL := map[int64]string{}
	for _, p := range truth.Private {
		truthURL[p.ID] = p.URL
	}
	// Every address of each item: the manifest's, WordPress's permalink and
	// the shortlink; for the attachment its ?attachment_id= form and the
	// file itself, for the members page its embed.
	addrs := map[string][]string{}
	for _, it := range items {
		us := []string{it.URL, truthURL[it.ID], fmt.Sprintf("%s/?p=%d", strings.TrimRight(site.URL(), "/"), it.ID)}
		switch it.Type {
		case "attachment":
			us = append(us, fmt.Sprintf("%s/?attachment_id=%d", strings.TrimRight(site.URL(), "/"), it.ID),
				strings.TrimRight(site.URL(), "/")+"/wp-content/uploads/askwpd-seed/roastery-floor-plan.png")
		case "page":
			if it.Key == "secret-members-page" {
				us = append(us, strings.TrimRight(it.URL, "/")+"/embed/")
			}
		}
		for _, u := range us {
			if u != "" && !slices.Contains(addrs[it.Key], u) {
				addrs[it.Key] = append(addrs[it.Key], u)
				lc.private[crawl.Canonical(u)] = it.Key
			}
		}
	}
	noFollow := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, it := range items {
		var seen []string
		for _, u := range addrs[it.Key] {
			resp, err := noFollow.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if bytes.Contains(b, []byte(it.BodyMarker)) {
				t.Fatalf("WordPress itself shows %s's body at %s: the seed is not private", it.Key, u)
			}
			seen = append(seen, fmt.Sprintf("%d%s", resp.StatusCode, strings.TrimPrefix(" "+resp.Header.Get("Location"), " ")))
		}
		t.Logf("%-22s %-10s visitors get %v", it.Key, it.Status, seen)
	}

	// A public post, indexed by the first pass and made private at the end.
	word := func() string { return wptest.Word("zq", "priv") }
	w0, w1 := word(), word()
	flip := publishPost(t, site, "Harbour Ferry "+w0, "<p>The "+w1+" paragraph about the harbour ferry timetable and its winter schedule, with the last crossing at nine.</p>")
	flipURL := crawl.Canonical(flip.URL)

	// The daemon as systemd runs it: Serve, with its initial pass.
	logs := &wptest.SyncBuffer{}
	// The question log keeps what visitors type, and this test types the
	// markers as a visitor probing for them would: with the log on, the
	// markers would be found in the questions table, as the visitor's
	// text rather than the site's. insights' tests check the log.
	d := openTestDaemon(t, site, logs, func(c *config.Config) { c.Insights.RetentionDays = 0 })
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx) }()
	t.Cleanup(func() {
		select {
		case err := <-served:
			t.Errorf("Serve returned before the test ended it: %v", err)
			return
		default:
		}
		cancel()
		stopAt := time.Now()
		defer func() { t.Logf("Serve returned %v after its context ended", time.Since(stopAt)) }()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return 30 s after its context ended")
		}
	})
	var listen string
	for deadline := time.Now().Add(30 * time.Second); listen == "" && time.Now().Before(deadline); {
		for _, line := range strings.Split(logs.String(), "\n") {
			var l struct{ Msg, Listen string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "Serving" {
				listen = l.Listen
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if listen == "" {
		t.Fatalf("the daemon did not log its address; logs:\n%s", logs.String())
	}
	token, err := EnsureSecret(d.Config.StateDir, "token")
	if err != nil {
		t.Fatal(err)
	}
	secret, err := d.WebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	c := &privClient{t: t, base: "http://" + listen, token: token, secret: secret}

	phase("setup")
	// 1. Discovery and a pass.
	// The admin's "reindex now" while the initial pass starts: one of the
	// two runs, and the full re-crawl the events ask for below is the
	// second pass.
	if code, b := c.do("POST", "/admin/reindex", nil, true); code != http.StatusSeeOther {
		t.Fatalf("/admin/reindex answered %d: %s", code, b)
	}
	c.settleAny("initial", "admin")
	// The pass filled an index that was empty as Serve warmed it: the
	// pass warms it again for the first visitors, every chunk's text.
	chunks := c.status().Index.Chunks
	warmed := func() (texts int) {
		for _, l := range warmLogs(logs.String()) {
			texts += l.Texts
		}
		return texts
	}
	waitFor(t, 10*time.Second, fmt.Sprintf("the search caches warmed with the first pass's %d chunks", chunks), func() bool {
		return warmed() >= chunks
	})
	phase("first pass")
	// Not a vacuous pass: every public post and page is in.
	if st := c.status(); st.Index.Documents < len(truth.Public) {
		t.Fatalf("after the first pass %d documents are indexed, WordPress has %d public posts and pages", st.Index.Documents, len(truth.Public))
	}

	// 2. Every event type for every item. First the events a forged or
	// mistaken shim could send, calling each item public...
	var lying []map[string]any
	for _, it := range items {
		for _, typ := range []string{store.EventPostPublished, store.EventPostUpdated} {
			lying = append(lying, map[string]any{"type": typ, "post_id": it.ID, "post_type": it.Type,
				"status": "publish", "public": true, "url": it.URL})
		}
	}
	c.events(lying...)
	c.settle()
	// ...then what the shim sends for them, and term changes naming them.
	var internalTag int64
	for _, tm := range seed.Terms {
		if tm.Taxonomy == "post_tag" && tm.Slug == "internal" {
			internalTag = tm.ID
		}
	}
	var ids []int64
	var honest []map[string]any
	for _, it := range items {
		ids = append(ids, it.ID)
		for _, typ := range []string{store.EventPostUpdated, store.EventPostUnpublished, store.EventPostTrashed, store.EventPostDeleted} {
			honest = append(honest, map[string]any{"type": typ, "post_id": it.ID, "post_type": it.Type,
				"status": it.Status, "public": false})
		}
	}
	honest = append(honest,
		map[string]any{"type": store.EventTermChanged, "taxonomy": "post_tag", "term_id": internalTag, "post_ids": ids},
		map[string]any{"type": store.EventTermChanged, "taxonomy": "post_tag", "term_id": internalTag})
	c.events(honest...)
	c.settle()
	// Site-wide changes: each asks for a re-crawl, the strongest a full one.
	c.events(map[string]any{"type": store.EventMenuChanged}, map[string]any{"type": store.EventThemeChanged},
		map[string]any{"type": store.EventPermalinksChanged})
	c.settle("recrawl:permalinks")
	phase("events and the re-crawl")

	// 3. fetch_live_url on every address: refused, nothing returned.
	for _, it := range items {
		for _, u := range addrs[it.Key] {
			code, b := c.tool("fetch_live_url", map[string]any{"url": u})
			var r tool.LiveResponse
			if err := json.Unmarshal(b, &r); err != nil || code != 200 {
				t.Fatalf("fetch_live_url %s: %d %s", u, code, b)
			}
			ecode := ""
			if r.Error != nil {
				ecode = r.Error.Code
			}
			if r.OK || r.Document != nil || !slices.Contains([]string{"private", "not_found", "login_wall", "not_html"}, ecode) {
				t.Errorf("fetch_live_url %s (%s) = ok %v status %q error %q document %v; want it refused", u, it.Key, r.OK, r.Status, ecode, r.Document != nil)
			}
			if l := lc.inResult(b, u); len(l) > 0 {
				t.Errorf("fetch_live_url %s leaks %v", u, l)
			}
			t.Logf("fetch_live_url %-70s -> %s", u, ecode)
		}
	}
	c.settle()

	// The operator's views and the store, before any tool was asked about a
	// marker: not even an echo is allowed.
	checkViews := func(phase string, inputs []string) {
		t.Helper()
		for _, p := range []string{"/admin", "/v1/status", "/metrics", "/v1/tools", "/healthz"} {
			code, b := c.do("GET", p, nil, true)
			if code != 200 {
				t.Errorf("%s: GET %s answered %d", phase, p, code)
			}
			var l []string
			if p == "/v1/status" || p == "/v1/tools" || p == "/healthz" {
				l = lc.inJSON(b)
			} else {
				l = lc.inText(string(b))
			}
			if len(l) > 0 {
				t.Errorf("%s: %s shows %v", phase, p, l)
			}
		}
		// The browser's way in: ?token= for a session cookie, then the page.
		jar, _ := cookiejar.New(nil)
		br := &http.Client{Jar: jar, Timeout: 20 * time.Second}
		resp, err := br.Get(c.base + "/admin?token=" + url.QueryEscape(c.token))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !adminDocsRe.Match(b) {
			t.Errorf("%s: /admin through a session answered %d", phase, resp.StatusCode)
		}
		if l := lc.inText(string(b)); len(l) > 0 {
			t.Errorf("%s: /admin (session) shows %v", phase, l)
		}
		// The logs; a tool call's line may repeat its own query and URL.
		for _, line := range strings.Split(logs.String(), "\n") {
			if line == "" {
				continue
			}
			if l := lc.inJSON([]byte(line), inputs...); len(l) > 0 {
				t.Errorf("%s: log line shows %v: %.300s", phase, l, line)
			}
		}
		checkStore(t, d, lc, phase, ids)
	}
	phase("fetch_live_url")
	checkViews("after crawl, events and live fetches", nil)
	phase("checks")

	// 4. Every tool, with each marker, title and address as its input.
	var publicURL string
	for _, p := range truth.Public {
		if p.Type == "page" && strings.HasSuffix(p.URL, "/pricing-faq/") {
			publicURL = p.URL
		}
	}
	if publicURL == "" {
		t.Fatal("no public page /pricing-faq/ in WordPress's truth")
	}
	var inputs []string
	calls := 0
	callTool := func(name string, args map[string]any, ins ...string) []byte {
		t.Helper()
		code, b := c.tool(name, args)
		calls++
		for _, in := range ins {
			if !slices.Contains(inputs, in) {
				inputs = append(inputs, in)
			}
		}
		if code >= 500 {
			t.Errorf("%s %v answered %d: %s", name, args, code, b)
		}
		if l := lc.inResult(b, ins...); len(l) > 0 {
			t.Errorf("%s %v leaks %v: %.400s", name, args, l, b)
		}
		return b
	}
	for _, it := range items {
		title := strings.TrimSpace(strings.TrimPrefix(it.Title, it.Marker))
		for i, q := range []string{it.Marker, it.BodyMarker, it.Title, title} {
			callTool("search_site", map[string]any{"query": q, "limit": 20, "passages": i%2 == 0, "sort": []string{"relevance", "date"}[i/2]}, q)
			callTool("search_in_document", map[string]any{"id_or_url": publicURL, "query": q}, publicURL, q)
			callTool("verify_quote", map[string]any{"url": publicURL, "quote": q}, publicURL, q)
		}
		sentence := "This text must never appear on a public page: " + it.BodyMarker + "."
		for _, u := range addrs[it.Key] {
			for _, mode := range []string{"markdown", "chunks"} {
				callTool("get_document", map[string]any{"id_or_url": u, "mode": mode}, u)
			}
			callTool("search_in_document", map[string]any{"id_or_url": u, "query": it.Marker}, u, it.Marker)
			callTool("verify_quote", map[string]any{"url": u, "quote": sentence}, u, sentence)
		}
		id := strconv.FormatInt(it.ID, 10)
		callTool("get_document", map[string]any{"id_or_url": id, "mode": "text"}, id)
		callTool("get_document", map[string]any{"id_or_url": id, "mode": "outline"}, id)
		callTool("get_document", map[string]any{"id_or_url": "/?p=" + id}, "/?p="+id)
		callTool("search_in_document", map[string]any{"id_or_url": id, "query": it.BodyMarker}, id, it.BodyMarker)
	}
	for _, typ := range []string{"", "post", "page", "any"} {
		args := map[string]any{"limit": 50}
		if typ != "" {
			args["type"] = typ
		}
		callTool("get_recent", args)
	}
	t.Logf("%d tool calls over HTTP", calls)
	// The searches ran where the daemon's searches run: its in-memory
	// index, kept current through every event above.
	if si := c.status().SearchIndex; !si.Ready || si.Memory == 0 || si.Loads != 1 {
		t.Fatalf("search index %+v: want it loaded once and serving the searches", si)
	}
	c.settle()
	phase("tools")
	checkViews("after every tool", inputs)

	// 5. A public post made private disappears everywhere within a second.
	// Each view is asked in turn; a view counts as gone from the moment
	// its answer (not the round's last) showed it gone.
	var start time.Time
	type view struct {
		name string
		gone func(before int) bool
	}
	var before int
	adminDocs := func() int {
		_, b := c.do("GET", "/admin", nil, true)
		if m := adminDocsRe.FindSubmatch(b); m != nil {
			n, _ := strconv.Atoi(string(m[1]))
			return n
		}
		return -1
	}
	views := []view{
		{"search_site", func(int) bool {
			_, b := c.tool("search_site", map[string]any{"query": w1, "limit": 5})
			var sr tool.SearchResponse
			_ = json.Unmarshal(b, &sr)
			return !slices.ContainsFunc(sr.Results, func(e tool.Evidence) bool { return e.URL == flipURL })
		}},
		{"get_document", func(int) bool {
			code, _ := c.tool("get_document", map[string]any{"id_or_url": flipURL})
			return code == http.StatusNotFound
		}},
		{"get_recent", func(int) bool {
			_, b := c.tool("get_recent", map[string]any{"type": "post", "limit": 10})
			var rr tool.RecentResponse
			_ = json.Unmarshal(b, &rr)
			return !slices.ContainsFunc(rr.Results, func(r tool.RecentItem) bool { return r.URL == flipURL })
		}},
		{"admin", func(before int) bool { return adminDocs() == before-1 }},
	}
	before = adminDocs()
	if before <= 0 {
		t.Fatalf("before: /admin counts %d documents", before)
	}
	for _, v := range views[:3] {
		if v.gone(before) {
			t.Fatalf("before: %s does not show the public post %s", v.name, flipURL)
		}
	}
	inputs = append(inputs, w1, flipURL)
	if found := wptest.FilesHolding(t, d.Config.StateDir, w1); len(found) == 0 {
		t.Fatalf("before: no file of the state dir holds the public post's word %s; the scan below would see nothing", w1)
	}
	site.PHP(t, fmt.Sprintf(`wp_update_post(array('ID' => %d, 'post_status' => 'private'));`, flip.ID))
	start = time.Now()
	// What the shim sends for a post leaving public view: no title, no URL.
	c.events(map[string]any{"type": store.EventPostUnpublished, "post_id": flip.ID, "post_type": "post", "status": "private", "public": false})
	accepted := time.Since(start)
	gone := map[string]time.Duration{}
	for len(gone) < len(views) {
		for _, v := range views {
			if _, ok := gone[v.name]; !ok && v.gone(before) {
				gone[v.name] = time.Since(start)
			}
		}
		if el := time.Since(start); el > 10*time.Second && len(gone) < len(views) {
			t.Fatalf("after %v the private post is still shown; gone from %v only", el, gone)
		}
	}
	var took time.Duration
	for _, v := range gone {
		took = max(took, v)
	}
	t.Logf("public post made private: event accepted after %v; gone from search_site %v, get_document %v, get_recent %v, admin %v",
		accepted, gone["search_site"], gone["get_document"], gone["get_recent"], gone["admin"])
	if took > freshnessLimit {
		t.Errorf("the private post took %v to disappear everywhere, want <= %v", took, freshnessLimit)
	}
	// Its body word is private now too (the title word is in its slug, and
	// so in the URLs the frontier keeps).
	lc.markers = append(lc.markers, w1)
	c.settle()
	checkViews("after the post went private", inputs)
	// Gone from the files too, not only from the rows: the checkpoint
	// that follows a removal empties the WAL, and the freed pages of the
	// database were zeroed.
	deadline := time.Now().Add(15 * time.Second)
	for found := wptest.FilesHolding(t, d.Config.StateDir, lc.markers...); len(found) > 0; found = wptest.FilesHolding(t, d.Config.StateDir, lc.markers...) {
		if time.Now().After(deadline) {
			t.Errorf("15 s after the post went private, the state dir's files still hold %v", found)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	phase("privatized")
}

// checkStore reads every row of every table of the store: none may hold a
// marker, in any case (the FTS index and its vocabulary hold lower-cased
// terms), and no document may belong to a private post.
func checkStore(t *testing.T, d *Daemon, lc *leakCheck, phase string, ids []int64) {
	t.Helper()
	db, err := sql.Open("sqlite", d.Store.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables []string
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	lower := make([]string, len(lc.markers))
	for i, m := range lc.markers {
		lower[i] = strings.ToLower(m)
	}
	cells := 0
	for _, tb := range tables {
		rows, err := db.Query(`SELECT * FROM "` + strings.ReplaceAll(tb, `"`, `""`) + `"`)
		if err != nil {
			t.Fatalf("%s: read %s: %v", phase, tb, err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("%s: read %s: %v", phase, tb, err)
			}
			for i, v := range vals {
				var s string
				switch x := v.(type) {
				case string:
					s = x
				case []byte:
					s = string(x)
				default:
					continue
				}
				cells++
				ls := strings.ToLower(s)
				for j, m := range lower {
					if strings.Contains(ls, m) {
						t.Errorf("%s: the store's %s.%s holds %s: %.200q", phase, tb, cols[i], lc.markers[j], s)
					}
				}
			}
		}
		rows.Close()
	}
	if cells == 0 {
		t.Fatalf("%s: read no text from the store's %d tables", phase, len(tables))
	}
	for _, id := range ids {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM documents WHERE post_id = ?`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			t.Errorf("%s: the store has %d document(s) of private post %d", phase, n, id)
		}
	}
}

// TestPrivate_LeakCheck pins what counts as a leak: a marker anywhere but
// in an echo of the caller's own input, and a private page offered as a
// result.
func TestPrivate_LeakCheck(t *testing.T) {
	lc := &leakCheck{markers: []string{"SECRETXBODY", "SECRETX"}, private: map[string]string{crawl.Canonical("http://h/?p=7"): "x"}}
	cases := []struct {
		name   string
		raw    string
		inputs []string
		result bool
		want   int
	}{
		{"query echo", `{"query":"SECRETX","terms":["secretx"],"results":[]}`, []string{"SECRETX"}, true, 0},
		{"error naming the input", `{"error":{"code":"not_indexed","message":"no indexed page \"SECRETX\""}}`, []string{"SECRETX"}, true, 0},
		{"marker in a passage", `{"query":"SECRETX","results":[{"passage":"SECRETX plans"}]}`, []string{"SECRETX"}, true, 1},
		{"marker in a title without input", `{"results":[{"title":"SECRETX plans"}]}`, nil, true, 1},
		{"other marker beside the echo", `{"query":"SECRETX","results":[{"snippet":"SECRETXBODY"}]}`, []string{"SECRETX"}, true, 2},
		{"echo key with more than the input", `{"message":"SECRETX and SECRETXBODY"}`, []string{"SECRETX"}, true, 2},
		{"private page as a result", `{"results":[{"url":"http://h/?p=7"}]}`, nil, true, 1},
		{"private page asked for", `{"url":"http://h/?p=7","ok":false}`, []string{"http://h/?p=7"}, true, 0},
		{"private page named to the operator", `{"errors":[{"url":"http://h/?p=7"}]}`, nil, false, 0},
		{"not JSON", `<td>SECRETX</td>`, nil, false, 1},
	}
	for _, c := range cases {
		var got []string
		if c.result {
			got = lc.inResult([]byte(c.raw), c.inputs...)
		} else {
			got = lc.inJSON([]byte(c.raw), c.inputs...)
		}
		if len(got) != c.want {
			t.Errorf("%s: found %v, want %d finding(s)", c.name, got, c.want)
		}
	}
}
