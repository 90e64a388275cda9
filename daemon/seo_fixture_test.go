package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
)

// seoPosts are the posts an SEO test publishes: one plain, one noindex,
// one whose canonical names the plain one, one whose canonical names
// another origin, each with a word of its own.
type seoPosts struct {
	plain, noindex, copy, foreign     phpPost
	wPlain, wNoindex, wCopy, wForeign string
}

// publishSEOPosts publishes them, with the noindex and canonical set
// through meta(id, kind, value) in the SEO plugin's own meta keys.
func publishSEOPosts(t *testing.T, site *wptest.Site, meta func(id int64, kind, value string) string) seoPosts {
	t.Helper()
	w := func() string { return wptest.Word("zq", "seo") }
	s := seoPosts{wPlain: w(), wNoindex: w(), wCopy: w(), wForeign: w()}
	post := func(title, word string) phpPost {
		return publishPost(t, site, title+" "+wptest.Word("", ""), "<p>The "+word+" paragraph about canal locks, towpaths and the barges that use them.</p>")
	}
	s.plain = post("Plain", s.wPlain)
	s.noindex = post("Hidden", s.wNoindex)
	s.copy = post("Copy", s.wCopy)
	s.foreign = post("Syndicated", s.wForeign)
	site.PHP(t, meta(s.noindex.ID, "noindex", "")+meta(s.copy.ID, "canonical", s.plain.URL)+
		meta(s.foreign.ID, "canonical", "https://elsewhere.example/original-story/"))
	return s
}

