package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/askwp/askwpd/store"
)

// passBackend runs a made-up pass: two progress lines and a site's run,
// or, when running, the refusal of a pass already running.
type passBackend struct {
	fakeBackend
	running bool
	got     IndexRequest
}

func (p *passBackend) IndexPass(ctx context.Context, req IndexRequest, emit func(IndexEvent)) error {
	p.got = req
	if p.running && !req.Wait {
		return fmt.Errorf("site 3: held by askwpd serve, nightly pass: %w", ErrAlreadyRunning)
	}
	if p.running {
		emit(IndexEvent{Event: "running", Site: 3, Error: "held by askwpd serve, nightly pass"})
	}
	emit(IndexEvent{Event: "progress", Site: req.Site, Done: 1, Total: 2})
	emit(IndexEvent{Event: "progress", Site: req.Site, Done: 2, Total: 2})
	emit(IndexEvent{Event: "site", Site: req.Site, Run: &store.Run{ID: 9, Indexed: 2}})
	return nil
}

// TestIndex_Stream: POST /v1/index takes the token, passes full, site and
// wait on, and answers NDJSON lines, the last "done", or "running" for a
// pass refused because another runs.
func TestIndex_Stream(t *testing.T) {
	b := &passBackend{}
	ts := newTestServer(t, b)
	post := func(query, token string) (int, []IndexEvent) {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/index"+query, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var evs []IndexEvent
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev IndexEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				if resp.StatusCode == 200 {
					t.Fatalf("line %q: %v", sc.Text(), err)
				}
				continue
			}
			evs = append(evs, ev)
		}
		return resp.StatusCode, evs
	}
	if code, _ := post("", ""); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	if code, _ := post("?site=x", testToken); code != http.StatusBadRequest {
		t.Errorf("site=x: %d, want 400", code)
	}
	code, evs := post("?full=1&site=3", testToken)
	if code != 200 || len(evs) != 4 {
		t.Fatalf("answer %d with %d lines, want 200 with 4: %+v", code, len(evs), evs)
	}
	if b.got != (IndexRequest{Full: true, Site: 3}) {
		t.Errorf("request %+v, want full for site 3", b.got)
	}
	if evs[0].Event != "progress" || evs[1].Done != 2 || evs[2].Event != "site" || evs[2].Run.Indexed != 2 || evs[3].Event != "done" {
		t.Errorf("lines %+v, want progress, progress, site, done", evs)
	}

	b.running = true
	_, evs = post("", testToken)
	if len(evs) != 1 || evs[0].Event != "running" || evs[0].Site != 0 {
		t.Errorf("beside a running pass: %+v, want one last line running", evs)
	}
	_, evs = post("?wait=1", testToken)
	if len(evs) != 5 || evs[0].Event != "running" || evs[0].Site != 3 || evs[4].Event != "done" {
		t.Errorf("waiting beside a running pass: %+v, want running, …, done", evs)
	}
}
