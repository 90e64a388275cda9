package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/freshness"
)

// TestStatus_ViewAfterCommits checks when the status view is read again
// after index commits: not while the last reading is younger than
// freshness.StatusViewGap (under a crawl every page is a commit, and each status
// request re-read the whole tables), and at the first request after
// that, so a page removed leaves the counts within the gap and a
// refresh.
func TestStatus_ViewAfterCommits(t *testing.T) {
	srv := pagesSite(t, 3, nil)
	d := pagesDaemon(t, srv, 0)
	ctx := context.Background()
	if _, err := d.Index(ctx, crawl.IndexOptions{Full: true}); err != nil {
		t.Fatal(err)
	}
	first, err := d.view(ctx)
	if err != nil {
		t.Fatal(err)
	}
	docs := first.stats.Documents
	if docs < 3 {
		t.Fatalf("%d documents indexed, want the 3 pages at least", docs)
	}

	if ok, err := d.Store.DeleteDocument(ctx, srv.URL+"/p0/"); err != nil || !ok {
		t.Fatalf("removing a page: %v, %v", ok, err)
	}
	if v, err := d.view(ctx); err != nil || v != first {
		t.Fatalf("a request %v after the reading got another one (err %v)", time.Since(first.at), err)
	}
	d.statusCache.mu.Lock()
	refreshing := d.statusCache.refreshing
	d.statusCache.mu.Unlock()
	if refreshing && time.Since(first.at) < freshness.StatusViewGap {
		t.Fatalf("a commit %v after the reading started another", time.Since(first.at))
	}

	for {
		v, err := d.view(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v.stats.Documents == docs-1 {
			if age := v.at.Sub(first.at); age < freshness.StatusViewGap {
				t.Errorf("read again %v after the last reading, want %v at least", age, freshness.StatusViewGap)
			}
			break
		}
		if time.Since(first.at) > freshness.StatusViewGap+5*time.Second {
			t.Fatalf("the removal is not in the status %v after the reading: %d documents", time.Since(first.at), v.stats.Documents)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
