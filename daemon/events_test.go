package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/search"
	"github.com/askwp/askwpd/store"
)

// freshnessLimit is the acceptance bound from an event to search.
const freshnessLimit = time.Second

// eventClient signs and sends webhook events as the PHP shim does.
type eventClient struct {
	t      *testing.T
	url    string
	secret []byte
	n      int
}

// newEventClient serves d's API until the test ends and signs events with
// d's webhook secret, as the shim does.
func newEventClient(t *testing.T, d *Daemon) *eventClient {
	t.Helper()
	srv := httptest.NewServer(api.New(d, api.Options{Token: "test-token-0123456789", Log: d.Log}).Handler())
	t.Cleanup(srv.Close)
	secret, err := d.WebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	return &eventClient{t: t, url: srv.URL, secret: secret}
}

func (c *eventClient) send(ev map[string]any) (int, string) {
	c.t.Helper()
	if ev["id"] == nil {
		c.n++
		ev["id"] = fmt.Sprintf("test-%d-%d", time.Now().UnixNano(), c.n)
	}
	body, _ := json.Marshal(map[string]any{"events": []any{ev}})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	return c.post(ts, api.Sign(c.secret, ts, body), body)
}

func (c *eventClient) post(ts, sig string, body []byte) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest("POST", c.url+"/v1/events", strings.NewReader(string(body)))
	req.Header.Set(api.HeaderTimestamp, ts)
	req.Header.Set(api.HeaderSignature, sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// searchHas reports whether a search for q finds a passage at url.
func searchHas(t *testing.T, d *Daemon, q, url string) bool {
	t.Helper()
	res, err := d.Search.Search(context.Background(), search.Query{Text: q, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Hits {
		if url == "" || h.URL == url {
			return true
		}
	}
	return false
}

// waitSearch polls until searchHas(q, url) == want, and returns how long
// that took from start.
func waitSearch(t *testing.T, d *Daemon, start time.Time, q, url string, want bool, limit time.Duration) time.Duration {
	t.Helper()
	for {
		if searchHas(t, d, q, url) == want {
			return time.Since(start)
		}
		if time.Since(start) > limit+5*time.Second {
			ctx := context.Background()
			es, _ := d.Store.EventStats(ctx, crawl.MaxEventAttempts)
			st, err := d.Store.FindURL(ctx, url)
			t.Fatalf("search %q: found=%v not reached after %v; events %+v; url row %+v (%v)", q, want, time.Since(start), es, st, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type phpPost struct {
	ID  int64  `json:"id"`
	URL string `json:"url"`
}

// publishPost publishes a post through WordPress's PHP API, deleted when
// the test ends. title and html go into PHP single quotes as they are.
func publishPost(t *testing.T, site *wptest.Site, title, html string) phpPost {
	t.Helper()
	var p phpPost
	out := site.PHP(t, `$id = wp_insert_post(array('post_title' => '`+title+`', 'post_content' => '`+html+`', 'post_status' => 'publish'), true);
		if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); }
		echo json_encode(array('id' => $id, 'url' => get_permalink($id)));`)
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &p); err != nil {
		t.Fatalf("php: %v: %s", err, out)
	}
	t.Cleanup(func() { site.PHP(t, fmt.Sprintf(`wp_delete_post(%d, true);`, p.ID)) })
	return p
}

// TestEvents_RealWordPress is the freshness acceptance: publishing,
// editing, password-protecting, making private and trashing a post through
// WordPress's own API, each followed by the shim's signed event, shows in
// search within a second. Events that are unsigned, stale or replayed are
// refused and change nothing, and an event is never trusted to add.
func TestEvents_RealWordPress(t *testing.T) {
	site := wptest.Get(t)
	site.Lock(t)
	ctx := context.Background()
	d := openTestDaemon(t, site, nil)
	stop := d.Crawler.StartEvents(ctx, false)
	defer stop()
	ec := newEventClient(t, d)

	word := func() string { return wptest.Word("zq", "vex") }
	w0, w1, w2 := word(), word(), word()
	p := publishPost(t, site, "Freshness "+w0, "<p>The "+w1+" test paragraph about lighthouse keepers and their lamps.</p>")
	u := crawl.Canonical(p.URL)
	setPost := func(php string) {
		site.PHP(t, fmt.Sprintf(`$id = %d; `, p.ID)+php)
	}
	step := func(name string, ev map[string]any, q string, want bool) {
		t.Helper()
		ev["post_id"], ev["post_type"] = p.ID, "post"
		if ev["url"] == nil {
			ev["url"] = p.URL
		}
		start := time.Now()
		if code, body := ec.send(ev); code != 202 {
			t.Fatalf("%s: event answered %d %s", name, code, body)
		}
		took := waitSearch(t, d, start, q, u, want, freshnessLimit)
		t.Logf("%s: search shows it after %v", name, took)
		if took > freshnessLimit {
			t.Errorf("%s: took %v, want <= %v", name, took, freshnessLimit)
		}
	}

	step("publish", map[string]any{"type": "post_published", "status": "publish", "public": true}, w1, true)

	setPost(`wp_update_post(array('ID' => $id, 'post_content' => '<p>Now the ` + w2 + ` paragraph about harbour pilots.</p>'));`)
	step("edit", map[string]any{"type": "post_updated", "status": "publish", "public": true}, w2, true)
	if searchHas(t, d, w1, u) {
		t.Errorf("edit: the old text %s is still found", w1)
	}

	setPost(`wp_update_post(array('ID' => $id, 'post_password' => 'hunter2'));`)
	step("password", map[string]any{"type": "post_updated", "status": "publish", "public": false}, w2, false)

	// An event claiming the protected post is public is not trusted: the
	// database says otherwise, so nothing is added.
	code, _ := ec.send(map[string]any{"type": "post_published", "post_id": p.ID, "status": "publish", "public": true, "url": p.URL})
	if code != 202 {
		t.Fatalf("lying event answered %d", code)
	}
	waitApplied(t, d)
	if searchHas(t, d, w2, "") {
		t.Fatal("a password-protected post was indexed on an event's word")
	}

	setPost(`wp_update_post(array('ID' => $id, 'post_password' => ''));`)
	step("unprotect", map[string]any{"type": "post_updated", "status": "publish", "public": true}, w2, true)

	setPost(`wp_update_post(array('ID' => $id, 'post_status' => 'private'));`)
	step("private", map[string]any{"type": "post_unpublished", "status": "private", "public": false}, w2, false)

	setPost(`wp_update_post(array('ID' => $id, 'post_status' => 'publish'));`)
	step("republish", map[string]any{"type": "post_published", "status": "publish", "public": true}, w2, true)

	// Refused events change nothing: WordPress trashes the post, but only
	// a valid event (or the schedule) may act on that.
	ev := map[string]any{"id": fmt.Sprintf("replay-%d", time.Now().UnixNano()), "type": "post_updated", "post_id": p.ID, "url": p.URL}
	if code, _ := ec.send(ev); code != 202 {
		t.Fatalf("first send of the replay id answered %d", code)
	}
	waitApplied(t, d)
	setPost(`wp_trash_post($id);`)
	body := []byte(fmt.Sprintf(`{"events":[{"id":"bad-%d","type":"post_trashed","post_id":%d,"url":%q}]}`, time.Now().UnixNano(), p.ID, p.URL))
	now := strconv.FormatInt(time.Now().Unix(), 10)
	stale := strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10)
	for name, hdr := range map[string][2]string{
		"bad signature":   {now, api.Sign([]byte("not the secret at all"), now, body)},
		"stale timestamp": {stale, api.Sign(ec.secret, stale, body)},
	} {
		if code, _ := ec.post(hdr[0], hdr[1], body); code != 401 {
			t.Errorf("%s: answered %d, want 401", name, code)
		}
	}
	if code, _ := ec.send(ev); code != 401 {
		t.Errorf("replayed id answered %d, want 401", code)
	}
	// A refused event that was stored anyway would be pending now: once the
	// queue is empty, whatever it could have done is done.
	waitApplied(t, d)
	if !searchHas(t, d, w2, u) {
		t.Error("a refused event changed the index")
	}

	step("trash", map[string]any{"type": "post_trashed", "status": "trash", "public": false}, w2, false)
}

// waitApplied waits until the event queue is empty.
func waitApplied(t *testing.T, d *Daemon) {
	t.Helper()
	waitFor(t, 10*time.Second, "the pending events to be applied", func() bool {
		st, err := d.Store.EventStats(context.Background(), crawl.MaxEventAttempts)
		if err != nil {
			t.Fatal(err)
		}
		return st.Pending == 0
	})
}

// TestEvents_SurviveRestart: an event accepted before the daemon stops
// without applying it is applied by the next daemon on the same state.
func TestEvents_SurviveRestart(t *testing.T) {
	site := wptest.Get(t)
	site.Lock(t)
	ctx := context.Background()
	cfg := config.Default()
	cfg.WPRoot = site.Root()
	cfg.StateDir = t.TempDir()
	cfg.Crawl.RatePerSec = 200
	cfg.Schedule.Disabled = true
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	w := wptest.Word("zq", "rst")
	var p phpPost
	out := site.PHP(t, `$id = wp_insert_post(array('post_title' => 'Restart `+w+`', 'post_content' => '<p>The `+w+` paragraph on tide tables.</p>', 'post_status' => 'publish'));
		echo json_encode(array('id' => $id, 'url' => get_permalink($id)));`)
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &p); err != nil {
		t.Fatalf("php: %v: %s", err, out)
	}
	t.Cleanup(func() { site.PHP(t, fmt.Sprintf(`wp_delete_post(%d, true);`, p.ID)) })

	// The first daemon accepts the event (no worker running) and stops.
	d1, err := Open(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	n, err := d1.ReceiveEvents(ctx, []*store.Event{{EventID: "restart-" + w, Type: store.EventPostPublished, PostID: p.ID, URL: p.URL,
		Payload: json.RawMessage(`{"public":true}`)}})
	if err != nil || n != 1 {
		t.Fatalf("ReceiveEvents = %d, %v", n, err)
	}
	d1.Close()

	d2, err := Open(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	stop := d2.Crawler.StartEvents(ctx, false)
	defer stop()
	waitSearch(t, d2, time.Now(), w, crawl.Canonical(p.URL), true, 5*time.Second)
	// The page is searchable as soon as it is stored; the event is marked
	// applied right after.
	var e *store.Event
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		e, err = d2.Store.FindEvent(ctx, "restart-"+w)
		if err == nil && !e.AppliedAt.IsZero() || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || e.AppliedAt.IsZero() {
		t.Fatalf("event after restart: %+v, %v", e, err)
	}
	if n, err := d2.Crawler.ApplyEvents(ctx); err != nil || n != 0 {
		t.Fatalf("a second ApplyEvents applied %d (%v), want 0: events apply once", n, err)
	}
}

// TestEvents_CatchUpOnStart: what editors did while the daemon was down
// reaches search as it starts, from the database alone, with no event: a
// post updated and one published are re-rendered, a trashed one is taken
// out. Pages that did not change are left alone.
func TestEvents_CatchUpOnStart(t *testing.T) {
	site := wptest.Get(t)
	site.Lock(t)
	ctx := context.Background()
	logs := &wptest.SyncBuffer{}
	d := openTestDaemon(t, site, logs)

	word := func() string { return wptest.Word("zq", "cup") }
	before, after, trashed, fresh := word(), word(), word(), word()
	newPost := func(title, text string) phpPost {
		return publishPost(t, site, title, "<p>The "+text+" paragraph about canal locks and their keepers.</p>")
	}
	kept, edited, gone := newPost("Kept", before), newPost("Edited", before), newPost("Trashed", trashed)
	// Changed half a minute ago: the catch-up reads them (it looks back a
	// minute before the newest fetch, for clock skew) and must see that
	// their pages were fetched since.
	site.PHP(t, fmt.Sprintf(`global $wpdb; foreach (array(%d, %d, %d) as $id) {
		$wpdb->update($wpdb->posts, array('post_modified_gmt' => gmdate('Y-m-d H:i:s', time() - 30), 'post_modified' => date('Y-m-d H:i:s', current_time('timestamp') - 30)), array('ID' => $id));
		clean_post_cache($id); }`, kept.ID, edited.ID, gone.ID))

	// Up: the three are indexed on their events.
	stop := d.Crawler.StartEvents(ctx, true)
	for i, p := range []phpPost{kept, edited, gone} {
		if _, err := d.ReceiveEvents(ctx, []*store.Event{{EventID: fmt.Sprintf("cup-%s-%d", before, i), Type: store.EventPostPublished,
			PostID: p.ID, URL: p.URL, Payload: json.RawMessage(`{"public":true}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	waitApplied(t, d)
	waitSearch(t, d, time.Now(), trashed, crawl.Canonical(gone.URL), true, 5*time.Second)
	stop()

	// Down: the shim's events for these never arrive.
	down := time.Now()
	site.PHP(t, fmt.Sprintf(`wp_update_post(array('ID' => %d, 'post_content' => '<p>Now the %s paragraph about canal locks.</p>')); wp_trash_post(%d);`,
		edited.ID, after, gone.ID))
	added := newPost("Published", fresh)
	// Down a while: longer than a sender's clock may run behind this
	// host's (a quarter second), so the changes' "at" below is clearly
	// before the restart.
	time.Sleep(500 * time.Millisecond)

	// Up again, on the same state.
	start := time.Now()
	stop = d.Crawler.StartEvents(ctx, true)
	defer stop()
	waitSearch(t, d, start, trashed, "", false, 5*time.Second)
	tookEdit := waitSearch(t, d, start, after, crawl.Canonical(edited.URL), true, 5*time.Second)
	tookNew := waitSearch(t, d, start, fresh, "", true, 5*time.Second)
	t.Logf("after the start: the edit is searchable in %v, the new post in %v", tookEdit, tookNew)
	if searchHas(t, d, before, crawl.Canonical(edited.URL)) {
		t.Errorf("the edited post's old text %s is still found", before)
	}
	if es, err := d.Store.EventStats(ctx, crawl.MaxEventAttempts); err != nil || es.Pending != 0 {
		t.Errorf("events pending: %+v, %v", es, err)
	}
	waitFor(t, 5*time.Second, "the catch-up to finish", func() bool { return strings.Contains(logs.String(), `"msg":"Caught up"`) })
	// The new post was fetched at the permalink the catch-up spelled, not
	// as /?p=ID, which WordPress answers with a redirect first. Its fetch
	// is recorded after its page is stored (searchable), so once the
	// catch-up is done.
	if st, _ := d.Store.FindURL(ctx, crawl.Canonical(fmt.Sprintf("%s/?p=%d", strings.TrimRight(site.URL(), "/"), added.ID))); st != nil {
		t.Errorf("the new post was fetched as /?p=%d: %+v", added.ID, st)
	}
	if st, err := d.Store.FindURL(ctx, crawl.Canonical(added.URL)); err != nil || st == nil || st.Status != "indexed" {
		t.Errorf("the new post's permalink %s: %+v, %v", added.URL, st, err)
	}
	rendered := loggedPosts(logs.String(), "Re-rendered on catch-up")
	if !slices.Contains(rendered, edited.ID) || !slices.Contains(rendered, added.ID) || slices.Contains(rendered, kept.ID) {
		t.Errorf("re-rendered on catch-up: posts %v; want %d (edited) and %d (published), not %d (unchanged)", rendered, edited.ID, added.ID, kept.ID)
	}

	// Then the shim's outbox sends what it kept. The changes those events
	// report ("at") came before the catch-up's re-renders began: they are
	// answered without a fetch. One that came after is re-rendered.
	changed := float64(down.UnixMilli()) / 1000
	mark := len(logs.String())
	for i, p := range []phpPost{edited, added} {
		if _, err := d.ReceiveEvents(ctx, []*store.Event{{EventID: fmt.Sprintf("cup-late-%s-%d", before, i), Type: store.EventPostUpdated,
			PostID: p.ID, URL: p.URL, Payload: json.RawMessage(fmt.Sprintf(`{"public":true,"at":%.3f}`, changed))}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.ReceiveEvents(ctx, []*store.Event{{EventID: "cup-later-" + before, Type: store.EventPostUpdated,
		PostID: kept.ID, URL: kept.URL, Payload: json.RawMessage(fmt.Sprintf(`{"public":true,"at":%.3f}`, float64(time.Now().UnixMilli())/1000))}}); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, d)
	onEvent := loggedPosts(logs.String()[mark:], "Re-rendered on event")
	if !slices.Contains(onEvent, kept.ID) || slices.Contains(onEvent, edited.ID) || slices.Contains(onEvent, added.ID) {
		t.Errorf("re-rendered on events: posts %v; want %d (changed after the catch-up), not %d or %d (shown by it)", onEvent, kept.ID, edited.ID, added.ID)
	}
}

// loggedPosts returns the post_id of each JSON log line with message msg.
func loggedPosts(logs, msg string) []int64 {
	var ids []int64
	for _, line := range strings.Split(logs, "\n") {
		var l struct {
			Msg    string `json:"msg"`
			PostID int64  `json:"post_id"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == msg {
			ids = append(ids, l.PostID)
		}
	}
	return ids
}
