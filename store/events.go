package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Event is a change the WordPress shim reported through a signed webhook.
// It is stored before the sender hears 202, and applied_at is set once a
// worker has acted on it, so an accepted event survives a crash and is
// applied after the restart.
type Event struct {
	ID       int64   `json:"-"`
	EventID  string  `json:"id"`
	Type     string  `json:"type"`
	PostID   int64   `json:"post_id,omitempty"`
	PostIDs  []int64 `json:"post_ids,omitempty"`
	PostType string  `json:"post_type,omitempty"`
	Status   string  `json:"status,omitempty"`
	URL      string  `json:"url,omitempty"`
	// At is when the sender saw the change: a refresh of the post that
	// began after it already shows it. Zero when the sender did not say.
	At time.Time `json:"-"`
	// Public is false when the sender says the post left public view, nil
	// when it does not say; HasPassword, that it is password-protected.
	// An event is trusted to remove a page, never to add one.
	Public      *bool `json:"-"`
	HasPassword bool  `json:"-"`
	// TermIDs are the terms a term_changed event names.
	TermIDs []int64 `json:"-"`
	// BlogID is the network site the event is about; 0 for the site the
	// request came from.
	BlogID int64 `json:"-"`
	// Payload is the sender's JSON for the event, kept whole.
	Payload    json.RawMessage `json:"-"`
	SentAt     time.Time       `json:"-"`
	ReceivedAt time.Time       `json:"-"`
	AppliedAt  time.Time       `json:"-"`
	Attempts   int             `json:"-"`
	Error      string          `json:"-"`
}

// eventWire is an event as the shim sends it (api/testdata and the shim's
// class-askwpd-webhooks.php): the webhook's one schema, read by
// ParseEvent alone.
type eventWire struct {
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	PostID      int64           `json:"post_id"`
	PostIDs     []int64         `json:"post_ids"`
	PostType    string          `json:"post_type"`
	Status      string          `json:"status"`
	URL         string          `json:"url"`
	At          *float64        `json:"at"` // Unix seconds
	Public      *bool           `json:"public"`
	HasPassword bool            `json:"has_password"`
	TermID      int64           `json:"term_id"`
	TermIDs     []int64         `json:"term_ids"`
	BlogID      json.RawMessage `json:"blog_id"` // a number or a numeric string
}

// EventFieldError is a field of an event whose JSON type is right but
// whose value the schema refuses.
type EventFieldError struct{ Field, Want string }

func (e *EventFieldError) Error() string { return e.Field + " must be " + e.Want }

// ParseEvent decodes one event of a webhook batch, or of the cluster's
// table, into an Event whose Payload is raw. It checks the schema's
// types and values, not the event's sense (a known type, an id): those
// are the receiver's. A JSON error comes back as encoding/json gives it
// (a *json.UnmarshalTypeError names the field), any other as an
// *EventFieldError.
func ParseEvent(raw json.RawMessage) (*Event, error) {
	var w eventWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	e := &Event{EventID: w.ID, Type: w.Type, PostID: w.PostID, PostIDs: w.PostIDs, PostType: w.PostType,
		Status: w.Status, URL: w.URL, Public: w.Public, HasPassword: w.HasPassword, TermIDs: w.TermIDs, Payload: raw}
	if w.At != nil {
		if *w.At < 0 {
			return nil, &EventFieldError{"at", "a Unix time in seconds"}
		}
		if *w.At > 0 {
			e.At = time.Unix(0, int64(*w.At*1e9))
		}
	}
	if w.TermID > 0 {
		e.TermIDs = append(e.TermIDs, w.TermID)
	}
	if len(w.BlogID) > 0 && string(w.BlogID) != "null" {
		id, err := strconv.ParseInt(strings.Trim(string(w.BlogID), `"`), 10, 64)
		if err != nil || id < 0 {
			return nil, &EventFieldError{"blog_id", "a blog id"}
		}
		e.BlogID = id
	}
	return e, nil
}

// ErrDuplicateEvent is returned by InsertEvents when an event id was seen
// before; nothing of the batch is stored.
var ErrDuplicateEvent = errors.New("store: event id seen before")

