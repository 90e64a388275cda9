package cluster

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
)

// dbHealth is whether this node's database is usable, as its statements
// and its status reads found it.
type dbHealth struct {
	mu sync.Mutex
	// err is why it is not usable; nil while it is.
	err error
	// since is when it last became usable or not.
	since time.Time
}

func (h *dbHealth) reason() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		return ""
	}
	return oneLine(h.err)
}

// noteDB records what a statement found and returns err. An error that
// says the database is not usable (Unusable) marks it so; one that says
// it refuses (refused) also wakes the lease loop, which stops leading.
// Success marks it usable again. Other errors say nothing about the
// database.
func (n *Node) noteDB(err error) error {
	if err != nil && (!Unusable(err) || errors.Is(err, context.Canceled)) {
		return err
	}
	h := &n.db
	h.mu.Lock()
	was := h.err
	if (err == nil) != (was == nil) {
		h.since = time.Now()
	}
	h.err = err
	h.mu.Unlock()
	switch {
	case err == nil && was != nil:
		n.Log.Info("The cluster's database is usable again", "was", oneLine(was))
	case err != nil && was == nil:
		n.Log.Warn("The cluster's database is not usable; serving from the local index", "error", oneLine(err))
	}
	if refused(err) {
		select {
		case n.badDB <- struct{}{}:
		default:
		}
	}
	return err
}

// view is what a node last read of the cluster for its status.
type view struct {
	at     time.Time
	lease  Leader
	galera Galera
	// behind is how long ago the oldest changelog row this node had not
	// applied was written; zero when it had applied them all.
	behind time.Duration
	err    error
}

// watchEvery is how often a node reads the lease row and its database's
// state for the status pages: on Galera, this also finds a node that
// left the primary component before any other statement fails.
const watchEvery = time.Second

func (n *Node) watchLoop(ctx context.Context) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		n.watch(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (n *Node) watch(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, watchEvery)
	defer cancel()
	v := &view{at: time.Now()}
	if prev := n.view.Load(); prev != nil {
		v.lease = prev.lease
	}
	var err error
	if n.C.IsGalera() {
		v.galera, err = n.C.Galera(ctx)
		if err == nil && !v.galera.Usable() {
			err = &notUsableError{v.galera}
		}
	}
	if err == nil {
		var l Leader
		if l, err = n.C.Leader(ctx); err == nil {
			v.lease = l
			if applied := n.applied.Load(); applied < l.Seq {
				v.behind, err = n.C.AgeAfter(ctx, applied)
			}
		}
	}
	if ctx.Err() == nil || err != nil {
		v.err = err
		n.view.Store(v)
	}
	n.noteDB(err)
}

// notUsableError is a Galera node that answers SHOW only.
type notUsableError struct{ g Galera }

func (e *notUsableError) Error() string { return e.g.String() }

// Status is a node's part in the cluster, for /v1/status, /admin and
// doctor.
type Status struct {
	Node, Host string
	// Role is "leader" or "follower".
	Role string
	// Leader is the lease row as last read.
	Leader Leader
	// AppliedID is the last changelog id applied here; Lag how many rows
	// the changelog had beyond it when last read, and LagSeconds how long
	// ago the oldest of them was written.
	AppliedID, Lag int64
	LagSeconds     float64
	// DatabaseOK is whether this node's database is usable; DatabaseError
	// says why not, since DatabaseSince.
	DatabaseOK    bool
	DatabaseError string
	DatabaseSince time.Time
	// Galera is the database's Galera state (Galera.On false on a single
	// MariaDB).
	Galera Galera
	// ReadAt is when the lease and the database state were read.
	ReadAt time.Time
}

// Status returns the node's part in the cluster as last read (within
// watchEvery): it sends no statement, so a database that does not answer
// never holds a status page.
func (n *Node) Status() Status {
	st := Status{Node: n.ID, Host: n.Host, Role: "follower", AppliedID: n.applied.Load()}
	if n.Leader() {
		st.Role = "leader"
	}
	n.db.mu.Lock()
	st.DatabaseOK, st.DatabaseSince = n.db.err == nil, n.db.since
	if n.db.err != nil {
		st.DatabaseError = oneLine(n.db.err)
	}
	n.db.mu.Unlock()
	if v := n.view.Load(); v != nil {
		st.Leader, st.Galera, st.ReadAt = v.lease, v.galera, v.at
		st.Lag = max(0, v.lease.Seq-st.AppliedID)
		if st.Lag > 0 {
			st.LagSeconds = v.behind.Seconds()
		}
	}
	return st
}

// oneLine is an error's text on one line, for a log field or a status.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// Check reads the cluster's state once, for a node that is not running
// (askwpd doctor): the lease, where this store stopped in the changelog,
// and the database's state.
func (n *Node) Check(ctx context.Context) Status {
	if l, err := n.C.Leader(ctx); err == nil {
		n.epoch = l.Epoch
		if v, err := n.Store.GetMeta(ctx, cursorKey); err == nil {
			if ep, id, _ := strings.Cut(v, ":"); ep == n.epoch {
				cur, _ := strconv.ParseInt(id, 10, 64)
				n.applied.Store(cur)
			}
		}
	}
	n.watch(ctx)
	return n.Status()
}