// checkSEOPass indexes the site with its SEO fixture active and checks
// the policy: the plain page and the foreign-canonical page (under its own
// address) answer; the noindex page and the copy do not, the copy being
// stored once, under its canonical; no sitemap, image or news entry
// became a page; the plugin's sitemap was read.
func checkSEOPass(t *testing.T, site *wptest.Site, s seoPosts) *Daemon {
	t.Helper()
	ctx := context.Background()
	d := openTestDaemon(t, site, nil)
	start := time.Now()
	run, err := d.Index(ctx, crawl.IndexOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pass: %d fetched, %d indexed, %d errors in %v", run.Fetched, run.Indexed, run.Errors, time.Since(start).Round(time.Millisecond))
	uPlain, uNoindex, uCopy, uForeign := crawl.Canonical(s.plain.URL), crawl.Canonical(s.noindex.URL), crawl.Canonical(s.copy.URL), crawl.Canonical(s.foreign.URL)
	if !searchHas(t, d, s.wPlain, uPlain) {
		t.Error("the plain post is not found")
	}
	if !searchHas(t, d, s.wForeign, uForeign) {
		t.Error("the post whose canonical names another origin is not found under its own address")
	}
	if searchHas(t, d, s.wNoindex, "") {
		t.Error("the noindex post answers")
	}
	if searchHas(t, d, s.wCopy, "") {
		t.Error("the copy answers: its canonical page should be the one stored")
	}
	rows := map[string]string{uNoindex: "skipped", uCopy: "duplicate", uPlain: "indexed"}
	for u, want := range rows {
		st, err := d.Store.FindURL(ctx, u)
		if err != nil || st.Status != want {
			t.Errorf("%s: row %+v (%v), want status %s", u, st, err, want)
		}
		if u == uPlain && err == nil && !slices.Contains(st.Sources, crawl.SourceSitemap) {
			t.Errorf("the plain post's sources %v lack the sitemap: the plugin's sitemap was not read", st.Sources)
		}
	}
	docs, err := d.Store.DocumentURLs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for u := range docs {
		l := strings.ToLower(u)
		if strings.HasSuffix(l, ".xml") || strings.Contains(l, "/wp-content/") || strings.HasSuffix(l, ".jpg") || strings.Contains(l, "sitemap") {
			t.Errorf("a sitemap or image entry became a page: %s", u)
		}
		if u == uCopy || u == uNoindex {
			t.Errorf("%s is stored", u)
		}
	}
	return d
}

// seoFixture turns an SEO plugin fixture on until the test ends, and
// checks the site now serves the plugin's sitemaps instead of core's.
func seoFixture(t *testing.T, site *wptest.Site, name string) {
	t.Helper()
	setOption(t, site, "askwpd_seo_fixture", name)
	body, _ := visitorGet(t, site.URL()+"/sitemap_index.xml")
	if !strings.Contains(body, "<sitemapindex") || !strings.Contains(body, "post-sitemap.xml") {
		t.Fatalf("the %s fixture's sitemap index is not served (is scripts/varnish-up.sh's mu-plugin in place?): %.200s", name, body)
	}
	res, err := http.Get(site.URL() + "/wp-sitemap.xml")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == 200 {
		t.Fatalf("wp-sitemap.xml still answers 200 with the %s fixture on", name)
	}
}

// TestSEO_Yoast runs a pass over a site with Yoast's sitemaps (a news
// sitemap among them), noindex and canonicals; then with
// crawl.index_noindex the noindex post answers too.
func TestSEO_Yoast(t *testing.T) {
	site, _ := seoSite(t)
	site.Lock(t)
	seoFixture(t, site, "yoast")
	s := publishSEOPosts(t, site, func(id int64, kind, v string) string {
		if kind == "noindex" {
			return fmt.Sprintf(`update_post_meta(%d, '_yoast_wpseo_meta-robots-noindex', '1');`, id)
		}
		return fmt.Sprintf(`update_post_meta(%d, '_yoast_wpseo_canonical', %q);`, id, v)
	})
	checkSEOPass(t, site, s)

	d := openTestDaemon(t, site, nil, func(c *config.Config) { c.Crawl.IndexNoindex = true })
	if _, err := d.Index(context.Background(), crawl.IndexOptions{Full: true}); err != nil {
		t.Fatal(err)
	}
	if !searchHas(t, d, s.wNoindex, crawl.Canonical(s.noindex.URL)) {
		t.Error("with crawl.index_noindex the noindex post is not found")
	}
}

// TestSEO_RankMath runs a pass over a site with Rank Math's sitemaps and
// its bad input: the index lists itself and a child lists it back, the
// image sitemap lists image files, and the home page is noindex.
func TestSEO_RankMath(t *testing.T) {
	site, _ := seoSite(t)
	site.Lock(t)
	seoFixture(t, site, "rankmath")
	s := publishSEOPosts(t, site, func(id int64, kind, v string) string {
		if kind == "noindex" {
			return fmt.Sprintf(`update_post_meta(%d, 'rank_math_robots', array('noindex', 'follow'));`, id)
		}
		return fmt.Sprintf(`update_post_meta(%d, 'rank_math_canonical_url', %q);`, id, v)
	})
	d := checkSEOPass(t, site, s)
	home := crawl.Canonical(site.URL() + "/")
	if st, err := d.Store.FindURL(context.Background(), home); err != nil || st.Status != "skipped" {
		t.Errorf("the noindex home page: row %+v (%v), want skipped", st, err)
	}
	if docs, _ := d.Store.DocumentURLs(context.Background()); docs[home] != 0 {
		t.Error("the noindex home page is stored")
	}
}

// TestSEO_NoindexHomeStillCrawled: a noindex home page is left out of
// answers, but the crawl goes on from its links: a page known only from
// the home page is indexed.
func TestSEO_NoindexHomeStillCrawled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/":
			io.WriteString(w, `<html><head><meta name="robots" content="noindex, follow"><title>Home</title></head><body><main>
				<h1>Welcome home</h1><p>The zqhomewordvex front page of a small site about rivers.</p><a href="/only-linked/">read</a></main></body></html>`)
		case "/only-linked/":
			io.WriteString(w, `<html><head><title>Linked</title></head><body><main><article><h1>Linked</h1>
				<p>The zqlinkedwordvex page about the river's weirs, known from the home page alone.</p></article></main></body></html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cfg := config.Default()
	cfg.SiteURL, cfg.StateDir, cfg.Listen = srv.URL, t.TempDir(), "127.0.0.1:0"
	cfg.Crawl.RatePerSec, cfg.Schedule.Disabled = 500, true
	d, err := Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Index(context.Background(), crawl.IndexOptions{Full: true}); err != nil {
		t.Fatal(err)
	}
	if searchHas(t, d, "zqhomewordvex", "") {
		t.Error("the noindex home page answers")
	}
	if !searchHas(t, d, "zqlinkedwordvex", srv.URL+"/only-linked/") {
		t.Error("the page linked from the noindex home page was not crawled")
	}
}
