// Package chat is the /v1/chat agent loop: it builds the context a model
// sees, lets the model call the site's tools, checks the reply's quotes
// and citations against the stored pages, and resolves the LLM provider.
// It reaches the site only through a tool.Caller.
package chat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/askwp/askwpd/chat/llm"
	"github.com/askwp/askwpd/tool"
)

// Site names the site the assistant speaks for.
type Site struct {
	URL     string
	Name    string
	Tagline string
}

// ProviderConfig is askwpd's own LLM provider (the [provider] section).
type ProviderConfig struct {
	Kind        string // openai | anthropic | google | openai-compatible
	BaseURL     string
	Model       string
	APIKey      string
	MaxTokens   int
	Temperature float64
}

// Agent answers chat turns about one site. Set Tools, Site and Log before
// the first turn.
type Agent struct {
	Tools tool.Caller
	// Reader is what the agent reads with for itself (the context
	// builder, the quote checks): the same tools doing only their core
	// job (tool.Options.Lean), since a live fetch or extra searches would
	// cost the turn seconds. nil reads through Tools.
	Reader tool.Caller
	Site   Site
	Log    *slog.Logger
	// Opts tune the loop; zero values are defaults.
	Opts Options
	// Provider is tried first; a zero Kind leaves the choice to
	// WordPress's AskWP options, then to its Connectors. A Kind without a
	// key takes the key of that kind from those.
	Provider ProviderConfig
	// SiteOption reads one WordPress option (AskWP's provider settings,
	// the Connectors' keys); nil when there is no database.
	SiteOption func(ctx context.Context, name string) (string, error)
	// SiteConstants returns the constants wp-config.php defines, for the
	// Connectors' {ID}_API_KEY (and WP_AI_SUPPORT); nil without a
	// wp-config.php. It is called again with every reading of the
	// options, so an edited wp-config.php needs no restart.
	SiteConstants func() (map[string]string, error)
	// Getenv reads the daemon's own environment, where the Connectors'
	// {ID}_API_KEY variables are looked up as WordPress looks them up in
	// PHP's (systemd: Environment= or EnvironmentFile=); nil is
	// os.LookupEnv.
	Getenv func(name string) (string, bool)
	// OnResponse, when set, sees every finished turn, a degraded one
	// included, so the daemon's metrics count what visitors got.
	OnResponse func(*Response)
	// Gate, when set, counts every model call against the daily budget
	// and stops a turn's calls once it is spent.
	Gate *Gate

	wpMu sync.Mutex
	wp   *siteSettings

	httpOnce sync.Once
	http     *http.Client
	clients  sync.Map // llm.Config → llm.Provider
}

// reader is the caller of the agent's own reads (Reader).
func (a *Agent) reader() tool.Caller {
	if a.Reader != nil {
		return a.Reader
	}
	return a.Tools
}

// Options tune the chat agent loop. Zero values mean the defaults.
type Options struct {
	// MaxToolRounds caps the model's rounds of tool calls; default 4.
	MaxToolRounds int
	// ToolTimeout bounds one tool call; default 10 s.
	ToolTimeout time.Duration
	// ToolBudget bounds the total time of all tool calls of a turn;
	// default 20 s. Once spent, the model must answer.
	ToolBudget time.Duration
	// ModelTimeout bounds one model call; default 60 s.
	ModelTimeout time.Duration
	// Timeout bounds the whole turn; default 120 s.
	Timeout time.Duration
	// MaxHistory is how many messages of the conversation are kept; default 8.
	MaxHistory int
	// EvidenceTokens is the context's budget for retrieved evidence;
	// default 1500. PageTokens is the current page's; default 600.
	EvidenceTokens int
	PageTokens     int
	// RetryAttempts, RetryBase and RetryMax shape the retries of a failed
	// provider call (429, 5xx); defaults 3, 400 ms, 8 s.
	RetryAttempts int
	RetryBase     time.Duration
	RetryMax      time.Duration
	// HTTPClient carries provider requests; nil means a shared client.
	HTTPClient *http.Client
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxToolRounds, 4)
	def(&o.MaxHistory, 8)
	def(&o.EvidenceTokens, 1500)
	def(&o.PageTokens, 600)
	defD(&o.ToolTimeout, 10*time.Second)
	defD(&o.ToolBudget, 20*time.Second)
	defD(&o.ModelTimeout, 60*time.Second)
	defD(&o.Timeout, 120*time.Second)
	return o
}

