package tool

import (
	"slices"
	"testing"
	"time"

	"github.com/askwp/askwpd/store"
)

func TestLinkless(t *testing.T) {
	var l linkless
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := l.unknown([]int64{1, 2, 3}, t0); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("nothing noted yet: unknown = %v", got)
	}
	l.note([]int64{1, 3}, t0)
	if got := l.unknown([]int64{3, 2, 1}, t0.Add(time.Second)); !slices.Equal(got, []int64{2}) {
		t.Errorf("after noting 1 and 3: unknown = %v, want [2]", got)
	}
	if got := l.unknown([]int64{1, 3}, t0.Add(linklessFor)); !slices.Equal(got, []int64{1, 3}) {
		t.Errorf("after linklessFor: unknown = %v, want both again", got)
	}
	replace := func(id int64) []store.IndexOp {
		return []store.IndexOp{{Delete: id}, {Add: &store.IndexChunk{Doc: &store.IndexDoc{ID: id}}}}
	}
	l.note([]int64{1, 2, 3}, t0)
	l.committed(store.IndexCommit{Gen: 5, Ops: []store.IndexOp{{Add: &store.IndexChunk{Doc: &store.IndexDoc{ID: 9}}}}})
	if got := l.unknown([]int64{1, 2, 3}, t0); len(got) != 0 {
		t.Errorf("after a commit that added a page: unknown = %v, want none", got)
	}
	l.committed(store.IndexCommit{Gen: 6, Ops: replace(2)})
	if got := l.unknown([]int64{1, 2, 3}, t0); !slices.Equal(got, []int64{2}) {
		t.Errorf("after a commit that replaced page 2: unknown = %v, want [2]", got)
	}
	l.note([]int64{2}, t0)
	l.committed(store.IndexCommit{Gen: 7, Ops: append(replace(3), store.IndexOp{Delete: 8})})
	if got := l.unknown([]int64{1, 2, 3}, t0); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("after a commit that removed a page: unknown = %v, want all", got)
	}
	l.note([]int64{1}, t0)
	l.committed(store.IndexCommit{Gen: 9})
	if got := l.unknown([]int64{1}, t0); !slices.Equal(got, []int64{1}) {
		t.Errorf("after a commit another process made (gen 8 unseen): unknown = %v, want [1]", got)
	}
	many := make([]int64, linklessMax)
	for i := range many {
		many[i] = int64(100 + i)
	}
	l.note(many, t0)
	l.note([]int64{7}, t0) // past the bound: the old ones go
	if got := l.unknown([]int64{7, 100}, t0); !slices.Equal(got, []int64{100}) {
		t.Errorf("past linklessMax: unknown = %v, want [100]", got)
	}
}
