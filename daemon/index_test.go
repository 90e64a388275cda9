package daemon

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/sitemap"
)

// TestIndex_RealWordPress is the spine's acceptance: after one pass over
// the seeded site, the index holds exactly the public posts and pages that
// the sitemap and the database list, and nothing private.
func TestIndex_RealWordPress(t *testing.T) {
	site := wptest.Get(t)
	site.Lock(t)
	ctx := context.Background()
	logs := &wptest.SyncBuffer{}
	d := openTestDaemon(t, site, logs)
	if d.Crawler.Site.URL != strings.TrimRight(site.URL(), "/") {
		t.Fatalf("site URL read from WordPress = %q, want %q", d.Crawler.Site.URL, site.URL())
	}
	if err := d.CheckSite(ctx); err != nil {
		t.Fatal(err)
	}
	run, err := d.Index(ctx, crawl.IndexOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if run.Errors != 0 {
		t.Errorf("run had %d errors", run.Errors)
	}

	truth := site.Truth(t)
	want := map[string]bool{}
	for _, p := range truth.Public {
		want[crawl.Canonical(p.URL)] = true
	}
	// Every URL the content sitemaps list (not taxonomies or users) is a
	// public post or page, the blog listing at home, or a post WordPress
	// lists although it is password-protected.
	private := map[string]bool{}
	for _, p := range truth.Private {
		private[crawl.Canonical(p.URL)] = true
	}
	sm, err := sitemap.Walk(ctx, d.Crawler.Fetcher.Open, []string{d.Crawler.Site.URL + "/wp-sitemap.xml"}, sitemap.Options{Skip: crawl.ArchiveSitemap})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range sm.Entries {
		u := crawl.Canonical(e.URL)
		if !want[u] && !private[u] && u != crawl.Canonical(truth.Home) {
			t.Errorf("sitemap lists %s, which WordPress does not call public", u)
		}
	}
	got, err := d.Store.DocumentURLs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var missing, extra []string
	for u := range want {
		if _, ok := got[u]; !ok {
			missing = append(missing, u)
		}
	}
	for u := range got {
		if !want[u] {
			extra = append(extra, u)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("indexed URLs differ from WordPress's public URLs:\nmissing: %v\nextra: %v", missing, extra)
	}

	// Nothing private in the store, in search results or in the logs.
	raw, err := sql.Open("sqlite", d.Store.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, p := range truth.Private {
		marker := strings.Fields(p.Title)[0]
		var n int
		if err := raw.QueryRow(`SELECT count(*) FROM documents WHERE body LIKE ? OR title LIKE ? OR text LIKE ?`,
			"%"+marker+"%", "%"+marker+"%", "%"+marker+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			t.Errorf("%s post %d (%s) is in the store", p.Status, p.ID, marker)
		}
		if n := countChunks(t, raw, marker); n > 0 {
			t.Errorf("%s post %d (%s) has chunks in the store", p.Status, p.ID, marker)
		}
		res, err := d.Search.Search(ctx, search.Query{Text: p.Title, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			if strings.Contains(h.Passage.Text, marker) || strings.Contains(h.Title, marker) {
				t.Errorf("search for %q returned private text at %s", p.Title, h.URL)
			}
		}
		if strings.Contains(logs.String(), marker) {
			t.Errorf("logs mention %s", marker)
		}
	}

	// A post's title words find that post first, with its URL, title,
	// dates and a snippet.
	for _, p := range truth.Public {
		if p.Type != "post" {
			continue
		}
		res, err := d.Search.Search(ctx, search.Query{Text: p.Title, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 {
			t.Errorf("search %q: no hits", p.Title)
			continue
		}
		h := res.Hits[0]
		if h.URL != crawl.Canonical(p.URL) {
			t.Errorf("search %q: first hit %s, want %s", p.Title, h.URL, p.URL)
			continue
		}
		if h.Title != p.Title || h.Published.IsZero() || h.Modified.IsZero() || h.Snippet == "" {
			t.Errorf("search %q: hit lacks fields: %+v", p.Title, h)
		}
		if got := h.Published.Format("2006-01-02T15:04:05"); !strings.HasPrefix(p.Published, got) {
			t.Errorf("search %q: published %s, WordPress says %s", p.Title, got, p.Published)
		}
	}

	// A second pass changes nothing. WordPress renders a post's page byte
	// for byte as before, so the pass does not extract it again: a mark
	// in the stored content hash, which extracting would replace, stays.
	if _, err := raw.Exec(`UPDATE documents SET content_hash = 'mark' WHERE post_id > 0`); err != nil {
		t.Fatal(err)
	}
	var posts int
	if err := raw.QueryRow(`SELECT count(*) FROM documents WHERE content_hash = 'mark'`).Scan(&posts); err != nil || posts == 0 {
		t.Fatalf("%d post pages marked (%v)", posts, err)
	}
	run2, err := d.Index(ctx, crawl.IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if run2.Indexed != 0 || run2.Removed != 0 {
		t.Errorf("second pass re-indexed %d and removed %d pages; want 0 and 0", run2.Indexed, run2.Removed)
	}
	var marked int
	if err := raw.QueryRow(`SELECT count(*) FROM documents WHERE content_hash = 'mark'`).Scan(&marked); err != nil || marked != posts {
		t.Errorf("the second pass extracted %d of %d post pages again (%v); want none", posts-marked, posts, err)
	}

	// Every indexed page records the sources that found it.
	for u := range got {
		st, err := d.Store.FindURL(ctx, u)
		if err != nil {
			t.Errorf("%s has no frontier row: %v", u, err)
			continue
		}
		if len(st.Sources) == 0 || st.PostID == 0 && u != crawl.Canonical(truth.Home) {
			t.Errorf("%s: sources %v, post %d; want sources and a post ID", u, st.Sources, st.PostID)
		}
	}
	// An incremental pass with nothing modified fetches nothing, and no
	// pass leaves a frontier behind.
	run3, err := d.Index(ctx, crawl.IndexOptions{Incremental: true})
	if err != nil {
		t.Fatal(err)
	}
	if run3.Fetched != 0 || run3.Removed != 0 {
		t.Errorf("incremental pass with no changes fetched %d and removed %d; want 0 and 0", run3.Fetched, run3.Removed)
	}
	if n, err := d.Store.FrontierPending(ctx); err != nil || n != 0 {
		t.Errorf("frontier left after the passes: %d (%v)", n, err)
	}

	// A change only the database shows (a post's modified date, set with
	// no hook run and the page as it was) is not skipped for its body:
	// the document takes the new date.
	var post int64
	var postURL string
	for _, p := range truth.Public {
		if p.Type == "post" {
			post, postURL = p.ID, crawl.Canonical(p.URL)
			break
		}
	}
	dates := func(set string) string {
		return site.PHP(t, fmt.Sprintf(`global $wpdb; $p = get_post(%d); echo $p->post_modified, '|', $p->post_modified_gmt; %s`, post, set))
	}
	was := dates("")
	local, gmt, _ := strings.Cut(was, "|")
	t.Cleanup(func() {
		dates(fmt.Sprintf(`$wpdb->update($wpdb->posts, array('post_modified' => '%s', 'post_modified_gmt' => '%s'), array('ID' => %d)); clean_post_cache(%d);`,
			local, gmt, post, post))
	})
	dates(fmt.Sprintf(`$t = time() + 60; $wpdb->update($wpdb->posts, array('post_modified' => get_date_from_gmt(gmdate('Y-m-d H:i:s', $t)), 'post_modified_gmt' => gmdate('Y-m-d H:i:s', $t)), array('ID' => %d)); clean_post_cache(%d);`,
		post, post))
	var modBefore string
	if err := raw.QueryRow(`SELECT modified FROM documents WHERE url = ?`, postURL).Scan(&modBefore); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Index(ctx, crawl.IndexOptions{Incremental: true}); err != nil {
		t.Fatal(err)
	}
	var modAfter, hash string
	if err := raw.QueryRow(`SELECT modified, content_hash FROM documents WHERE url = ?`, postURL).Scan(&modAfter, &hash); err != nil {
		t.Fatal(err)
	}
	if modAfter == modBefore || hash == "mark" {
		t.Errorf("post %d modified in the database: document modified %s → %s, content hash %q; want the new date, stored again",
			post, modBefore, modAfter, hash)
	}
}

func countChunks(t *testing.T, db *sql.DB, marker string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM chunks WHERE text LIKE ?`, "%"+marker+"%").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
