package tool

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzSearchArgs decodes arbitrary bytes as search_site arguments.
// Property: bad input is an *Error with code "invalid" (a 400), never a panic; good
// input gives a query within the limits.
func FuzzSearchArgs(f *testing.F) {
	for _, s := range []string{
		`{"query": "espresso grinder"}`,
		`{"query": "x", "limit": 100000, "filters": {"type": ["post", "page"], "after": "2026-01-01"}}`,
		`{"query": 5}`, `[]`, `{"query": "a", "sort": "bogus"}`, `{"query": "\u0000"}`,
		`{"query": "a", "filters": {"type": "post"}, "extra": 1}`, ``, `{"query": "a"} {"query": "b"}`,
		`{"query": "a", "limit": -5, "filters": {"before": "yesterday"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var args SearchArgs
		err := DecodeArgs(json.RawMessage(raw), &args)
		if err == nil {
			var q = args
			sq, qerr := q.ToSearchQuery()
			if qerr != nil {
				err = qerr
			} else {
				if sq.Limit < 1 || sq.Limit > maxLimit {
					t.Fatalf("limit %d out of range", sq.Limit)
				}
				if utf8.RuneCountInString(sq.Text) > maxQueryRunes || sq.Text == "" {
					t.Fatalf("query of %d runes passed", utf8.RuneCountInString(sq.Text))
				}
				return
			}
		}
		var ae *Error
		if !errors.As(err, &ae) || ae.Code != "invalid" {
			t.Fatalf("error %v (%T) is not an invalid *Error", err, err)
		}
	})
}
