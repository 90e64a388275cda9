package index

import (
	"strings"
	"testing"
)

// substrings is the check mayBeArchive replaced.
func substrings(u string) bool {
	return strings.ContainsAny(u, "?%") || strings.Contains(u, "/category") || strings.Contains(u, "/tag") ||
		strings.Contains(u, "/author") || strings.Contains(u, "/search") || strings.Contains(u, "/feed") ||
		strings.Contains(u, "/page/")
}

// mayBeArchive is the one-pass form of the substring checks it replaced:
// the same answer on every URL.
func TestMayBeArchive(t *testing.T) {
	urls := []string{
		"", "/", "http://127.0.0.1:8123/2021/11/07/c1946610-markets-voucher-subsidies/",
		"https://site.test/category/coffee/", "https://site.test/tag/go/", "https://site.test/tags/",
		"https://site.test/author/admin/", "https://site.test/search/espresso/", "https://site.test/feed/",
		"https://site.test/blog/page/2/", "https://site.test/page", "https://site.test/pages/", "https://site.test/?s=x",
		"https://site.test/caf%C3%A9/", "https://site.test/categorical-data/", "https://site.test/x/feedback/",
		"https://site.test/tagline", "https://site.test/a/searching", "https://site.test/authority/", "https://site.test//page/",
		"https://site.test/x/y/category", "category/x", "/tag",
	}
	for _, u := range urls {
		if got, want := mayBeArchive(u), substrings(u); got != want {
			t.Errorf("mayBeArchive(%q) = %v, the substring checks say %v", u, got, want)
		}
	}
}

func FuzzMayBeArchive(f *testing.F) {
	for _, s := range []string{"https://site.test/category/x/", "/page/2/", "?s=1", "/feedback", "x/tag"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		if got, want := mayBeArchive(u), substrings(u); got != want {
			t.Errorf("mayBeArchive(%q) = %v, want %v", u, got, want)
		}
	})
}
