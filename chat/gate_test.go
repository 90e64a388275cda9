package chat

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/askwp/askwpd/store"
)

func TestGateBudgetRollsOverAtMidnightUTC(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	meta, err := store.Open(ctx, filepath.Join(t.TempDir(), "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	g := NewGate(ctx, 0, 2, meta, slog.New(slog.NewTextHandler(io.Discard, nil)))
	g.now = func() time.Time { return now }
	g.day = g.today()
	for i := range 2 {
		if err := g.takeModelCall(ctx); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	var r *Refusal
	if _, err := g.Admit(); !errors.As(err, &r) || r.Code != "budget_exhausted" {
		t.Fatalf("spent budget admitted: %v", err)
	}
	if r.RetryAfter != time.Minute {
		t.Errorf("Retry-After %s at 23:59 UTC, want 1m", r.RetryAfter)
	}
	if v, _ := meta.GetMeta(ctx, budgetMetaKey); v != "2026-03-01 2" {
		t.Errorf("meta %q", v)
	}
	now = now.Add(2 * time.Minute)
	release, err := g.Admit()
	if err != nil {
		t.Fatalf("a new day refused: %v", err)
	}
	release()
	release() // twice: the slot is given back once
	if st := g.Status(); st.ModelCallsToday != 0 || st.InUse != 0 || !st.BudgetResetsAt.Equal(time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("status on the new day: %+v", st)
	}
	// The count in the store is a day that has passed: not today's.
	if got := NewGate(ctx, 0, 2, meta, g.log).Status().ModelCallsToday; got != 0 {
		t.Errorf("an old day's count was read back: %d", got)
	}
}

func TestNilGateAdmitsEverything(t *testing.T) {
	var g *Gate
	release, err := g.Admit()
	if err != nil {
		t.Fatal(err)
	}
	release()
	if err := g.takeModelCall(context.Background()); err != nil {
		t.Fatal(err)
	}
}
