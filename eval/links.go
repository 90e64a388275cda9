package eval

import (
	"net/url"
	"path"
	"regexp"
	"strings"
)

// mdLink matches a Markdown inline link or image: [text](target "title").
var mdLink = regexp.MustCompile(`(!?\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\()\s*<?([^()\s<>]+)>?((?:\s+"[^"\n]*")?\s*\))`)

// corpusLinks points a corpus's Markdown links at its pages' URLs. A
// BEIR corpus copied from a site keeps its pages' paths (url_path), but
// its links were written for the source tree (docs/x/README.md) or for
// the published site (https://host/base/x/); a crawled page's links are
// absolute URLs of the site it is on, and search reads them so.
type corpusLinks struct {
	r    *linkResolver
	urls map[string]string // page id → its URL
}

func newCorpusLinks(all []beirDoc) *corpusLinks {
	paths, urls := map[string]string{}, map[string]string{}
	for _, bd := range all {
		if strings.HasPrefix(bd.URLPath, "/") {
			paths[bd.ID] = bd.URLPath
			urls[bd.ID] = corpusSite + bd.URLPath
		}
	}
	if len(paths) == 0 {
		return nil
	}
	return &corpusLinks{r: newLinkResolver(paths), urls: urls}
}

// rewrite returns md with each link to a corpus page pointing at that
// page's URL; other links, and images, are left as they are.
func (cl *corpusLinks) rewrite(bd beirDoc, md string) string {
	if cl == nil || !strings.Contains(md, "](") {
		return md
	}
	return mdLink.ReplaceAllStringFunc(md, func(m string) string {
		sm := mdLink.FindStringSubmatch(m)
		if strings.HasPrefix(sm[1], "!") {
			return m
		}
		id := cl.r.resolve(bd.URLPath, sm[2])
		if id == "" || id == bd.ID {
			return m
		}
		return sm[1] + cl.urls[id] + sm[3]
	})
}

// linkResolver finds the corpus page a link points at. A BEIR corpus
// copied from a site keeps its pages' paths (url_path), but its links
// were written for the source tree (docs/x/README.md) or the published
// site (https://host/base/x/), whose bases differ from the corpus's.
// A link therefore resolves to the one page whose path ends with the
// most of the link's last segments: at least two of them, unless the
// link's path has only one.
type linkResolver struct {
	bySuffix map[string]string // joined last segments → page id, "" when several pages share them
}

func newLinkResolver(paths map[string]string) *linkResolver {
	r := &linkResolver{bySuffix: map[string]string{}}
	for id, p := range paths {
		segs := pathSegments(p)
		for i := range segs {
			k := strings.Join(segs[i:], "/")
			if old, ok := r.bySuffix[k]; ok && old != id {
				r.bySuffix[k] = ""
				continue
			}
			r.bySuffix[k] = id
		}
	}
	return r
}

// resolve returns the id of the page target points at, from a page at
// base; "" when none or several match.
func (r *linkResolver) resolve(base, target string) string {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	p := u.Path
	if p == "" {
		return "" // a fragment: the page itself
	}
	if !strings.HasPrefix(p, "/") && u.Host == "" {
		p = path.Join(base, p)
	}
	segs := pathSegments(p)
	for i := 0; i < len(segs); i++ {
		if len(segs)-i < 2 && i > 0 {
			break
		}
		if id := r.bySuffix[strings.Join(segs[i:], "/")]; id != "" {
			return id
		}
	}
	return ""
}

// pathSegments splits a URL path into its segments, dropping a file
// extension and an index or README page name.
func pathSegments(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s == "" || s == "." {
			continue
		}
		out = append(out, s)
	}
	if n := len(out); n > 0 {
		last := out[n-1]
		if ext := path.Ext(last); ext == ".md" || ext == ".html" || ext == ".htm" || ext == ".php" {
			last = strings.TrimSuffix(last, ext)
		}
		switch strings.ToLower(last) {
		case "readme", "index":
			out = out[:n-1]
		default:
			out[n-1] = last
		}
	}
	return out
}
