package store

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fillHealStore writes nq questions (the odd ones voted), ne events of
// which the first half applied, and a few documents, and closes the store.
func fillHealStore(t *testing.T, path string, nq, ne int) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 40 {
		body := strings.Repeat(fmt.Sprintf("page %d words of its own ", i), 40)
		if _, err := db.PutDocument(ctx, testDoc(fmt.Sprintf("https://example.test/p%d/", i), fmt.Sprint("Page ", i), body)); err != nil {
			t.Fatal(err)
		}
	}
	qs := make([]*Question, nq)
	for i := range qs {
		qs[i] = &Question{At: time.Now(), Kind: "chat", TurnID: fmt.Sprint("turn-", i),
			Text: fmt.Sprintf("question %d %s", i, strings.Repeat("x", 300)), Action: "answer"}
	}
	if err := db.InsertQuestions(ctx, qs); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < nq; i += 2 {
		if err := db.VoteQuestion(ctx, fmt.Sprint("turn-", i), 1, "good"); err != nil {
			t.Fatal(err)
		}
	}
	evs := make([]*Event, ne)
	for i := range evs {
		evs[i] = &Event{EventID: fmt.Sprint("ev-", i), Type: "post_updated", PostID: int64(i + 1)}
	}
	if err := db.InsertEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	pending, err := db.PendingEvents(ctx, ne, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range pending[:ne/2] {
		ids = append(ids, e.ID)
	}
	if err := db.MarkEventsApplied(ctx, ids, ""); err != nil {
		t.Fatal(err)
	}
	if err := db.SetMeta(ctx, "chat_model_calls", "2026-12-02 7"); err != nil {
		t.Fatal(err)
	}
}

// TestOpen_HealsRandomPages overwrites pages of a closed store with
// random bytes: Open refuses it or quick_check fails, OpenHealing keeps
// the file aside, and salvages the question log, its votes, the pending
// events and the chat budget where the damage left them readable.
func TestOpen_HealsRandomPages(t *testing.T) {
	ctx := context.Background()
	const nq, ne = 600, 200
	for _, tc := range []struct {
		name string
		hurt func(t *testing.T, path string)
		// wantAll: the damage spares every salvaged row.
		wantAll bool
	}{
		{"schema page intact, data pages hit", func(t *testing.T, path string) { overwritePages(t, path, 12, false) }, false},
		{"not a database", func(t *testing.T, path string) { overwritePages(t, path, 1, true) }, false},
		{"truncated", func(t *testing.T, path string) {
			fi, _ := os.Stat(path)
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "askwpd.db")
			fillHealStore(t, path, nq, ne)
			tc.hurt(t, path)
			db, h, err := OpenHealing(ctx, path, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if h == nil {
				t.Fatal("the damaged store opened as sound")
			}
			if _, err := os.Stat(h.Damaged); err != nil || !strings.Contains(h.Damaged, ".corrupt-") {
				t.Fatalf("damaged file not kept: %q: %v", h.Damaged, err)
			}
			if err := db.QuickCheck(ctx); err != nil {
				t.Fatalf("fresh store: %v", err)
			}
			if empty, _ := db.Empty(ctx); !empty {
				t.Error("the fresh store kept pages a pass must fetch again")
			}
			var q, votes, ev int
			db.read.QueryRow(`SELECT count(*), coalesce(sum(vote = 1 AND comment = 'good'), 0) FROM questions`).Scan(&q, &votes)
			db.read.QueryRow(`SELECT count(*) FROM events WHERE applied_at = ''`).Scan(&ev)
			budget, _ := db.GetMeta(ctx, "chat_model_calls")
			t.Logf("%s: cause %q; salvaged %d/%d questions (%d/%d votes), %d/%d pending events, budget %q; unreadable rowids %v, uncounted %v",
				tc.name, h.Cause, q, nq, votes, nq/2, ev, ne/2, budget, h.Unreadable, h.Uncounted)
			if q != h.Salvaged["questions"] || ev != h.Salvaged["events"] {
				t.Errorf("the heal reports %v, the fresh store holds %d questions, %d events", h.Salvaged, q, ev)
			}
			if tc.name == "schema page intact, data pages hit" && (q == 0 || ev == 0) {
				t.Errorf("nothing salvaged from a store whose schema survived: %d questions, %d events", q, ev)
			}
			last, err := db.LastHeal(ctx)
			if err != nil || last == nil || last.Damaged != h.Damaged {
				t.Errorf("the heal is not recorded: %+v %v", last, err)
			}
		})
	}
}

// overwritePages writes random bytes over n pages: page 1 (the header and
// schema) alone when first, else pages after it.
func overwritePages(t *testing.T, path string, n int, first bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	const page = 4096
	pages := int(fi.Size() / page)
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, page)
	for i := range n {
		p := 0
		if !first {
			p = 1 + rng.IntN(pages-1)
		}
		for j := range buf {
			buf[j] = byte(rng.Uint32())
		}
		if _, err := f.WriteAt(buf, int64(p)*page); err != nil {
			t.Fatal(err)
		}
		if first && i == 0 {
			break
		}
	}
}

// TestOpen_SoundStoreNotHealed: a sound store opens as it is.
func TestOpen_SoundStoreNotHealed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "askwpd.db")
	fillHealStore(t, path, 10, 4)
	db, h, err := OpenHealing(ctx, path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if h != nil {
		t.Fatalf("healed a sound store: %+v", h)
	}
	if empty, _ := db.Empty(ctx); empty {
		t.Error("a sound store lost its pages")
	}
}

// TestOpen_NewerSchemaRefused: a store from a newer askwpd is refused,
// with what to do, and never moved aside as damaged.
func TestOpen_NewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "askwpd.db")
	fillHealStore(t, path, 1, 2)
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.write.Exec(`PRAGMA user_version = 999`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, h, err := OpenHealing(ctx, path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "upgrade askwpd") || h != nil {
		t.Fatalf("newer schema: err %v, heal %+v", err, h)
	}
	if m, _ := filepath.Glob(path + ".corrupt-*"); len(m) > 0 {
		t.Errorf("a newer store was moved aside: %v", m)
	}
	t.Logf("refused: %v", err)
}