// InsertEvents stores a batch of events durably (committed when it
// returns nil). A replayed event id fails the whole batch with
// ErrDuplicateEvent, storing nothing of it.
//
// Concurrent calls are committed together (group commit): one goroutine
// takes every batch waiting, writes them in one transaction with a
// savepoint each, and answers each caller. A burst of webhooks then
// costs a few transactions instead of one each, and waits for the single
// write connection as one waiter rather than hundreds: database/sql hands
// a freed connection to a random waiter, so with one goroutine per
// webhook a crawl's writers and the event worker were outnumbered and an
// unlucky webhook waited seconds.
func (db *DB) InsertEvents(ctx context.Context, evs []*Event) error {
	db.intakeOnce.Do(db.startIntake)
	r := &intakeReq{ctx: ctx, evs: evs, done: make(chan error, 1)}
	db.intakeMu.RLock()
	if db.intakeClosed {
		db.intakeMu.RUnlock()
		return errors.New("store: insert events: the store is closed")
	}
	select {
	case db.intake <- r:
	case <-ctx.Done():
		db.intakeMu.RUnlock()
		return fmt.Errorf("store: insert events: %w", ctx.Err())
	}
	db.intakeMu.RUnlock()
	// Once queued, the answer is awaited even when ctx ends: the batch
	// may already be committing, and the caller must not take an event
	// that was stored for one that was not.
	return <-r.done
}

// intakeReq is one InsertEvents call waiting for its group commit.
type intakeReq struct {
	ctx  context.Context
	evs  []*Event
	done chan error
}

// maxIntakeBatch bounds the calls committed in one transaction, so that a
// transaction stays short even under a flood.
const maxIntakeBatch = 256

func (db *DB) startIntake() {
	db.intake = make(chan *intakeReq, maxIntakeBatch)
	db.intakeStop = make(chan struct{})
	db.intakeDone = make(chan struct{})
	go db.runIntake()
}

// stopIntake ends the group-commit goroutine after the calls it holds.
func (db *DB) stopIntake() {
	// A store that never took an event starts the goroutine only to stop
	// it: one code path, and a later call is refused the same way.
	db.intakeOnce.Do(db.startIntake)
	// No call queues after this, so the goroutine answers every queued one.
	db.intakeMu.Lock()
	closed := db.intakeClosed
	db.intakeClosed = true
	db.intakeMu.Unlock()
	if !closed {
		close(db.intakeStop)
	}
	<-db.intakeDone
}

