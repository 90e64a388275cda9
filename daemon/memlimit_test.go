package daemon

import (
	"context"
	"math"
	"runtime/debug"
	"testing"
)

func TestLimitMemory_GCPercent(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() {
		debug.SetGCPercent(prev)
		debug.SetMemoryLimit(math.MaxInt64)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	LimitMemory(ctx)
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, gcPercent)
	}
	if lim := debug.SetMemoryLimit(-1); lim < 512<<20 || lim == math.MaxInt64 {
		t.Errorf("GOMEMLIMIT unset: memory limit %d, want at least 512 MiB and set", lim)
	}

	// An operator's GOGC is the runtime's from the start: it stays.
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150)
	LimitMemory(ctx)
	if got := debug.SetGCPercent(100); got != 150 {
		t.Errorf("GOGC=150: GC percent %d, want it left at 150", got)
	}
}
