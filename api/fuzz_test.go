package api

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strconv"
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
