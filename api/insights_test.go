package api

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/insights"
	"github.com/askwp/askwpd/store"
)

// insightBackend serves the report of a real question log over a real
// store.
type insightBackend struct {
	fakeBackend
	log *insights.Log
}

func (b *insightBackend) Insights(ctx context.Context, opt insights.ReportOptions) (*insights.Report, error) {
	return b.log.Report(ctx, opt)
}

func (b *insightBackend) Feedback(ctx context.Context, turnID, vote, comment string) error {
	return b.log.Vote(ctx, turnID, vote, comment)
}

// TestAdmin_Insights: what visitors typed reaches the admin page escaped,
// the chart is drawn, and the CSV download needs the admin's session or
// token and defuses formulas.
func TestAdmin_Insights(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := insights.Open(db, insights.Options{Retention: 30 * 24 * time.Hour})
	defer l.Close()
	var qs []*store.Question
	for i := 0; i < 3; i++ {
		qs = append(qs, &store.Question{At: time.Now().Add(-time.Duration(i) * 24 * time.Hour), Kind: "search",
			Text: `=cmd|' gift cards <script>alert(1)</script>`, Action: "no_match", Evidence: "none"})
	}
	if err := db.InsertQuestions(ctx, qs); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, &insightBackend{log: l})
	get := func(path string, auth bool) (int, string) {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+testToken)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	st, body := get("/admin", true)
	if st != 200 || strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("/admin: %d, the visitor's text not escaped:\n%.2000s", st, body)
	}
	if !strings.Contains(body, `id="questions" data-value="3"`) || !strings.Contains(body, "not answered</title>") {
		t.Errorf("/admin lacks the questions figure or the chart")
	}
	if st, _ := get("/admin/insights.csv", false); st != 401 {
		t.Errorf("/admin/insights.csv without auth: %d, want 401", st)
	}
	st, body = get("/admin/insights.csv", true)
	if st != 200 || !strings.HasPrefix(body, "side,rank,kind") || !strings.Contains(body, `'=cmd|`) {
		t.Errorf("/admin/insights.csv: %d\n%s", st, body)
	}
	if st, _ := get("/v1/insights?limit=0", true); st != 400 {
		t.Errorf("limit=0: %d, want 400", st)
	}
}
