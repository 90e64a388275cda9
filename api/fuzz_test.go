package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/store"
)

// FuzzEvents signs arbitrary bodies correctly and posts them to
// /v1/events. Property: the answer is 202, 400, 401 or 413, never a 500 or
// a panic, and a 202 stored only events of known types with ids.
func FuzzEvents(f *testing.F) {
	for _, s := range []string{
		`{"events":[{"id":"a","type":"post_updated","post_id":1}]}`,
		`{"events":[{"id":"a","type":"post_updated"},{"id":"a","type":"post_updated"}]}`,
		`{"events":[]}`, `{"events":[1,2]}`, `{"events":"x"}`, `[]`, `{`, ``,
		`{"events":[{"id":"b","type":"term_changed","post_ids":[1,2,-3]}]}`,
		`{"events":[{"id":"","type":"nope"}]}`,
	} {
		f.Add([]byte(s))
	}
	db, err := store.Open(context.Background(), filepath.Join(f.TempDir(), "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	b := &eventBackend{db: db, secret: []byte("fuzz-secret-0123456789")}
	srv := New(b, Options{Token: "t", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	f.Fuzz(func(t *testing.T, body []byte) {
		// Events already stored are replays by design; measure what this
		// body adds.
		before, err := db.PendingEvents(context.Background(), 1<<20, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req := httptest.NewRequest("POST", "http://127.0.0.1/v1/events", bytes.NewReader(body))
		req.Header.Set(HeaderTimestamp, ts)
		req.Header.Set(HeaderSignature, Sign(b.secret, ts, body))
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		after, err := db.PendingEvents(context.Background(), 1<<20, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		switch rec.Code {
		case 202:
			if len(after) <= len(before) {
				t.Fatalf("202 with no event stored for %q", body)
			}
			for _, e := range after[len(before):] {
				if e.EventID == "" || !store.KnownEventType(e.Type) {
					t.Fatalf("stored a bad event %+v", e)
				}
			}
		case 400, 401, 413:
			if len(after) != len(before) {
				t.Fatalf("status %d but %d event(s) stored for %q", rec.Code, len(after)-len(before), body)
			}
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body.String())
		}
	})
}

// FuzzMCP posts arbitrary bodies to /mcp, with the token, as clients of
// the revisions askwpd speaks. Property: never a panic or a 5xx, and
// every answer the body carries is a JSON-RPC 2.0 message (JSON, or the
// data of SSE events).
func FuzzMCP(f *testing.F) {
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`
	for _, s := range []struct{ rev, body string }{
		{"", init},
		{"2025-06-18", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{"2026-07-28", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_site","arguments":{"query":"espresso"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		{"2026-07-28", `{"jsonrpc":"2.0","id":4,"method":"server/discover"}`},
		{"", `{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"askwp://page/1"}}`},
		{"", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`}, {"", `{"jsonrpc":"2.0","id":{},"method":1}`},
		{"2026-07-28", `{"jsonrpc":"2.0","id":6,"method":"subscriptions/listen","params":{}}`},
		{"", `{`}, {"", ``}, {"1999-01-01", `{"jsonrpc":"2.0","id":7,"method":"initialize"}`},
	} {
		f.Add(s.rev, []byte(s.body))
	}
	b := &fakeBackend{}
	srv := New(b, Options{Token: "t", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	f.Fuzz(func(t *testing.T, rev string, body []byte) {
		// A subscription is one long request: it ends with its context,
		// soon, or each such input would hold the fuzzer for as long.
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, "POST", "http://127.0.0.1/mcp", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if rev != "" {
			req.Header.Set("Mcp-Protocol-Version", rev)
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q (revision %q): %s", rec.Code, body, rev, rec.Body.String())
		}
		for _, msg := range rpcMessages(rec) {
			var m struct {
				JSONRPC string `json:"jsonrpc"`
			}
			if err := json.Unmarshal(msg, &m); err != nil || m.JSONRPC != "2.0" {
				t.Fatalf("answer %q to %q (revision %q, status %d) is not JSON-RPC 2.0: %v", msg, body, rev, rec.Code, err)
			}
		}
	})
}

// rpcMessages are the messages of an /mcp answer: its JSON body, or the
// data of each of its SSE events.
func rpcMessages(rec *httptest.ResponseRecorder) [][]byte {
	body := rec.Body.Bytes()
	ct := rec.Header().Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		if len(bytes.TrimSpace(body)) == 0 {
			return nil
		}
		return [][]byte{body}
	case strings.HasPrefix(ct, "text/event-stream"):
		var out [][]byte
		for _, line := range bytes.Split(body, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				out = append(out, d)
			}
		}
		return out
	}
	return nil
}
