package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestByPost_UsesIndex: every query that finds a post's documents must
// search the partial index documents_post_id, not scan the table. With
// "post_id = ?" alone SQLite cannot prove the index's condition and
// scans, which made a big site's crawl slow down as its store grew.
func TestByPost_UsesIndex(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	for i := 1; i <= 50; i++ {
		d := testDoc(fmt.Sprintf("https://example.test/p%d/", i), "Post", "Body text.")
		d.PostID = int64(i)
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.write.ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`SELECT url FROM documents WHERE ` + byPost,                                         // PostDocuments
		`SELECT id FROM documents WHERE ` + byPost,                                          // DeletePost
		`SELECT ` + docColumns + ` FROM documents WHERE ` + byPost + ` ORDER BY id LIMIT 1`, // FindDocument
	} {
		if p := queryPlan(t, db, q, 7); !strings.Contains(p, "INDEX documents_post_id") {
			t.Errorf("%s\nplan: %s\nwant a search of documents_post_id", q, p)
		}
	}
}

// TestChunksByID_Plan: ChunksByID looks each id up by the chunks table's
// rowid, whatever the number of ids (one statement, prepared once).
func TestChunksByID_Plan(t *testing.T) {
	db := openTest(t)
	if p := queryPlan(t, db, chunksByIDQuery, "[1,2]"); !strings.Contains(p, "SEARCH chunks USING INTEGER PRIMARY KEY") {
		t.Errorf("plan: %s\nwant each id looked up by the rowid", p)
	}
}

// TestUnindexedLinks_Plan: UnindexedLinks reads each document's links by
// the links table's key and looks each target up in the documents' URL
// index, scanning neither table.
func TestUnindexedLinks_Plan(t *testing.T) {
	db := openTest(t)
	p := queryPlan(t, db, unindexedLinksQuery, "[1,2]")
	if !strings.Contains(p, "SEARCH l USING INDEX") || !strings.Contains(p, "SEARCH d USING COVERING INDEX") || strings.Contains(p, "SCAN l") || strings.Contains(p, "SCAN d") {
		t.Errorf("plan: %s\nwant a search of links by document and of documents by URL", p)
	}
}

// TestLastApplied_Plan: /v1/status reads the last event applied at every
// request, from the index, neither scanning nor sorting the day's events.
func TestLastApplied_Plan(t *testing.T) {
	db := openTest(t)
	p := queryPlan(t, db, lastAppliedQuery)
	if !strings.Contains(p, "INDEX events_applied") || strings.Contains(p, "TEMP B-TREE") {
		t.Errorf("plan: %s\nwant a search of events_applied, without a sort", p)
	}
}

// TestStatusCounts_Plan: the status view's counts of documents (by
// fetch age, and the totals) read the index documents_fetched alone.
// fetched_at, indexed_at and thin come after a page's body and text, so a
// scan of the table read every page's text, overflow pages and all.
func TestStatusCounts_Plan(t *testing.T) {
	db := openTest(t)
	for _, q := range []string{fetchedBetweenQuery, fetchedBeforeQuery, statsQuery} {
		args := []any{"2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"}[:strings.Count(q, "?")]
		if p := queryPlan(t, db, q, args...); !strings.Contains(p, "COVERING INDEX documents_fetched") {
			t.Errorf("%s\nplan: %s\nwant the covering index documents_fetched", q, p)
		}
	}
}

// queryPlan is SQLite's plan for q, its steps joined by "; ".
func queryPlan(t *testing.T, db *DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.read.QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}

// TestNewestFetch_Empty: what a start asks of the index, read without a
// count of it, agrees with Stats; the newest fetch from the index
// documents_fetched.
func TestNewestFetch_Empty(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	check := func(wantEmpty bool) {
		t.Helper()
		st, err := db.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		newest, err := db.NewestFetch(ctx)
		if err != nil || !newest.Equal(st.NewestFetch) || newest.IsZero() != wantEmpty {
			t.Fatalf("NewestFetch = %v, %v; Stats says %v", newest, err, st.NewestFetch)
		}
		empty, err := db.Empty(ctx)
		if err != nil || empty != wantEmpty || empty != (st.Documents == 0) {
			t.Fatalf("Empty = %v, %v with %d documents", empty, err, st.Documents)
		}
	}
	check(true)
	for i := range 3 {
		d := testDoc(fmt.Sprintf("http://x.test/%d/", i), "Page", fmt.Sprintf("Body %d.", i))
		d.FetchedAt = time.Date(2026, 3, 1+i, 0, 0, 0, 0, time.UTC)
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	check(false)
	if p := queryPlan(t, db, newestFetchQuery); !strings.Contains(p, "COVERING INDEX documents_fetched") {
		t.Errorf("plan: %s\nwant the covering index documents_fetched", p)
	}
}
