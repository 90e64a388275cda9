package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/askwp/askwpd/store"
)

// FuzzSearchArgs decodes arbitrary bytes as search_site arguments.
// Property: bad input is a *Error with a 4xx status, never a panic; good
// input gives a query within the limits.
func FuzzSearchArgs(f *testing.F) {
	for _, s := range []string{
		`{"query": "espresso grinder"}`,
		`{"query": "x", "limit": 100000, "filters": {"type": ["post", "page"], "after": "2026-01-01"}}`,
		`{"query": 5}`, `[]`, `{"query": "a", "sort": "bogus"}`, `{"query": "\u0000"}`,
		`{"query": "a", "filters": {"type": "post"}, "extra": 1}`, ``, `{"query": "a"} {"query": "b"}`,
		`{"query": "a", "limit": -5, "filters": {"before": "yesterday"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var args SearchArgs
		err := DecodeArgs(json.RawMessage(raw), &args)
		if err == nil {
			var q = args
			sq, qerr := q.ToSearchQuery()
			if qerr != nil {
				err = qerr
			} else {
				if sq.Limit < 1 || sq.Limit > maxLimit {
					t.Fatalf("limit %d out of range", sq.Limit)
				}
				if utf8.RuneCountInString(sq.Text) > maxQueryRunes || sq.Text == "" {
					t.Fatalf("query of %d runes passed", utf8.RuneCountInString(sq.Text))
				}
				return
			}
		}
		var ae *Error
		if !errors.As(err, &ae) || ae.Status < 400 || ae.Status >= 500 {
			t.Fatalf("error %v (%T) is not a 4xx *Error", err, err)
		}
	})
}

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
		req := httptest.NewRequest("POST", "/v1/events", bytes.NewReader(body))
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