// chatTools are the tools the model is offered: the retrieval contract.
// verify_quote is left out; the agent checks quotes itself afterwards.
var chatTools = []string{"search_site", "get_document", "get_recent", "search_in_document", "fetch_live_url"}

// Limits on what one turn sends the model.
const (
	maxMessageRunes    = 8000  // the user's message
	maxHistoryRunes    = 4000  // all earlier messages together
	maxToolResultRunes = 16000 // one tool result
)

func contractTools() []llm.Tool {
	var out []llm.Tool
	for _, name := range chatTools {
		for _, t := range tool.Tools {
			if t.Function.Name == name {
				out = append(out, llm.Tool{Name: name, Description: t.Function.Description, Parameters: t.Function.Parameters})
			}
		}
	}
	return out
}

// chatTurn is the state of one chat request.
type chatTurn struct {
	a     *Agent
	opt   Options
	req   Request
	emit  func(Event)
	start time.Time

	resp   Response
	timing Timing

	mu        sync.Mutex // guards retrieved: context searches run in parallel
	retrieved map[string]*retrievedDoc
	order     []string // retrieval order of retrieved

	toolSpent time.Duration
	offered   map[string]bool

	// reply is the text streamed since the last reset.
	reply      strings.Builder
	firstToken time.Time
}

// Chat runs one turn of the agent loop: build the context, let the model
// search with the tools, validate the answer's citations, and return it.
// Text is streamed through emit as it arrives.
func (a *Agent) Chat(ctx context.Context, req Request, emit func(Event)) (*Response, error) {
	if emit == nil {
		emit = func(Event) {}
	}
	t := &chatTurn{a: a, opt: a.Opts.withDefaults(), req: req, emit: emit, start: time.Now(),
		retrieved: map[string]*retrievedDoc{}, offered: map[string]bool{}}
	t.resp.Sources, t.resp.ToolCalls = []Source{}, []ToolCall{}
	t.resp.TurnID = newTurnID()
	history, question, err := chatHistory(req, t.opt.MaxHistory)
	if err != nil {
		return nil, err
	}
	ps, err := a.resolveProvider(ctx, req)
	if err != nil {
		return nil, err
	}
	prov, err := a.newProvider(ps, t.opt)
	if err != nil {
		return nil, err
	}
	t.resp.Provider = prov.Name()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, t.opt.Timeout)
	defer cancel()

	cstart := time.Now()
	cc := t.buildContext(ctx, question, history)
	tools := contractTools()
	for _, tl := range tools {
		t.offered[tl.Name] = true
	}
	lreq := llm.Request{System: t.systemPrompt(cc, ps.Instructions), Messages: history, Tools: tools,
		MaxTokens: ps.MaxTokens, Temperature: ps.Temperature}
	t.timing.ContextMS = ms(time.Since(cstart))

	lreq, rounds, err := t.loop(ctx, prov, lreq, t.opt.MaxToolRounds)
	if err != nil {
		if parent.Err() != nil {
			return nil, parent.Err() // the client went away
		}
		t.degrade(ctx, err)
		return t.finish(ctx), nil
	}

	vstart := time.Now()
	problems := t.validate(ctx)
	if len(problems) > 0 {
		a.Log.Info("Chat reply regenerated", "problems", problems)
		t.emit(Event{Type: "status", Data: Status{Message: "Checking the answer…", Reset: true}})
		lreq.Messages = append(lreq.Messages,
			llm.Message{Role: "assistant", Content: t.reply.String()},
			llm.Message{Role: "user", Content: correction(problems, a.Site.URL)})
		t.reply.Reset()
		// The correction may need tools (read the page instead of asking
		// for it), as long as the tool budget lasts.
		lreq.NoTools = t.toolSpent >= t.opt.ToolBudget
		t.timing.ValidateMS += ms(time.Since(vstart))
		if _, _, err := t.loop(ctx, prov, lreq, max(2, t.opt.MaxToolRounds-rounds)); err != nil {
			t.degrade(ctx, err)
			return t.finish(ctx), nil
		}
		vstart = time.Now()
		if problems := t.validate(ctx); len(problems) > 0 {
			t.scrub()
		}
	}
	t.timing.ValidateMS += ms(time.Since(vstart))
	return t.finish(ctx), nil
}

