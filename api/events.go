package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/askwp/askwpd/store"
	"github.com/askwp/askwpd/tool"
)

// Webhook signing: X-Askwpd-Signature is "sha256=" + hex(HMAC-SHA256(secret,
// timestamp + "." + raw body)), and X-Askwpd-Timestamp the Unix seconds it
// was signed at. api/testdata/webhook-vector.json is the shared test vector.
const (
	HeaderTimestamp = "X-Askwpd-Timestamp"
	HeaderSignature = "X-Askwpd-Signature"
	// WebhookSkew is how far a signed timestamp may be from now.
	WebhookSkew = 5 * time.Minute
	// maxEventBody caps a webhook body.
	maxEventBody = 1 << 20
	maxEvents    = 500
)

// EventReceiver is the backend capability behind POST /v1/events.
type EventReceiver interface {
	// WebhookSecret is the shared HMAC secret.
	WebhookSecret() ([]byte, error)
	// ReceiveEvents stores verified events durably and returns how many
	// were accepted. It returns store.ErrDuplicateEvent, storing nothing,
	// when an event id was seen before.
	ReceiveEvents(ctx context.Context, evs []*store.Event) (int, error)
}

// Freshness is the event queue, crawl frontier and schedule state shown in
// /v1/status.
type Freshness struct {
	PendingEvents      int       `json:"pending_events"`
	FailedEvents       int       `json:"failed_events"`
	OldestPendingEvent time.Time `json:"oldest_pending_event,omitzero"`
	LastEventApplied   time.Time `json:"last_event_applied,omitzero"`
	// LastEventLagMS is how long the last applied event took from receipt
	// to applied, in milliseconds.
	LastEventLagMS  int64     `json:"last_event_lag_ms"`
	FrontierPending int       `json:"frontier_pending"`
	RecrawlPending  string    `json:"recrawl_pending,omitempty"`
	NextIncremental time.Time `json:"next_incremental,omitzero"`
	NextNightly     time.Time `json:"next_nightly,omitzero"`
}

func (s *Server) registerEventRoutes(e *echo.Echo) {
	r, ok := s.b.(EventReceiver)
	if !ok {
		return
	}
	e.POST("/v1/events", func(c echo.Context) error { return s.handleEvents(c, r) })
}

// Sign computes the signature header value for body at timestamp ts.
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySignature checks a signature header in constant time.
func VerifySignature(secret []byte, ts string, body []byte, sig string) bool {
	want := Sign(secret, ts, body)
	return hmac.Equal([]byte(strings.TrimSpace(sig)), []byte(want))
}

type eventsRequest struct {
	Events []json.RawMessage `json:"events"`
}

// cleanText reports whether an event's string is UTF-8 with neither
// U+FFFD, which is what the decoder makes of an escaped lone surrogate
// ("\ud800"), nor control characters.
func cleanText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// jsonKind names, as JSON does, what a Go kind decodes from.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "an array"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "a number"
	}
	return "an object"
}

func unauthorized(msg string) *tool.Error { return &tool.Error{Code: "unauthorized", Message: msg} }

// handleEvents verifies, parses and durably stores a batch of events, and
// only then answers 202: an accepted event survives a crash.
func (s *Server) handleEvents(c echo.Context, r EventReceiver) error {
	req := c.Request()
	body, err := io.ReadAll(io.LimitReader(req.Body, maxEventBody+1))
	if err != nil {
		return readFailed(err)
	}
	if len(body) > maxEventBody {
		return &tool.Error{Code: "too_large", Message: "body larger than 1 MiB"}
	}
	secret, err := r.WebhookSecret()
	if err != nil {
		return err
	}
	ts := strings.TrimSpace(req.Header.Get(HeaderTimestamp))
	if ts == "" || !VerifySignature(secret, ts, body, req.Header.Get(HeaderSignature)) {
		return unauthorized("bad signature")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return unauthorized("bad timestamp")
	}
	sent := time.Unix(sec, 0)
	if d := time.Since(sent); d > WebhookSkew || d < -WebhookSkew {
		return unauthorized("timestamp outside the allowed window")
	}

	// The JSON decoder would turn bytes that are not UTF-8 into U+FFFD,
	// so two different ids could be stored as one; refuse them instead.
	if !utf8.Valid(body) {
		return tool.Invalid("body is not UTF-8")
	}
	var er eventsRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&er); err != nil {
		return tool.Invalid("body is not JSON: {\"events\": [...]}")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return tool.Invalid("data after the JSON body")
	}
	if len(er.Events) == 0 {
		return tool.Invalid("no events")
	}
	if len(er.Events) > maxEvents {
		return &tool.Error{Code: "too_large", Message: "too many events in one batch"}
	}
	evs := make([]*store.Event, 0, len(er.Events))
	ids := map[string]bool{}
	for i, raw := range er.Events {
		ej, err := store.ParseEvent(raw)
		if err != nil {
			var te *json.UnmarshalTypeError
			var fe *store.EventFieldError
			switch {
			case errors.As(err, &te) && te.Field != "":
				return tool.Invalid("event " + strconv.Itoa(i) + ": " + te.Field + " has the wrong type (want " + jsonKind(te.Type.Kind()) + ")")
			case errors.As(err, &fe):
				return tool.Invalid("event " + strconv.Itoa(i) + ": " + fe.Error())
			}
			return tool.Invalid("event " + strconv.Itoa(i) + " is not a JSON object")
		}
		if ej.EventID == "" || len(ej.EventID) > 200 {
			return tool.Invalid("event " + strconv.Itoa(i) + ": id is required (at most 200 characters)")
		}
		for name, v := range map[string]string{"id": ej.EventID, "post_type": ej.PostType, "status": ej.Status, "url": ej.URL} {
			if !cleanText(v) {
				return tool.Invalid("event " + strconv.Itoa(i) + ": " + name + " is not valid text")
			}
		}
		if !store.KnownEventType(ej.Type) {
			return tool.Invalid("event " + strconv.Itoa(i) + ": unknown type " + strconv.Quote(ej.Type))
		}
		if ids[ej.EventID] {
			return unauthorized("replayed event id")
		}
		ids[ej.EventID] = true
		ej.SentAt = sent
		evs = append(evs, ej)
	}
	n, err := r.ReceiveEvents(req.Context(), evs)
	if errors.Is(err, store.ErrDuplicateEvent) {
		return unauthorized("replayed event id")
	}
	if store.IsDiskFull(err) {
		// Nothing was stored: the shim may send it again later.
		c.Response().Header().Set("Retry-After", "60")
		return &tool.Error{Code: "disk_full",
			Message: "the daemon's state dir is out of disk space; the event was not stored"}
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]int{"accepted": n})
}
