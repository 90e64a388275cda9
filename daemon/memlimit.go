package daemon

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"time"

	"github.com/askwp/askwpd/freshness"
)

// LimitMemory sets the Go runtime's soft memory limit from the live heap,
// once the search index is in it, unless GOMEMLIMIT is set. The index is
// most of the heap and lives as long as the daemon; with the default GC
// pacing alone the heap grows to twice the live one before a collection,
// which on a site of 100,000 pages took the RSS past 600 MB while the
// index itself was 220. The limit is half again the live heap, and never
// under 512 MiB, so a small site never collects more often than before.
//
// It then follows the live heap every minute until ctx ends: a limit set
// once would hold a site that grows past it (a first crawl of a big site
// starts from an empty index) to a collection after every burst of
// allocation, up to the GC's cap of half the CPU.
//
// Below the limit, unless GOGC is set, a collection comes when the heap
// is gcPercent more than the live one, not 100.
func LimitMemory(ctx context.Context) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	setMemoryLimit(int64(ms.HeapAlloc))
	go func() {
		sample := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(freshness.MemoryLimitEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				// The heap live after the last collection, without
				// ReadMemStats' stop of the world.
				rtmetrics.Read(sample)
				if sample[0].Value.Kind() == rtmetrics.KindUint64 {
					setMemoryLimit(int64(sample[0].Value.Uint64()))
				}
			}
		}
	}()
}

// gcPercent: the index and the caches searches fill are most of the live
// heap and stay, so at 100 the heap doubled them, and the garbage of a
// crawl that re-renders the site raised that further. At 80, a site
// re-indexed under a steady load of searches peaks at a smaller RSS
// (by about a twelfth) for a few percent more CPU a search. GOGC=100 in
// the daemon's environment restores Go's default, to compare.
const gcPercent = 80

func setMemoryLimit(live int64) {
	debug.SetMemoryLimit(max(512<<20, live+live/2))
}
