package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askwp/askwpd/api"
)

// shimTimeout is the PHP shim's webhook timeout (askwpd_webhook_timeout_ms
// in wp-plugin-shim/includes/class-askwpd-webhooks.php). A slower answer
// is a lost event there, and trips its 30 s breaker.
const shimTimeout = 750 * time.Millisecond

type eventStats struct {
	mu         sync.Mutex
	sent       int
	fresh      int
	replays    int
	accepted   int
	duplicate  int
	other      map[string]int
	acceptedID []string
	lat        []time.Duration
}

func newEventStats() *eventStats { return &eventStats{other: map[string]int{}} }

type eventSender struct {
	p    *daemonProc
	hot  []hotPost
	dup  float64
	st   *eventStats
	seq  atomic.Int64
	rmu  sync.Mutex
	rand *rand.Rand
}

// one sends one event: a replay of an accepted id with probability dup,
// else a fresh post_updated or post_published event for a hot post. Its
// latency runs from sched when set (an open-loop stream's scheduled
// start), else from the moment it is sent.
func (s *eventSender) one(ctx context.Context, sched time.Time) {
	s.rmu.Lock()
	replay := s.rand.Float64() < s.dup
	hp := s.hot[s.rand.IntN(len(s.hot))]
	published := s.rand.IntN(5) == 0
	s.st.mu.Lock()
	var id string
	if replay && len(s.st.acceptedID) > 0 {
		id = s.st.acceptedID[s.rand.IntN(len(s.st.acceptedID))]
	} else {
		replay = false
	}
	s.st.mu.Unlock()
	s.rmu.Unlock()
	if id == "" {
		id = fmt.Sprintf("load-%s-%d", runTag, s.seq.Add(1))
	}
	typ := "post_updated"
	if published {
		typ = "post_published"
	}
	ev := map[string]any{"id": id, "type": typ, "post_id": hp.ID, "post_type": "post", "status": "publish", "public": true, "url": hp.URL}
	body, _ := json.Marshal(map[string]any{"events": []any{ev}})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequestWithContext(ctx, "POST", s.p.base+"/v1/events", bytes.NewReader(body))
	req.Header.Set(api.HeaderTimestamp, ts)
	req.Header.Set(api.HeaderSignature, api.Sign(s.p.secret, ts, body))
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	if !sched.IsZero() {
		t0 = sched
	}
	resp, err := s.p.client.Do(req)
	d := time.Since(t0)
	outcome := ""
	if err != nil {
		if ctx.Err() != nil {
			return // the run is over: not sent
		}
		outcome = "transport"
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusAccepted:
			outcome = "accepted"
		case resp.StatusCode == http.StatusUnauthorized && bytes.Contains(b, []byte("replayed event id")):
			outcome = "duplicate"
		default:
			outcome = "status_" + strconv.Itoa(resp.StatusCode)
		}
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.sent++
	s.st.lat = append(s.st.lat, d)
	if replay {
		s.st.replays++
	} else {
		s.st.fresh++
	}
	switch outcome {
	case "accepted":
		s.st.accepted++
		s.st.acceptedID = append(s.st.acceptedID, id)
		if replay {
			s.st.other["replay_accepted"]++
		}
	case "duplicate":
		s.st.duplicate++
		if !replay {
			s.st.other["fresh_called_duplicate"]++
		}
	default:
		s.st.other[outcome]++
	}
}

// sideLoad is what runs beside the searches: the crawl (-crawl admin, the
// admin's "reindex now") a moment in, then the event burst. Its fields are
// set once the WaitGroup it was started on is done.
type sideLoad struct {
	crawlFlash string
	burstTook  time.Duration
}

// startSideLoad starts the side load on wg: the crawl after
// min(2 s, duration/10), the events send sends min(3 s, duration/10)
// later, on lctx's end or not as send decides.
func startSideLoad(lctx context.Context, wg *sync.WaitGroup, p *daemonProc, o options, hot []hotPost, es *eventStats,
	send func(*eventSender) time.Duration) *sideLoad {
	sl := &sideLoad{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-lctx.Done():
			return
		case <-time.After(min(2*time.Second, o.duration/10)):
		}
		if o.crawl == "admin" {
			f, err := p.reindex(lctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, "reindex:", err)
				sl.crawlFlash = "error: " + err.Error()
			} else {
				sl.crawlFlash = f
			}
		}
		select {
		case <-lctx.Done():
			return
		case <-time.After(min(3*time.Second, o.duration/10)):
		}
		s := &eventSender{p: p, hot: hot, dup: o.dup, st: es, rand: rand.New(rand.NewPCG(42, 43))}
		sl.burstTook = send(s)
	}()
	return sl
}

