package daemon

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
)

// TestCrash_KillNine is the crash drill. A real daemon (this test
// binary re-run as `serve`, see TestHelperCrashChild) crawls the real
// WordPress over and over while the test changes posts through WordPress
// and sends the shim's signed events for them, duplicates and replays
// included; it is SIGKILLed after a random, seeded delay. After every kill
// the store must pass integrity_check and hold no half-written document,
// and the next start must resume the interrupted pass. At the end every
// event that was stored (answered 202, or refused as a replay of a send
// whose answer the kill cut off) is applied, once, and each test post's
// page in the index matches WordPress.
//
// ASKWPD_SOAK=1 runs 50 kills (1–2.5 minutes under this machine's load);
// the default is 12 (about 40 s).
// ASKWPD_CRASH_ITER sets the count, ASKWPD_CRASH_SEED replays a run's
// kill delays and changes, ASKWPD_CRASH_LOGS=DIR keeps the daemons' logs.
func TestCrash_KillNine(t *testing.T) {
	if os.Getenv("ASKWPD_CRASH_CHILD") != "" {
		t.Skip("child process")
	}
	site := wptest.Get(t)
	site.Lock(t)
	start := time.Now()

	iters := 12
	if os.Getenv("ASKWPD_SOAK") != "" {
		iters = 50
	}
	if s := os.Getenv("ASKWPD_CRASH_ITER"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("ASKWPD_CRASH_ITER=%q", s)
		}
		iters = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ASKWPD_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("ASKWPD_CRASH_SEED=%q", s)
		}
	}
	t.Logf("seed %d (replay with ASKWPD_CRASH_SEED=%d), %d kills", seed, seed, iters)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))

	state := t.TempDir()
	logs := os.Getenv("ASKWPD_CRASH_LOGS") // keep the daemons' logs there
	if logs == "" {
		logs = t.TempDir()
	}
	dbPath := filepath.Join(state, "askwpd.db")
	secretStr, err := EnsureSecret(state, "webhook.secret")
	if err != nil {
		t.Fatal(err)
	}

	wpw := startWPWorker(t, site)
	posts := &crashPosts{}
	t.Cleanup(func() {
		// Restore the site: every post this test made goes, whatever state
		// it was left in.
		var ids []string
		for _, p := range posts.all {
			if p.status != "deleted" {
				ids = append(ids, strconv.FormatInt(p.id, 10))
			}
		}
		if len(ids) > 0 {
			site.PHP(t, `foreach (array(`+strings.Join(ids, ",")+`) as $id) { wp_delete_post($id, true); }`)
		}
	})
	box := &outbox{seed: seed, secret: []byte(secretStr), stored: map[string]bool{}, accepted: map[string]bool{},
		unknown: map[string]*crashEvent{}}
	for range 4 {
		posts.create(t, wpw, box, rng)
	}

	t.Logf("setup (PHP worker, %d posts) took %v", len(posts.all), time.Since(start).Round(time.Millisecond))
	var (
		phases      = map[string]int{}
		modes       = map[string]int{}
		prev        *crashSnap
		appliedSeen = map[string]string{} // event id → applied_at when first seen applied
		resumes     int
		lifeTimes   []time.Duration
		fetchKinds  = map[string]int{}
	)
	for life := range iters {
		// WordPress changes only between lives, so a pass never races a
		// change the test makes: what the index must hold is what
		// WordPress said when the events for it were sent.
		for range 1 + rng.IntN(2) {
			posts.mutate(t, wpw, box, rng)
		}
		// The kill comes a random delay after one of four moments: the
		// process start (startup, migrations), the API answering (events
		// arriving, discovery), the first page a pass finishes, or the
		// first event answered 202 (the worker then applies it: removes or
		// re-renders the page, then marks it applied).
		mode := killModes[rng.IntN(len(killModes))]
		delay := time.Duration(20+rng.IntN(381)) * time.Millisecond
		if mode == "event" {
			delay = time.Duration(rng.IntN(200)) * time.Millisecond
		}
		sendSeed := rng.Uint64()

		doneMarks := storeDoneMarks(dbPath)
		lifeStart := time.Now()
		c := startCrashChild(t, state, filepath.Join(logs, fmt.Sprintf("life-%02d", life)), "loop")
		var sender sync.WaitGroup
		stopSend := make(chan struct{})
		sendStats := newSendStats()
		startSending := func() {
			sender.Go(func() { box.sendAll(c.base, stopSend, rand.New(rand.NewPCG(sendSeed, 1)), sendStats) })
		}
		ready, trigger := false, mode
		if mode == "start" {
			// The random delay picks the moment of the kill: it simulates a
			// crash at any point of the start, it waits for nothing.
			time.Sleep(delay)
			if ready = c.isReady(); ready {
				startSending()
			}
		} else {
			if err := c.waitReady(60 * time.Second); err != nil {
				t.Fatalf("life %d: %v\n%s", life, err, c.tail())
			}
			ready = true
			startSending()
			switch mode {
			case "crawl":
				// From the pass's first page written, so the kill leaves
				// done pages for the restart not to fetch again.
				if !c.waitDone(dbPath, doneMarks, 10*time.Second) {
					trigger = "crawl (no page done in 10s)"
				}
			case "event":
				if !box.waitAccepted(sendStats, 3*time.Second) {
					trigger = "event (none accepted in 3s)"
				}
			}
			// As above: a random moment after the trigger, not a wait.
			time.Sleep(delay)
		}
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-c.exited
		exitErr := c.err
		close(stopSend)
		sender.Wait()
		box.report(t, fmt.Sprintf("life %d", life))
		lifeTimes = append(lifeTimes, time.Since(lifeStart))
		if ws, ok := exitErr.(*exec.ExitError); !ok || ws.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("life %d: the child ended by itself (%v) before the kill:\n%s", life, exitErr, c.tail())
		}
		modes[trigger]++

		snap := checkCrashStore(t, dbPath, fmt.Sprintf("after kill %d", life))
		phase := snap.phase(ready)
		phases[phase]++
		t.Logf("kill %2d (life %v) %3dms after %-5s phase %-26s sent %d (202: %d, replay refused: %d, cut off: %d)  pass %d: %d done, %d queued",
			life, lifeTimes[life].Round(time.Millisecond), delay.Milliseconds(), trigger, phase,
			sendStats.sent, sendStats.accepted, sendStats.refused, sendStats.cut, snap.run, len(snap.done), snap.queued)

		// An event seen applied keeps its applied_at: no later start
		// applies it again.
		for id, at := range snap.applied {
			if first, ok := appliedSeen[id]; ok && first != at {
				t.Errorf("after kill %d: event %s applied again (applied_at %s, was %s)", life, id, at, first)
			} else if !ok {
				appliedSeen[id] = at
			}
		}
		box.mu.Lock()
		for id := range box.stored {
			if _, ok := snap.events[id]; !ok {
				t.Errorf("after kill %d: event %s was stored (202 or replay refusal) but is not in the store", life, id)
			}
		}
		box.mu.Unlock()

		fetches := c.fetchLog()
		for _, f := range fetches {
			fetchKinds[f.kind]++
		}
		if prev != nil {
			resumes += checkResume(t, life, prev, snap, fetches)
		}
		prev = snap
	}

	// The last start is not killed: it must finish the interrupted pass and
	// apply every event, then stop cleanly on SIGTERM.
	c := startCrashChild(t, state, filepath.Join(logs, "final"), "final")
	if err := c.waitReady(60 * time.Second); err != nil {
		t.Fatalf("final start: %v\n%s", err, c.tail())
	}
	finalStart := time.Now()
	stopSend := make(chan struct{})
	stopSending := sync.OnceFunc(func() { close(stopSend) })
	defer stopSending() // a failed wait must not leave the sender looping
	var sender sync.WaitGroup
	sender.Go(func() {
		for {
			box.sendAll(c.base, stopSend, rand.New(rand.NewPCG(seed, 2)), newSendStats())
			if box.drained() {
				return
			}
			select {
			case <-stopSend:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	waitQuiet(t, dbPath, box, 60*time.Second, c)
	stopSending()
	sender.Wait()
	box.report(t, "final start")
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.exited:
		if c.err != nil {
			t.Errorf("the final daemon exited with %v after SIGTERM:\n%s", c.err, c.tail())
		}
	case <-time.After(20 * time.Second):
		c.cmd.Process.Kill()
		t.Fatalf("the final daemon did not stop within 20s of SIGTERM:\n%s", c.tail())
	}
	final := checkCrashStore(t, dbPath, "at the end")
	if prev != nil {
		resumes += checkResume(t, iters, prev, final, c.fetchLog())
	}
	if final.queued != 0 {
		t.Errorf("at the end %d URLs are still queued", final.queued)
	}

	// Every stored event is applied, exactly once.
	box.mu.Lock()
	storedIDs := make([]string, 0, len(box.stored))
	for id := range box.stored {
		storedIDs = append(storedIDs, id)
	}
	box.mu.Unlock()
	sort.Strings(storedIDs)
	for _, id := range storedIDs {
		ev, ok := final.events[id]
		switch {
		case !ok:
			t.Errorf("event %s was stored but is not in the store at the end", id)
		case ev.appliedAt == "":
			t.Errorf("event %s was never applied (attempts %d, error %q)", id, ev.attempts, ev.err)
		case appliedSeen[id] != "" && appliedSeen[id] != ev.appliedAt:
			t.Errorf("event %s applied again at the end (applied_at %s, was %s)", id, ev.appliedAt, appliedSeen[id])
		}
	}
	if len(final.events) != len(storedIDs) {
		t.Errorf("the store holds %d events; %d were stored through the API", len(final.events), len(storedIDs))
	}
	failedTries := 0
	for _, ev := range final.events {
		failedTries += ev.attempts
	}

	// Each test post's page in the index is what WordPress shows now, and
	// after the full pass the index holds exactly the public pages.
	checkCrashPosts(t, wpw, posts, dbPath)
	checkCrashURLs(t, site, dbPath)

	// A kill during discovery, or between a pass's last page and its run
	// record, leaves a run with no finish time, and nothing queued to
	// resume: the next pass closes it as interrupted. After the final
	// pass, every run has its record.
	unfinished := 0
	for _, fin := range final.finished {
		if !fin {
			unfinished++
		}
	}
	if unfinished > 0 {
		t.Errorf("%d of %d passes have no finish record after the final pass", unfinished, len(final.finished))
	}
	box.mu.Lock()
	t.Logf("%d kills in %v (lives avg %v, final catch-up %v); kills timed from %v; phases %v; %d resumed passes; events: %d stored (%d answered 202 at once, %d refused as replays of a cut-off send), %d intentional replays refused, %d sends cut off, %d failed tries",
		iters, time.Since(start).Round(time.Millisecond), avgDuration(lifeTimes).Round(time.Millisecond),
		time.Since(finalStart).Round(time.Millisecond), modes, phases, resumes,
		len(box.stored), len(box.accepted), len(box.stored)-len(box.accepted), box.replaysRefused, box.cutTotal, failedTries)
	box.mu.Unlock()
	// The re-fetch check tells the fetches apart by function names in the
	// stack; a rename must not quietly turn it off.
	if fetchKinds["crawl"] == 0 || fetchKinds["discover"] == 0 {
		t.Errorf("fetches by kind %v: the child no longer recognizes crawlFetch or discover in its stacks", fetchKinds)
	}
	if iters >= 10 && resumes == 0 {
		t.Errorf("no kill interrupted a pass that a later start resumed: the drill did not test resuming")
	}
}

// TestHelperCrashChild is the daemon TestCrash_KillNine kills: Serve on
// the test's state dir, with, unless it is the final start, a new pass
// started whenever the last one ends, so a kill always finds one running.
// It logs every request its fetcher starts, with what started it, so the
// parent can tell a resumed pass from one that started over.
func TestHelperCrashChild(t *testing.T) {
	if os.Getenv("ASKWPD_CRASH_CHILD") == "" {
		t.Skip("run by TestCrash_KillNine")
	}
	site := wptest.Get(t)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cfg := childConfig(site, os.Getenv("ASKWPD_CRASH_STATE"))
	cfg.Listen = os.Getenv("ASKWPD_CRASH_LISTEN")
	cfg.Crawl.RatePerSec = 40
	cfg.Crawl.Concurrency = 2
	if os.Getenv("ASKWPD_CRASH_MODE") == "loop" {
		// A small budget ends passes often, so kills also land in
		// discovery and in a pass's last writes.
		cfg.Crawl.Budget = 12
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	d, err := Open(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	f, err := os.OpenFile(os.Getenv("ASKWPD_CRASH_FETCHLOG"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mu sync.Mutex
	tr := d.Crawler.Fetcher.Client.Transport
	d.Crawler.Fetcher.Client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		// Redirect hops are not fetches a pass asked for.
		if r.Response == nil {
			// The stack says who asked; the transport has no other way to
			// know, and the daemon is not changed for a test.
			buf := make([]byte, 32<<10)
			st := buf[:runtime.Stack(buf, false)]
			kind := "other"
			switch {
			case bytes.Contains(st, []byte(").crawlFetch(")):
				kind = "crawl"
			case bytes.Contains(st, []byte(").renderNow(")):
				kind = "event"
			case bytes.Contains(st, []byte(").discover")), bytes.Contains(st, []byte(").walkSitemaps(")),
				bytes.Contains(st, []byte(").readFeed(")), bytes.Contains(st, []byte("askwpd/sitemap.")):
				kind = "discover"
			}
			mu.Lock()
			fmt.Fprintf(f, "%s %s\n", kind, crawl.Canonical(r.URL.String()))
			mu.Unlock()
		}
		return tr.RoundTrip(r)
	})

	switch os.Getenv("ASKWPD_CRASH_MODE") {
	case "loop":
		go func() {
			full := true
			for ctx.Err() == nil {
				_, err := d.Index(ctx, crawl.IndexOptions{Kind: "crash", Full: full, Incremental: !full})
				if err != nil {
					// A pause before retrying a refused or failed pass keeps
					// the loop from spinning; nothing waits on it.
					time.Sleep(20 * time.Millisecond)
				}
				if !errors.Is(err, crawl.ErrCrawlRunning) {
					full = !full
				}
			}
		}()
	case "final":
		// Whatever pass was interrupted is finished first (Index resumes
		// it, keeping its kind), then one full pass within the default
		// budget, which covers the whole test site.
		go func() {
			for ctx.Err() == nil {
				run, err := d.Index(ctx, crawl.IndexOptions{Kind: "final", Full: true})
				if err == nil && run.Kind == "final" {
					return
				}
				if err != nil {
					// As in the loop: a pause before retrying, not a wait.
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	if err := d.Serve(ctx); err != nil {
		t.Fatal(err)
	}
}

// crashChild is one start of the daemon.
type crashChild struct {
	cmd     *exec.Cmd
	base    string
	logPath string
	fetches string
	exited  chan struct{} // closed when the process has been waited for
	err     error         // its exit, once exited is closed
}

// killModes are the moments a kill's delay counts from.
var killModes = []string{"start", "ready", "ready", "crawl", "crawl", "crawl", "event", "event"}

func startCrashChild(t *testing.T, state, logBase, mode string) *crashChild {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := &crashChild{base: "http://" + addr, logPath: logBase + ".log", fetches: logBase + ".fetches", exited: make(chan struct{})}
	out, err := os.Create(c.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close() // the child holds its own copy
	c.cmd = exec.Command(os.Args[0], "-test.run=^TestHelperCrashChild$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), "ASKWPD_CRASH_CHILD=1", "ASKWPD_CRASH_STATE="+state, "ASKWPD_CRASH_LISTEN="+addr,
		"ASKWPD_CRASH_FETCHLOG="+c.fetches)
	c.cmd.Env = append(c.cmd.Env, "ASKWPD_CRASH_MODE="+mode)
	c.cmd.Stdout, c.cmd.Stderr = out, out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

func (c *crashChild) isReady() bool {
	cl := http.Client{Timeout: 500 * time.Millisecond}
	resp, err := cl.Get(c.base + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

func (c *crashChild) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-c.exited:
			return fmt.Errorf("the daemon exited before it was ready: %v", c.err)
		default:
		}
		if c.isReady() {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("the daemon was not ready within %v", limit)
}

// storeDoneMarks sums urls.done_run, which grows each time any pass
// finishes a URL.
func storeDoneMarks(path string) int64 {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		return 0
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(`SELECT coalesce(sum(done_run), 0) FROM urls`).Scan(&n); err != nil {
		return 0 // no store, or not migrated yet
	}
	return n
}

// waitDone waits until a pass has finished a URL since the start.
func (c *crashChild) waitDone(path string, before int64, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if storeDoneMarks(path) > before {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func (c *crashChild) tail() string {
	b, _ := os.ReadFile(c.logPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}

type fetchLine struct{ kind, url string }

func (c *crashChild) fetchLog() []fetchLine {
	b, _ := os.ReadFile(c.fetches)
	var out []fetchLine
	for _, l := range strings.Split(string(b), "\n") {
		if k, u, ok := strings.Cut(l, " "); ok {
			out = append(out, fetchLine{k, u})
		}
	}
	return out
}

// crashEvent is one webhook event as the shim would send it.
type crashEvent struct {
	id     string
	fields map[string]any
	replay bool // a resend of an id that was answered 202: must be refused
}

// outbox holds the events still to send and what became of those sent.
type outbox struct {
	seed   uint64
	secret []byte

	mu      sync.Mutex
	n       int
	queue   []*crashEvent
	unknown map[string]*crashEvent // sent, answer cut off by a kill: resent with the same id
	// stored are the ids the daemon holds: answered 202, or refused as a
	// replay when resent after a cut-off answer.
	stored         map[string]bool
	accepted       map[string]bool
	replaysRefused int
	cutTotal       int
	// problems are answers no event should get; the test reports them
	// once the sender has stopped.
	problems []string
}

func (b *outbox) report(t *testing.T, when string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		t.Errorf("%s: %s", when, p)
	}
	b.problems = nil
}

// sendStats counts one life's sends; box.mu guards it.
type sendStats struct {
	sent, accepted, refused, cut int
	firstAccepted                chan struct{} // closed at the first 202
}

func newSendStats() *sendStats { return &sendStats{firstAccepted: make(chan struct{})} }

// waitAccepted waits until an event of this life was answered 202.
func (b *outbox) waitAccepted(st *sendStats, limit time.Duration) bool {
	select {
	case <-st.firstAccepted:
		return true
	case <-time.After(limit):
		return false
	}
}

func (b *outbox) add(fields map[string]any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	b.queue = append(b.queue, &crashEvent{id: fmt.Sprintf("crash-%d-%d", b.seed, b.n), fields: fields})
}

func (b *outbox) drained() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue) == 0 && len(b.unknown) == 0
}

// next takes the next event to send: a cut-off one first (the shim
// retries), then the queue.
func (b *outbox) next() *crashEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := make([]string, 0, len(b.unknown))
	for id := range b.unknown {
		ids = append(ids, id)
	}
	if len(ids) > 0 {
		sort.Strings(ids)
		e := b.unknown[ids[0]]
		delete(b.unknown, ids[0])
		return e
	}
	if len(b.queue) == 0 {
		return nil
	}
	e := b.queue[0]
	b.queue = b.queue[1:]
	return e
}

// sendAll sends events one at a time, a few milliseconds apart, until the
// outbox is empty or stop is closed. An answer cut off by the kill leaves
// the event to resend.
func (b *outbox) sendAll(base string, stop <-chan struct{}, rng *rand.Rand, st *sendStats) {
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		select {
		case <-stop:
			return
		default:
		}
		e := b.next()
		if e == nil {
			return
		}
		fields := map[string]any{"id": e.id}
		for k, v := range e.fields {
			fields[k] = v
		}
		body, _ := json.Marshal(map[string]any{"events": []any{fields}})
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req, _ := http.NewRequest("POST", base+"/v1/events", bytes.NewReader(body))
		req.Header.Set(api.HeaderTimestamp, ts)
		req.Header.Set(api.HeaderSignature, api.Sign(b.secret, ts, body))
		resp, err := cl.Do(req)
		var code int
		var msg []byte
		if err == nil {
			msg, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			code = resp.StatusCode
		}
		b.mu.Lock()
		st.sent++
		switch {
		case err != nil || code >= 500:
			// Cut off by the kill (or a 5xx): the shim sends it again.
			b.unknown[e.id] = e
			b.cutTotal++
			st.cut++
		case code == 202 && e.replay:
			b.problems = append(b.problems, fmt.Sprintf("a replay of event %s was accepted again", e.id))
		case code == 202:
			b.stored[e.id], b.accepted[e.id] = true, true
			if st.accepted++; st.accepted == 1 {
				close(st.firstAccepted)
			}
			// The shim may deliver twice; half the time, send it again later.
			if rng.IntN(2) == 0 {
				b.queue = append(b.queue, &crashEvent{id: e.id, fields: e.fields, replay: true})
			}
		case code == 401 && strings.Contains(string(msg), "replay"):
			st.refused++
			if e.replay {
				b.replaysRefused++
			} else {
				// A resend of a cut-off send: the first one was stored.
				b.stored[e.id] = true
			}
		default:
			b.problems = append(b.problems, fmt.Sprintf("event %s answered %d %s", e.id, code, msg))
		}
		b.mu.Unlock()
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(rng.IntN(40)) * time.Millisecond):
		}
	}
}

// crashPost is a post the test made and what WordPress says of it.
type crashPost struct {
	id       int64
	status   string // publish, private, trash, deleted
	password bool
	url      string // the permalink while public
	word     string // the word of the current content
	old      []string
}

func (p *crashPost) public() bool { return p.status == "publish" && !p.password }

type crashPosts struct {
	n   int
	all []*crashPost
}

func (ps *crashPosts) word(rng *rand.Rand) string {
	ps.n++
	return "zq" + strconv.FormatUint(rng.Uint64()%1e9, 36) + "k" + strconv.Itoa(ps.n) + "x"
}

func (ps *crashPosts) create(t *testing.T, w *wpWorker, box *outbox, rng *rand.Rand) {
	p := &crashPost{word: ps.word(rng)}
	st := w.do(t, map[string]any{"op": "create", "word": p.word, "n": len(ps.all) + 1})
	p.id, p.status, p.url = st.ID, st.Status, st.URL
	ps.all = append(ps.all, p)
	box.add(map[string]any{"type": "post_published", "post_id": p.id, "post_type": "post", "status": "publish", "public": true, "url": p.url})
}

// mutate makes one change to a random test post through WordPress and
// queues the events the shim would send for it; sometimes the same
// change twice under two ids, as save_post can fire twice.
func (ps *crashPosts) mutate(t *testing.T, w *wpWorker, box *outbox, rng *rand.Rand) {
	p := ps.all[rng.IntN(len(ps.all))]
	if p.status == "deleted" {
		ps.create(t, w, box, rng)
		return
	}
	var ops []string
	switch {
	case p.status == "publish" && p.password:
		ops = []string{"unprotect", "trash"}
	case p.status == "publish":
		ops = []string{"update", "update", "private", "password", "trash", "delete"}
	case p.status == "private":
		ops = []string{"publish", "trash"}
	case p.status == "trash":
		ops = []string{"publish", "delete"}
	}
	op := ops[rng.IntN(len(ops))]
	cmd := map[string]any{"op": op, "id": p.id}
	if op == "update" {
		p.old = append(p.old, p.word)
		p.word = ps.word(rng)
		cmd["word"] = p.word
	}
	st := w.do(t, cmd)
	oldURL := p.url
	p.status, p.password = st.Status, st.Password
	if p.public() {
		p.url = st.URL
	}
	var ev map[string]any
	switch op {
	case "update":
		ev = map[string]any{"type": "post_updated", "status": "publish", "public": true, "url": p.url}
	case "unprotect":
		ev = map[string]any{"type": "post_updated", "status": "publish", "public": true, "has_password": false, "url": p.url}
	case "publish":
		ev = map[string]any{"type": "post_published", "status": "publish", "public": true, "url": p.url}
	case "private":
		ev = map[string]any{"type": "post_unpublished", "status": "private", "public": false, "url": oldURL}
	case "password":
		ev = map[string]any{"type": "post_updated", "status": "publish", "public": false, "has_password": true, "url": oldURL}
	case "trash":
		ev = map[string]any{"type": "post_trashed", "status": "trash", "public": false, "url": oldURL}
	case "delete":
		ev = map[string]any{"type": "post_deleted", "url": oldURL}
	}
	ev["post_id"], ev["post_type"] = p.id, "post"
	box.add(ev)
	if rng.IntN(4) == 0 {
		box.add(ev)
	}
}

// wpWorker is one PHP process with WordPress loaded that changes posts
// through WordPress's own functions: a change takes milliseconds rather
// than the second a fresh wp-load costs.
type wpWorker struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

type wpPostState struct {
	ID       int64  `json:"id"`
	Status   string `json:"status"`
	Password bool   `json:"password"`
	URL      string `json:"url"`
	Content  string `json:"content"`
	Error    string `json:"error"`
}

const wpWorkerPHP = `
while (($line = fgets(STDIN)) !== false) {
	$c = json_decode($line, true);
	$id = (int) ($c['id'] ?? 0);
	$content = '<p>The ' . ($c['word'] ?? '') . ' paragraph on crash recovery, write-ahead logs and the tides in the harbour.</p>';
	switch ($c['op']) {
	case 'create':
		$id = wp_insert_post(array('post_title' => 'Crash recovery ' . $c['n'], 'post_content' => $content, 'post_status' => 'publish'), true);
		break;
	case 'update':
		wp_update_post(array('ID' => $id, 'post_content' => $content));
		break;
	case 'private':
		wp_update_post(array('ID' => $id, 'post_status' => 'private'));
		break;
	case 'publish':
		if (get_post_status($id) === 'trash') { wp_untrash_post($id); }
		wp_update_post(array('ID' => $id, 'post_status' => 'publish'));
		break;
	case 'password':
		wp_update_post(array('ID' => $id, 'post_password' => 'hunter2'));
		break;
	case 'unprotect':
		wp_update_post(array('ID' => $id, 'post_password' => ''));
		break;
	case 'trash':
		wp_trash_post($id);
		break;
	case 'delete':
		wp_delete_post($id, true);
		break;
	}
	if (is_wp_error($id)) { echo json_encode(array('error' => $id->get_error_message())), "\n"; continue; }
	clean_post_cache($id);
	$p = get_post($id);
	echo json_encode(array('id' => $id, 'status' => $p ? $p->post_status : 'deleted', 'password' => $p ? $p->post_password !== '' : false,
		'url' => $p ? get_permalink($id) : '', 'content' => $p ? $p->post_content : '')), "\n";
}
`

func startWPWorker(t *testing.T, site *wptest.Site) *wpWorker {
	t.Helper()
	script := `$_SERVER['HTTP_HOST'] = '` + site.Host() + `'; $_SERVER['REQUEST_URI'] = '/'; define('WP_USE_THEMES', false); require '` +
		strings.TrimRight(site.Root(), "/") + `/wp-load.php'; ` + wpWorkerPHP
	w := &wpWorker{cmd: exec.Command("php", "-r", script)}
	var err error
	if w.in, err = w.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.cmd.Stderr = io.Discard
	w.out = bufio.NewReader(stdout)
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.in.Close() // it ends at end of input
		done := make(chan struct{})
		go func() { w.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			w.cmd.Process.Kill()
			<-done
		}
	})
	return w
}

func (w *wpWorker) do(t *testing.T, cmd map[string]any) wpPostState {
	t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := w.in.Write(append(b, '\n')); err != nil {
		t.Fatalf("php worker: %v", err)
	}
	for {
		line, err := w.out.ReadString('\n')
		if err != nil {
			t.Fatalf("php worker: %v", err)
		}
		// WordPress may print notices first; the answer is the JSON line.
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var st wpPostState
		if err := json.Unmarshal([]byte(line), &st); err != nil {
			t.Fatalf("php worker: %v: %s", err, line)
		}
		if st.Error != "" || st.ID == 0 {
			t.Fatalf("php worker: %s for %s", line, b)
		}
		return st
	}
}

// crashSnap is what the store holds after a kill.
type crashSnap struct {
	schema   int             // PRAGMA user_version
	run      int64           // the pass with a frontier, 0 when none
	queued   int             // its queued URLs
	done     map[string]bool // URLs it fetched (done_run)
	maxRun   int64
	resumed  map[int64]int
	finished map[int64]bool
	pending  int
	events   map[string]crashEventRow
	applied  map[string]string
}

type crashEventRow struct {
	appliedAt string
	attempts  int
	err       string
}

// phase names what the daemon was doing when it was killed, as far as the
// store shows.
func (s *crashSnap) phase(ready bool) string {
	var p []string
	if !ready {
		p = append(p, "startup")
	}
	if s.schema < 4 {
		p = append(p, "migrating")
	}
	switch {
	case s.run != 0:
		p = append(p, "crawl")
	case s.maxRun != 0 && !s.finished[s.maxRun]:
		p = append(p, "discovery/finish")
	}
	if s.pending > 0 {
		p = append(p, "events")
	}
	if len(p) == 0 {
		return "idle"
	}
	return strings.Join(p, "+")
}

// sqlSpaces is what strings.TrimSpace removes (unicode.IsSpace), as a
// SQLite string: the chunker drops chunks of nothing else.
const sqlSpaces = `char(9, 10, 11, 12, 13, 32, 133, 160, 5760, 8192, 8193, 8194, 8195, 8196, 8197, 8198, 8199, 8200, 8201, 8202, 8232, 8233, 8239, 8287, 12288)`

// checkCrashStore opens the store as the next start would find it and
// checks what the store promises: a sound file, and documents whose
// chunks and full-text rows were written with them.
func checkCrashStore(t *testing.T, path, when string) *crashSnap {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	one := func(q string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %s: %v", when, q, err)
		}
		return n
	}

	s := &crashSnap{done: map[string]bool{}, resumed: map[int64]int{}, finished: map[int64]bool{},
		events: map[string]crashEventRow{}, applied: map[string]string{}}
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		t.Fatalf("%s: integrity_check: %v", when, err)
	}
	var msgs []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		msgs = append(msgs, s)
	}
	rows.Close()
	if len(msgs) != 1 || msgs[0] != "ok" {
		t.Fatalf("%s: integrity_check: %v", when, msgs)
	}
	// Killed before the first start migrated the store to the schema
	// these checks read (004): the next start carries on migrating.
	if s.schema = int(one(`PRAGMA user_version`)); s.schema < 4 {
		return s
	}
	checks := []struct{ what, q string }{
		{"foreign key violations", `SELECT count(*) FROM pragma_foreign_key_check`},
		{"chunks without their document", `SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = c.doc_id)`},
		{"chunks whose offsets leave the body or whose text is not body[start:end]", `
			SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.doc_id
			WHERE c.start < 0 OR c.end < c.start OR c.end > length(d.body)
				OR substr(d.body, c.start + 1, c.end - c.start) != c.text`},
		{"documents whose chunks are not numbered 0..n-1", `
			SELECT count(*) FROM (SELECT count(*) AS n, min(ord) AS lo, max(ord) AS hi FROM chunks GROUP BY doc_id)
			WHERE lo != 0 OR hi != n - 1`},
		// Chunks are written in order, so a document cut short lacks its
		// last ones: the chunker's last chunk ends where the body's last
		// non-space character does.
		{"documents whose chunks stop before the end of the body", `
			SELECT count(*) FROM documents d JOIN (SELECT doc_id, max(end) AS e FROM chunks GROUP BY doc_id) c ON c.doc_id = d.id
			WHERE c.e < length(rtrim(d.body, ` + sqlSpaces + `))`},
		{"documents with a body and no chunk", `
			SELECT count(*) FROM documents d
			WHERE trim(d.body, ` + sqlSpaces + `) != ''
				AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.doc_id = d.id)`},
		{"frontiers of more than one pass", `SELECT max(count(DISTINCT run_id) - 1, 0) FROM urls WHERE queued = 1`},
		{"applied events still carrying an error", `SELECT count(*) FROM events WHERE applied_at != '' AND error != ''`},
	}
	for _, c := range checks {
		if n := one(c.q); n != 0 {
			t.Errorf("%s: %d %s", when, n, c.what)
		}
	}

	s.run = one(`SELECT coalesce(max(run_id), 0) FROM urls WHERE queued = 1`)
	s.queued = int(one(`SELECT count(*) FROM urls WHERE queued = 1`))
	s.maxRun = one(`SELECT coalesce(max(id), 0) FROM crawl_runs`)
	s.pending = int(one(`SELECT count(*) FROM events WHERE applied_at = ''`))
	if s.run != 0 {
		rows, err := db.QueryContext(ctx, `SELECT url FROM urls WHERE done_run = ?`, s.run)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var u string
			rows.Scan(&u)
			s.done[u] = true
		}
		rows.Close()
	}
	rows, err = db.QueryContext(ctx, `SELECT id, resumed, finished_at != '' FROM crawl_runs`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var n int
		var fin bool
		rows.Scan(&id, &n, &fin)
		s.resumed[id], s.finished[id] = n, fin
	}
	rows.Close()
	rows, err = db.QueryContext(ctx, `SELECT event_id, applied_at, attempts, error FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var e crashEventRow
		rows.Scan(&id, &e.appliedAt, &e.attempts, &e.err)
		s.events[id] = e
		if e.appliedAt != "" {
			s.applied[id] = e.appliedAt
		}
	}
	rows.Close()
	return s
}

// checkResume compares the store before and after one start: a pass that
// had a frontier is continued, not begun again, and none of the pages it
// had finished is fetched again by it. It returns 1 when that start
// resumed the pass.
func checkResume(t *testing.T, life int, before, after *crashSnap, fetches []fetchLine) int {
	t.Helper()
	r := before.run
	if r == 0 {
		return 0
	}
	resumed := after.resumed[r] > before.resumed[r]
	if after.run == r {
		// Still unfinished: no other pass may have started, and what it
		// had done stays done.
		if after.maxRun != r {
			t.Errorf("start %d: pass %d still has %d URLs queued, yet pass %d was started", life, r, after.queued, after.maxRun)
		}
		for u := range before.done {
			if !after.done[u] {
				t.Errorf("start %d: %s, fetched by pass %d before the kill, is no longer done", life, u, r)
			}
		}
	} else if !resumed {
		t.Errorf("start %d: pass %d had %d URLs queued and ended without being resumed (now pass %d, queued %d)",
			life, r, before.queued, after.run, after.queued)
	}
	// Until the next pass's discovery, every crawl fetch is the resumed
	// pass's.
	for _, f := range fetches {
		if f.kind == "discover" {
			break
		}
		if f.kind == "crawl" && before.done[f.url] {
			t.Errorf("start %d: %s was fetched by pass %d before the kill and again after the restart", life, f.url, r)
		}
	}
	if resumed {
		return 1
	}
	return 0
}

// waitQuiet waits until every event is sent and applied, the interrupted
// pass and then a full one have run to their end, and no frontier is left.
func waitQuiet(t *testing.T, path string, box *outbox, limit time.Duration, c *crashChild) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(limit)
	var pending, queued, finished int
	for time.Now().Before(deadline) {
		select {
		case <-c.exited:
			t.Fatalf("the final daemon exited: %v\n%s", c.err, c.tail())
		default:
		}
		err := db.QueryRow(`SELECT (SELECT count(*) FROM events WHERE applied_at = ''), (SELECT count(*) FROM urls WHERE queued = 1),
			(SELECT count(*) FROM crawl_runs WHERE kind = 'final' AND finished_at != '' AND error = '')`).
			Scan(&pending, &queued, &finished)
		if err == nil && pending == 0 && queued == 0 && finished > 0 && box.drained() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("after %v: %d events pending, %d URLs queued, final pass finished %v, outbox drained %v\n%s",
		limit, pending, queued, finished > 0, box.drained(), c.tail())
}

// checkCrashPosts compares each test post's page in the index with what
// WordPress says of the post now.
func checkCrashPosts(t *testing.T, w *wpWorker, posts *crashPosts, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, p := range posts.all {
		if p.status != "deleted" {
			st := w.do(t, map[string]any{"op": "state", "id": p.id})
			if st.Status != p.status || st.Password != p.password {
				t.Fatalf("post %d: WordPress says %s (password %v), the test thought %s (%v)", p.id, st.Status, st.Password, p.status, p.password)
			}
		}
		rows, err := db.Query(`SELECT url, body FROM documents WHERE post_id = ?`, p.id)
		if err != nil {
			t.Fatal(err)
		}
		var urls, bodies []string
		for rows.Next() {
			var u, b string
			rows.Scan(&u, &b)
			urls, bodies = append(urls, u), append(bodies, b)
		}
		rows.Close()
		if !p.public() {
			if len(urls) > 0 {
				t.Errorf("post %d is %s (password %v) in WordPress but indexed at %v", p.id, p.status, p.password, urls)
			}
			continue
		}
		if len(urls) != 1 || urls[0] != crawl.Canonical(p.url) {
			t.Errorf("post %d is public at %s, indexed at %v", p.id, p.url, urls)
			continue
		}
		if !strings.Contains(bodies[0], p.word) {
			t.Errorf("post %d: the index lacks its current text %q: %.200q", p.id, p.word, bodies[0])
		}
		for _, o := range p.old {
			if strings.Contains(bodies[0], o) {
				t.Errorf("post %d: the index still holds its old text %q", p.id, o)
			}
		}
	}
}

// checkCrashURLs compares the indexed URLs with WordPress's public pages.
func checkCrashURLs(t *testing.T, site *wptest.Site, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := map[string]bool{}
	rows, err := db.Query(`SELECT url FROM documents`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var u string
		rows.Scan(&u)
		got[u] = true
	}
	rows.Close()
	want := map[string]bool{}
	for _, p := range site.Truth(t).Public {
		want[crawl.Canonical(p.URL)] = true
	}
	for u := range want {
		if !got[u] {
			t.Errorf("at the end, public %s is not indexed", u)
		}
	}
	for u := range got {
		if !want[u] {
			t.Errorf("at the end, %s is indexed but not public", u)
		}
	}
}

func avgDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}
