package extract

import (
	"encoding/json"
	"fmt"
	"time"
)

// jsonTime encodes a time as RFC 3339, and the zero time as "".
type jsonTime time.Time

func (t jsonTime) MarshalJSON() ([]byte, error) {
	tt := time.Time(t)
	if tt.IsZero() {
		return []byte(`""`), nil
	}
	return json.Marshal(tt.Format(time.RFC3339))
}

func (t *jsonTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("extract: date: %w", err)
	}
	if s == "" {
		*t = jsonTime{}
		return nil
	}
	tt, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return fmt.Errorf("extract: date: %w", err)
	}
	*t = jsonTime(tt)
	return nil
}

type resultAlias Result

type resultJSON struct {
	*resultAlias
	Published jsonTime `json:"published"`
	Modified  jsonTime `json:"modified"`
	FetchedAt jsonTime `json:"fetched_at"`
}

// MarshalJSON encodes dates as RFC 3339 strings and unknown (zero) dates as "".
func (r Result) MarshalJSON() ([]byte, error) {
	a := resultAlias(r)
	return json.Marshal(resultJSON{
		resultAlias: &a,
		Published:   jsonTime(r.Published),
		Modified:    jsonTime(r.Modified),
		FetchedAt:   jsonTime(r.FetchedAt),
	})
}

// UnmarshalJSON is the inverse of MarshalJSON.
func (r *Result) UnmarshalJSON(b []byte) error {
	var j resultJSON
	j.resultAlias = (*resultAlias)(r)
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	r.Published = time.Time(j.Published)
	r.Modified = time.Time(j.Modified)
	r.FetchedAt = time.Time(j.FetchedAt)
	return nil
}
