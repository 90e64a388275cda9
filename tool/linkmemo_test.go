package tool

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/askwp/askwpd/freshness"
	"github.com/askwp/askwpd/store"
)

func TestLinkMemo(t *testing.T) {
	var l linkMemo
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	unknown := func(ids []int64, at time.Time) []int64 {
		_, u := l.get(ids, at)
		return u
	}
	if got := unknown([]int64{1, 2, 3}, t0); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("nothing put yet: unknown = %v", got)
	}
	link := store.LinkCandidate{FromDocID: 3, URL: "https://site.test/about/", Text: "About"}
	l.put([]int64{1, 3}, map[int64][]store.LinkCandidate{3: {link}}, t0)
	known, u := l.get([]int64{3, 2, 1}, t0.Add(time.Second))
	if !slices.Equal(u, []int64{2}) || len(known[1]) != 0 || !slices.Equal(known[3], []store.LinkCandidate{link}) {
		t.Errorf("after putting 1 (no links) and 3: known %v, unknown %v", known, u)
	}
	if got := unknown([]int64{1, 3}, t0.Add(freshness.LinkMemoFor)); !slices.Equal(got, []int64{1, 3}) {
		t.Errorf("after freshness.LinkMemoFor: unknown = %v, want both again", got)
	}

	replace := func(id int64) []store.IndexOp {
		return []store.IndexOp{{Delete: id}, {Add: &store.IndexChunk{Doc: &store.IndexDoc{ID: id}}}}
	}
	l.put([]int64{1, 2, 3}, nil, t0)
	l.committed(store.IndexCommit{Gen: 5, Ops: []store.IndexOp{{Add: &store.IndexChunk{Doc: &store.IndexDoc{ID: 9}}}}})
	if got := unknown([]int64{1, 2, 3}, t0); len(got) != 0 {
		t.Errorf("after a commit that added a page: unknown = %v, want none", got)
	}
	l.committed(store.IndexCommit{Gen: 6, Ops: replace(2)})
	if got := unknown([]int64{1, 2, 3}, t0); !slices.Equal(got, []int64{2}) {
		t.Errorf("after a commit that replaced page 2: unknown = %v, want [2]", got)
	}
	l.put([]int64{2}, nil, t0)
	l.committed(store.IndexCommit{Gen: 7, Ops: append(replace(3), store.IndexOp{Delete: 8})})
	if got := unknown([]int64{1, 2, 3}, t0); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("after a commit that removed a page: unknown = %v, want all", got)
	}
	l.put([]int64{1}, nil, t0)
	l.committed(store.IndexCommit{Gen: 9})
	if got := unknown([]int64{1}, t0); !slices.Equal(got, []int64{1}) {
		t.Errorf("after a commit another process made (gen 8 unseen): unknown = %v, want [1]", got)
	}

	many := make([]int64, linkMemoMaxPages)
	for i := range many {
		many[i] = int64(100 + i)
	}
	l.put(many, nil, t0)
	l.put([]int64{7}, nil, t0) // past the bound: the old ones go
	if got := unknown([]int64{7, 100}, t0); !slices.Equal(got, []int64{100}) {
		t.Errorf("past linkMemoMaxPages: unknown = %v, want [100]", got)
	}
	lots := make([]store.LinkCandidate, linkMemoMaxLinks)
	l.put([]int64{8}, map[int64][]store.LinkCandidate{8: lots}, t0)
	l.put([]int64{9}, map[int64][]store.LinkCandidate{9: {link}}, t0) // past the links' bound
	if got := unknown([]int64{8, 9}, t0); !slices.Equal(got, []int64{8}) {
		t.Errorf("past linkMemoMaxLinks: unknown = %v, want [8]", got)
	}
}

// TestFreshness_LinkMemo: on the bubble's clock, a page's links are
// remembered for freshness.LinkMemoFor after they were read, and then
// read again.
func TestFreshness_LinkMemo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l linkMemo
		link := store.LinkCandidate{FromDocID: 1, URL: "https://site.test/about/", Text: "About"}
		l.put([]int64{1}, map[int64][]store.LinkCandidate{1: {link}}, time.Now())
		time.Sleep(freshness.LinkMemoFor - time.Millisecond)
		if known, unknown := l.get([]int64{1}, time.Now()); len(unknown) != 0 || len(known[1]) != 1 {
			t.Errorf("within LinkMemoFor: known %v, unknown %v; want the page's link", known, unknown)
		}
		time.Sleep(time.Millisecond)
		if _, unknown := l.get([]int64{1}, time.Now()); !slices.Equal(unknown, []int64{1}) {
			t.Errorf("LinkMemoFor after the read: unknown %v, want the page again", unknown)
		}
	})
}
