package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askwp/askwpd/store"
)

// PageStore is what the MCP resources read: the stored public pages and
// the commits that change them. *store.DB is one.
type PageStore interface {
	ListPages(ctx context.Context, after string, limit int) ([]store.PageRef, error)
	ReadPage(ctx context.Context, url string, maxChars int) (*store.Page, error)
	Observe(o store.IndexObserver) (cancel func())
}

var _ PageStore = (*store.DB)(nil)

// A page's resource URI is its URL behind PageURIPrefix, as the template
// says: readable, reversible, and the URL an answer cites is in plain
// sight. A scheme of our own rather than the page's https URL, because
// the resource is the stored Markdown that passages' offsets index, not
// the HTML a client fetching that URL would get.
const (
	PageURIPrefix   = "askwpd://page/"
	pageURITemplate = PageURIPrefix + "{+url}"
	pageMIME        = "text/markdown"
)

// PageURI is the resource URI of the page at url.
func PageURI(url string) string { return PageURIPrefix + url }

// pageURL is the page URL a resource URI names, and whether it names one.
func pageURL(uri string) (string, bool) {
	u, ok := strings.CutPrefix(uri, PageURIPrefix)
	if !ok || !(strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) {
		return "", false
	}
	return u, true
}

// listPageSize is how many pages one resources/list answer holds.
const listPageSize = 500

func (m *mcpServer) addResources() {
	m.srv.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: pageURITemplate,
		Name:        "page",
		Title:       "A page of this site",
		Description: "One public page of the site as stored: its main content in Markdown (the text that search passages' start/end offsets index), with its title, URL, type and dates in _meta. {url} is the page's URL, as search_site returns it.",
		MIMEType:    pageMIME,
	}, m.readPage)
	// The SDK lists the resources registered with it; the pages are too
	// many for that, so resources/list is answered here, from the store.
	m.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "resources/list" {
				if lr, ok := req.(*mcp.ListResourcesRequest); ok {
					return m.listPages(ctx, lr)
				}
			}
			return next(ctx, method, req)
		}
	})
}

// listPages answers resources/list a page at a time, in URL order; the
// cursor is the last URL of the page before, opaque to the client.
func (m *mcpServer) listPages(ctx context.Context, req *mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	var after string
	if req.Params != nil && req.Params.Cursor != "" {
		var ok bool
		if after, ok = decodePageCursor(req.Params.Cursor); !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor: pass the nextCursor of the answer before, as it is"}
		}
	}
	// One more than a page, to know whether another follows: a listing
	// that fills its last page exactly ends there, not with an empty one.
	ps, err := m.pages.ListPages(ctx, after, listPageSize+1)
	if err != nil {
		return nil, err
	}
	more := len(ps) > listPageSize
	if more {
		ps = ps[:listPageSize]
	}
	res := &mcp.ListResourcesResult{Resources: make([]*mcp.Resource, 0, len(ps))}
	res.CacheScope = "public"
	for _, p := range ps {
		r := &mcp.Resource{URI: PageURI(p.URL), Name: p.URL, Title: p.Title, MIMEType: pageMIME,
			Description: pageDescription(p)}
		if !p.Modified.IsZero() {
			r.Annotations = &mcp.Annotations{LastModified: p.Modified.UTC().Format(time.RFC3339)}
		}
		res.Resources = append(res.Resources, r)
	}
	if more {
		res.NextCursor = encodePageCursor(ps[len(ps)-1].URL)
	}
	return res, nil
}

func pageDescription(p store.PageRef) string {
	d := p.PostType
	if !p.Published.IsZero() {
		d += ", published " + p.Published.UTC().Format("2006-01-02")
	}
	if p.Description != "" {
		d += ": " + p.Description
	}
	return d
}

const cursorVersion = "p1:"

func encodePageCursor(url string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorVersion + url))
}

func decodePageCursor(c string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", false
	}
	return strings.CutPrefix(string(b), cursorVersion)
}

// readPage answers resources/read with one query. A page the store does
// not hold is not found, whether it never existed, is private or is gone:
// the answer says no more than the site itself does.
func (m *mcpServer) readPage(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	u, ok := pageURL(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	p, err := m.pages.ReadPage(ctx, u, m.max)
	if errors.Is(err, store.ErrNotFound) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	if p.Chars > m.max {
		return nil, &jsonrpc.Error{Code: codeTooLarge,
			Message: fmt.Sprintf("the page is %d characters, over this server's cap of %d: read it in pieces with %sget_document (start, max_chars)", p.Chars, m.max, MCPPrefix),
			Data:    json.RawMessage(fmt.Sprintf(`{"uri":%q,"size":%d,"limit":%d}`, uri, p.Chars, m.max))}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: uri, MIMEType: pageMIME, Text: p.Body,
		Meta: mcp.Meta{"askwpd/page": pageMeta(p)},
	}}}, nil
}

// pageMeta is what a page's resource says of it beside its Markdown.
func pageMeta(p *store.Page) map[string]any {
	m := map[string]any{"url": p.URL, "title": p.Title, "type": p.PostType, "chars": p.Chars}
	if !p.Modified.IsZero() {
		m["modified"] = p.Modified.UTC().Format(time.RFC3339)
	}
	if !p.Published.IsZero() {
		m["published"] = p.Published.UTC().Format(time.RFC3339)
	}
	return m
}

// hitLinks are resource links to the pages of a search_site result's
// hits, each page once, in rank order.
func hitLinks(raw []byte) []mcp.Content {
	var r struct {
		Results []struct {
			URL   string `json:"url"`
			Title string `json:"title"`
		} `json:"results"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return nil
	}
	var links []mcp.Content
	seen := map[string]bool{}
	for _, h := range r.Results {
		if h.URL == "" || seen[h.URL] {
			continue
		}
		seen[h.URL] = true
		links = append(links, &mcp.ResourceLink{URI: PageURI(h.URL), Name: h.URL, Title: h.Title, MIMEType: pageMIME})
	}
	return links
}
