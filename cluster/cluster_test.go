package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/wp"
)

func TestTablesFor(t *testing.T) {
	for _, tc := range []struct {
		name, prefix, cluster, want string
		ok                          bool
	}{
		{"OK", "wp_", "", "wp_askwpd_events", true},
		{"Named", "wp_", "Blue_2", "wp_askwpd_blue_2_events", true},
		{"ErrPrefix", "wp`; DROP", "", "", false},
		{"ErrName", "wp_", "a-b", "", false},
		{"ErrLong", "wp_", "abcdefghijklmnopqrstuvwxyz", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TablesFor(tc.prefix, tc.cluster)
			if (err == nil) != tc.ok {
				t.Fatalf("err=%v, want ok=%v", err, tc.ok)
			}
			if got.Events != tc.want {
				t.Fatalf("Events=%q, want %q", got.Events, tc.want)
			}
		})
	}
}

// The version ignores what is local to one store, so two nodes that
// extracted the same page agree, and a round trip keeps the document.
func TestEncode_Version(t *testing.T) {
	d := &store.Document{ID: 7, URL: "http://x/a/", Title: "A", Body: "Hello", ContentHash: "h",
		FetchedAt: time.Now(), IndexedAt: time.Now(), Chunks: []store.Chunk{{ID: 3, DocID: 7, Text: "Hello", End: 5}}}
	doc1, v1, err := Encode(d)
	if err != nil {
		t.Fatal(err)
	}
	e := *d
	e.ID, e.FetchedAt, e.IndexedAt = 99, time.Time{}, time.Now().Add(time.Hour)
	e.Chunks = []store.Chunk{{ID: 41, DocID: 99, Text: "Hello", End: 5}}
	_, v2, err := Encode(&e)
	if err != nil {
		t.Fatal(err)
	}
	if v1 != v2 {
		t.Fatal("versions differ for the same page in two stores")
	}
	e.Body = "Hello!"
	if _, v3, _ := Encode(&e); v3 == v1 {
		t.Fatal("a changed body kept its version")
	}
	got, err := Decode(doc1)
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != d.URL || got.Body != d.Body || len(got.Chunks) != 1 || got.Chunks[0].Text != "Hello" || got.ID != 0 {
		t.Fatalf("Decode = %+v", got)
	}
}

func TestParseEvent(t *testing.T) {
	e, err := parseEvent([]byte(`{"id":"u1","type":"post_updated","post_id":5,"url":"http://x/p/","status":"publish"}`))
	if err != nil || e.Type != "post_updated" || e.PostID != 5 || e.URL != "http://x/p/" {
		t.Fatalf("parseEvent = %+v, %v", e, err)
	}
	if _, err := parseEvent([]byte(`{"type":"nonsense"}`)); err == nil {
		t.Fatal("an unknown type was accepted")
	}
}

// openTest makes a cluster's tables in the test WordPress's database,
// under a name of its own, dropped at the end.
func openTest(t *testing.T) *Cluster {
	t.Helper()
	site := wptest.Get(t)
	e := site.Env
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/%s", e["WP_DB_USER"], e["WP_DB_PASSWORD"], net.JoinHostPort(strings.Split(e["WP_DB_HOST"], ":")[0], e["WP_DB_PORT"]), e["WP_DB_NAME"])
	ctx := context.Background()
	db, err := wp.OpenWriter(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := Open(ctx, db, "wp_", wptest.Word("u", ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Drop(context.Background()) })
	return c
}

func TestCluster_LeaseAndPublish(t *testing.T) {
	c := openTest(t)
	ctx := context.Background()
	ok, err := c.TryLead(ctx, "n1", "h", 2*time.Second)
	if err != nil || !ok {
		t.Fatalf("n1 TryLead = %v, %v", ok, err)
	}
	if ok, _ := c.TryLead(ctx, "n2", "h", 2*time.Second); ok {
		t.Fatal("n2 took a lease n1 holds")
	}
	if ok, _ := c.TryLead(ctx, "n1", "h", 2*time.Second); !ok {
		t.Fatal("n1 could not renew")
	}
	put := func(u, body string) Entry {
		_, v, _ := Encode(&store.Document{URL: u, Body: body})
		return Entry{URL: u, Op: OpPut, Version: v, Doc: []byte("x"), Node: "n1"}
	}
	if err := c.Publish(ctx, "n2", 2*time.Second, []Entry{put("http://x/a/", "1")}, nil); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Publish by a node without the lease: %v, want ErrLeaseLost", err)
	}
	if err := c.InsertEvents(ctx, []EventRow{{EventID: "e1", JSON: []byte(`{}`)}, {EventID: "e1", JSON: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	evs, err := c.PendingEvents(ctx, 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("PendingEvents = %d, %v; want 1 (a repeated event_id is one event)", len(evs), err)
	}
	if err := c.Publish(ctx, "n1", 2*time.Second, []Entry{put("http://x/a/", "1"), put("http://x/b/", "1")}, []int64{evs[0].ID}); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(ctx, "n1", 2*time.Second, []Entry{put("http://x/a/", "2"), {URL: "http://x/b/", Op: OpDelete, Version: URLHash("http://x/b/"), Node: "n1"}}, nil); err != nil {
		t.Fatal(err)
	}
	es, err := c.Tail(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	// Rows 1 and 2 are superseded by 3 and 4.
	if len(es) != 2 || es[0].ID != 3 || es[0].URL != "http://x/a/" || es[1].ID != 4 || es[1].Op != OpDelete {
		t.Fatalf("Tail = %+v, want rows 3 (put a) and 4 (tombstone b)", es)
	}
	if evs, _ := c.PendingEvents(ctx, 10); len(evs) != 0 {
		t.Fatalf("%d events pending after the publish that finished them", len(evs))
	}
	l, err := c.Leader(ctx)
	if err != nil || l.Seq != 4 || l.Holder != "n1" || !l.Valid {
		t.Fatalf("Leader = %+v, %v", l, err)
	}
	v, err := c.Versions(ctx, 4)
	if err != nil || len(v) != 1 {
		t.Fatalf("Versions = %v, %v; want a alone", v, err)
	}
	// An expired lease is anyone's, and its old holder can no longer
	// publish.
	time.Sleep(2100 * time.Millisecond)
	if ok, _ := c.TryLead(ctx, "n2", "h", 2*time.Second); !ok {
		t.Fatal("n2 could not take an expired lease")
	}
	if err := c.Publish(ctx, "n1", 2*time.Second, []Entry{put("http://x/c/", "1")}, nil); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Publish by the old holder: %v, want ErrLeaseLost", err)
	}
	if err := c.Release(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.TryLead(ctx, "n1", "h", 2*time.Second); !ok {
		t.Fatal("a released lease was not free at once")
	}
}