// finish computes the sources and the evidence level, and logs the turn.
func (t *chatTurn) finish(ctx context.Context) *Response {
	vstart := time.Now()
	if t.resp.Reply == "" {
		t.resp.Reply = strings.TrimSpace(t.reply.String())
	}
	if t.resp.Reply == "" {
		// A model that ends its turn without a word must not leave the
		// user with an empty bubble.
		t.resp.Reply = "Sorry, I couldn't put an answer together from the site's pages. Could you ask in other words?"
		t.emit(Event{Type: "delta", Data: Delta{Text: t.resp.Reply}})
	}
	if len(t.resp.Sources) == 0 {
		t.resp.Sources = t.sources(ctx, t.resp.Reply)
	}
	t.resp.Evidence = t.evidenceLevel()
	t.timing.ValidateMS += ms(time.Since(vstart))
	t.resp.LatencyMS = ms(time.Since(t.start))
	if !t.firstToken.IsZero() {
		t.timing.FirstTokenMS = ms(t.firstToken.Sub(t.start))
	}
	t.resp.Timing = &t.timing
	t.a.Log.Info("Chat turn", "provider", t.resp.Provider, "evidence", t.resp.Evidence, "sources", len(t.resp.Sources),
		"tool_calls", len(t.resp.ToolCalls), "model_calls", t.resp.Usage.ModelCalls, "degraded", t.resp.Degraded,
		"context_ms", t.timing.ContextMS, "first_token_ms", t.timing.FirstTokenMS, "latency_ms", t.resp.LatencyMS)
	if t.a.OnResponse != nil {
		t.a.OnResponse(&t.resp)
	}
	return &t.resp
}

// chatHistory checks the request and turns its last messages into the
// model's conversation.
func chatHistory(req Request, keep int) ([]llm.Message, string, error) {
	bad := func(msg string) error {
		return &tool.Error{Code: "invalid", Message: msg}
	}
	if len(req.Messages) == 0 {
		return nil, "", bad("messages is required")
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "user" || strings.TrimSpace(last.Content) == "" {
		return nil, "", bad("the last message must be the user's, and not empty")
	}
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, "", bad(fmt.Sprintf("messages[%d].role: want user or assistant", i))
		}
		if !utf8.ValidString(m.Content) {
			return nil, "", bad(fmt.Sprintf("messages[%d].content is not valid UTF-8", i))
		}
	}
	msgs := req.Messages
	if len(msgs) > keep {
		msgs = msgs[len(msgs)-keep:]
	}
	// Older turns share a budget, newest first; the question is kept whole
	// up to its own cap.
	out := make([]llm.Message, len(msgs))
	budget := maxHistoryRunes
	for i := len(msgs) - 1; i >= 0; i-- {
		c := strings.TrimSpace(msgs[i].Content)
		if i == len(msgs)-1 {
			c = clipRunes(c, maxMessageRunes)
		} else {
			c = clipRunes(c, max(budget, 0))
			budget -= utf8.RuneCountInString(c)
		}
		out[i] = llm.Message{Role: msgs[i].Role, Content: c}
	}
	// The conversation must start with the user.
	for len(out) > 1 && (out[0].Role != "user" || out[0].Content == "") {
		out = out[1:]
	}
	return out, out[len(out)-1].Content, nil
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// newTurnID returns 16 random bytes in hex.
func newTurnID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand's Read never fails
	return hex.EncodeToString(b)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// loop calls the model and runs its tool calls until it answers, up to
