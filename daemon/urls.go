package daemon

import (
	"net/url"
	"sort"
	"strings"
)

// trackingParams are query parameters that name a campaign, not a page.
var trackingParams = map[string]bool{
	"fbclid": true, "gclid": true, "dclid": true, "msclkid": true, "mc_cid": true, "mc_eid": true,
	"_ga": true, "_gl": true, "yclid": true, "igshid": true, "ref": true, "replytocom": true,
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

// archiveSitemap reports whether a core or SEO-plugin sitemap lists
// archives (taxonomies, authors) rather than content.
func archiveSitemap(u string) bool {
	l := strings.ToLower(u)
	for _, s := range []string{"-taxonomies-", "-users-", "category-sitemap", "post_tag-sitemap", "tag-sitemap", "author-sitemap"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func parseURL(s string) (*url.URL, error) { return url.Parse(s) }
