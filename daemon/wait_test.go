package daemon

import (
	"encoding/json"
	"strings"
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

// warmLog is a "Search caches warmed" line of the daemon's JSON log.
type warmLog struct {
	Site  json.Number // empty for the main site
	Texts int
	MB    float64
}

// warmLogs reads the "Search caches warmed" lines of a JSON log.
func warmLogs(log string) []warmLog {
	var out []warmLog
	for _, line := range strings.Split(log, "\n") {
		var l struct {
			Msg string
			warmLog
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "Search caches warmed" {
			out = append(out, l.warmLog)
		}
	}
	return out
}
