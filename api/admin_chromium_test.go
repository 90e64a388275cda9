package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/askwp/askwpd/api"
)

// chromiumPath finds Debian's chromium; CI must have it (scripts/test.sh
// installs it), elsewhere the test is skipped without it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (apt-get install chromium)")
	}
	t.Skip("chromium is not installed")
	return ""
}

// artifactDir is where the test leaves screenshots: $ASKWPD_ARTIFACTS, or
// a folder under the system temp dir that outlives the test.
func artifactDir(t *testing.T) string {
	dir := os.Getenv("ASKWPD_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "askwpd-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAdmin_Chromium drives /admin in headless Chromium at a phone's
// size: the token link signs in, the numbers match /v1/status, the page
// fits the screen, and "Reindex now" starts a pass.
func TestAdmin_Chromium(t *testing.T) {
	bin := chromiumPath(t)
	d, ts := e2eDaemon(t)

	// Some traffic, so the retrieval numbers are not all zero.
	for _, q := range []string{"espresso grinder", "sourdough starter", "zzqx unknown words", "mariadb backups"} {
		httpTool(t, ts, "search_site", map[string]any{"query": q})
	}
	httpTool(t, ts, "get_document", map[string]any{"id_or_url": d.Crawler.Site.URL + "/workshops/"})
	httpTool(t, ts, "get_recent", map[string]any{"limit": 2})

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	// The first Run starts the browser and must not carry a timeout (it
	// would stop the browser); the later steps do.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	tctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()

	if err := chromedp.Do(tctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), // a phone
		chromedp.Navigate(ts.URL+"/admin?token="+e2eToken),
		chromedp.WaitVisible(chromedp.ID("documents")),
	); err != nil {
		t.Fatal(err)
	}
	href := run(t, tctx, chromedp.Location())
	values := run(t, tctx, chromedp.Evaluate[map[string]string](
		`Object.fromEntries([...document.querySelectorAll('[id][data-value]')].map(e => [e.id, e.dataset.value]))`))
	toolCalls := run(t, tctx, chromedp.Evaluate[map[string]string](
		`Object.fromEntries([...document.querySelectorAll('[data-tool]')].map(e => [e.dataset.tool, e.dataset.value]))`))
	scrollW := run(t, tctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	winW := run(t, tctx, chromedp.Evaluate[int](`window.innerWidth`))
	shot := run(t, tctx, chromedp.FullScreenshot(100))
	dir := artifactDir(t)
	save := func(name string, b []byte) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
	save("admin.png", shot)
	if href != ts.URL+"/admin" {
		t.Errorf("after signing in the address is %s, want the token gone (%s/admin)", href, ts.URL)
	}
	if scrollW > winW {
		t.Errorf("page is %d px wide in a %d px window: not readable on a phone", scrollW, winW)
	}

	// The page shows what /v1/status says.
	req, _ := http.NewRequest("GET", ts.URL+"/v1/status", nil)
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var st api.Status
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	o := st.Observability
	if o == nil || st.LastRun == nil {
		t.Fatalf("status lacks observability or the last run: %+v", st)
	}
	want := map[string]float64{
		"documents": float64(st.Index.Documents), "chunks": float64(st.Index.Chunks), "thin": float64(st.Index.Thin),
		"searches": float64(o.Retrieval.Searches), "success_rate": o.Retrieval.SuccessRate,
		"no_evidence_rate": o.Retrieval.NoEvidenceRate, "thin_hit_rate": o.Retrieval.ThinHitRate,
		"live_fetch_rate": o.Retrieval.LiveFetchRate, "latency_p50": o.Retrieval.LatencyP50Ms,
		"latency_p95": o.Retrieval.LatencyP95Ms, "run_discovered": float64(st.LastRun.Discovered),
		"run_fetched": float64(st.LastRun.Fetched), "run_indexed": float64(st.LastRun.Indexed),
		"run_errors": float64(st.LastRun.Errors),
	}
	for id, w := range want {
		got, err := strconv.ParseFloat(values[id], 64)
		if err != nil || got != w {
			t.Errorf("page #%s = %q, /v1/status says %v", id, values[id], w)
		}
	}
	if st.Index.Documents == 0 || o.Retrieval.Searches < 4 {
		t.Errorf("status shows no work: %d documents, %d searches", st.Index.Documents, o.Retrieval.Searches)
	}
	for tool, ts := range o.Tools {
		if toolCalls[tool] != strconv.Itoa(ts.Calls) {
			t.Errorf("page shows %s calls for %s, /v1/status %d", toolCalls[tool], tool, ts.Calls)
		}
	}

	// "Reindex now" starts a pass.
	if err := chromedp.Do(tctx,
		chromedp.Click(chromedp.ID("reindex")),
		chromedp.WaitVisible(chromedp.ID("flash")),
	); err != nil {
		t.Fatal(err)
	}
	flash := run(t, tctx, chromedp.Text(chromedp.ID("flash")))
	href = run(t, tctx, chromedp.Location())
	shot = run(t, tctx, chromedp.FullScreenshot(100))
	save("admin-reindex.png", shot)
	if !strings.Contains(flash, "Reindex started") || !strings.HasSuffix(href, "/admin?reindex=started") {
		t.Errorf("after the button: %q at %s", flash, href)
	}
	// Let the pass finish before the site lock is released.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		st, err := d.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !st.Crawling && st.LastRun != nil && st.LastRun.Kind == "admin" && !st.LastRun.FinishedAt.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reindex pass did not finish in 3 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
