package daemon

import (
	"context"
	"sync"
	"testing"
)

// Siblings of one call (a network-wide search) go away and come back in
// any order: the call never holds more than its one slot, gives it up
// while any sibling waits, and leaves none taken.
func TestCallSlot_Siblings(t *testing.T) {
	slots := make(chan struct{}, 2)
	ctx := context.Background()
	for round := range 200 {
		cs := &callSlot{slots: slots}
		if err := cs.take(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cs.away()
				if n := len(slots); n > 1 {
					t.Errorf("round %d: %d slots taken while a sibling waits", round, n)
				}
				if err := cs.back(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if !cs.held || len(slots) != 1 {
			t.Fatalf("round %d: after every sibling came back: held %v, %d slots taken", round, cs.held, len(slots))
		}
		cs.done()
		if len(slots) != 0 {
			t.Fatalf("round %d: %d slots taken after the call", round, len(slots))
		}
	}
}

// A call whose time runs out while it waits for its slot back fails and
// takes nothing.
func TestCallSlot_BackAfterDeadline(t *testing.T) {
	slots := make(chan struct{}, 1)
	cs := &callSlot{slots: slots}
	if err := cs.take(context.Background()); err != nil {
		t.Fatal(err)
	}
	cs.away()
	slots <- struct{}{} // another call takes the slot meanwhile
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := cs.back(ctx); err == nil {
		t.Fatal("back with a done context and no free slot succeeded")
	}
	cs.done()
	if len(slots) != 1 {
		t.Fatalf("%d slots taken, want only the other call's", len(slots))
	}
}
