package daemon

import (
	"os"
	"runtime"
	"runtime/debug"
)

// LimitMemory sets the Go runtime's soft memory limit from the live heap,
// once the search index is in it, unless GOMEMLIMIT is set. The index is
// most of the heap and lives as long as the daemon; with the default GC
// pacing alone the heap grows to twice the live one before a collection,
// which on a site of 100,000 pages took the RSS past 600 MB while the
// index itself was 220. The limit is half again the live heap, and never
// under 512 MiB, so a small site never collects more often than before.
func LimitMemory() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	live := int64(ms.HeapAlloc)
	debug.SetMemoryLimit(max(512<<20, live+live/2))
}
