package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDB_Frontier(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	run, err := db.StartRunWith(ctx, "index", RunOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	items := []FrontierItem{
		{URL: "http://s/?p=3", Sources: []string{"db"}, PostID: 3, Priority: 1},
		{URL: "http://s/a/", Sources: []string{"sitemap"}},
		{URL: "http://s/b/", Sources: []string{"menu"}},
	}
	if err := db.Enqueue(ctx, run, items); err != nil {
		t.Fatal(err)
	}
	// The same URL from another source merges its sources.
	if err := db.Enqueue(ctx, run, []FrontierItem{{URL: "http://s/a/", Sources: []string{"feed"}}}); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Frontier(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].URL != "http://s/a/" || rows[2].URL != "http://s/?p=3" {
		t.Fatalf("frontier order: %v", urlsOf(rows))
	}
	if got := rows[0].Sources; len(got) != 2 {
		t.Fatalf("sources of a/: %v, want sitemap and feed", got)
	}
	// A fetch recorded with the run takes the row out, for good: enqueueing
	// it again in the same run does not bring it back.
	if err := db.RecordFetch(ctx, "http://s/a/", URLResult{Status: "indexed", PostID: 7, Run: run}); err != nil {
		t.Fatal(err)
	}
	if err := db.Enqueue(ctx, run, items[1:2]); err != nil {
		t.Fatal(err)
	}
	if rows, _ := db.Frontier(ctx, run); len(rows) != 2 {
		t.Fatalf("after one fetch the frontier has %v", urlsOf(rows))
	}
	r, o, _, err := db.ResumableRun(ctx)
	if err != nil || r.ID != run || !o.Full {
		t.Fatalf("ResumableRun = %+v %+v %v", r, o, err)
	}
	p, err := db.Progress(ctx, run)
	if err != nil || p.Fetched != 1 || !p.Posts[7] || !p.URLs["http://s/a/"] {
		t.Fatalf("Progress = %+v %v", p, err)
	}
	if n, _ := db.FrontierPending(ctx); n != 2 {
		t.Fatalf("pending = %d", n)
	}
	if err := db.DropFrontier(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := db.ResumableRun(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ResumableRun after drop: %v", err)
	}
}

func urlsOf(rows []*URLState) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.URL)
	}
	return out
}

func TestDB_Events(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	evs := []*Event{{EventID: "e1", Type: EventPostUpdated, PostID: 4}, {EventID: "e2", Type: EventTermChanged, PostIDs: []int64{1, 2}}}
	if err := db.InsertEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	err := db.InsertEvents(ctx, []*Event{{EventID: "e3", Type: EventPostUpdated}, {EventID: "e1", Type: EventPostUpdated}})
	if !errors.Is(err, ErrDuplicateEvent) {
		t.Fatalf("replay: %v", err)
	}
	if _, err := db.FindEvent(ctx, "e3"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a batch with a replayed id stored e3: %v", err)
	}
	pend, err := db.PendingEvents(ctx, 10, 3)
	if err != nil || len(pend) != 2 || pend[1].PostIDs[1] != 2 {
		t.Fatalf("pending = %+v %v", pend, err)
	}
	if err := db.MarkEventsApplied(ctx, []int64{pend[0].ID}, "boom"); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkEventsApplied(ctx, []int64{pend[1].ID}, ""); err != nil {
		t.Fatal(err)
	}
	st, err := db.EventStats(ctx, 3)
	if err != nil || st.Pending != 1 || st.LastApplied.IsZero() {
		t.Fatalf("stats = %+v %v", st, err)
	}
	if n, err := db.PruneEvents(ctx, time.Now().Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("prune = %d %v", n, err)
	}
}

// TestDB_MarkPostEventsApplied: one refresh answers the post's events that
// arrived before it began, and no others.
func TestDB_MarkPostEventsApplied(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	db.Now = func() time.Time { return now }
	insert := func(id, typ string, post int64) {
		if err := db.InsertEvents(ctx, []*Event{{EventID: id, Type: typ, PostID: post}}); err != nil {
			t.Fatal(err)
		}
	}
	insert("a", EventPostUpdated, 7)
	insert("b", EventPostTrashed, 7)
	insert("other-post", EventPostUpdated, 8)
	insert("term", EventTermChanged, 7)
	asOf := now
	now = now.Add(time.Second)
	insert("after", EventPostUpdated, 7)

	n, err := db.MarkPostEventsApplied(ctx, 7, asOf)
	if err != nil || n != 2 {
		t.Fatalf("MarkPostEventsApplied = %d, %v; want 2", n, err)
	}
	for id, want := range map[string]bool{"a": true, "b": true, "other-post": false, "term": false, "after": false} {
		e, err := db.FindEvent(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := !e.AppliedAt.IsZero(); got != want {
			t.Errorf("event %s applied = %v, want %v", id, got, want)
		}
	}
	if n, _ := db.MarkPostEventsApplied(ctx, 7, asOf); n != 0 {
		t.Errorf("second call marked %d, want 0: events are applied once", n)
	}
}

// TestDB_CloseInterruptedRuns: passes left without a finish record are
// closed with an error, except the one being resumed, and a finished pass
// is left alone.
func TestDB_CloseInterruptedRuns(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	var ids []int64
	for range 3 {
		id, err := db.StartRun(ctx, "index")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := db.FinishRun(ctx, &Run{ID: ids[0], Indexed: 5}); err != nil {
		t.Fatal(err)
	}
	n, err := db.CloseInterruptedRuns(ctx, ids[2])
	if err != nil || n != 1 {
		t.Fatalf("CloseInterruptedRuns = %d, %v; want 1", n, err)
	}
	runs, err := db.Runs(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64]Run{}
	for _, r := range runs {
		byID[r.ID] = r
	}
	if r := byID[ids[0]]; r.FinishedAt.IsZero() || r.Error != "" || r.Indexed != 5 {
		t.Errorf("finished pass changed: %+v", r)
	}
	if r := byID[ids[1]]; r.FinishedAt.IsZero() || r.Error != InterruptedRun {
		t.Errorf("interrupted pass not closed: %+v", r)
	}
	if r := byID[ids[2]]; !r.FinishedAt.IsZero() || r.Error != "" {
		t.Errorf("the kept pass was closed: %+v", r)
	}
}
