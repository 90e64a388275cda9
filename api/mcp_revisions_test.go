package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/internal/version"
	"github.com/askwp/askwpd/tool"
)

// exchange is one HTTP request of a client and its answer, as the wire
// carried them.
type exchange struct {
	Method, RPC                                  string // HTTP method, JSON-RPC method
	SessionID, MCPMethod, ProtoHeader, MetaProto string
	Status                                       int
	ContentType                                  string
}

func (x exchange) String() string {
	s := x.Method
	if x.RPC != "" {
		s += " " + x.RPC
	}
	var h []string
	if x.SessionID != "" {
		h = append(h, "session")
	}
	if x.MCPMethod != "" {
		h = append(h, "Mcp-Method="+x.MCPMethod)
	}
	if x.ProtoHeader != "" {
		h = append(h, "Mcp-Protocol-Version="+x.ProtoHeader)
	}
	if x.MetaProto != "" {
		h = append(h, "_meta.protocolVersion="+x.MetaProto)
	}
	return fmt.Sprintf("%s [%s] -> %d %s", s, strings.Join(h, " "), x.Status, x.ContentType)
}

// recorder adds the bearer token, as a configured client does, and keeps
// a transcript.
type recorder struct {
	token string
	mu    sync.Mutex
	log   []exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+r.token)
	x := exchange{Method: req.Method, SessionID: req.Header.Get("Mcp-Session-Id"), MCPMethod: req.Header.Get("Mcp-Method"),
		ProtoHeader: req.Header.Get("Mcp-Protocol-Version")}
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		var m struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(b, &m) == nil {
			x.RPC = m.Method
			x.MetaProto, _ = m.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		x.Status, x.ContentType = resp.StatusCode, strings.Split(resp.Header.Get("Content-Type"), ";")[0]
	}
	r.mu.Lock()
	r.log = append(r.log, x)
	r.mu.Unlock()
	return resp, err
}

func (r *recorder) transcript() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exchange(nil), r.log...)
}

// TestMCP_Revisions runs a client of each revision the issue names, the
// SDK's own, end to end over streamable HTTP: discovery or the handshake,
// tools with resource links, resources read and paged, the prompt, and a
// subscription told of a page's change and of its leaving, each in the
// revision's own form, which the transcript checks on the wire.
func TestMCP_Revisions(t *testing.T) {
	for _, rev := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) { testRevision(t, rev) })
	}
}

func testRevision(t *testing.T, rev string) {
	site := newBareSite(t, bareOptions{pages: 1203})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	updates := make(chan string, 64)
	c := mcp.NewClient(&mcp.Implementation{Name: "askwpd-test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updates <- req.Params.URI },
	})
	rec := &recorder{token: site.Token}
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: site.Srv.URL + "/mcp", HTTPClient: &http.Client{Transport: rec}},
		&mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	init := sess.InitializeResult()
	if init.ProtocolVersion != rev {
		t.Fatalf("negotiated %s, want %s", init.ProtocolVersion, rev)
	}
	if si := init.ServerInfo; si == nil || si.Name != "askwpd" || si.Version != version.String() || si.Version == "" {
		t.Fatalf("serverInfo = %+v, want askwpd %s", si, version.String())
	}
	if caps := init.Capabilities; caps.Resources == nil || !caps.Resources.Subscribe || caps.Tools == nil || caps.Prompts == nil {
		t.Fatalf("capabilities = %+v", caps)
	}

	tools, err := sess.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != len(tool.Tools) {
		t.Fatalf("tools/list: %d tools (%v), want %d", len(tools.Tools), err, len(tool.Tools))
	}
	link := checkSearchLinks(t, ctx, sess)

	// Every page listed once, a page at a time.
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		res, err := sess.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range res.Resources {
			if seen[r.URI] || r.MIMEType != "text/markdown" || r.Title == "" || r.Name == "" {
				t.Fatalf("resources/list: %+v listed twice or without its fields", r)
			}
			seen[r.URI] = true
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if len(seen) != 1203 || pages != 3 || !seen[link] {
		t.Fatalf("resources/list: %d pages in %d answers (hit's page listed: %v), want 1203 in 3", len(seen), pages, seen[link])
	}
	tpl, err := sess.ListResourceTemplates(ctx, nil)
	if err != nil || len(tpl.ResourceTemplates) != 1 || tpl.ResourceTemplates[0].URITemplate != api.PageURIPrefix+"{+url}" {
		t.Fatalf("resources/templates/list = %+v, %v", tpl, err)
	}

	pr, err := sess.GetPrompt(ctx, &mcp.GetPromptParams{Name: "answer_from_site", Arguments: map[string]string{"question": "When is the lamp trimmed?"}})
	if err != nil || len(pr.Messages) != 1 {
		t.Fatalf("prompts/get = %+v, %v", pr, err)
	}
	if text := pr.Messages[0].Content.(*mcp.TextContent).Text; !strings.Contains(text, "When is the lamp trimmed?") ||
		!strings.Contains(text, "verbatim") || !strings.Contains(text, api.MCPPrefix+"search_site") {
		t.Errorf("prompt text lacks the question or the policy: %.300s", text)
	}

	checkSubscription(t, ctx, site, sess, updates)
	checkTranscript(t, rev, rec.transcript())
}

