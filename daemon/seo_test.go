package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/origin"
)

// seoSite is the SEO test site scripts/varnish-up.sh brings up (its
// env, $ASKWPD_TEST_SEO_ENV, else .wp-seo/env), with its Varnish's env
// (varnish.env beside it); the test skips when it is not up.
func seoSite(t *testing.T) (*wptest.Site, map[string]string) {
	t.Helper()
	path := os.Getenv("ASKWPD_TEST_SEO_ENV")
	// CI's step that names the site brought it up: its absence there is a failure.
	skip := t.Skipf
	if path != "" && os.Getenv("CI") != "" {
		skip = t.Fatalf
	}
	if path == "" {
		path = filepath.Join(wptest.RepoRoot(), ".wp-seo", "env")
	}
	site, err := wptest.OpenFile(path)
	if err != nil {
		skip("the SEO test site is not up (%v); run scripts/varnish-up.sh", err)
	}
	varnish, err := wptest.OpenFile(filepath.Join(filepath.Dir(path), "varnish.env"))
	if err != nil {
		skip("its Varnish is not up (%v); run scripts/varnish-up.sh", err)
	}
	return site, varnish.Env
}

// shimStateDir points the shim of site at a daemon's state dir, where it
// reads the webhook secret, until the test ends.
func shimStateDir(t *testing.T, site *wptest.Site, dir string) {
	t.Helper()
	site.PHP(t, fmt.Sprintf(`update_option('askwpd_companion_settings', array('state_dir' => %q));`, dir))
	t.Cleanup(func() { site.PHP(t, `delete_option('askwpd_companion_settings');`) })
}

// setOption sets a WordPress option until the test ends, then restores it.
func setOption(t *testing.T, site *wptest.Site, name, value string) {
	t.Helper()
	old := site.PHP(t, fmt.Sprintf(`echo json_encode(get_option(%q, null));`, name))
	site.PHP(t, fmt.Sprintf(`update_option(%q, %q);`, name, value))
	t.Cleanup(func() {
		site.PHP(t, fmt.Sprintf(`$v = json_decode(%q, true); if ($v === null) { delete_option(%q); } else { update_option(%q, $v); }`, strings.TrimSpace(old), name, name))
	})
}

// visitorGet is a plain GET of u, as a visitor's browser sends it.
func visitorGet(t *testing.T, u string) (body, xcache string) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b), res.Header.Get("X-Cache")
}

// TestPageCache_Varnish is the never-a-stale-page acceptance: the site is
// served to visitors by a Varnish caching HTML for 10 minutes. A post is
// edited through WordPress and the shim's signed event sent: search finds
// the new text within a second while Varnish still serves visitors the old
// page. The control, with origin fetching and the cache bypass both off,
// reads the cached page and stays stale: the check fails there.
func TestPageCache_Varnish(t *testing.T) {
	site, venv := seoSite(t)
	site.Lock(t)
	ctx := context.Background()
	vURL, originURL := venv["VARNISH_URL"], venv["ORIGIN_URL"]
	// Visitors reach the site through Varnish: its address is the site's.
	setOption(t, site, "home", vURL)
	setOption(t, site, "siteurl", vURL)

	word := func() string { return wptest.Word("zq", "vc") }
	first := word()
	// A slug of its own: an earlier run's post at the same address is still cached.
	p := publishPost(t, site, "Cached lock keepers "+wptest.Word("slug", ""), "<p>The "+first+" paragraph about lock keepers and their gates.</p>")
	if !strings.HasPrefix(p.URL, vURL+"/") {
		t.Fatalf("permalink %s is not under the Varnish address %s", p.URL, vURL)
	}
	// A visitor's view fills the cache.
	visitorGet(t, p.URL)
	if body, xc := visitorGet(t, p.URL); xc != "HIT" || !strings.Contains(body, first) {
		t.Fatalf("Varnish does not cache the post (X-Cache %q)", xc)
	}

	for _, m := range []struct {
		name   string
		origin string
		bypass bool
		fresh  bool
	}{
		{"origin and bypass", originURL, true, true},
		{"bypass only", "", true, true},
		{"origin only", originURL, false, true},
		{"neither (control)", "", false, false},
	} {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			shimStateDir(t, site, dir)
			if _, err := EnsureSecret(dir, "webhook.secret"); err != nil {
				t.Fatal(err)
			}
			d := openTestDaemon(t, site, nil, func(c *config.Config) {
				c.StateDir, c.Origin, c.Crawl.CacheBypass = dir, m.origin, m.bypass
			})
			stop := d.Crawler.StartEvents(ctx, false)
			defer stop()
			ec := newEventClient(t, d)
			u := crawl.Canonical(p.URL)
			send := func(typ string) time.Time {
				start := time.Now()
				if code, body := ec.send(map[string]any{"type": typ, "post_id": p.ID, "post_type": "post", "url": p.URL, "status": "publish", "public": true}); code != 202 {
					t.Fatalf("event answered %d %s", code, body)
				}
				return start
			}
			// What the page says now, as the index first reads it.
			now := site.PHP(t, fmt.Sprintf(`echo get_post(%d)->post_content;`, p.ID))
			cur := now[strings.Index(now, "zq") : strings.Index(now, "zq")+12]
			if !m.fresh {
				cur = first // the cached page
			}
			waitSearch(t, d, send("post_published"), cur, u, true, 10*time.Second)

			next := word()
			site.PHP(t, fmt.Sprintf(`wp_update_post(array('ID' => %d, 'post_content' => '<p>Now the %s paragraph about weir wardens.</p>'));`, p.ID, next))
			start := send("post_updated")
			if m.fresh {
				took := waitSearch(t, d, start, next, u, true, freshnessLimit)
				t.Logf("search finds the edit %v after the event", took)
				if took > freshnessLimit {
					t.Errorf("took %v, want <= %v", took, freshnessLimit)
				}
				if searchHas(t, d, cur, u) {
					t.Errorf("the old text %s is still found", cur)
				}
			} else {
				waitApplied(t, d)
				time.Sleep(2 * time.Second)
				if searchHas(t, d, next, u) || !searchHas(t, d, first, u) {
					t.Fatalf("through the cache without the bypass the index was not stale: the control does not show the cache")
				}
				t.Logf("control: 2 s after the event, search still has the cached text and not the edit")
			}
			body, xc := visitorGet(t, p.URL)
			if xc != "HIT" || !strings.Contains(body, first) || strings.Contains(body, next) {
				t.Errorf("visitors no longer get the cached page (X-Cache %q)", xc)
			}
			if strings.Contains(body, crawl.FreshParam) {
				t.Error("the cached page holds the bypass token")
			}
			st, err := d.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(st.Origin)
			t.Logf("status origin: %s", b)
			if m.origin != "" && (st.Origin.Address != strings.TrimPrefix(originURL, "http://") || !st.Origin.Proven) {
				t.Errorf("status origin %s, want the configured %s", b, originURL)
			}
		})
	}
}

