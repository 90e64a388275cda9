package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/askwp/askwpd/crawl"
)

func (s *Service) toolFetchLiveURL(ctx context.Context, raw json.RawMessage, c *toolCall) (any, error) {
	var a LiveArgs
	if err := DecodeArgs(raw, &a); err != nil {
		return nil, err
	}
	a.URL = strings.TrimSpace(a.URL)
	if a.URL == "" {
		return nil, &Error{Code: "invalid", Message: "url is required"}
	}
	c.url, c.liveFetch = a.URL, true
	resp := &LiveResponse{URL: a.URL}
	fail := func(code, msg string, status int) (*LiveResponse, error) {
		resp.OK, resp.Status = false, code
		resp.Error = &ToolError{Code: code, Message: msg, HTTPStatus: status}
		c.extra = append(c.extra, "status", code)
		return resp, nil
	}
	raw0 := a.URL
	if strings.HasPrefix(raw0, "/") && !strings.HasPrefix(raw0, "//") {
		raw0 = s.Crawler.Site.URL + raw0
	}
	u, err := url.Parse(raw0)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		s.obs().ObserveLiveFetch("tool", "error_bad_url")
		return fail("bad_url", "not an absolute http(s) URL of this site ("+s.Crawler.Site.URL+")", 0)
	}
	if !s.Crawler.Site.Origin.Same(u) {
		s.obs().ObserveLiveFetch("tool", "error_off_origin")
		return fail("off_origin", "refused: only pages of this site ("+s.Crawler.Site.URL+") can be fetched", 0)
	}
	canon := crawl.Canonical(u.String())
	resp.URL = canon
	l := s.liveIndex(ctx, canon, "live")
	switch l.Status {
	case "indexed", "unchanged":
		final := l.URL
		if final == "" {
			final = canon
		}
		doc, err := s.Store.FindDocument(ctx, final, false)
		if err != nil {
			return nil, err
		}
		args := DocumentArgs{IDOrURL: final, Mode: "markdown", MaxChars: a.MaxChars}
		if err := args.Validate(); err != nil {
			return nil, err
		}
		if resp.Document, err = s.documentResponse(ctx, doc, args, c.opt); err != nil {
			return nil, err
		}
		resp.OK, resp.Status, resp.URL = true, l.Status, doc.URL
		if l.Truncated {
			// The beginning is indexed and returned; the caller learns the
			// rest is missing rather than reading a cut page as whole.
			resp.Error = &ToolError{Code: "too_large", Message: fmt.Sprintf(
				"the page is larger than the fetch limit (%d bytes); only its beginning was indexed and is returned", s.Crawler.Opts.MaxBytes)}
		}
		c.url = doc.URL
		c.extra = append(c.extra, "status", l.Status)
		return resp, nil
	case "private":
		return fail("private", "the page is not public (password-protected, private or unpublished); nothing was indexed", l.HTTPStatus)
	case "skipped":
		if l.ErrorClass == "not_html" {
			return fail("not_html", "the URL is not an HTML page", l.HTTPStatus)
		}
		return fail("not_content", "the URL is a listing (archive, category, search), not a page of content", l.HTTPStatus)
	}
	if errors.Is(l.Err, context.DeadlineExceeded) && l.ErrorClass == "" {
		l.ErrorClass = "timeout"
	}
	code := l.ErrorClass
	msg := map[string]string{
		"not_found":    "the page does not exist (404/410); it was removed from the index if it was there",
		"login_wall":   "the page requires a login (it redirects to wp-login.php): it is private and was not indexed",
		"forbidden":    "the site refused access to the page (401/403)",
		"timeout":      "the page took too long to load",
		"not_html":     "the URL is not an HTML page",
		"server_error": "the site answered with a server error (5xx)",
		"unreachable":  "the site could not be reached (connection refused or dropped)",
		"redirects":    "too many redirects",
		"off_origin":   "refused: the page redirects to another site",
		"extract":      "no readable content could be extracted",
	}[code]
	if msg == "" {
		code, msg = "other", "the page could not be fetched"
	}
	return fail(code, msg, l.HTTPStatus)
}
