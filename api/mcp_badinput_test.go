package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/askwp/askwpd/api"
)

// rpcAnswer is one JSON-RPC answer as the wire carried it.
type rpcAnswer struct {
	Status  int
	Session string
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// rawRPC posts body to /mcp as a client of rev would, in session (before
// 2026-07-28), and reads the answer, JSON or the first SSE message.
func rawRPC(t *testing.T, s *bareSite, rev, session, body string) rpcAnswer {
	t.Helper()
	req, _ := http.NewRequest("POST", s.Srv.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", rev)
	}
	if rev >= "2026-07-28" {
		req.Header.Set("Mcp-Protocol-Version", rev)
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(body), &m) == nil {
			req.Header.Set("Mcp-Method", m.Method)
			if n := m.Params.Name + m.Params.URI; n != "" {
				req.Header.Set("Mcp-Name", n)
			}
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := rpcAnswer{Status: resp.StatusCode, Session: resp.Header.Get("Mcp-Session-Id")}
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
				b = []byte(d)
				break
			}
		}
	}
	if len(b) > 0 && json.Unmarshal(b, &a) != nil {
		t.Fatalf("%s: answer %d is not JSON-RPC: %.300s", body, resp.StatusCode, b)
	}
	return a
}

// legacySession opens a session of 2025-11-25 by hand.
func legacySession(t *testing.T, s *bareSite) string {
	t.Helper()
	a := rawRPC(t, s, "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if a.Status != 200 || a.Session == "" {
		t.Fatalf("initialize: %+v", a)
	}
	rawRPC(t, s, "2025-11-25", a.Session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return a.Session
}

const discoverMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// TestMCP_BadInput: each bad request gets its JSON-RPC error, reaching
// the tools and the store at most once; an unknown page and a page the
// store does not hold (private, absent, gone) get the same answer, in
// each revision.
func TestMCP_BadInput(t *testing.T) {
	const maxResult = 4000
	s := newBareSite(t, bareOptions{pages: 40, maxResult: maxResult})
	ctx := context.Background()
	big := barePage(s.URL, 1000, strings.Repeat(" The keeper wrote a very long entry.", 200))
	if _, err := s.Store.PutDocument(ctx, big); err != nil {
		t.Fatal(err)
	}
	sess := legacySession(t, s)
	type rpcCase struct {
		name, body     string
		status, code   int
		calls, reads   int64
		messageHolding string
	}
	read := func(uri string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":%q}}`, uri)
	}
	absent := api.PageURI(s.URL + "/never-published/")
	cases := []rpcCase{
		{name: "not JSON", body: `{"jsonrpc":"2.0","id":1,"method":`, status: 400, code: -32700},
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, status: 400, code: -32600, messageHolding: "batch"},
		{name: "not an object", body: `"ping"`, status: 400, code: -32600},
		{name: "oversized body", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"askwp_search_site","arguments":{"query":"` +
			strings.Repeat("x", 1<<20) + `"}}}`, status: 413, code: -32600, messageHolding: "larger than"},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":3,"method":"pages/all"}`, status: 400, code: -32601, messageHolding: "pages/all"},
		{name: "unknown tool", body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"askwp_rm","arguments":{}}}`, status: 200, code: -32602},
		{name: "tool result over the cap", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"askwp_search_site","arguments":{"query":"lighthouse keeper","limit":50,"passages":true}}}`,
			status: 200, code: -32010, calls: 1, messageHolding: "over this server's cap"},
		{name: "unknown resource URI", body: read("file:///etc/passwd"), status: 200, code: -32602, messageHolding: "Resource not found"},
		{name: "URI of another scheme's page", body: read("askwpd://page/ftp://127.0.0.1:9/x"), status: 200, code: -32602, messageHolding: "Resource not found"},
		{name: "page not stored", body: read(absent), status: 200, code: -32602, reads: 1, messageHolding: "Resource not found"},
		{name: "page over the cap", body: read(api.PageURI(big.URL)), status: 200, code: -32010, reads: 1, messageHolding: "get_document"},
		{name: "bad cursor", body: `{"jsonrpc":"2.0","id":6,"method":"resources/list","params":{"cursor":"!!"}}`, status: 200, code: -32602},
		{name: "prompt without its question", body: `{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"answer_from_site","arguments":{}}}`, status: 200, code: -32602},
		{name: "subscribe to a foreign URI", body: `{"jsonrpc":"2.0","id":8,"method":"resources/subscribe","params":{"uri":"test://watched"}}`, status: 200, code: -32602},
	}
	answers := map[string]rpcAnswer{}
	for _, c := range cases {
		calls, reads := s.Calls.Load(), s.Reads.Load()
		a := rawRPC(t, s, "2025-11-25", sess, c.body)
		answers[c.name] = a
		if a.Status != c.status || a.Error == nil || a.Error.Code != c.code || !strings.Contains(a.Error.Message, c.messageHolding) {
			t.Errorf("%s: %d %+v, want %d with error %d holding %q", c.name, a.Status, a.Error, c.status, c.code, c.messageHolding)
		}
		if dc, dr := s.Calls.Load()-calls, s.Reads.Load()-reads; dc != c.calls || dr != c.reads {
			t.Errorf("%s: reached the tools %d times and the store %d, want %d and %d", c.name, dc, dr, c.calls, c.reads)
		}
	}
	// The session outlives every mistake.
	if a := rawRPC(t, s, "2025-11-25", sess, `{"jsonrpc":"2.0","id":10,"method":"ping"}`); a.Error != nil || a.Status != 200 {
		t.Errorf("ping after the bad requests: %+v", a)
	}

	// Not stored and never ours answer alike, but for the URI they name;
	// and so from 2026-07-28 on.
	notFound := func(a rpcAnswer) string { return fmt.Sprintf("%d %s", a.Error.Code, a.Error.Message) }
	if a, b := answers["page not stored"], answers["unknown resource URI"]; notFound(a) != notFound(b) {
		t.Errorf("a page not stored answers %q, an unknown URI %q", notFound(a), notFound(b))
	}
	for _, uri := range []string{absent, "file:///etc/passwd"} {
		a := rawRPC(t, s, "2026-07-28", "", fmt.Sprintf(`{"jsonrpc":"2.0","id":11,"method":"resources/read","params":{"uri":%q,%s}}`, uri, discoverMeta))
		if a.Error == nil || notFound(a) != notFound(answers["page not stored"]) {
			t.Errorf("2026-07-28 read of %s: %+v", uri, a.Error)
		}
	}
	a := rawRPC(t, s, "2026-07-28", "", `[{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+discoverMeta+`}}]`)
	if a.Status != 400 || a.Error == nil || a.Error.Code != -32600 {
		t.Errorf("2026-07-28 batch: %+v", a)
	}
}
