package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// AllSites is the site argument that searches a whole network.
const AllSites = "all"

// SiteArg is the optional site argument of every tool on a multisite
// network: a blog id (2 or "2"), a site's home URL, or "all". Empty means
// the site the request came from. The tools themselves answer from the
// index they are given; the daemon reads it (PeekSite) to pick the index.
type SiteArg string

// UnmarshalJSON accepts a number or a string.
func (s *SiteArg) UnmarshalJSON(b []byte) error {
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		*s = SiteArg(n.String())
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return errBadSite
	}
	*s = SiteArg(strings.TrimSpace(str))
	return nil
}

var errBadSite = fmt.Errorf("site: want a blog id, a home URL or %q", AllSites)

// PeekSite reads the site argument of a tool call. Every other mistake in
// the arguments is left for the tool to report.
func PeekSite(args json.RawMessage) (string, error) {
	var a struct {
		Site SiteArg `json:"site"`
	}
	if err := json.Unmarshal(args, &a); errors.Is(err, errBadSite) {
		return "", Invalid(errBadSite.Error())
	}
	return string(a.Site), nil
}

type siteKey struct{}

// WithSite returns a context naming the site a request came from, as the
// shim says it (a blog id): tools called without a site argument answer
// from that site's index.
func WithSite(ctx context.Context, site string) context.Context {
	return context.WithValue(ctx, siteKey{}, site)
}

// SiteOf returns the site WithSite named, or "".
func SiteOf(ctx context.Context) string {
	s, _ := ctx.Value(siteKey{}).(string)
	return s
}

// siteProperty is the schema of the site argument.
const siteProperty = `{"type": ["integer", "string"], "description": "On a multisite network: the site to use, as a blog id or home URL, or \"all\" to search every site (each result then names its site). Leave it out for the site you are on."}`

// withSiteArg adds the site argument to each tool's schema.
func withSiteArg(tools []Tool) []Tool {
	for i := range tools {
		var schema map[string]json.RawMessage
		if json.Unmarshal(tools[i].Function.Parameters, &schema) != nil {
			continue
		}
		var props map[string]json.RawMessage
		if json.Unmarshal(schema["properties"], &props) != nil {
			continue
		}
		props["site"] = json.RawMessage(siteProperty)
		schema["properties"], _ = json.Marshal(props)
		tools[i].Function.Parameters, _ = json.MarshalIndent(schema, "", "  ")
	}
	return tools
}

// ParseBlogID reads a site argument that is a blog id.
func ParseBlogID(site string) (int64, bool) {
	id, err := strconv.ParseInt(site, 10, 64)
	return id, err == nil && id > 0
}
