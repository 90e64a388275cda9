// Package freshness holds askwpd's freshness rules in one place: how
// long what the daemon knows of a site (its pages, the WordPress
// database, its own index and status) may age before it is read, fetched
// or written again, and the slack allowed for clocks that disagree. Each
// constant says why it has its value; the code that applies it names it.
//
// The rules' tests run in testing/synctest bubbles where they cross no
// network and no process (crawl's re-render window and refresh log,
// tool's link memo, daemon's snapshot keeper), so a rule of minutes is
// checked in no time at all.
package freshness

import "time"

// Events and re-renders: how soon a change the shim reports is searchable.
const (
	// EventTick is how often the event worker looks at the queue besides
	// being woken by a webhook: events that failed are retried, and a
	// restart finds what was pending.
	EventTick = 10 * time.Second
	// EventPruneEvery is how often applied events are pruned, and
	// EventKeep how long an applied event's id is kept: well past the
	// replay window, which the signed timestamp bounds.
	EventPruneEvery = time.Hour
	EventKeep       = 24 * time.Hour
	// RerenderFreshFor is how long after its last re-render a page counts
	// as fresh again. A post edited over and over (an editor's saves, a
	// bulk tool's passes) is re-rendered at the event rate: a burst of
	// such repeats took a loaded daemon's status p99 past 50 ms.
	RerenderFreshFor = time.Minute
	// CoverSlack allows for the sender's clock running behind this
	// host's: a refresh that began less than this after a change's "at"
	// may have come before it. The shim usually runs on the same host;
	// NTP keeps others within milliseconds.
	CoverSlack = 250 * time.Millisecond
)

// The database's clock against this host's.
const (
	// CatchUpSlack reaches back before the newest fetch when the catch-up
	// asks the database what changed while the daemon was away, and
	// PassStartSlack before the last pass's start when an incremental
	// pass asks what changed since: clock skew between the database's
	// post_modified_gmt and this host.
	CatchUpSlack   = time.Minute
	PassStartSlack = time.Minute
	// DatabaseGrain is the database's resolution: it keeps whole seconds,
	// so a fetch in the same second as a change may have come before it.
	DatabaseGrain = time.Second
)

// Passes.
const (
	// PassLeaseTTL is the crawl lease's life: its holder renews it every
	// third of it, and a holder killed elsewhere than on this host (or
	// whose pid was reused) loses it within it.
	PassLeaseTTL = 30 * time.Second
	// RetryFirst is the wait before a failing URL's first retry, doubled
	// at each further attempt up to RetryMax.
	RetryFirst = 2 * time.Minute
	RetryMax   = 6 * time.Hour
	// ThrottleShown is how long after the site's last asked-for pause
	// ended the status still shows it as a site fault.
	ThrottleShown = time.Hour
)

// Pages as the tools report them.
const (
	// PageStaleAfter is how old a fetch may be before get_document calls
	// the page stale even when the site reports no change.
	PageStaleAfter = 7 * 24 * time.Hour
	// ModifiedSlack is how far a page's modified date may pass its fetch
	// before get_document calls it stale: the database's date and this
	// host's fetch time come from two clocks.
	ModifiedSlack = time.Minute
	// LinkMemoFor is how long selective expansion remembers a result
	// page's links, unless a commit replaces the page first.
	LinkMemoFor = time.Minute
)

// The daemon's status and its own index.
const (
	// StatusViewAge is how old the status view may be before a request
	// starts the next one in the background (it is answered from the old
	// one meanwhile).
	StatusViewAge = 2 * time.Second
	// StatusViewGap is how old a reading must be before an index commit
	// makes a request start the next. Under a crawl every page is a
	// commit, so every status request and scrape re-read the whole
	// tables: 3–5 % of the daemon's CPU in the load benchmark, searches
	// included.
	StatusViewGap = time.Second
	// SiteReadingAge is how long a network site's reading serves the
	// views while its store has no index write. A view read every site's
	// tables every StatusViewAge while anyone polled, where a store's
	// count of index writes costs a hundredth of that. The fetch times,
	// which a page fetched again unchanged moves without an index write,
	// are then at most this much older.
	SiteReadingAge = 30 * time.Second
	// DatabaseWait is how long a status request or a scrape waits for the
	// WordPress database to answer a ping when its last answer is older
	// than DatabaseStale. A slower answer is not waited for: the request
	// reports the last one, and the ping goes on to update it for the
	// next. A stalled database held every status request for the ping's
	// 2 s and every scrape for 1 s; under a crawl with searches on a busy
	// 2-core machine, pings took 10 to 80 ms. Down, the database fails a
	// ping in well under DatabaseWait.
	DatabaseWait = 20 * time.Millisecond
	// DatabaseStale is the age past which a request waits (DatabaseWait)
	// for a fresh answer. A younger ok is reported at once, and a ping
	// starts for the next request: a monitor polling every few seconds is
	// never held, and sees the database go down a request late. A failure
	// is always asked again, so that the database coming back shows at
	// once.
	DatabaseStale = 5 * time.Second
	// IndexSampleEvery is how often the growth chart samples the index
	// while its document count stays the same.
	IndexSampleEvery = 15 * time.Minute
	// SnapshotQuiet is how long the search index must go without a commit
	// before the daemon writes its snapshot again.
	SnapshotQuiet = 5 * time.Minute
	// MemoryLimitEvery is how often the memory limit follows the live
	// heap.
	MemoryLimitEvery = time.Minute
	// SiteResync is how often a network's blogs table is read again, for
	// sites created, archived or opted out while no event said so.
	SiteResync = 5 * time.Minute
)