// maxRounds rounds of tools. It returns the conversation so far and the
// rounds used.
func (t *chatTurn) loop(ctx context.Context, prov llm.Provider, lreq llm.Request, maxRounds int) (llm.Request, int, error) {
	for round := 0; ; round++ {
		res, err := t.callModel(ctx, prov, lreq)
		if err != nil {
			return lreq, round, err
		}
		if len(res.ToolCalls) == 0 {
			return lreq, round, nil
		}
		if lreq.NoTools {
			// The model was told to stop calling tools and did not; what
			// it wrote is all there is.
			return lreq, round, nil
		}
		calls := res.ToolCalls
		for i := range calls {
			if calls[i].ID == "" {
				calls[i].ID = fmt.Sprintf("call_%d_%d", round+1, i+1)
			}
		}
		lreq.Messages = append(lreq.Messages, llm.Message{Role: "assistant", Content: res.Text, ToolCalls: calls})
		if round >= maxRounds {
			for _, c := range calls {
				lreq.Messages = append(lreq.Messages, llm.Message{Role: "tool", ToolCallID: c.ID, IsError: true,
					Content: toolErrorJSON("tool_limit", "no more tool calls this turn: answer now from the evidence you have")})
			}
			lreq.NoTools = true
			continue
		}
		rstart := time.Now()
		for _, c := range calls {
			content, isErr := t.runModelTool(ctx, round+1, c)
			lreq.Messages = append(lreq.Messages, llm.Message{Role: "tool", ToolCallID: c.ID, Content: content, IsError: isErr})
		}
		t.timing.ToolRoundMS = append(t.timing.ToolRoundMS, ms(time.Since(rstart)))
		if t.toolSpent >= t.opt.ToolBudget {
			lreq.Messages = append(lreq.Messages, llm.Message{Role: "user",
				Content: "[askwpd] The time for tools is used up. Answer now from the evidence you have."})
			lreq.NoTools = true
		}
	}
}

// callModel makes one model call, streaming its text to the client.
func (t *chatTurn) callModel(ctx context.Context, prov llm.Provider, lreq llm.Request) (*llm.Response, error) {
	mctx, cancel := context.WithTimeout(ctx, t.opt.ModelTimeout)
	defer cancel()
	if err := t.a.Gate.takeModelCall(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	sep := t.reply.Len() > 0
	res, err := prov.Stream(mctx, lreq, func(s string) {
		if t.firstToken.IsZero() {
			t.firstToken = time.Now()
		}
		if sep {
			// Text of an earlier round (a model's "Let me look that
			// up.") and this one's are separate paragraphs.
			t.reply.WriteString("\n\n")
			t.emit(Event{Type: "delta", Data: Delta{Text: "\n\n"}})
			sep = false
		}
		t.reply.WriteString(s)
		t.emit(Event{Type: "delta", Data: Delta{Text: s}})
	})
	t.timing.ModelMS = append(t.timing.ModelMS, ms(time.Since(start)))
	t.resp.Usage.ModelCalls++
	if res != nil {
		t.resp.Usage.InputTokens += res.Usage.InputTokens
		t.resp.Usage.OutputTokens += res.Usage.OutputTokens
	}
	if err != nil {
		t.a.Log.Warn("Model call failed", "provider", prov.Name(), "error", err)
		return nil, err
	}
	return res, nil
}

var toolStatus = map[string]string{
	"search_site":        "Searching the site…",
	"get_document":       "Reading the page…",
	"get_recent":         "Checking the newest posts…",
	"search_in_document": "Looking through the page…",
	"fetch_live_url":     "Fetching the page…",
}

// runModelTool runs one tool call the model made and returns what the
// model is told. Every failure, the model's own mistakes included, comes
// back as a tool error for the model to correct; none ends the turn.
func (t *chatTurn) runModelTool(ctx context.Context, round int, c llm.ToolCall) (string, bool) {
	args := strings.TrimSpace(c.Args)
	if args == "" {
		args = "{}"
	}
	rec := ToolCall{Name: c.Name, Round: round}
	if json.Valid([]byte(args)) {
		rec.Args = json.RawMessage(args)
	} else {
		b, _ := json.Marshal(clipRunes(args, 500))
		rec.Args = b
	}
	fail := func(code, msg string) (string, bool) {
		rec.ErrorCode = code
		t.resp.ToolCalls = append(t.resp.ToolCalls, rec)
		return toolErrorJSON(code, msg), true
	}
	switch {
	case !t.offered[c.Name]:
		return fail("unknown_tool", fmt.Sprintf("unknown tool %q; the tools are: %s", clipRunes(c.Name, 64), strings.Join(chatTools, ", ")))
	case !json.Valid([]byte(args)):
		return fail("invalid_arguments", "the arguments are not valid JSON; send one JSON object, e.g. {\"query\": \"opening hours\"}")
	case args[0] != '{':
		return fail("invalid_arguments", "the arguments must be a JSON object, e.g. {\"query\": \"opening hours\"}, not "+jsonKind(args))
	}
	left := t.opt.ToolBudget - t.toolSpent
	if left <= 0 {
		return fail("tool_budget", "no time is left for tools this turn: answer from the evidence you have")
	}
	if msg := toolStatus[c.Name]; msg != "" {
		t.emit(Event{Type: "status", Data: Status{Message: msg, Tool: c.Name}})
	}
	res, code, msg := t.callTool(ctx, c.Name, json.RawMessage(args), min(left, t.opt.ToolTimeout), &rec)
	t.resp.ToolCalls = append(t.resp.ToolCalls, rec)
	if code != "" {
		return toolErrorJSON(code, msg), true
	}
	b, err := json.Marshal(res)
	if err != nil {
		return toolErrorJSON("internal", "the tool's result could not be encoded"), true
	}
	if utf8.RuneCount(b) > maxToolResultRunes {
		b = []byte(clipRunes(string(b), maxToolResultRunes) + "\n[result cut here: ask for less, e.g. a smaller max_chars or limit]")
	}
	return string(b), false
}

// callTool runs a tool in-process through Call, records what it
// retrieved, and reports a failure as an error code and message for the
// model.
func (t *chatTurn) callTool(ctx context.Context, name string, args json.RawMessage, timeout time.Duration, rec *ToolCall) (any, string, string) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, err := t.a.Tools.Call(tctx, name, args)
	took := time.Since(start)
	t.mu.Lock()
	t.toolSpent += took
	t.mu.Unlock()
	rec.LatencyMS = ms(took)
	if err != nil {
		var ae *tool.Error
		switch {
		case errors.As(err, &ae):
			rec.ErrorCode = ae.Code
			return nil, ae.Code, ae.Message
		case errors.Is(err, context.DeadlineExceeded):
			rec.ErrorCode = "timeout"
			return nil, "timeout", "the tool took too long; try a narrower request or answer from what you have"
		default:
			rec.ErrorCode = "internal"
			t.a.Log.Error("Chat tool failed", "tool", name, "error", err)
			return nil, "internal", "the tool failed"
		}
	}
	rec.OK = true
	t.record(res)
	return res, "", ""
}

