package index

import (
	"net/url"
	"regexp"
	"strings"
)

var archivePath = regexp.MustCompile(`/(category|tag|author|search|feed|page/\d+)(/|$)`)

// isArchive reports listing pages: WordPress category, tag, author,
// search, feed and paginated URLs.
func isArchive(rawURL, postType string) bool {
	switch postType {
	case "category", "tag", "post_tag", "author", "archive", "search", "feed", "taxonomy":
		return true
	}
	// Most URLs name none of it: no need to parse them.
	if !mayBeArchive(rawURL) {
		return false
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	if u.RawQuery != "" {
		if q := u.Query(); q.Has("s") || q.Has("cat") || q.Has("tag") || q.Has("author") || q.Has("feed") {
			return true
		}
	}
	return archivePath.MatchString(u.Path)
}

// mayBeArchive is whether rawURL has a query or an escape, or a path
// segment that starts like an archive's, in one pass: it runs on every
// page the index loads, and most WordPress permalinks need no parse
// (BenchmarkLoad, with chunkScratch).
func mayBeArchive(rawURL string) bool {
	for i := 0; i < len(rawURL); i++ {
		switch rawURL[i] {
		case '?', '%':
			return true
		case '/':
			rest := rawURL[i+1:]
			for _, p := range [...]string{"category", "tag", "author", "search", "feed", "page/"} {
				if strings.HasPrefix(rest, p) {
					return true
				}
			}
		}
	}
	return false
}
