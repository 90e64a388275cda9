package insights

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// TestLog_QueueFull sends more questions than a tiny queue holds, from
// many goroutines: none blocks, and every question is either written or
// counted as dropped.
func TestLog_QueueFull(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := Open(db, Options{Retention: time.Hour, Queue: 2})
	c := l.Caller(instantTool{&tool.SearchResponse{Query: "gift cards", Action: "no_match", Evidence: "none"}})
	const n = 2000
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/8; i++ {
				_, _ = c.Call(ctx, "search_site", nil)
			}
		}()
	}
	wg.Wait()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("%d calls took %v: the log blocked its callers", n, took)
	}
	l.Close()
	if l.Logged()+l.Dropped() != n || l.Dropped() == 0 {
		t.Fatalf("logged %d + dropped %d, want %d with some dropped", l.Logged(), l.Dropped(), n)
	}
	var stored int64
	if err := db.EachQuestion(ctx, time.Time{}, func(*store.Question) error { stored++; return nil }); err != nil {
		t.Fatal(err)
	}
	if stored != l.Logged() {
		t.Fatalf("%d questions stored, %d counted as logged", stored, l.Logged())
	}
}

type instantTool struct{ r *tool.SearchResponse }

func (t instantTool) Call(context.Context, string, json.RawMessage) (any, error) { return t.r, nil }