func toolErrorJSON(code, msg string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg}})
	return string(b)
}

func jsonKind(s string) string {
	switch s[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// degrade turns a failed model call into an honest reply with whatever
// evidence was found, instead of an error.
func (t *chatTurn) degrade(ctx context.Context, err error) {
	t.resp.Degraded = "provider_unavailable"
	var refusal *Refusal
	if errors.Is(err, context.DeadlineExceeded) {
		t.resp.Degraded = "timeout"
	} else if errors.As(err, &refusal) {
		t.resp.Degraded = refusal.Code
	}
	var b strings.Builder
	if t.reply.Len() > 0 {
		b.WriteString("\n\n")
	}
	if t.resp.Degraded == "timeout" {
		b.WriteString("Sorry, the answer is taking too long, so I have to stop here.")
	} else if refusal != nil {
		b.WriteString("Sorry, the assistant has reached its limit for today, so I can't write a full answer.")
	} else {
		b.WriteString("Sorry, I can't reach the AI service right now, so I can't write a full answer.")
	}
	docs := t.retrievedList()
	if len(docs) > 0 {
		b.WriteString(" These pages of the site look relevant:")
		for i, rd := range docs {
			if i == 3 {
				break
			}
			fmt.Fprintf(&b, "\n- %s: %s", rd.title, rd.url)
		}
	} else {
		b.WriteString(" Please try again in a minute.")
	}
	t.emit(Event{Type: "delta", Data: Delta{Text: b.String()}})
	t.reply.WriteString(b.String())
	t.resp.Reply = strings.TrimSpace(t.reply.String())
	// The sources are the evidence found, not an answer's citations.
	t.resp.Sources = t.leadSources(ctx, docs, 3)
}
