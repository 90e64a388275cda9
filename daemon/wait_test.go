package daemon

import (
	"testing"
	"time"
)

// waitFor polls cond until it holds, and fails the test naming what it
// waited for once limit has passed.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
