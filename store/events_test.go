package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestDB_InsertEventsGroupCommit: concurrent calls, some replaying an id
// another call stores, are committed together and each answered for
// itself: every id is stored once, exactly one call per id succeeds, a
// call that replays an id stores none of its events, and the ids the
// callers get back are the stored rows'.
func TestDB_InsertEventsGroupCommit(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	const calls = 200
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ok   = map[string]int64{}
		dups int
	)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Call i stores "e<i>" and "f<i>"; every fourth call also
			// replays the id of call i-1, so either it or call i-1
			// (whichever commits second) is refused whole.
			evs := []*Event{{EventID: fmt.Sprintf("e%d", i), Type: EventPostUpdated, PostID: int64(i)},
				{EventID: fmt.Sprintf("f%d", i), Type: EventPostUpdated, PostID: int64(i)}}
			if i%4 == 0 && i > 0 {
				evs = append(evs, &Event{EventID: fmt.Sprintf("e%d", i-1), Type: EventPostUpdated})
			}
			err := db.InsertEvents(ctx, evs)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, ErrDuplicateEvent):
				dups++
			case err != nil:
				t.Errorf("call %d: %v", i, err)
			default:
				for _, e := range evs {
					if e.ID == 0 {
						t.Errorf("call %d: event %s stored without a row id", i, e.EventID)
					}
					ok[e.EventID] = e.ID
				}
			}
		}()
	}
	wg.Wait()
	// 49 pairs (call 4k and call 4k-1) share an id: one of each pair is
	// refused.
	if want := (calls - 1) / 4; dups != want {
		t.Errorf("%d calls refused as replays, want %d", dups, want)
	}
	evs, err := db.PendingEvents(ctx, 10*calls, allAttempts)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int64{}
	for _, e := range evs {
		if _, seen := stored[e.EventID]; seen {
			t.Errorf("event %s stored twice", e.EventID)
		}
		stored[e.EventID] = e.ID
	}
	if len(stored) != len(ok) {
		t.Errorf("%d events stored, %d acknowledged", len(stored), len(ok))
	}
	for id, row := range ok {
		if stored[id] != row {
			t.Errorf("event %s acknowledged as row %d, stored as row %d", id, row, stored[id])
		}
	}
}

// TestDB_InsertEventsOneEachReplayed: calls of one event each, the
// shim's usual, stored without a savepoint: a replay among them, in the
// same group commit as fresh events, is refused and leaves the others
// stored.
func TestDB_InsertEventsOneEachReplayed(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	const calls = 100
	var wg sync.WaitGroup
	errs := make([]error, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Calls 2k and 2k+1 send the same id: one of the two is a replay.
			errs[i] = db.InsertEvents(ctx, []*Event{{EventID: fmt.Sprintf("e%d", i/2), Type: EventPostUpdated, PostID: int64(i)}})
		}()
	}
	wg.Wait()
	for k := 0; k < calls; k += 2 {
		a, b := errs[k], errs[k+1]
		if (a == nil) == (b == nil) || !errors.Is(a, ErrDuplicateEvent) && !errors.Is(b, ErrDuplicateEvent) {
			t.Errorf("id e%d: calls answered %v and %v, want one stored and one replay", k/2, a, b)
		}
	}
	evs, err := db.PendingEvents(ctx, 10*calls, allAttempts)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != calls/2 {
		t.Errorf("%d events stored, want %d", len(evs), calls/2)
	}
}

// allAttempts lets PendingEvents return every unapplied event.
const allAttempts = 1 << 30

// TestDB_InsertEventsAfterClose: a closed store refuses events with an
// error rather than blocking the caller.
func TestDB_InsertEventsAfterClose(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	if err := db.InsertEvents(ctx, []*Event{{EventID: "a", Type: EventPostUpdated}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := db.InsertEvents(ctx, []*Event{{EventID: "b", Type: EventPostUpdated}}); err == nil {
		t.Fatal("InsertEvents on a closed store succeeded")
	}
}

// TestParseEvent: the webhook's one schema. Every field the shim sends is
// typed once here, a wrong type or value is an error naming the field,
// and the typed fields come back the same from the store, which keeps
// the payload whole.
func TestParseEvent(t *testing.T) {
	raw := `{"id":"p1","type":"post_updated","post_id":7,"post_ids":[8],"post_type":"page","status":"publish",
		"url":"http://x/p/","at":1700000000.25,"public":false,"has_password":true,"term_id":3,"term_ids":[4],"blog_id":"2"}`
	e, err := ParseEvent(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	check := func(where string, e *Event) {
		t.Helper()
		if e.EventID != "p1" || e.Type != EventPostUpdated || e.PostID != 7 || !slices.Equal(e.PostIDs, []int64{8}) ||
			e.PostType != "page" || e.Status != "publish" || e.URL != "http://x/p/" {
			t.Errorf("%s: columns = %+v", where, e)
		}
		if d := e.At.Sub(time.Unix(1700000000, 250e6)); d < -time.Microsecond || d > time.Microsecond || e.Public == nil || *e.Public || !e.HasPassword ||
			!slices.Equal(e.TermIDs, []int64{4, 3}) || e.BlogID != 2 {
			t.Errorf("%s: at %v, public %v, has_password %v, terms %v, blog %d", where, e.At, e.Public, e.HasPassword, e.TermIDs, e.BlogID)
		}
	}
	check("parsed", e)
	if string(e.Payload) != raw {
		t.Errorf("payload = %s; want the sender's JSON whole", e.Payload)
	}

	db := openTest(t)
	ctx := context.Background()
	if err := db.InsertEvents(ctx, []*Event{e}); err != nil {
		t.Fatal(err)
	}
	got, err := db.PendingEvents(ctx, 10, 3)
	if err != nil || len(got) != 1 {
		t.Fatalf("PendingEvents = %v, %v", got, err)
	}
	check("stored", got[0])

	if e, err := ParseEvent(json.RawMessage(`{"id":"m","type":"post_updated"}`)); err != nil ||
		!e.At.IsZero() || e.Public != nil || e.HasPassword || e.TermIDs != nil || e.BlogID != 0 {
		t.Errorf("an event that says nothing more = %+v, %v; want every optional field unsaid", e, err)
	}
	for raw, field := range map[string]string{
		`{"public":"no"}`:     "public",
		`{"has_password":1}`:  "has_password",
		`{"term_ids":"1,2"}`:  "term_ids",
		`{"at":-5}`:           "at",
		`{"blog_id":"main"}`:  "blog_id",
		`{"blog_id":2.5}`:     "blog_id",
		`{"post_id":"seven"}`: "post_id",
	} {
		_, err := ParseEvent(json.RawMessage(raw))
		var te *json.UnmarshalTypeError
		var fe *EventFieldError
		switch {
		case errors.As(err, &te):
			if te.Field != field {
				t.Errorf("%s: type error on %q; want %q", raw, te.Field, field)
			}
		case errors.As(err, &fe):
			if fe.Field != field {
				t.Errorf("%s: refused %q; want %q", raw, fe.Field, field)
			}
		default:
			t.Errorf("%s: err = %v; want one naming %s", raw, err, field)
		}
	}
}
