package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/store"
)

type webhookVector struct {
	Secret    string `json:"secret"`
	Timestamp string `json:"timestamp"`
	Body      string `json:"body"`
	Signature string `json:"signature"`
}

func readVector(t *testing.T) webhookVector {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "webhook-vector.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v webhookVector
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSign_Vector checks the signing scheme against the vector the PHP
// shim tests with.
func TestSign_Vector(t *testing.T) {
	v := readVector(t)
	if got := Sign([]byte(v.Secret), v.Timestamp, []byte(v.Body)); got != v.Signature {
		t.Fatalf("Sign = %s, want %s", got, v.Signature)
	}
	if !VerifySignature([]byte(v.Secret), v.Timestamp, []byte(v.Body), v.Signature) {
		t.Fatal("VerifySignature refused the vector")
	}
	if VerifySignature([]byte(v.Secret), v.Timestamp, []byte(v.Body+" "), v.Signature) {
		t.Fatal("VerifySignature accepted a changed body")
	}
}

// eventBackend stores events in a real store, as the daemon does.
type eventBackend struct {
	db     *store.DB
	secret []byte
}

func (b *eventBackend) Call(context.Context, string, json.RawMessage) (any, error) {
	return nil, errors.New("no tools")
}
func (b *eventBackend) Status(context.Context) (*Status, error) { return &Status{}, nil }
func (b *eventBackend) WebhookSecret() ([]byte, error)          { return b.secret, nil }
func (b *eventBackend) ReceiveEvents(ctx context.Context, evs []*store.Event) (int, error) {
	if err := b.db.InsertEvents(ctx, evs); err != nil {
		return 0, err
	}
	return len(evs), nil
}

func TestEvents_Webhook(t *testing.T) {
	v := readVector(t)
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := &eventBackend{db: db, secret: []byte(v.Secret)}
	srv := httptest.NewServer(New(b, Options{Token: "tok-tok-tok-tok-tok", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	defer srv.Close()

	post := func(ts, sig, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/v1/events", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if ts != "" {
			req.Header.Set(HeaderTimestamp, ts)
		}
		if sig != "" {
			req.Header.Set(HeaderSignature, sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	stored := func() int {
		evs, err := db.PendingEvents(ctx, 1000, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	now := strconv.FormatInt(time.Now().Unix(), 10)

	// The vector's own timestamp is long past: refused, nothing stored.
	if code, body := post(v.Timestamp, v.Signature, v.Body); code != 401 {
		t.Fatalf("stale vector: %d %s, want 401", code, body)
	}
	stale := strconv.FormatInt(time.Now().Add(-6*time.Minute).Unix(), 10)
	if code, _ := post(stale, Sign(b.secret, stale, []byte(v.Body)), v.Body); code != 401 {
		t.Fatalf("timestamp 6 minutes old: %d, want 401", code)
	}
	future := strconv.FormatInt(time.Now().Add(6*time.Minute).Unix(), 10)
	if code, _ := post(future, Sign(b.secret, future, []byte(v.Body)), v.Body); code != 401 {
		t.Fatalf("timestamp 6 minutes ahead: %d, want 401", code)
	}
	if code, _ := post(now, Sign([]byte("another secret entirely"), now, []byte(v.Body)), v.Body); code != 401 {
		t.Fatalf("wrong secret: %d, want 401", code)
	}
	if code, _ := post(now, "", v.Body); code != 401 {
		t.Fatalf("no signature: %d, want 401", code)
	}
	if code, _ := post(now, Sign(b.secret, now, []byte(v.Body)), strings.Replace(v.Body, "42", "44", 1)); code != 401 {
		t.Fatalf("body changed after signing: %d, want 401", code)
	}
	if n := stored(); n != 0 {
		t.Fatalf("%d events stored after refused requests", n)
	}

	// Signed now: accepted, and stored by the time 202 arrives.
	code, body := post(now, Sign(b.secret, now, []byte(v.Body)), v.Body)
	if code != 202 || !strings.Contains(body, `"accepted":2`) {
		t.Fatalf("signed request: %d %s, want 202 accepted 2", code, body)
	}
	if n := stored(); n != 2 {
		t.Fatalf("%d events stored, want 2", n)
	}
	e, err := db.FindEvent(ctx, "evt-8f14e45f-ceea-467f-a0b6-1a2b3c4d5e6f")
	if err != nil || e.Type != "post_updated" || e.PostID != 42 || !strings.Contains(string(e.Payload), `"public":true`) {
		t.Fatalf("stored event = %+v, %v", e, err)
	}

	// The same ids again, freshly signed: a replay, refused.
	now2 := strconv.FormatInt(time.Now().Unix(), 10)
	if code, _ := post(now2, Sign(b.secret, now2, []byte(v.Body)), v.Body); code != 401 {
		t.Fatalf("replay: %d, want 401", code)
	}
	// A batch mixing a new id with a seen one stores nothing.
	mixed := `{"events":[{"id":"evt-new-1","type":"post_updated","post_id":7},{"id":"evt-c9f0f895-fb98-4b9b-99cf-2b3c4d5e6f70","type":"post_trashed","post_id":43}]}`
	if code, _ := post(now2, Sign(b.secret, now2, []byte(mixed)), mixed); code != 401 {
		t.Fatalf("partial replay: %d, want 401", code)
	}
	if n := stored(); n != 2 {
		t.Fatalf("%d events stored after replays, want 2", n)
	}

	for name, bad := range map[string][2]string{
		"not JSON":      {`{"events":[`, "not JSON"},
		"unknown type":  {`{"events":[{"id":"x1","type":"post_exploded","post_id":1}]}`, "unknown type"},
		"no id":         {`{"events":[{"type":"post_updated","post_id":1}]}`, "id is required"},
		"no events":     {`{"events":[]}`, "no events"},
		"at as text":    {`{"events":[{"id":"x2","type":"post_updated","post_id":1,"at":"now"}]}`, "event 0: at has the wrong type (want a number)"},
		"negative at":   {`{"events":[{"id":"x3","type":"post_updated","post_id":1,"at":-5}]}`, "event 0: at must be a Unix time"},
		"post_id texts": {`{"events":[{"id":"x4","type":"post_updated","post_id":"7"}]}`, "event 0: post_id has the wrong type (want a number)"},
	} {
		if code, body := post(now2, Sign(b.secret, now2, []byte(bad[0])), bad[0]); code != 400 || !strings.Contains(body, bad[1]) {
			t.Errorf("%s: %d %s, want 400 saying %q", name, code, body, bad[1])
		}
	}
	big := `{"events":[{"id":"big","type":"post_updated","post_id":1,"pad":"` + strings.Repeat("x", 1<<20) + `"}]}`
	if code, _ := post(now2, Sign(b.secret, now2, []byte(big)), big); code != 413 {
		t.Errorf("oversized body: %d, want 413", code)
	}
	if n := stored(); n != 2 {
		t.Fatalf("%d events stored after bad requests, want 2", n)
	}
}
