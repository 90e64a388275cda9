package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestDB_Lease: a held lease refuses another holder with a message that
// names it, lapses when not renewed, is taken over from a holder said to
// be gone, and cannot be renewed or released by a holder that lost it.
func TestDB_Lease(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	db.Now = func() time.Time { return now }
	a := Lease{Name: "crawl", Holder: "a", PID: 4242, Host: "web1", What: "askwpd serve, nightly pass,"}
	b := Lease{Name: "crawl", Holder: "b", PID: 77, Host: "web1", What: "askwpd index, index pass,"}
	never := func(Lease) bool { return false }

	if _, err := db.AcquireLease(ctx, a, 30*time.Second, never); err != nil {
		t.Fatal(err)
	}
	_, err := db.AcquireLease(ctx, b, 30*time.Second, never)
	var held *LeaseHeldError
	if !errors.As(err, &held) {
		t.Fatalf("second holder: %v, want a LeaseHeldError", err)
	}
	for _, want := range []string{"askwpd serve, nightly pass,", "pid 4242", "web1", "since 2026-11-24T10:00:00Z", "lapses at 2026-11-24T10:00:30Z"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	// The holder itself may take it again (a resumed pass).
	if _, err := db.AcquireLease(ctx, a, 30*time.Second, never); err != nil {
		t.Errorf("the holder re-acquiring: %v", err)
	}

	// Renewed, it holds past its first expiry.
	now = now.Add(20 * time.Second)
	if _, err := db.RenewLease(ctx, "crawl", "a", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	now = now.Add(20 * time.Second)
	if _, err := db.AcquireLease(ctx, b, 30*time.Second, never); !errors.As(err, &held) {
		t.Fatalf("after a renewal: %v, want still held", err)
	}

	// Not renewed, it lapses and another holder takes it.
	now = now.Add(11 * time.Second)
	got, err := db.AcquireLease(ctx, b, 30*time.Second, never)
	if err != nil {
		t.Fatalf("after the lease lapsed: %v", err)
	}
	if !got.ExpiresAt.Equal(now.Add(30 * time.Second)) {
		t.Errorf("new lease expires %v, want %v", got.ExpiresAt, now.Add(30*time.Second))
	}
	if _, err := db.RenewLease(ctx, "crawl", "a", 30*time.Second); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("the old holder renewing: %v, want ErrLeaseLost", err)
	}
	if err := db.ReleaseLease(ctx, "crawl", "a"); err != nil {
		t.Fatal(err)
	}
	if cur, err := db.FindLease(ctx, "crawl"); err != nil || cur.Holder != "b" {
		t.Errorf("after the old holder's release the lease is %+v, %v; want b's", cur, err)
	}

	// A holder said to be gone (a killed process) is taken over at once.
	gone := func(l Lease) bool { return l.PID == 77 }
	if _, err := db.AcquireLease(ctx, a, 30*time.Second, gone); err != nil {
		t.Errorf("taking over from a gone holder: %v", err)
	}
	if err := db.ReleaseLease(ctx, "crawl", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.FindLease(ctx, "crawl"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after release: %v, want ErrNotFound", err)
	}
}
