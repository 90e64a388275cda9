package crawl

import (
	"net/url"
	"path"
	"sort"
	"strings"
)

// trackingParams are query parameters that name a campaign, not a page.
var trackingParams = map[string]bool{
	"fbclid": true, "gclid": true, "dclid": true, "msclkid": true, "mc_cid": true, "mc_eid": true,
	"_ga": true, "_gl": true, "yclid": true, "igshid": true, "ref": true, "replytocom": true,
	// The fetcher's own cache bypass and origin proof: never a page's address.
	FreshParam: true, "askwpd_origin": true,
}

// Canonical normalizes a URL for deduplication: lowercase scheme and host,
// no default port, no fragment, no tracking parameters, sorted query.
// It returns "" for anything that is not an absolute http(s) URL.
func Canonical(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return ""
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https" {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path = "/"
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if strings.HasPrefix(strings.ToLower(k), "utm_") || trackingParams[strings.ToLower(k)] {
				q.Del(k)
			}
		}
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			for _, v := range q[k] {
				if b.Len() > 0 {
					b.WriteByte('&')
				}
				b.WriteString(url.QueryEscape(k) + "=" + url.QueryEscape(v))
			}
		}
		u.RawQuery = b.String()
	}
	return u.String()
}

// ArchiveSitemap reports whether a core or SEO-plugin sitemap lists
// archives (taxonomies, authors) rather than content.
func ArchiveSitemap(u string) bool {
	l := strings.ToLower(u)
	for _, s := range []string{"-taxonomies-", "-users-", "category-sitemap", "post_tag-sitemap", "tag-sitemap", "author-sitemap"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// canon is Canonical plus the site's own conventions: the trailing slash
// its permalink structure uses, applied to extensionless paths.
func (c *Crawler) canon(raw string) string {
	cu := Canonical(raw)
	if cu == "" {
		return ""
	}
	structure, _ := c.structure.Load().(string)
	if structure == "" {
		return cu
	}
	slash := strings.HasSuffix(structure, "/")
	u, err := url.Parse(cu)
	if err != nil || u.RawQuery != "" || u.Path == "/" || !c.Site.Origin.Same(u) {
		return cu
	}
	last := u.Path[strings.LastIndexByte(strings.TrimSuffix(u.Path, "/"), '/')+1:]
	if strings.Contains(last, ".") {
		return cu
	}
	switch {
	case slash && !strings.HasSuffix(u.Path, "/"):
		u.Path += "/"
	case !slash && strings.HasSuffix(u.Path, "/"):
		u.Path = strings.TrimSuffix(u.Path, "/")
	default:
		return cu
	}
	u.RawPath = ""
	return u.String()
}

// resolve makes a link from the site absolute and canonical, or returns
// "" when it leaves the origin.
func (c *Crawler) resolve(raw string) string {
	base, err := url.Parse(c.Site.URL + "/")
	if err != nil {
		return ""
	}
	ref, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return ""
	}
	cu := c.canon(base.ResolveReference(ref).String())
	if cu == "" {
		return ""
	}
	u, err := url.Parse(cu)
	if err != nil || !c.Site.Owns(u) {
		return ""
	}
	return cu
}

// crawlable reports whether a same-origin link may be a page worth a
// fetch: not the admin, the REST API, feeds, assets or a search.
func crawlable(c string) bool {
	u, err := url.Parse(c)
	if err != nil || isLoginURL(u) {
		return false
	}
	p := strings.ToLower(u.Path)
	for _, pre := range []string{"/wp-json", "/wp-content/", "/wp-includes/", "/xmlrpc.php", "/wp-cron.php", "/wp-comments-post.php"} {
		if strings.HasPrefix(p, pre) {
			return false
		}
	}
	if strings.HasSuffix(p, "/feed/") || strings.HasSuffix(p, "/feed") || strings.HasSuffix(p, "/embed/") || strings.HasSuffix(p, "/trackback/") {
		return false
	}
	switch path.Ext(p) {
	case "", ".html", ".htm", ".php":
	default:
		return false
	}
	q := u.Query()
	for _, k := range []string{"s", "replytocom", "feed", "share", "action", "preview", "customize_changeset_uuid", "rest_route"} {
		if q.Has(k) {
			return false
		}
	}
	return true
}

// postIDURL reports whether u is a /?p=ID or /?page_id=ID address.
func postIDURL(u string) bool {
	pu, err := url.Parse(u)
	if err != nil || (pu.Path != "/" && pu.Path != "") {
		return false
	}
	q := pu.Query()
	return len(q) == 1 && (q.Has("p") || q.Has("page_id"))
}
