package sitemap

import (
	"bytes"
	"encoding/xml"
	"regexp"
	"strings"
	"time"
)

// FromFeed returns the item links of an RSS 2.0 or Atom feed, with their
// dates: a site's recent posts, found even when it has no sitemap.
func FromFeed(body []byte) []Entry {
	var doc struct {
		XMLName xml.Name
		Items   []struct {
			Link    string `xml:"link"`
			PubDate string `xml:"pubDate"`
		} `xml:"channel>item"`
		Entries []struct {
			Links []struct {
				Href string `xml:"href,attr"`
				Rel  string `xml:"rel,attr"`
			} `xml:"link"`
			Updated string `xml:"updated"`
		} `xml:"entry"`
	}
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = false
	if err := d.Decode(&doc); err != nil {
		return nil
	}
	var out []Entry
	for _, it := range doc.Items {
		if u := strings.TrimSpace(it.Link); u != "" {
			e := Entry{URL: u}
			if t, err := time.Parse(time.RFC1123Z, strings.TrimSpace(it.PubDate)); err == nil {
				e.LastMod = t.UTC()
			}
			out = append(out, e)
		}
	}
	for _, en := range doc.Entries {
		for _, l := range en.Links {
			// An empty <link/> names no page: the entry's address, if
			// any, is in another link.
			if u := strings.TrimSpace(l.Href); u != "" && (l.Rel == "" || l.Rel == "alternate") {
				e := Entry{URL: u}
				if t, err := time.Parse(time.RFC3339, strings.TrimSpace(en.Updated)); err == nil {
					e.LastMod = t.UTC()
				}
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// typeSitemapRe matches the per-type sitemaps of WordPress core
// (wp-sitemap-posts-TYPE-N.xml) and of Yoast/Rank Math (TYPE-sitemap.xml).
var (
	coreTypeRe = regexp.MustCompile(`wp-sitemap-posts-([a-z0-9_-]+?)-\d+\.xml`)
	seoTypeRe  = regexp.MustCompile(`/([a-z0-9_-]+?)-sitemap\d*\.xml`)
)

// seoNonTypes are SEO-plugin sitemaps that do not list a post type.
var seoNonTypes = map[string]bool{"category": true, "post_tag": true, "tag": true, "author": true, "news": true,
	"video": true, "image": true, "local": true}

// PostTypes reads the post types a site's sitemaps list from their file
// names: the types WordPress (or an SEO plugin) considers public.
func PostTypes(sitemapURLs []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(t string) {
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, u := range sitemapURLs {
		l := strings.ToLower(u)
		if m := coreTypeRe.FindStringSubmatch(l); m != nil {
			add(m[1])
			continue
		}
		if strings.Contains(l, "wp-sitemap") {
			continue
		}
		if m := seoTypeRe.FindStringSubmatch(l); m != nil && !seoNonTypes[m[1]] && !strings.HasSuffix(m[1], "_index") {
			add(m[1])
		}
	}
	return out
}
