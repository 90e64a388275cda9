package tool

import "context"

// Slot is a share of the CPU that a tool call holds while it computes;
// the daemon hands out a few (twice the cores) and queues the rest. A
// call that waits on the network, as selective expansion does while it
// fetches pages live, gives its slot back for the wait: holding it would
// keep queued searches off an idle core for seconds. The zero Slot is
// none, for a caller that does not bound its calls.
type Slot struct {
	// Release gives the slot back; Acquire takes it again, or fails when
	// ctx ends first.
	Release func()
	Acquire func(ctx context.Context) error
}

// offCPU runs wait without the slot, if there is one, and takes the slot
// back before returning; the error is ctx's when it ended before the
// slot came back.
func (sl Slot) offCPU(ctx context.Context, wait func()) error {
	if sl.Release == nil {
		wait()
		return nil
	}
	sl.Release()
	wait()
	return sl.Acquire(ctx)
}
