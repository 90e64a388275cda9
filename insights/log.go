// Package insights is the question log and the gap report built on it:
// what visitors ask the site (search_site calls and chat turns), what the
// site answered, and which questions it fails to answer, grouped by
// meaning with the project's own analysis.
//
// The log never slows or fails a search: a question goes into a bounded
// channel, and one goroutine redacts it and writes batches in one short
// transaction each. When the channel is full the question is dropped and
// counted. Nothing that identifies a visitor is logged.
package insights

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/pii"
	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// Options configure a Log.
type Options struct {
	// Retention is how long questions are kept; 0 turns the log off
	// (nothing is written, and the next purge deletes what was).
	Retention time.Duration
	// Site is recorded with each question unless its call names one.
	Site string
	// Queue bounds the questions waiting to be written; default 4096.
	Queue int
	// Synonyms are the site's synonym rules, for grouping; may be nil.
	Synonyms *analysis.Synonyms
	Log      *slog.Logger
}

// Log is the question log. Its methods are safe for concurrent use, and
// on a nil *Log they do nothing.
type Log struct {
	db  *store.DB
	opt Options

	ch      chan entry
	flushes chan chan error
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once

	logged  atomic.Int64
	dropped atomic.Int64
	// gen counts the changes to the stored questions (writes, votes,
	// purges), so that a report can be reused until one happens.
	gen atomic.Int64

	cacheMu sync.Mutex
	cache   *cachedReport
}

// entry is a question as the hot path hands it over: redaction and the
// reading of the call's arguments happen in the writer.
type entry struct {
	q    store.Question
	args []byte // search_site's JSON arguments, for their site
}

// maxBatch caps one transaction's rows, so the write connection is
// never held for long.
const maxBatch = 256

// maxQuestionRunes caps a stored question: a pasted page is not a
// question, and its start says what it was about.
const maxQuestionRunes = 500

// Open starts the log's writer. With a zero retention it returns a Log
// that records nothing but still answers reports and purges.
func Open(db *store.DB, opt Options) *Log {
	if opt.Queue <= 0 {
		opt.Queue = 4096
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	l := &Log{db: db, opt: opt, flushes: make(chan chan error), stop: make(chan struct{}), done: make(chan struct{})}
	if opt.Retention <= 0 {
		close(l.done)
		return l
	}
	l.ch = make(chan entry, opt.Queue)
	go l.run()
	return l
}

// Enabled reports whether questions are being logged.
func (l *Log) Enabled() bool { return l != nil && l.ch != nil }

// Retention is how long questions are kept (0: the log is off).
func (l *Log) Retention() time.Duration {
	if l == nil {
		return 0
	}
	return l.opt.Retention
}

// Logged and Dropped count the questions written and those dropped
// because the queue was full (or the store refused them) since start.
func (l *Log) Logged() int64 {
	if l == nil {
		return 0
	}
	return l.logged.Load()
}

func (l *Log) Dropped() int64 {
	if l == nil {
		return 0
	}
	return l.dropped.Load()
}

// add queues one question without ever blocking.
func (l *Log) add(e entry) {
	if !l.Enabled() {
		return
	}
	select {
	case <-l.stop:
		l.dropped.Add(1)
		return
	default:
	}
	select {
	case l.ch <- e:
	default:
		l.dropped.Add(1)
	}
}

func (l *Log) run() {
	defer close(l.done)
	var (
		batch []*store.Question
		timer *time.Timer
		due   <-chan time.Time // set while a batch waits
	)
	// writeAll writes the batch and everything queued, in batches.
	writeAll := func() error {
		var err error
		for {
			if batch = l.drain(batch); len(batch) == 0 {
				return err
			}
			if werr := l.write(batch); werr != nil {
				err = werr
			}
			batch = batch[:0]
		}
	}
	for {
		// While a batch waits, the queue is left to fill: taking each
		// question as it came woke this goroutine at every search. The
		// queue holds far more than a linger's questions.
		in := l.ch
		if due != nil {
			in = nil
		}
		select {
		case e := <-in:
			batch = l.drain(append(batch, l.prepare(e)))
			if len(batch) >= maxBatch {
				l.write(batch)
				batch = batch[:0]
			} else {
				// One visitor at a time would cost a transaction each;
				// waiting a moment lets a batch gather.
				if timer == nil {
					timer = time.NewTimer(linger)
				} else {
					timer.Reset(linger)
				}
				due = timer.C
			}
		case <-due:
			due = nil
			_ = writeAll()
		case reply := <-l.flushes:
			reply <- writeAll()
		case <-l.stop:
			_ = writeAll()
			return
		}
	}
}

// linger is how long a question waits for others to share its
// transaction.
const linger = 200 * time.Millisecond

// drain appends what is waiting, up to a batch.
func (l *Log) drain(batch []*store.Question) []*store.Question {
	for len(batch) < maxBatch {
		select {
		case e := <-l.ch:
			batch = append(batch, l.prepare(e))
		default:
			return batch
		}
	}
	return batch
}

func (l *Log) write(batch []*store.Question) error {
	if len(batch) == 0 {
		return nil
	}
	// The store's busy timeout bounds the wait for the write connection;
	// a log entry is not worth more.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := l.db.InsertQuestions(ctx, batch); err != nil {
		l.dropped.Add(int64(len(batch)))
		l.opt.Log.Warn("Unable to log questions", "questions", len(batch), "error", err)
		return err
	}
	l.logged.Add(int64(len(batch)))
	l.gen.Add(1)
	return nil
}