func (db *DB) runIntake() {
	defer close(db.intakeDone)
	for {
		var batch []*intakeReq
		select {
		case r := <-db.intake:
			batch = append(batch, r)
		case <-db.intakeStop:
			db.refuseQueued()
			return
		}
	fill:
		for len(batch) < maxIntakeBatch {
			select {
			case r := <-db.intake:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		db.commitEvents(batch)
	}
}

// refuseQueued answers the calls still queued at Close.
func (db *DB) refuseQueued() {
	for {
		select {
		case r := <-db.intake:
			r.done <- errors.New("store: insert events: the store is closed")
		default:
			return
		}
	}
}

// commitEvents writes a group of InsertEvents calls in one transaction
// and answers each. A call whose id was seen before is rolled back to its
// savepoint and answered ErrDuplicateEvent; any other failure fails the
// whole group, which stores nothing.
func (db *DB) commitEvents(batch []*intakeReq) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- fmt.Errorf("store: insert events: %w", err)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	results := make([]error, len(live))
	err := func() error {
		// Not the callers' contexts: one caller going away must not roll
		// back the others' events.
		ctx := context.Background()
		tx, err := db.write.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		now := db.Now()
		ins := tx.StmtContext(ctx, db.insertEvent)
		defer ins.Close()
		for i, r := range live {
			// A call of one event, the shim's usual, has nothing to roll
			// back when it is a replay: its insert did nothing.
			savepoint := func(stmt string) error {
				if len(r.evs) < 2 {
					return nil
				}
				_, err := tx.ExecContext(ctx, stmt)
				return err
			}
			if err := savepoint(`SAVEPOINT intake`); err != nil {
				return err
			}
			dup, err := insertEvents(ctx, ins, r.evs, now)
			if err != nil {
				return err
			}
			if dup != "" {
				if err := savepoint(`ROLLBACK TO intake`); err != nil {
					return err
				}
				results[i] = fmt.Errorf("%w: %s", ErrDuplicateEvent, dup)
			}
			if err := savepoint(`RELEASE intake`); err != nil {
				return err
			}
		}
		return tx.Commit()
	}()
	for i, r := range live {
		switch {
		case err != nil:
			r.done <- fmt.Errorf("store: insert events: %w", err)
		default:
			r.done <- results[i]
		}
	}
}

// insertEventQuery stores an event unless its id was seen before.
const insertEventQuery = `
	INSERT INTO events (event_id, type, post_id, url, payload, received_at, post_type, status, post_ids, sent_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT(event_id) DO NOTHING`

// insertEvents inserts one call's events with ins (insertEventQuery) and
// returns the first id seen before, if any, leaving the rollback to the
// caller.
func insertEvents(ctx context.Context, ins *sql.Stmt, evs []*Event, now time.Time) (dup string, err error) {
	for _, e := range evs {
		ids, _ := json.Marshal(nonNil(e.PostIDs))
		payload := string(e.Payload)
		if payload == "" {
			payload = "{}"
		}
		res, err := ins.ExecContext(ctx,
			e.EventID, e.Type, e.PostID, e.URL, payload, fmtTimeNano(now), e.PostType, e.Status, string(ids), fmtTimeNano(e.SentAt))
		if err != nil {
			return "", fmt.Errorf("event %s: %w", e.EventID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return e.EventID, nil
		}
		if e.ID, err = res.LastInsertId(); err != nil {
			return "", fmt.Errorf("event %s: %w", e.EventID, err)
		}
		e.ReceivedAt = now
	}
	return "", nil
}

func nonNil(xs []int64) []int64 {
	if xs == nil {
		return []int64{}
	}
	return xs
}

const eventCols = `id, event_id, type, post_id, url, payload, received_at, applied_at, attempts, error, post_type, status, post_ids, sent_at`

func scanEvent(sc interface{ Scan(...any) error }) (*Event, error) {
	var (
		e                      Event
		payload, recv, applied string
		ids, sent              string
	)
	if err := sc.Scan(&e.ID, &e.EventID, &e.Type, &e.PostID, &e.URL, &payload, &recv, &applied, &e.Attempts, &e.Error,
		&e.PostType, &e.Status, &ids, &sent); err != nil {
		return nil, err
	}
	e.ReceivedAt, e.AppliedAt, e.SentAt = parseTimeNano(recv), parseTimeNano(applied), parseTimeNano(sent)
	_ = json.Unmarshal([]byte(ids), &e.PostIDs)
	// The fields without a column of their own are the payload's, which
	// ParseEvent accepted before it was stored. One that no longer
	// parses (hand-edited) keeps them unsaid: the event then removes
	// nothing on its own word, and the database decides.
	if w, err := ParseEvent(json.RawMessage(payload)); err == nil {
		e.At, e.Public, e.HasPassword, e.TermIDs, e.BlogID = w.At, w.Public, w.HasPassword, w.TermIDs, w.BlogID
	}
	e.Payload = json.RawMessage(payload)
	return &e, nil
}

// PendingEvents returns events not applied yet, oldest first, skipping
// those that failed more than maxAttempts times.
func (db *DB) PendingEvents(ctx context.Context, limit, maxAttempts int) ([]*Event, error) {
	rows, err := db.readRows(ctx, `SELECT `+eventCols+` FROM events
		WHERE applied_at = '' AND attempts <= ? ORDER BY id LIMIT ?`, maxAttempts, limit)
	if err != nil {
		return nil, fmt.Errorf("store: pending events: %w", err)
	}
	defer rows.Close()
	var out []*Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("store: pending events: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// FindEvent returns the event with the sender's id.
func (db *DB) FindEvent(ctx context.Context, eventID string) (*Event, error) {
	e, err := scanEvent(db.readRow(ctx, `SELECT `+eventCols+` FROM events WHERE event_id = ?`, eventID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: find event %s: %w", eventID, err)
	}
	return e, nil
}

// MarkEventsApplied records that the events with these row ids were acted
// on. errMsg, when set, counts a failed attempt instead.
func (db *DB) MarkEventsApplied(ctx context.Context, ids []int64, errMsg string) error {
	if len(ids) == 0 {
		return nil
	}
	args := make([]any, 0, len(ids)+1)
	var q string
	if errMsg == "" {
		q = `UPDATE events SET applied_at = ?, error = '' WHERE id IN (` + qmarks(len(ids)) + `)`
		args = append(args, fmtTimeNano(db.Now()))
	} else {
		q = `UPDATE events SET attempts = attempts + 1, error = ? WHERE id IN (` + qmarks(len(ids)) + `)`
		args = append(args, errMsg)
	}
	for _, id := range ids {
		args = append(args, id)
	}
	if _, err := db.write.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("store: mark events: %w", err)
	}
	return nil
}

// MarkPostEventsApplied marks applied every pending event about post
// postID (publish, update, unpublish, trash, delete) received at or before
// asOf, and returns how many. A refresh of the post that began reading
// WordPress after asOf saw whatever those events announced, so a burst of
// edits to one post costs one render, not one per batch of the queue.
func (db *DB) MarkPostEventsApplied(ctx context.Context, postID int64, asOf time.Time) (int64, error) {
	res, err := db.writeExec(ctx, `UPDATE events SET applied_at = ?, error = ''
		WHERE post_id = ? AND applied_at = '' AND received_at <= ? AND type IN (?, ?, ?, ?, ?)`,
		fmtTimeNano(db.Now()), postID, fmtTimeNano(asOf),
		EventPostPublished, EventPostUpdated, EventPostUnpublished, EventPostTrashed, EventPostDeleted)
	if err != nil {
		return 0, fmt.Errorf("store: mark post events: %w", err)
	}
	return res.RowsAffected()
}

// NoteEventsError records why the events are still pending without
// counting an attempt: the failure was the site's or the database's, not
// the event's.
func (db *DB) NoteEventsError(ctx context.Context, ids []int64, errMsg string) error {
	if len(ids) == 0 {
		return nil
	}
	args := []any{errMsg}
	for _, id := range ids {
		args = append(args, id)
	}
	if _, err := db.write.ExecContext(ctx, `UPDATE events SET error = ? WHERE id IN (`+qmarks(len(ids))+`)`, args...); err != nil {
		return fmt.Errorf("store: note event error: %w", err)
	}
	return nil
}

// EventStats summarizes the queue for the status page.
type EventStats struct {
	Pending int `json:"pending"`
	// OldestPending is when the oldest unapplied event arrived.
	OldestPending time.Time `json:"oldest_pending,omitzero"`
	// LastLag is how long the last applied event waited, from receipt to
	// applied.
	LastLag     time.Duration `json:"-"`
	LastApplied time.Time     `json:"last_applied,omitzero"`
	Failed      int           `json:"failed"`
}

// EventStats reads the queue's state.
func (db *DB) EventStats(ctx context.Context, maxAttempts int) (EventStats, error) {
	var (
		s             EventStats
		oldest        sql.NullString
		recv, applied sql.NullString
	)
	err := db.read.QueryRowContext(ctx, `SELECT
			(SELECT count(*) FROM events WHERE applied_at = '' AND attempts <= ?),
			(SELECT count(*) FROM events WHERE applied_at = '' AND attempts > ?),
			(SELECT min(received_at) FROM events WHERE applied_at = '' AND attempts <= ?)`,
		maxAttempts, maxAttempts, maxAttempts).Scan(&s.Pending, &s.Failed, &oldest)
	if err != nil {
		return s, fmt.Errorf("store: event stats: %w", err)
	}
	s.OldestPending = parseTimeNano(oldest.String)
	err = db.read.QueryRowContext(ctx, lastAppliedQuery).Scan(&recv, &applied)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("store: event stats: %w", err)
	}
	if applied.Valid {
		s.LastApplied = parseTimeNano(applied.String)
		s.LastLag = s.LastApplied.Sub(parseTimeNano(recv.String))
	}
	return s, nil
}

// lastAppliedQuery reads the last event applied, from the index
// events_applied (TestLastApplied_Plan).
const lastAppliedQuery = `SELECT received_at, applied_at FROM events WHERE applied_at != ''
	ORDER BY applied_at DESC LIMIT 1`

// PruneEvents deletes applied events older than before. Their ids are
// kept for the replay window only, which the signed timestamp bounds.
func (db *DB) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	res, err := db.write.ExecContext(ctx, `DELETE FROM events WHERE applied_at != '' AND received_at < ?`, fmtTimeNano(before))
	if err != nil {
		return 0, fmt.Errorf("store: prune events: %w", err)
	}
	return res.RowsAffected()
}

// Event times keep sub-second precision: freshness is measured in
// milliseconds.
func fmtTimeNano(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00")
}

func parseTimeNano(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func qmarks(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// Event types the shim sends.
const (
	EventPostPublished     = "post_published"
	EventPostUpdated       = "post_updated"
	EventPostUnpublished   = "post_unpublished"
	EventPostDeleted       = "post_deleted"
	EventPostTrashed       = "post_trashed"
	EventTermChanged       = "term_changed"
	EventMenuChanged       = "menu_changed"
	EventThemeChanged      = "theme_changed"
	EventPermalinksChanged = "permalinks_changed"
	// EventSiteChanged says a site of a network was created, archived,
	// spammed, deleted, restored or opted out: the daemon reads the
	// network's sites again rather than storing it.
	EventSiteChanged = "site_changed"
)

// KnownEventType reports whether t is one of the event types above.
func KnownEventType(t string) bool {
	switch t {
	case EventPostPublished, EventPostUpdated, EventPostUnpublished, EventPostDeleted, EventPostTrashed,
		EventTermChanged, EventMenuChanged, EventThemeChanged, EventPermalinksChanged, EventSiteChanged:
		return true
	}
	return false
}
