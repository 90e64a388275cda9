package tool

import "context"

// A slot is a share of the CPU that a tool call holds while it computes;
// the daemon hands out a few (twice the cores) and queues the rest. A
// call that waits on the network, as selective expansion does while it
// fetches pages live, gives its slot back for the wait: holding it would
// keep queued searches off an idle core for seconds.
type slot struct {
	acquire func(context.Context) error
	release func()
}

type slotKey struct{}

// WithSlot returns a context for a call that holds a slot: release gives
// it back, acquire takes it again (or fails when ctx is done first).
func WithSlot(ctx context.Context, acquire func(context.Context) error, release func()) context.Context {
	return context.WithValue(ctx, slotKey{}, slot{acquire: acquire, release: release})
}

// offCPU runs wait without the call's slot, if it holds one, and takes
// the slot back before returning; the error is ctx's when it ended before
// the slot came back.
func offCPU(ctx context.Context, wait func()) error {
	s, ok := ctx.Value(slotKey{}).(slot)
	if !ok {
		wait()
		return nil
	}
	s.release()
	wait()
	return s.acquire(ctx)
}