// checkSearchLinks searches, and reads the first hit's page through its
// resource link: the passage is there, at the hit's offsets. It returns
// the link's URI.
func checkSearchLinks(t *testing.T, ctx context.Context, sess *mcp.ClientSession) string {
	t.Helper()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: api.MCPPrefix + "search_site", Arguments: map[string]any{"query": "lighthouse keeper 417 wick"}})
	if err != nil || res.IsError {
		t.Fatalf("search_site: %v %+v", err, res)
	}
	var sr tool.SearchResponse
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &sr); err != nil || len(sr.Results) == 0 {
		t.Fatalf("search_site: %s (%v)", b, err)
	}
	var links []*mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			links = append(links, l)
		}
	}
	hit := sr.Results[0]
	if len(links) == 0 || links[0].URI != api.PageURI(hit.URL) || links[0].Title != hit.Title {
		t.Fatalf("search_site: links %+v, want the first to be %s", links, api.PageURI(hit.URL))
	}
	rr, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: links[0].URI})
	if err != nil || len(rr.Contents) != 1 {
		t.Fatalf("resources/read %s: %+v, %v", links[0].URI, rr, err)
	}
	rc := rr.Contents[0]
	body := []rune(rc.Text)
	if rc.MIMEType != "text/markdown" || hit.End > len(body) || string(body[hit.Start:hit.End]) != hit.Passage {
		t.Fatalf("resources/read: the passage %q is not at [%d:%d] of the page (%s, %d chars)", hit.Passage, hit.Start, hit.End, rc.MIMEType, len(body))
	}
	meta, _ := rc.Meta["askwpd/page"].(map[string]any)
	if meta["url"] != hit.URL || meta["title"] != hit.Title || meta["modified"] != hit.Modified {
		t.Fatalf("resources/read _meta = %v, want the hit's url, title and modified date", rc.Meta)
	}
	return links[0].URI
}

// checkSubscription subscribes to a page, changes it in the store until
// the notification comes (the client of 2026-07-28 opens its
// subscriptions/listen request in the background, so there is no answer
// that says it is in place), then removes it: the subscriber is told, and
// a read finds nothing.
func checkSubscription(t *testing.T, ctx context.Context, site *bareSite, sess *mcp.ClientSession, updates chan string) {
	t.Helper()
	const i = 17
	uri := api.PageURI(barePage(site.URL, i, "").URL)
	if err := sess.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	wait := func(what string, change func(n int)) {
		t.Helper()
		for n := 1; ; n++ {
			change(n)
			select {
			case got := <-updates:
				if got != uri {
					t.Fatalf("%s: notified of %s, want %s", what, got, uri)
				}
				return
			case <-time.After(200 * time.Millisecond):
			}
			if n == 25 {
				t.Fatalf("%s: no resources/updated after %d changes", what, n)
			}
		}
	}
	wait("change", func(n int) {
		if _, err := site.Store.PutDocument(ctx, barePage(site.URL, i, strings.Repeat(" Revised.", n))); err != nil {
			t.Fatal(err)
		}
	})
	rr, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "Revised.") {
		t.Fatalf("resources/read after the change: %v", err)
	}
	// A change to another page is not this subscriber's.
	if _, err := site.Store.PutDocument(ctx, barePage(site.URL, i+1, " Other.")); err != nil {
		t.Fatal(err)
	}
	wait("removal", func(n int) {
		if n == 1 {
			if _, err := site.Store.DeleteDocument(ctx, barePage(site.URL, i, "").URL); err != nil {
				t.Fatal(err)
			}
		}
	})
	_, err = sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || je.Message != "Resource not found" {
		t.Fatalf("resources/read of the removed page: %v, want resource not found", err)
	}
	if err := sess.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
}

// checkTranscript holds each revision to its own wire form: the
// handshake and a session before 2026-07-28, with notifications on a GET
// stream; discovery, per-request _meta and Mcp-Method headers, no session
// and a subscriptions/listen request from it on.
func checkTranscript(t *testing.T, rev string, xs []exchange) {
	t.Helper()
	var lines []string
	has := map[string]bool{}
	for _, x := range xs {
		lines = append(lines, x.String())
		has[x.Method+" "+x.RPC] = true
		// The one error asked for is the read of the removed page; from
		// 2026-07-28 on, an error answer has an HTTP error status too.
		if x.Status >= 300 && !(x.Status == http.StatusBadRequest && x.RPC == "resources/read" && rev >= "2026-07-28") {
			t.Errorf("%s answered %d", x, x.Status)
		}
	}
	t.Logf("%s transcript:\n  %s", rev, strings.Join(lines, "\n  "))
	if rev < "2026-07-28" {
		if xs[0].RPC != "initialize" || !has["GET "] || !has["POST resources/subscribe"] || has["POST server/discover"] {
			t.Errorf("%s: want initialize first, a GET stream and resources/subscribe", rev)
		}
		for _, x := range xs[1:] {
			if x.Method == "POST" && x.SessionID == "" {
				t.Errorf("%s: %s without the session", rev, x)
			}
		}
		return
	}
	if xs[0].RPC != "server/discover" || has["POST initialize"] || has["GET "] || !has["POST subscriptions/listen"] {
		t.Errorf("%s: want server/discover first, no initialize, no GET, a subscriptions/listen", rev)
	}
	for _, x := range xs {
		if x.Method == "POST" && (x.SessionID != "" || x.MCPMethod != x.RPC || x.MetaProto != rev) {
			t.Errorf("%s: %s: want no session, Mcp-Method and _meta protocolVersion on every request", rev, x)
		}
	}
}
