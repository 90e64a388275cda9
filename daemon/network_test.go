package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/chat"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/internal/llmtest"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
	"github.com/askwp/askwpd/wp"
)

// netPHP runs PHP inside one site of the test network. The network's
// address carries its port, which is how WordPress finds the network.
func netPHP(t *testing.T, net *wptest.Network, blogID int64, code string) string {
	t.Helper()
	u, _ := url.Parse(net.URL())
	script := fmt.Sprintf(`$_SERVER['HTTP_HOST'] = %q; $_SERVER['REQUEST_URI'] = '/'; define('WP_USE_THEMES', false); require %q; switch_to_blog(%d); `,
		u.Host, strings.TrimRight(net.Root(), "/")+"/wp-load.php", blogID) + code
	out, err := exec.Command("php", "-r", script).CombinedOutput()
	if err != nil {
		t.Fatalf("php: %v: %s", err, out)
	}
	return string(out)
}

// asSitePHP runs PHP as a request to one site's home, the way WordPress
// itself picks the site: by host and path.
func asSitePHP(t *testing.T, net *wptest.Network, home, code string) string {
	t.Helper()
	u, _ := url.Parse(home)
	script := fmt.Sprintf(`$_SERVER['HTTP_HOST'] = %q; $_SERVER['REQUEST_URI'] = %q; define('WP_USE_THEMES', false); require %q; `,
		u.Host, strings.TrimRight(u.Path, "/")+"/", strings.TrimRight(net.Root(), "/")+"/wp-load.php") + code
	out, err := exec.Command("php", "-r", script).CombinedOutput()
	if err != nil {
		t.Fatalf("php: %v: %s", err, out)
	}
	return string(out)
}

// pointShim points the network-activated shim at the test's daemon, until
// the test ends.
func pointShim(t *testing.T, net *wptest.Network, daemonURL, token string, secret []byte) {
	t.Helper()
	path := filepath.Join(net.Env["WP_STATE_DIR"], "shim.json")
	b, _ := json.Marshal(map[string]string{"ASKWPD_URL": daemonURL, "ASKWPD_TOKEN": token, "ASKWPD_WEBHOOK_SECRET": string(secret)})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	// What the shim kept in its outbox while it pointed nowhere (the PHP
	// of earlier subtests) would hold the next events behind its backoff.
	asSitePHP(t, net, net.URL(), `foreach (get_sites(array('fields' => 'ids')) as $id) { switch_to_blog($id); Askwpd_Outbox::clear(); restore_current_blog(); }`)
}

// siteSearch runs search_site as a request from site from (a blog id, or
// "" for none) with the given site argument ("" for none).
func siteSearch(t *testing.T, d *Daemon, from string, site any, q string) *tool.SearchResponse {
	t.Helper()
	args := map[string]any{"query": q, "limit": 10}
	if site != nil {
		args["site"] = site
	}
	raw, _ := json.Marshal(args)
	ctx := context.Background()
	if from != "" {
		ctx = tool.WithSite(ctx, from)
	}
	out, err := d.Call(ctx, "search_site", raw)
	if err != nil {
		t.Fatalf("search_site %s from %q site %v: %v", raw, from, site, err)
	}
	return out.(*tool.SearchResponse)
}

// holds reports whether a result names url's site or holds word.
func holds(r *tool.SearchResponse, word string) bool {
	for _, e := range r.Results {
		if strings.Contains(strings.ToLower(e.Passage+" "+e.Snippet+" "+e.Title), strings.ToLower(word)) {
			return true
		}
	}
	return false
}

func under(u, home string) bool {
	return u == home || strings.HasPrefix(u, strings.TrimRight(home, "/")+"/")
}

