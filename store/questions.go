package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Question is one row of the question log (migration 007): a visitor's
// search_site call or chat turn, what the site answered, and the
// visitor's vote on a chat answer. It carries nothing that identifies the
// visitor, and Text is redacted by the caller before it is stored.
type Question struct {
	ID     int64     `json:"-"`
	At     time.Time `json:"at"`
	Site   string    `json:"site"`
	Kind   string    `json:"kind"` // search | chat
	TurnID string    `json:"turn_id,omitempty"`
	Text   string    `json:"question"`
	// Corrections maps the question's misspelt words to the site's words
	// the search used instead.
	Corrections map[string]string `json:"corrections,omitempty"`
	Action      string            `json:"action"`
	Evidence    string            `json:"evidence"`
	TopURLs     []string          `json:"top_urls"`
	Expanded    bool              `json:"expanded"`
	LiveFetch   bool              `json:"live_fetch"`
	Outcome     string            `json:"outcome,omitempty"`
	Vote        int               `json:"vote,omitempty"`
	Comment     string            `json:"comment,omitempty"`
}

// InsertQuestions stores a batch of questions in one short transaction:
// the log shares the single write connection with crawling and webhook
// intake, so it takes it once per batch, not once per question.
func (db *DB) InsertQuestions(ctx context.Context, qs []*Question) error {
	if len(qs) == 0 {
		return nil
	}
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: insert questions: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `
		INSERT INTO questions (at, site, kind, turn_id, question, corrections, action, evidence, top_urls, expanded, live_fetch, outcome)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(turn_id) WHERE turn_id != '' DO NOTHING`)
	if err != nil {
		return fmt.Errorf("store: insert questions: %w", err)
	}
	defer stmt.Close()
	for _, q := range qs {
		corr, _ := json.Marshal(nonNilMap(q.Corrections))
		top, _ := json.Marshal(nonNilStrings(q.TopURLs))
		if _, err := stmt.ExecContext(ctx, fmtTimeNano(q.At), q.Site, q.Kind, q.TurnID, q.Text, string(corr),
			q.Action, q.Evidence, string(top), q.Expanded, q.LiveFetch, q.Outcome); err != nil {
			return fmt.Errorf("store: insert question: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: insert questions: %w", err)
	}
	return nil
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func nonNilStrings(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// VoteQuestion records a visitor's vote (1 up, -1 down) and comment on
// the chat turn turnID; a later vote replaces an earlier one. It returns
// ErrNotFound when no logged turn has that id.
func (db *DB) VoteQuestion(ctx context.Context, turnID string, vote int, comment string) error {
	res, err := db.write.ExecContext(ctx, `UPDATE questions SET vote = ?, comment = ? WHERE turn_id = ? AND turn_id != ''`,
		vote, comment, turnID)
	if err != nil {
		return fmt.Errorf("store: vote on turn %s: %w", turnID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: vote on turn %s: %w", turnID, ErrNotFound)
	}
	return nil
}

// PurgeQuestions deletes the questions logged before t, a few thousand
// rows per transaction so that a long backlog never holds the write
// connection for long. It returns how many it deleted.
func (db *DB) PurgeQuestions(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for {
		res, err := db.write.ExecContext(ctx, `DELETE FROM questions WHERE id IN
			(SELECT id FROM questions WHERE at < ? ORDER BY at LIMIT 2000)`, fmtTimeNano(before))
		if err != nil {
			return total, fmt.Errorf("store: purge questions: %w", err)
		}
		n, _ := res.RowsAffected()
		total += n
		if n < 2000 {
			return total, nil
		}
	}
}

// EachQuestion calls fn with every question logged at or after since,
// oldest first, reading from the read pool.
func (db *DB) EachQuestion(ctx context.Context, since time.Time, fn func(*Question) error) error {
	rows, err := db.read.QueryContext(ctx, `
		SELECT id, at, site, kind, turn_id, question, corrections, action, evidence, top_urls, expanded, live_fetch, outcome, vote, comment
		FROM questions WHERE at >= ? ORDER BY at, id`, fmtTimeNano(since))
	if err != nil {
		return fmt.Errorf("store: read questions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			q              Question
			at, corr, top  string
			expanded, live bool
		)
		if err := rows.Scan(&q.ID, &at, &q.Site, &q.Kind, &q.TurnID, &q.Text, &corr, &q.Action, &q.Evidence, &top,
			&expanded, &live, &q.Outcome, &q.Vote, &q.Comment); err != nil {
			return fmt.Errorf("store: read questions: %w", err)
		}
		q.At, q.Expanded, q.LiveFetch = parseTimeNano(at), expanded, live
		_ = json.Unmarshal([]byte(corr), &q.Corrections)
		_ = json.Unmarshal([]byte(top), &q.TopURLs)
		if err := fn(&q); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: read questions: %w", err)
	}
	return nil
}