// prepare redacts a question and reads its site, off the request's path.
func (l *Log) prepare(e entry) *store.Question {
	q := e.q
	q.Text = pii.Redact(clip(strings.TrimSpace(q.Text), maxQuestionRunes))
	q.Site = l.opt.Site
	if len(e.args) > 0 {
		var a struct {
			Site json.RawMessage `json:"site"`
		}
		if json.Unmarshal(e.args, &a) == nil && len(a.Site) > 0 {
			if s := siteOf(a.Site); s != "" {
				q.Site = s
			}
		}
	}
	// A correction keyed by a word the redaction removed would keep it.
	lower := strings.ToLower(q.Text)
	for w := range q.Corrections {
		if !strings.Contains(lower, strings.ToLower(w)) {
			q.Corrections = copyWithout(q.Corrections, w)
		}
	}
	return &q
}

// siteOf reads a call's site: a blog id or a home URL.
func siteOf(raw json.RawMessage) string {
	var n int64
	if json.Unmarshal(raw, &n) == nil && n > 0 {
		return strconv.FormatInt(n, 10)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return clip(strings.TrimSpace(s), 200)
	}
	return ""
}

func copyWithout(m map[string]string, drop string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k != drop {
			out[k] = v
		}
	}
	return out
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// Flush waits until every question queued before it is written.
func (l *Log) Flush(ctx context.Context) error {
	if !l.Enabled() {
		return nil
	}
	reply := make(chan error, 1)
	select {
	case l.flushes <- reply:
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is queued and stops the writer.
func (l *Log) Close() {
	if l == nil {
		return
	}
	l.once.Do(func() { close(l.stop) })
	<-l.done
}

// Purge deletes the questions older than the retention, or all of them
// when the log is off.
func (l *Log) Purge(ctx context.Context) (int64, error) {
	if l == nil {
		return 0, nil
	}
	before := l.db.Now().Add(-l.opt.Retention)
	if l.opt.Retention <= 0 {
		before = l.db.Now().Add(time.Hour) // everything, clock skew included
	}
	n, err := l.db.PurgeQuestions(ctx, before)
	if n > 0 {
		l.gen.Add(1)
	}
	return n, err
}

// Errors of the feedback endpoint, shown to the caller as they are.
var (
	ErrUnknownTurn = &tool.Error{Code: "unknown_turn", Message: "no logged chat turn has this turn_id (it may be older than the retention)"}
	ErrLogOff      = &tool.Error{Code: "insights_off", Message: "the question log is off (insights.retention_days = 0)"}
)

// MaxCommentRunes caps a feedback comment.
const MaxCommentRunes = 500

// Vote records a visitor's vote, "up" or "down", and an optional comment,
// on a logged chat turn. The comment is redacted like a question.
func (l *Log) Vote(ctx context.Context, turnID, vote, comment string) error {
	v := 0
	switch vote {
	case "up":
		v = 1
	case "down":
		v = -1
	default:
		return tool.Invalid(fmt.Sprintf("vote: want \"up\" or \"down\", got %q", clip(vote, 20)))
	}
	if utf8.RuneCountInString(comment) > MaxCommentRunes {
		return tool.Invalid(fmt.Sprintf("comment: at most %d characters", MaxCommentRunes))
	}
	if !validTurnID(turnID) {
		return tool.Invalid("turn_id: want the turn_id of a chat response")
	}
	if !l.Enabled() {
		return ErrLogOff
	}
	// The turn's row may still be in the queue.
	if err := l.Flush(ctx); err != nil {
		return err
	}
	err := l.db.VoteQuestion(ctx, turnID, v, pii.Redact(strings.TrimSpace(comment)))
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnknownTurn
	}
	if err == nil {
		l.gen.Add(1)
	}
	return err
}