// TestNetwork_RealWordPress is the multisite acceptance on the real test
// network (scripts/network-up.sh): each site's markers are found from
// that site and from no other; site "all" finds them all, each hit naming
// its site; a post published on site 3 through WordPress's PHP API is
// searchable from site 3 within a second of its event; archiving a site
// removes its pages from the answers and from the disk; nothing private
// of any site reaches a tool or the state dir's bytes.
func TestNetwork_RealWordPress(t *testing.T) {
	net := wptest.GetNetwork(t)
	net.Lock(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := config.Default()
	cfg.WPRoot = net.Root()
	cfg.StateDir = t.TempDir()
	cfg.Crawl.RatePerSec = 200
	cfg.Schedule.Disabled = true
	// The test types every site's markers, private ones included, as
	// questions; the question log would keep them as what visitors asked
	// (as it should), and the byte scans below look for pages' text.
	cfg.Insights.RetentionDays = 0
	logs := &wptest.SyncBuffer{}
	d, err := Open(ctx, cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer d.Close()
	if !d.net.multisite() {
		t.Fatal("the network was read as a single site")
	}

	var indexed, optedOut []wptest.NetSite
	for _, s := range net.Sites {
		if s.OptedOut {
			optedOut = append(optedOut, s)
		} else {
			indexed = append(indexed, s)
		}
	}
	if got := len(d.allSites()); got != len(indexed) {
		t.Fatalf("%d sites opened, want %d (the opted-out site left out)", got, len(indexed))
	}
	start := time.Now()
	if _, err := d.Index(ctx, IndexOptions{Kind: "test", Full: true}); err != nil {
		t.Fatalf("Index: %v\n%s", err, logs)
	}
	t.Logf("indexed %d sites in %v", len(indexed), time.Since(start))

	t.Run("each site finds its own markers and no other's", func(t *testing.T) {
		for _, s := range indexed {
			from := strconv.FormatInt(s.BlogID, 10)
			r := siteSearch(t, d, from, nil, s.PublicMarker)
			if len(r.Results) == 0 || !holds(r, s.PublicMarker) {
				t.Errorf("site %d: its marker %s not found: %+v", s.BlogID, s.PublicMarker, r.Results)
			}
			for _, e := range r.Results {
				if !under(e.URL, s.Home) {
					t.Errorf("site %d: a result from elsewhere: %s", s.BlogID, e.URL)
				}
			}
			// The same through the site argument, as a blog id and as a home URL.
			for _, arg := range []any{s.BlogID, s.Home + "/"} {
				if r := siteSearch(t, d, "", arg, s.PublicMarker); !holds(r, s.PublicMarker) {
					t.Errorf("site %v: its marker not found through the site argument", arg)
				}
			}
			for _, o := range net.Sites {
				if o.BlogID == s.BlogID {
					continue
				}
				r := siteSearch(t, d, from, nil, o.PublicMarker)
				if holds(r, o.PublicMarker) {
					t.Errorf("site %d finds site %d's marker %s", s.BlogID, o.BlogID, o.PublicMarker)
				}
				for _, e := range r.Results {
					if under(e.URL, o.Home) && o.Home != net.URL() {
						t.Errorf("site %d answers with site %d's page %s", s.BlogID, o.BlogID, e.URL)
					}
				}
			}
		}
	})

	t.Run("site all finds every site's markers, each hit naming its site", func(t *testing.T) {
		for _, s := range indexed {
			r := siteSearch(t, d, "", tool.AllSites, s.PublicMarker)
			found := false
			for _, e := range r.Results {
				if e.Site == nil {
					t.Fatalf("a hit of a network search names no site: %+v", e)
				}
				if e.Site.ID == s.BlogID && under(e.URL, s.Home) && strings.Contains(strings.ToLower(e.Passage+e.Title+e.Snippet), s.PublicMarker) {
					found = true
				}
			}
			if !found {
				t.Errorf("site all: site %d's marker not found: %+v", s.BlogID, r.Results)
			}
		}
		for _, s := range optedOut {
			if r := siteSearch(t, d, "", tool.AllSites, s.PublicMarker); len(r.Results) > 0 && holds(r, s.PublicMarker) {
				t.Errorf("the opted-out site %d is searched: %+v", s.BlogID, r.Results)
			}
			if _, err := d.siteFor(strconv.FormatInt(s.BlogID, 10)); err == nil {
				t.Errorf("the opted-out site %d has an index", s.BlogID)
			}
		}
	})

	t.Run("a page of another site is read where it lives", func(t *testing.T) {
		s := indexed[len(indexed)-1]
		r := siteSearch(t, d, "", tool.AllSites, s.PublicMarker)
		if len(r.Results) == 0 {
			t.Fatal("nothing to read")
		}
		raw, _ := json.Marshal(map[string]any{"id_or_url": r.Results[0].URL})
		out, err := d.Call(tool.WithSite(ctx, strconv.FormatInt(indexed[0].BlogID, 10)), "get_document", raw)
		if err != nil {
			t.Fatalf("get_document of site %d's page from site %d: %v", s.BlogID, indexed[0].BlogID, err)
		}
		if b, _ := json.Marshal(out); !bytes.Contains(b, []byte(s.PublicMarker)) {
			t.Errorf("get_document: %.300s", b)
		}
	})

	t.Run("each site's chat answers from its own index under its own name", func(t *testing.T) {
		s, o := indexed[2], indexed[1]
		for _, c := range []struct {
			from wptest.NetSite
			want bool
		}{{s, true}, {o, false}} {
			site, err := d.siteFor(strconv.FormatInt(c.from.BlogID, 10))
			if err != nil {
				t.Fatal(err)
			}
			p := llmtest.New(t, "openai", llmtest.CallTool("search_site", `{"query": "`+s.PublicMarker+`"}`), llmtest.Say("Here is what the site says."))
			site.Agent.Provider = chat.ProviderConfig(p.Config())
			ctx := tool.WithSite(ctx, strconv.FormatInt(c.from.BlogID, 10))
			resp, err := d.Chat(ctx, ask("What is "+s.PublicMarker+"?"), func(chat.Event) {})
			site.Agent.Provider = chat.ProviderConfig{}
			if err != nil {
				t.Fatal(err)
			}
			seen := p.Seen()
			if len(seen) != 2 {
				t.Fatalf("chat from site %d: %d model calls, want 2", c.from.BlogID, len(seen))
			}
			if !strings.Contains(seen[0].System, c.from.Name) || (c.from.BlogID != indexed[0].BlogID && strings.Contains(seen[0].System, indexed[0].Name)) {
				t.Errorf("chat from site %d: the prompt does not name the site %q:\n%.400s", c.from.BlogID, c.from.Name, seen[0].System)
			}
			var results string
			for _, m := range seen[1].LastResults() {
				results += m.Text
			}
			// The result echoes the query, so it is site 3's pages that tell.
			if got := strings.Contains(results, s.Home+"/"); got != c.want {
				t.Errorf("chat from site %d: the search result holds site %d's pages: %v, want %v\n%.500s", c.from.BlogID, s.BlogID, got, c.want, results)
			}
			for _, src := range resp.Sources {
				if !under(src.URL, c.from.Home) {
					t.Errorf("chat from site %d cites another site's page %s", c.from.BlogID, src.URL)
				}
			}
		}
	})

	noPrivate := func(t *testing.T) {
		t.Helper()
		var needles []string
		for _, s := range net.Sites {
			needles = append(needles, s.PrivateMarker)
			if !s.OptedOut {
				continue
			}
			needles = append(needles, s.PublicMarker) // an opted-out site is private to askwpd
		}
		for _, s := range net.Sites {
			froms := []string{""}
			if _, err := d.siteFor(strconv.FormatInt(s.BlogID, 10)); err == nil {
				froms = append(froms, strconv.FormatInt(s.BlogID, 10))
			}
			for _, from := range froms {
				for _, site := range []any{nil, tool.AllSites} {
					r := siteSearch(t, d, from, site, s.PrivateMarker)
					if holds(r, s.PrivateMarker) {
						t.Errorf("private marker %s found from %q site %v", s.PrivateMarker, from, site)
					}
				}
			}
		}
		dirs := []string{cfg.StateDir}
		subs, _ := filepath.Glob(filepath.Join(cfg.StateDir, "sites", "*"))
		dirs = append(dirs, subs...)
		for _, dir := range dirs {
			if found := wptest.FilesHolding(t, dir, needles...); len(found) > 0 {
				t.Errorf("private text in the state dir %s: %v", dir, found)
			}
		}
	}
	t.Run("nothing private in the tools or the store's bytes", noPrivate)

	// Serving: the sites' event workers, and the API the shim calls.
	stopMain := d.Crawler.StartEvents(ctx, false)
	defer stopMain()
	stopNet := d.serveNetwork(ctx)
	defer func() { cancel(); stopNet() }()
	srv := httptest.NewServer(api.New(d, api.Options{Token: "test-token-0123456789", Log: d.Log}).Handler())
	defer srv.Close()
	secret, err := d.WebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	ec := &eventClient{t: t, url: srv.URL, secret: secret}

	// warmed reads the MB each site's caches were warmed with from the log.
	warmed := func() (sites map[string]float64) {
		sites = map[string]float64{}
		for _, l := range warmLogs(logs.String()) {
			if l.Texts > 0 {
				sites[l.Site.String()] += l.MB
			}
		}
		return sites
	}
	t.Run("each site's search caches are warmed as it starts, within the network's bound", func(t *testing.T) {
		// The sites besides the main one; the main site's index is
		// warmed by Serve, which this test does not run.
		others := map[string]bool{}
		for _, s := range indexed {
			if s.BlogID != d.net.main {
				others[strconv.FormatInt(s.BlogID, 10)] = true
			}
		}
		waitFor(t, 30*time.Second, "every site's caches warmed", func() bool { return len(warmed()) >= len(others) })
		sum := 0.0
		for site, mb := range warmed() {
			if !others[site] {
				t.Errorf("site %q warmed apart from the network's sites %v", site, others)
			}
			sum += mb
		}
		d.net.warm.Lock()
		left := d.net.warm.left
		d.net.warm.Unlock()
		if used := networkWarmBytes - left; used <= 0 || math.Abs(float64(used)/1e6-sum) > 0.1*float64(len(others)) {
			t.Errorf("the network's bound went down by %d bytes, the sites logged %.1f MB warmed", used, sum)
		}
	})

	t.Run("the shim's blog id picks the site", func(t *testing.T) {
		s := indexed[2]
		for _, o := range indexed {
			req, _ := http.NewRequest("POST", srv.URL+"/v1/tools/search_site", strings.NewReader(`{"query":"`+s.PublicMarker+`"}`))
			req.Header.Set("Authorization", "Bearer test-token-0123456789")
			req.Header.Set(api.SiteHeader, strconv.FormatInt(o.BlogID, 10))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var r tool.SearchResponse
			if err := json.Unmarshal(b, &r); err != nil || resp.StatusCode != 200 {
				t.Fatalf("from site %d: %d %s", o.BlogID, resp.StatusCode, b)
			}
			if got, want := holds(&r, s.PublicMarker), o.BlogID == s.BlogID; got != want {
				t.Errorf("from site %d: site %d's marker found=%v, want %v", o.BlogID, s.BlogID, got, want)
			}
		}
	})

	t.Run("a post published on site 3 is searchable from site 3 within 1s", func(t *testing.T) {
		const blog = 3
		word := wptest.Word("netfresh", "post")
		out := netPHP(t, net, blog, `$id = wp_insert_post(array('post_title' => 'Fresh network post', 'post_content' => '<p>The `+word+` arrived on site three.</p>', 'post_status' => 'publish'), true);
			if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); }
			echo json_encode(array('id' => $id, 'url' => get_permalink($id)));`)
		var p phpPost
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &p); err != nil {
			t.Fatalf("php: %v: %s", err, out)
		}
		t.Cleanup(func() { netPHP(t, net, blog, fmt.Sprintf(`wp_delete_post(%d, true);`, p.ID)) })
		start := time.Now()
		code, body := ec.send(map[string]any{"type": "post_published", "post_id": p.ID, "post_type": "post", "status": "publish",
			"public": true, "url": p.URL, "blog_id": blog})
		if code != 202 {
			t.Fatalf("event answered %d %s", code, body)
		}
		for !holds(siteSearch(t, d, strconv.Itoa(blog), nil, word), word) {
			if time.Since(start) > freshnessLimit+5*time.Second {
				t.Fatalf("not searchable after %v\n%s", time.Since(start), logs)
			}
			time.Sleep(5 * time.Millisecond)
		}
		took := time.Since(start)
		t.Logf("searchable from site %d after %v", blog, took)
		if took > freshnessLimit {
			t.Errorf("took %v, want <= %v", took, freshnessLimit)
		}
		for _, o := range indexed {
			if o.BlogID != blog && holds(siteSearch(t, d, strconv.FormatInt(o.BlogID, 10), nil, word), word) {
				t.Errorf("site %d finds site %d's new post", o.BlogID, blog)
			}
		}
	})

	pointShim(t, net, srv.URL, "test-token-0123456789", secret)

	t.Run("the shim sends a site's post under its blog id", func(t *testing.T) {
		s := indexed[2]
		from := strconv.FormatInt(s.BlogID, 10)
		word := wptest.Word("netshim", "post")
		start := time.Now()
		out := asSitePHP(t, net, s.Home, `$id = wp_insert_post(array('post_title' => 'Shim network post', 'post_content' => '<p>The `+word+` came through the shim.</p>', 'post_status' => 'publish'), true);
			if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); }
			echo json_encode(array('id' => $id, 'blog' => get_current_blog_id()));`)
		sent := time.Now() // the shim sends at shutdown: the event has left
		var p struct{ ID, Blog int64 }
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &p); err != nil || p.Blog != s.BlogID {
			t.Fatalf("php: %v: %s", err, out)
		}
		t.Cleanup(func() { asSitePHP(t, net, s.Home, fmt.Sprintf(`wp_delete_post(%d, true);`, p.ID)) })
		for !holds(siteSearch(t, d, from, nil, word), word) {
			if time.Since(sent) > freshnessLimit+5*time.Second {
				t.Fatalf("not searchable from site %d after %v\n%s", s.BlogID, time.Since(sent), logs)
			}
			time.Sleep(5 * time.Millisecond)
		}
		took := time.Since(sent)
		t.Logf("searchable from site %d %v after the shim sent it (%v after PHP started)", s.BlogID, took, time.Since(start))
		if took > freshnessLimit {
			t.Errorf("took %v, want <= %v", took, freshnessLimit)
		}
		if holds(siteSearch(t, d, "", nil, word), word) {
			t.Error("the main site finds site 3's post")
		}
	})

	t.Run("a script on the main site sends another site's post as that site's, and keeps it there when the daemon is away", func(t *testing.T) {
		s := indexed[2]
		from := strconv.FormatInt(s.BlogID, 10)
		word := wptest.Word("netswitch", "post")
		// switch_blog fires once the switch is made: the event queued on
		// site s leaves as s's when the script switches back.
		out := asSitePHP(t, net, net.URL(), fmt.Sprintf(`switch_to_blog(%d);
			$id = wp_insert_post(array('post_title' => 'Switched network post', 'post_content' => '<p>The %s came from a script on the main site.</p>', 'post_status' => 'publish'), true);
			if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); }
			restore_current_blog(); echo json_encode(array('id' => $id));`, s.BlogID, word))
		sent := time.Now()
		var p struct{ ID int64 }
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &p); err != nil || p.ID == 0 {
			t.Fatalf("php: %v: %s", err, out)
		}
		t.Cleanup(func() { asSitePHP(t, net, s.Home, fmt.Sprintf(`wp_delete_post(%d, true);`, p.ID)) })
		for !holds(siteSearch(t, d, from, nil, word), word) {
			if time.Since(sent) > freshnessLimit+5*time.Second {
				t.Fatalf("not searchable from site %d after %v\n%s", s.BlogID, time.Since(sent), logs)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if holds(siteSearch(t, d, "", nil, word), word) {
			t.Error("the main site finds the post a script published on site", s.BlogID)
		}

		// With the daemon unreachable the event waits in site s's outbox,
		// the site it belongs to, not in the outbox of the site switched to.
		out = asSitePHP(t, net, net.URL(), fmt.Sprintf(`add_filter('askwpd_settings', function ($s) { $s['url'] = 'http://127.0.0.1:9'; return $s; }); Askwpd_Settings::reset();
			global $wpdb; $rows = function ($blog) use ($wpdb) { return (int) $wpdb->get_var('SELECT COUNT(*) FROM ' . $wpdb->get_blog_prefix($blog) . 'askwpd_outbox'); };
			$main = get_current_blog_id(); $before = array($rows($main), $rows(%[1]d));
			switch_to_blog(%[1]d); wp_update_post(array('ID' => %[2]d, 'post_title' => 'Switched network post, edited')); restore_current_blog();
			$after = array($rows($main), $rows(%[1]d));
			switch_to_blog(%[1]d); Askwpd_Outbox::clear(); restore_current_blog(); Askwpd_Outbox::clear();
			echo json_encode(array('before' => $before, 'after' => $after));`, s.BlogID, p.ID))
		var rows struct{ Before, After [2]int }
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rows); err != nil {
			t.Fatalf("php: %v: %s", err, out)
		}
		if rows.After[0] != rows.Before[0] || rows.After[1] <= rows.Before[1] {
			t.Errorf("outbox rows (main site, site %d): before %v, after %v; want site %d's to grow and the main site's not",
				s.BlogID, rows.Before, rows.After, s.BlogID)
		}
	})

	t.Run("a new site is indexed by itself and leaves when deleted", func(t *testing.T) {
		word := wptest.Word("netnew", "site")
		// wp_insert_site drops the port from a domain; the test network has one.
		out := netPHP(t, net, 1, `$id = wp_insert_site(array('domain' => DOMAIN_CURRENT_SITE, 'path' => '/newsite/', 'title' => 'Newly Made Site', 'user_id' => 1));
			if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); }
			global $wpdb; $wpdb->update($wpdb->blogs, array('domain' => DOMAIN_CURRENT_SITE), array('blog_id' => $id)); clean_blog_cache($id);
			switch_to_blog($id); $home = 'http://' . DOMAIN_CURRENT_SITE . '/newsite';
			update_option('home', $home); update_option('siteurl', $home); update_option('blog_public', '1');
			update_option('permalink_structure', '/%year%/%monthnum%/%day%/%postname%/'); delete_option('rewrite_rules');
			wp_insert_post(array('post_title' => 'First post of a new site', 'post_content' => '<p>The `+word+` is on the new site.</p>', 'post_status' => 'publish'));
			restore_current_blog(); echo json_encode(array('id' => $id));`)
		var p struct{ ID int64 }
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &p); err != nil || p.ID == 0 {
			t.Fatalf("php: %v: %s", err, out)
		}
		id := strconv.FormatInt(p.ID, 10)
		deleted := false
		del := func() {
			if !deleted {
				deleted = true
				netPHP(t, net, 1, `require_once ABSPATH . 'wp-admin/includes/ms.php'; wpmu_delete_blog(`+id+`, true);`)
			}
		}
		t.Cleanup(del)
		start := time.Now()
		for {
			if _, err := d.siteFor(id); err == nil && holds(siteSearch(t, d, id, nil, word), word) {
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("the new site %s is not indexed after %v\n%s", id, time.Since(start), logs)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("new site %s indexed %v after its creation", id, time.Since(start))

		if holds(siteSearch(t, d, "", nil, word), word) {
			t.Error("the main site finds the new site's post")
		}
		del()
		dir := filepath.Join(cfg.StateDir, "sites", id)
		for {
			_, serr := os.Stat(dir)
			if _, err := d.siteFor(id); err != nil && os.IsNotExist(serr) {
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("the deleted site %s is still indexed (dir: %v)", id, serr)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("archiving a site removes its pages", func(t *testing.T) {
		s := indexed[1]
		id := strconv.FormatInt(s.BlogID, 10)
		dir := filepath.Join(cfg.StateDir, "sites", id)
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("site %d has no state dir of its own: %v", s.BlogID, err)
		}
		netPHP(t, net, 1, `update_blog_status(`+id+`, 'archived', 1);`)
		t.Cleanup(func() { netPHP(t, net, 1, `update_blog_status(`+id+`, 'archived', 0);`) })
		if code, body := ec.send(map[string]any{"type": "site_changed", "blog_id": s.BlogID}); code != 202 {
			t.Fatalf("site event answered %d %s", code, body)
		}
		if _, err := d.siteFor(id); err == nil {
			t.Errorf("the archived site %d still has an index", s.BlogID)
		}
		if r := siteSearch(t, d, "", tool.AllSites, s.PublicMarker); holds(r, s.PublicMarker) {
			t.Errorf("the archived site's marker is still found: %+v", r.Results)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the archived site's state dir is still there: %v", err)
		}
		if found := wptest.FilesHolding(t, cfg.StateDir, s.PublicMarker); len(found) > 0 {
			t.Errorf("the archived site's text is in the state dir: %v", found)
		}
		// Unarchived, through the shim's event, it is indexed again by itself.
		netPHP(t, net, 1, `update_blog_status(`+id+`, 'archived', 0);`)
		start := time.Now()
		for !holds(siteSearch(t, d, "", tool.AllSites, s.PublicMarker), s.PublicMarker) {
			if time.Since(start) > 30*time.Second {
				t.Fatalf("the unarchived site %d is not indexed again after %v", s.BlogID, time.Since(start))
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("unarchived site %d indexed again after %v", s.BlogID, time.Since(start))
	})

	t.Run("a site that opts out leaves the index, and comes back when it opts in", func(t *testing.T) {
		s := indexed[3]
		id := strconv.FormatInt(s.BlogID, 10)
		// What Settings > Reading saves; the shim sees the option change.
		asSitePHP(t, net, s.Home, `update_option('askwpd_exclude', '1');`)
		t.Cleanup(func() { asSitePHP(t, net, s.Home, `delete_option('askwpd_exclude');`) })
		start := time.Now()
		for {
			_, err := d.siteFor(id)
			_, serr := os.Stat(filepath.Join(cfg.StateDir, "sites", id))
			if err != nil && os.IsNotExist(serr) {
				break
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("site %d opted out but is still indexed", s.BlogID)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if holds(siteSearch(t, d, "", tool.AllSites, s.PublicMarker), s.PublicMarker) {
			t.Errorf("the opted-out site's marker is still found")
		}
		asSitePHP(t, net, s.Home, `delete_option('askwpd_exclude');`)
		for !holds(siteSearch(t, d, "", tool.AllSites, s.PublicMarker), s.PublicMarker) {
			if time.Since(start) > 30*time.Second {
				t.Fatalf("site %d opted in again but is not indexed", s.BlogID)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("nothing private after the events", noPrivate)

	st, err := d.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Network == nil || len(st.Network.Sites) != len(indexed) {
		t.Fatalf("status network = %+v", st.Network)
	}
	total := 0
	for _, s := range st.Network.Sites {
		total += s.Index.Documents
		if _, err := url.Parse(s.URL); err != nil || s.Index.Documents == 0 {
			t.Errorf("status site %+v", s)
		}
	}
	m := scrape(t, d)
	for _, s := range st.Network.Sites {
		if got := m[fmt.Sprintf(`askwpd_site_documents{site="%d"}`, s.ID)]; got != float64(s.Index.Documents) {
			t.Errorf("metrics: site %d documents %v, status says %d", s.ID, got, s.Index.Documents)
		}
	}
	if m[`askwpd_site_tool_calls_total{site="all",tool="search_site"}`] == 0 || m[`askwpd_site_tool_calls_total{site="3",tool="search_site"}`] == 0 {
		t.Errorf("metrics: no per-site tool calls counted")
	}
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar}).Get(srv.URL + "/admin?token=test-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, s := range st.Network.Sites {
		if want := fmt.Sprintf(`data-site="%d" data-value="%d"`, s.ID, s.Index.Documents); !bytes.Contains(page, []byte(want)) {
			t.Errorf("/admin lacks site %d's row (%s)", s.ID, want)
		}
	}
	if want := fmt.Sprintf(`id="network_documents" data-value="%d"`, st.Network.Total.Documents); !bytes.Contains(page, []byte(want)) {
		t.Errorf("/admin lacks the network total (%s)", want)
	}
	if total != st.Network.Total.Documents {
		t.Errorf("network total %d, sites sum to %d", st.Network.Total.Documents, total)
	}

	t.Run("status and metrics read the sites' counts from the status view", func(t *testing.T) {
		// Not per request: each read counted every site's tables. A site's
		// commit makes the view stale, as the main site's does.
		waitFor(t, 30*time.Second, "the sites' passes to end", func() bool {
			for _, s := range d.allSites() {
				if s.Crawler.Running() {
					return false
				}
			}
			return true
		})
		s := d.otherSites()[0]
		d.invalidateView()
		v, err := d.view(ctx) // read now, with no refresh under way to replace it
		if err != nil {
			t.Fatal(err)
		}
		before := v.sites[s.ID].stats.Documents
		urls, err := s.Store.DocumentURLs(ctx)
		if err != nil || len(urls) == 0 {
			t.Fatalf("site %d's pages: %v, %v", s.ID, urls, err)
		}
		for u := range urls {
			if ok, err := s.Store.DeleteDocument(ctx, u); err != nil || !ok {
				t.Fatalf("removing %s: %v, %v", u, ok, err)
			}
			break
		}
		docsOf := func(st *api.Status) int {
			for _, x := range st.Network.Sites {
				if x.ID == s.ID {
					return x.Index.Documents
				}
			}
			t.Fatalf("site %d is not in the status", s.ID)
			return 0
		}
		label := fmt.Sprintf(`askwpd_site_documents{site="%d"}`, s.ID)
		st, err := d.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Within freshness.StatusViewGap of the reading, the commit does not make the
		// next request read again.
		got, scraped := docsOf(st), scrape(t, d)[label]
		if (got != before || scraped != float64(before)) && time.Since(v.at) < freshness.StatusViewGap {
			t.Errorf("just after a page left site %d: status %d, metrics %v documents, want the view's %d", s.ID, got, scraped, before)
		}
		waitFor(t, freshness.StatusViewAge+5*time.Second, fmt.Sprintf("site %d's removal in the status and the metrics", s.ID), func() bool {
			st, err := d.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return docsOf(st) == before-1 && scrape(t, d)[label] == float64(before-1)
		})
	})

	t.Run("a site's reading is kept while its store has no index write", func(t *testing.T) {
		s := d.otherSites()[0]
		read := func() store.Stats {
			t.Helper()
			d.invalidateView()
			v, err := d.view(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return v.sites[s.ID].stats
		}
		d.statusCache.forgetSite(s.ID)
		first := read()
		urls, err := s.Store.DocumentURLs(ctx)
		if err != nil || len(urls) == 0 {
			t.Fatalf("site %d's pages: %v, %v", s.ID, urls, err)
		}
		// A page fetched again, unchanged: no index write.
		later := first.NewestFetch.Add(time.Hour).Truncate(time.Second).UTC()
		for u := range urls {
			if ok, err := s.Store.TouchDocument(ctx, u, later, nil); err != nil || !ok {
				t.Fatalf("touching %s: %v, %v", u, ok, err)
			}
			break
		}
		if got := read().NewestFetch; !got.Equal(first.NewestFetch) {
			t.Errorf("with no index write, the view read site %d again: newest fetch %v, the reading's %v", s.ID, got, first.NewestFetch)
		}
		d.statusCache.forgetSite(s.ID) // as the site's pass ends
		if got := read().NewestFetch; !got.Equal(later) {
			t.Errorf("after the site's reading was dropped: newest fetch %v, want %v", got, later)
		}
	})
}

// TestNetwork_QuestionLog: on a network with the question log on, a chat
// turn is logged once, as the visitor's question, with the searches it ran
// for itself (the context builder's and the model's) folded into its row,
// on the main site and on another site alike; a visitor's own search is a
// question of its own.
func TestNetwork_QuestionLog(t *testing.T) {
	net := wptest.GetNetwork(t)
	net.Lock(t)
	ctx := context.Background()
	cfg := config.Default()
	cfg.WPRoot = net.Root()
	cfg.StateDir = t.TempDir()
	cfg.Crawl.RatePerSec = 200
	cfg.Schedule.Disabled = true
	if cfg.Insights.RetentionDays == 0 {
		t.Fatal("the question log is off by default")
	}
	d, err := Open(ctx, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer d.Close()
	if _, err := d.Index(ctx, IndexOptions{Kind: "test", Full: true}); err != nil {
		t.Fatalf("Index: %v", err)
	}
	var sites []wptest.NetSite
	for _, s := range net.Sites {
		if !s.OptedOut && len(sites) < 2 {
			sites = append(sites, s) // the main site and another
		}
	}
	since := time.Now()
	turns := map[string]wptest.NetSite{}
	for _, s := range sites {
		from := strconv.FormatInt(s.BlogID, 10)
		site, err := d.siteFor(from)
		if err != nil {
			t.Fatal(err)
		}
		p := llmtest.New(t, "openai", llmtest.CallTool("search_site", `{"query": "`+s.PublicMarker+`"}`), llmtest.Say("Here is what the site says."))
		site.Agent.Provider = chat.ProviderConfig(p.Config())
		resp, err := d.Chat(tool.WithSite(ctx, from), ask("What is "+s.PublicMarker+"?"), func(chat.Event) {})
		site.Agent.Provider = chat.ProviderConfig{}
		if err != nil {
			t.Fatalf("chat from site %d: %v", s.BlogID, err)
		}
		if n := len(resp.ToolCalls); n < 2 {
			t.Fatalf("chat from site %d ran %d tool calls, want the context search and the model's", s.BlogID, n)
		}
		turns[resp.TurnID] = s
	}
	visitor := sites[1]
	siteSearch(t, d, strconv.FormatInt(visitor.BlogID, 10), nil, visitor.PublicMarker+" visitor")
	if err := d.Questions.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var rows []*store.Question
	if err := d.Store.EachQuestion(ctx, since, func(q *store.Question) error { rows = append(rows, q); return nil }); err != nil {
		t.Fatal(err)
	}
	searches := 0
	for _, q := range rows {
		switch q.Kind {
		case "chat":
			s, ok := turns[q.TurnID]
			if !ok {
				t.Errorf("a chat row of no turn asked: %+v", q)
				continue
			}
			delete(turns, q.TurnID)
			if q.Text != "What is "+s.PublicMarker+"?" {
				t.Errorf("site %d's turn logged as %q", s.BlogID, q.Text)
			}
			// The turn's own searches, folded in: what they found is the
			// row's, from the site asked.
			if q.Action == "" || len(q.TopURLs) == 0 {
				t.Errorf("site %d's turn row has no search of its own: action %q, top %v", s.BlogID, q.Action, q.TopURLs)
			}
			for _, u := range q.TopURLs {
				if !under(u, s.Home) {
					t.Errorf("site %d's turn row names another site's page %s", s.BlogID, u)
				}
			}
		case "search":
			searches++
			if q.Text != visitor.PublicMarker+" visitor" {
				t.Errorf("a search row that no visitor asked: %q (a chat turn's own search, logged apart?)", q.Text)
			}
		default:
			t.Errorf("a row of kind %q", q.Kind)
		}
	}
	if len(turns) > 0 || searches != 1 {
		t.Errorf("%d turns not logged, %d visitor searches logged (want 0 and 1); rows: %d", len(turns), searches, len(rows))
	}
}

// The site label is bounded: past maxSiteLabels sites, every other one
// is "other".
func TestSiteLabelsBounded(t *testing.T) {
	l := siteLabels{ids: map[int64]bool{}}
	seen := map[string]bool{}
	for id := int64(1); id <= 3*maxSiteLabels; id++ {
		seen[l.of(id)] = true
	}
	if len(seen) != maxSiteLabels+1 || !seen["other"] || !seen["1"] || seen[strconv.Itoa(maxSiteLabels+1)] {
		t.Errorf("%d label values for %d sites, want %d (%v)", len(seen), 3*maxSiteLabels, maxSiteLabels+1, seen["other"])
	}
	if l.of(1) != "1" {
		t.Error("a labelled site lost its label")
	}
}

// A site with a schedule of its own gets its own cron entries and is left
// out of the network-wide scheduled passes, not out of the others.
func TestNetworkSiteSchedules(t *testing.T) {
	cfg := config.Default()
	cfg.Network.Sites = map[string]config.ScheduleConfig{"3": {Incremental: "*/2 * * * *", Nightly: "5 4 * * *"}}
	d := &Daemon{Config: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), net: &network{conf: &wp.Network{}, sites: map[int64]*Site{}}}
	c := cron.New()
	d.scheduleSites(context.Background(), c)
	if n := len(c.Entries()); n != 2 {
		t.Errorf("%d cron entries for site 3, want 2", n)
	}
	own, other := &Site{ID: 3}, &Site{ID: 2}
	if !d.ownSchedule(own, "incremental") || !d.ownSchedule(own, "nightly") {
		t.Error("site 3 is not left to its own schedule")
	}
	if d.ownSchedule(own, "initial") || d.ownSchedule(other, "incremental") {
		t.Error("a first pass, or a site without its own schedule, was left out")
	}
}