// TestOrigin_ShimProves: the plugin answers the proof request with
// HMAC-SHA256(nonce, webhook secret) for the daemon's secret only, and a
// daemon configured with that origin reports it proven; without the
// secret the proof fails and the status says so.
func TestOrigin_ShimProves(t *testing.T) {
	site, venv := seoSite(t)
	site.Lock(t)
	ctx := context.Background()
	su, _ := url.Parse(site.URL())
	cand := origin.Candidate{Scheme: "http", Address: su.Host}
	dir := t.TempDir()
	shimStateDir(t, site, dir)
	secret, err := EnsureSecret(dir, "webhook.secret")
	if err != nil {
		t.Fatal(err)
	}
	if err := origin.Prove(ctx, su, cand, []byte(secret), 5*time.Second); err != nil {
		t.Fatalf("the shim did not prove its origin: %v", err)
	}
	if err := origin.Prove(ctx, su, cand, []byte("another install's secret"), 5*time.Second); err == nil {
		t.Fatal("a proof was accepted for another secret")
	}
	// Through Varnish the proof passes too: a unique nonce is never cached.
	vu, _ := url.Parse(venv["VARNISH_URL"])
	if err := origin.Prove(ctx, su, origin.Candidate{Scheme: "http", Address: vu.Host}, []byte(secret), 5*time.Second); err != nil {
		t.Errorf("through Varnish: %v", err)
	}

	d := openTestDaemon(t, site, nil, func(c *config.Config) { c.StateDir, c.Origin = dir, site.URL() })
	if o := d.Origin(); !o.Proven || o.Warning != "" || o.Address != su.Host {
		t.Errorf("configured origin: %+v, want it proven", o)
	}
	// A daemon whose secret the plugin does not know: unproven, with a warning.
	d2 := openTestDaemon(t, site, nil, func(c *config.Config) { c.Origin = site.URL() })
	st, err := d2.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Origin == nil || st.Origin.Proven || st.Origin.Warning == "" {
		t.Errorf("unproven origin: status %+v, want proven=false and a warning", st.Origin)
	}
	// Site Health reads that status.
	b, _ := json.Marshal(map[string]any{"origin": st.Origin})
	out := site.PHP(t, fmt.Sprintf(`$r = Askwpd_Origin::test_origin(json_decode(%q, true)); echo $r['status'];`, b))
	if !strings.Contains(out, "recommended") {
		t.Errorf("Site Health for an unproven origin: %q, want recommended", out)
	}
}

// TestOrigin_Discovery: among a refused port, a web server for another
// site and the real WordPress, discovery pins the WordPress, proven.
func TestOrigin_Discovery(t *testing.T) {
	site, _ := seoSite(t)
	site.Lock(t)
	ctx := context.Background()
	dir := t.TempDir()
	shimStateDir(t, site, dir)
	secret, err := EnsureSecret(dir, "webhook.secret")
	if err != nil {
		t.Fatal(err)
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, origin.Answer(r.URL.Query().Get(origin.Param), []byte("another site's secret")))
	}))
	defer other.Close()
	su, _ := url.Parse(site.URL())
	cands := []origin.Candidate{
		{Scheme: "http", Address: "127.0.0.1:1"},
		{Scheme: "http", Address: strings.TrimPrefix(other.URL, "http://")},
		{Scheme: "http", Address: su.Host},
	}
	res, err := origin.Among(ctx, su, cands, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Proven || res.Address != su.Host || res.Source != "discovered" {
		t.Errorf("discovery chose %+v, want %s proven", res, su.Host)
	}
	res, err = origin.Among(ctx, su, cands[:2], []byte(secret))
	if err != nil || res.Proven || res.Address != "" || !strings.Contains(res.Warning, "public address") {
		t.Errorf("with no proven candidate: %+v %v, want the public address and a warning", res, err)
	}
}