// waitTurn waits for the scheduled time of the i-th of n sends spread
// evenly over window from start, and returns it, and whether ctx still
// lets the send go.
func waitTurn(ctx context.Context, start time.Time, window time.Duration, i, n int) (time.Time, bool) {
	at := start.Add(time.Duration(int64(window) * int64(i) / int64(n)))
	if w := time.Until(at); w > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(w):
		}
	}
	return at, ctx.Err() == nil
}

// sendPaced sends n events spread evenly over window, from a pool of
// workers, and returns how long the sending took.
func (s *eventSender) sendPaced(ctx context.Context, n int, window time.Duration, workers int) time.Duration {
	jobs := make(chan struct{}, n)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				if ctx.Err() != nil {
					continue
				}
				s.one(ctx, time.Time{})
			}
		}()
	}
	start := time.Now()
	for i := range n {
		if _, ok := waitTurn(ctx, start, window, i, n); !ok {
			break
		}
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	return time.Since(start)
}

// sendOpen sends n events evenly spread over window, each at its
// scheduled time in its own goroutine, whatever the answers to the
// earlier ones: latency counts from the schedule, so a daemon that falls
// behind shows it.
func (s *eventSender) sendOpen(ctx context.Context, n int, window time.Duration) time.Duration {
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		at, ok := waitTurn(ctx, start, window, i, n)
		if !ok {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.one(ctx, at)
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// drain polls /v1/status until no event is pending or failed, bounded.
// drainAndSample waits for the event queue to empty, then samples the
// daemon. The clients' idle keep-alive connections each hold a server
// goroutine; they are closed first so the sample counts the daemon's own.
func drainAndSample(ctx context.Context, p *daemonProc, limit time.Duration) (time.Duration, *statusView, sample, error) {
	drained, st, err := drain(ctx, p, limit)
	p.client.Transport.(*http.Transport).CloseIdleConnections()
	time.Sleep(time.Second)
	return drained, st, p.sampleNow(ctx), err
}

func drain(ctx context.Context, p *daemonProc, limit time.Duration) (time.Duration, *statusView, error) {
	t0 := time.Now()
	for {
		st, err := p.status(ctx)
		if err != nil {
			return time.Since(t0), nil, err
		}
		if st.Freshness.PendingEvents == 0 && st.Freshness.FailedEvents == 0 {
			return time.Since(t0), st, nil
		}
		if time.Since(t0) > limit {
			return time.Since(t0), st, fmt.Errorf("%d events pending, %d failed after %s", st.Freshness.PendingEvents,
				st.Freshness.FailedEvents, limit)
		}
		select {
		case <-ctx.Done():
			return time.Since(t0), st, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// runTag is in the id of every event this run sends. A kept state served
// again (-state) holds the events of the run that left it, which are not
// this run's to count.
var runTag = strconv.FormatInt(time.Now().UnixNano(), 36)

// verifyEvents opens the stopped daemon's database and checks that every
// accepted event id is stored once and applied without error.
func verifyEvents(state string, accepted []string) (stored, applied int, missing, unapplied []string, err error) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(state, "askwpd.db")+"?mode=ro")
	if err != nil {
		return 0, 0, nil, nil, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT event_id, applied_at, error FROM events WHERE event_id LIKE ?`, "load-"+runTag+"-%")
	if err != nil {
		return 0, 0, nil, nil, err
	}
	defer rows.Close()
	type row struct{ applied, errMsg string }
	got := map[string]row{}
	for rows.Next() {
		var id string
		var r row
		if err := rows.Scan(&id, &r.applied, &r.errMsg); err != nil {
			return 0, 0, nil, nil, err
		}
		got[id] = r
	}
	if err := rows.Err(); err != nil {
		return 0, 0, nil, nil, err
	}
	for _, id := range accepted {
		r, ok := got[id]
		switch {
		case !ok:
			missing = append(missing, id)
		case r.applied == "" || r.errMsg != "":
			unapplied = append(unapplied, id+" "+r.errMsg)
		default:
			applied++
		}
	}
	return len(got), applied, missing, unapplied, nil
}
