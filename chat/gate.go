package chat

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
)

// budgetMetaKey holds the day's model calls in the store's meta table as
// "YYYY-MM-DD N", so a restart does not hand out a fresh budget.
const budgetMetaKey = "chat_model_calls"

// busyRetryAfter is what a turn refused for the concurrency cap is told to
// wait: a turn lasts seconds, so a short wait usually finds a free slot.
const busyRetryAfter = 5 * time.Second

// Meta is where the gate keeps the day's count: the store's meta table.
type Meta interface {
	GetMeta(ctx context.Context, key string) (string, error)
	SetMeta(ctx context.Context, key, value string) error
}

// Refusal is a chat turn the gate did not admit, or a model call it did
// not allow. The API answers it with 429 and Retry-After.
type Refusal struct {
	Code       string // busy | budget_exhausted
	Message    string
	RetryAfter time.Duration
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Message }

// GateStatus is the gate as /v1/status and /admin show it. Zero limits
// mean no limit.
type GateStatus struct {
	InUse           int       `json:"in_use"`
	MaxConcurrent   int       `json:"max_concurrent"`
	ModelCallsToday int       `json:"model_calls_today"`
	DailyModelCalls int       `json:"daily_model_calls"`
	BudgetResetsAt  time.Time `json:"budget_resets_at"`
	Refused         int64     `json:"refused"`
}

// Gate admits chat turns: at most maxConcurrent at a time, and model
// calls up to a daily budget that resets at midnight UTC. A nil *Gate
// admits everything.
type Gate struct {
	maxConcurrent int
	daily         int
	meta          Meta
	log           *slog.Logger
	now           func() time.Time

	mu      sync.Mutex
	inUse   int
	day     string
	used    int
	refused int64
}

// NewGate returns a gate with the day's count read back from meta. Zero
// or less for a limit means none.
func NewGate(ctx context.Context, maxConcurrent, dailyModelCalls int, meta Meta, log *slog.Logger) *Gate {
	g := &Gate{maxConcurrent: maxConcurrent, daily: dailyModelCalls, meta: meta, log: log, now: time.Now}
	g.day = g.today()
	if meta != nil {
		v, err := meta.GetMeta(ctx, budgetMetaKey)
		if err != nil {
			log.Warn("Unable to read the chat budget; counting from zero", "error", err)
		} else if day, n, ok := strings.Cut(v, " "); ok && day == g.day {
			g.used, _ = strconv.Atoi(n)
		}
	}
	return g
}

func (g *Gate) today() string { return g.now().UTC().Format(time.DateOnly) }

// resetsAt is the next midnight UTC.
func (g *Gate) resetsAt() time.Time {
	y, m, d := g.now().UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// rollover starts a new day's count; the caller holds mu.
func (g *Gate) rollover() {
	if d := g.today(); d != g.day {
		g.day, g.used = d, 0
	}
}

func (g *Gate) exhausted() *Refusal {
	return &Refusal{Code: "budget_exhausted",
		Message:    fmt.Sprintf("the assistant has used its %d model calls for today; it answers again after midnight UTC", g.daily),
		RetryAfter: max(time.Second, g.resetsAt().Sub(g.now()).Round(time.Second))}
}

// Admit takes a slot for one turn, or refuses it when every slot is taken
// or the day's budget is spent. release gives the slot back.
func (g *Gate) Admit() (release func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rollover()
	if g.daily > 0 && g.used >= g.daily {
		g.refused++
		return nil, g.exhausted()
	}
	if g.maxConcurrent > 0 && g.inUse >= g.maxConcurrent {
		g.refused++
		return nil, &Refusal{Code: "busy",
			Message:    fmt.Sprintf("the assistant is answering %d questions already; try again in a few seconds", g.maxConcurrent),
			RetryAfter: busyRetryAfter}
	}
	g.inUse++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.inUse--
			g.mu.Unlock()
		})
	}, nil
}

// takeModelCall counts one model call against the day's budget, or
// refuses it when the budget is spent. The count is written through to
// meta, so a restart keeps it.
func (g *Gate) takeModelCall(ctx context.Context) error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rollover()
	if g.daily > 0 && g.used >= g.daily {
		return g.exhausted()
	}
	g.used++
	if g.meta != nil {
		if err := g.meta.SetMeta(context.WithoutCancel(ctx), budgetMetaKey, g.day+" "+strconv.Itoa(g.used)); err != nil {
			// The count in memory still holds until a restart.
			g.log.Warn("Unable to save the chat budget", "error", err)
		}
	}
	return nil
}

// Status is the gate's state now.
func (g *Gate) Status() GateStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rollover()
	return GateStatus{InUse: g.inUse, MaxConcurrent: g.maxConcurrent, ModelCallsToday: g.used,
		DailyModelCalls: g.daily, BudgetResetsAt: g.resetsAt(), Refused: g.refused}
}
