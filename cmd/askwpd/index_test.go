package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/internal/wptest"
	"github.com/askwp/askwpd/store"
)

// TestIndex_BesideARunningPass: while another process holds the crawl
// lease, `askwpd index` refuses in one line that names the holder and
// what to do instead; with --wait it says why it waits, and runs its pass
// once the lease is released.
func TestIndex_BesideARunningPass(t *testing.T) {
	site := wptest.Get(t)
	bin := buildBinary(t)
	state := t.TempDir()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(state, "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	host, _ := os.Hostname()
	// This test's own pid: a holder that is alive on this host.
	held := store.Lease{Name: "crawl", Holder: "test", PID: os.Getpid(), Host: host, What: "askwpd serve, nightly pass,"}
	if _, err := db.AcquireLease(ctx, held, time.Hour, nil); err != nil {
		t.Fatal(err)
	}

	var stderr bytes.Buffer
	cmd := exec.Command(bin, "index", "--wp-root", site.Root(), "--state-dir", state)
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit = %v, want status 1\n%s", err, stderr.String())
	}
	msg := strings.TrimSpace(stderr.String())
	for _, want := range []string{"askwpd serve, nightly pass,", fmt.Sprintf("pid %d on %s", os.Getpid(), host), "lapses at", "--wait", "reindex now"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("refusal is not one line: %q", msg)
	}

	stderr.Reset()
	cmd = exec.Command(bin, "index", "--wait", "--wp-root", site.Root(), "--state-dir", state)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(2 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("askwpd index --wait ended while the lease was held: %v\n%s", err, stderr.String())
	default:
	}
	if err := db.ReleaseLease(ctx, "crawl", "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("askwpd index --wait after the release: %v\n%s", err, stderr.String())
		}
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("askwpd index --wait did not finish within 3 min of the release\n%s", stderr.String())
	}
	out := stderr.String()
	if !strings.Contains(out, "waiting: ") || !strings.Contains(out, "askwpd serve, nightly pass,") || !strings.Contains(out, "indexed ") {
		t.Errorf("--wait output does not say why it waited and then what it indexed:\n%s", out)
	}
	// The pass leaves the search index's snapshot, for serve's next start.
	if fi, err := os.Stat(filepath.Join(state, "search-index.snap")); err != nil || fi.Size() == 0 {
		t.Errorf("askwpd index left no search index snapshot: %v", err)
	}
}

// TestIndex_HandsOffToServe: beside a running serve, askwpd index has
// serve run the pass, and returns once serve's index in memory holds it:
// the very next search finds a post published before the command and no
// longer finds one trashed before it. Run by the command itself, the pass
// reached serve's memory only once a search noticed, seconds later.
func TestIndex_HandsOffToServe(t *testing.T) {
	site := wptest.Get(t)
	site.Lock(t)
	bin := buildBinary(t)
	php := func(code string) string { return site.PHP(t, code) }
	s := checkHandOff(t, bin, site.Root(), php, 0, "")
	checkHandOffWaits(t, bin, s)
}

// TestIndex_HandsOffToServeOnANetwork: the same for one site of a
// network, by --site, searched from that site.
func TestIndex_HandsOffToServeOnANetwork(t *testing.T) {
	net := wptest.GetNetwork(t)
	net.Lock(t)
	bin := buildBinary(t)
	const blog = 3
	// The network's host is matched with its port, which Site.PHP leaves
	// out.
	u, _ := url.Parse(net.URL())
	php := func(code string) string {
		script := fmt.Sprintf(`$_SERVER['HTTP_HOST'] = %q; $_SERVER['REQUEST_URI'] = '/'; define('WP_USE_THEMES', false); require %q; switch_to_blog(%d); `,
			u.Host, strings.TrimRight(net.Root(), "/")+"/wp-load.php", blog) + code
		out, err := exec.Command("php", "-r", script).CombinedOutput()
		if err != nil {
			t.Fatalf("php: %v: %s", err, out)
		}
		return string(out)
	}
	checkHandOff(t, bin, net.Root(), php, blog, strconv.Itoa(blog), "--full")
}

type handoffServe struct {
	base, state, token, root, bin string
	stderr                        *wptest.SyncBuffer
}

// startHandoffServe starts askwpd serve without a schedule and waits for
// its first pass; at the end of the test it stops it with SIGTERM and
// checks that the clean shutdown removed serve.addr.
func startHandoffServe(t *testing.T, bin, root string) *handoffServe {
	t.Helper()
	s := &handoffServe{state: t.TempDir(), root: root, bin: bin, stderr: &wptest.SyncBuffer{}}
	listen := freePort(t)
	s.base = "http://" + listen
	cmd := exec.Command(bin, "serve", "--wp-root", root, "--state-dir", s.state, "--listen", listen,
		"--set", "schedule.disabled=true")
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve exited with %v", err)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("serve did not stop within 30s of SIGTERM")
		}
		if _, err := os.Stat(filepath.Join(s.state, "serve.addr")); !os.IsNotExist(err) {
			t.Errorf("serve.addr after a clean shutdown: %v, want it removed", err)
		}
		if t.Failed() {
			t.Logf("serve's log:\n%s", tail([]byte(s.stderr.String()), 4000))
		}
	})
	s.token = waitIndexed(t, s.base, s.state, versionOf(t, bin))
	s.waitNetwork(t)
	b, err := os.ReadFile(filepath.Join(s.state, "serve.addr"))
	if err != nil || strings.TrimSpace(string(b)) != listen {
		t.Fatalf("serve.addr = %q, %v; want %q", b, err, listen)
	}
	return s
}

// waitNetwork waits, on a network, for every site's first pass: until
// then askwpd index (without --wait) refuses, a pass being run.
func (s *handoffServe) waitNetwork(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		req, _ := http.NewRequest("GET", s.base+"/v1/status", nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var st api.Status
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("/v1/status: %v", err)
		}
		if st.Network == nil {
			return
		}
		done := true
		for _, ss := range st.Network.Sites {
			done = done && !ss.Crawling && ss.LastRun != nil
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the network's first passes did not end within 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkHandOff starts serve on the WordPress at root, publishes a post and
// trashes one serve's first pass indexed, runs askwpd index (for site
// blog, when not 0, with flags), and searches once, at once, from site
// from.
func checkHandOff(t *testing.T, bin, root string, php func(string) string, blog int64, from string, flags ...string) *handoffServe {
	t.Helper()
	post := func(word string) (int64, string) {
		out := php(`$id = wp_insert_post(array('post_title' => 'Handoff check ` + word + `', 'post_status' => 'publish', 'post_author' => 1,
			'post_content' => ` + postBody("The word "+word+" is written once, for the hand-off test.") + `), true);
			if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); }
			echo "post: ", $id, ' ', get_permalink($id);`)
		_, after, _ := strings.Cut(out, "post: ")
		f := strings.Fields(after)
		if len(f) != 2 {
			t.Fatalf("publish: %q", out)
		}
		id, _ := strconv.ParseInt(f[0], 10, 64)
		t.Cleanup(func() { php(fmt.Sprintf(`wp_delete_post(%d, true);`, id)) })
		return id, f[1]
	}
	doomedWord := wptest.Word("handoffgone", "post")
	doomed, doomedURL := post(doomedWord)
	s := startHandoffServe(t, bin, root)
	if !s.findsAt(t, from, doomedWord, doomedURL) {
		t.Fatalf("the post to trash (%s) is not found after serve's first pass", doomedURL)
	}

	newWord := wptest.Word("handoffnew", "post")
	_, newURL := post(newWord)
	php(fmt.Sprintf(`wp_trash_post(%d);`, doomed))
	start := time.Now()
	out, err := runIndex(s, blog, flags...)
	if err != nil {
		t.Fatalf("askwpd index: %v\n%s", err, out)
	}
	took := time.Since(start)
	foundNew := s.findsAt(t, from, newWord, newURL)
	foundDoomed := s.findsAt(t, from, doomedWord, doomedURL)
	t.Logf("askwpd index took %v; the next search: new post found=%v, trashed post found=%v\n%s", took.Round(time.Millisecond), foundNew, foundDoomed, out)
	if !foundNew {
		t.Errorf("the search right after askwpd index does not find the post published before it (%s)", newURL)
	}
	if foundDoomed {
		t.Errorf("the search right after askwpd index still finds the post trashed before it (%s)", doomedURL)
	}
	if !strings.Contains(out, "by askwpd serve") {
		t.Errorf("askwpd index does not say serve ran the pass:\n%s", out)
	}
	return s
}

// checkHandOffWaits: while another process holds the crawl lease, the
// handed-off pass is refused with the holder named, and with --wait it
// says it waits, then runs once the lease is released.
func checkHandOffWaits(t *testing.T, bin string, s *handoffServe) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(s.state, "askwpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	host, _ := os.Hostname()
	held := store.Lease{Name: "crawl", Holder: "test", PID: os.Getpid(), Host: host, What: "the hand-off test's pass,"}
	if _, err := db.AcquireLease(ctx, held, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	out, err := runIndex(s, 0)
	if err == nil || !strings.Contains(out, "the hand-off test's pass,") || !strings.Contains(out, "--wait") {
		t.Errorf("beside a held lease: %v, want a refusal naming the holder and --wait:\n%s", err, out)
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := runIndex(s, 0, "--wait")
		done <- result{out, err}
	}()
	time.Sleep(3 * time.Second)
	select {
	case r := <-done:
		t.Fatalf("askwpd index --wait ended while the lease was held: %v\n%s", r.err, r.out)
	default:
	}
	if err := db.ReleaseLease(ctx, "crawl", "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || !strings.Contains(r.out, "waiting: ") || !strings.Contains(r.out, "by askwpd serve") {
			t.Errorf("askwpd index --wait: %v, want it to say it waited, then the pass serve ran:\n%s", r.err, r.out)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("askwpd index --wait did not end within 3 min of the release")
	}
}

func versionOf(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "askwpd ")
}

func runIndex(s *handoffServe, blog int64, flags ...string) (string, error) {
	args := append([]string{"index", "--wp-root", s.root, "--state-dir", s.state}, flags...)
	if blog != 0 {
		args = append(args, "--site", strconv.FormatInt(blog, 10))
	}
	out, err := exec.Command(s.bin, args...).CombinedOutput()
	return string(out), err
}

// findsAt reports whether search_site, asked from site from ("" for the
// main site), returns the page at url for word.
func (s *handoffServe) findsAt(t *testing.T, from, word, url string) bool {
	t.Helper()
	req, _ := http.NewRequest("POST", s.base+"/v1/tools/search_site", strings.NewReader(`{"query":"`+word+`"}`))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	if from != "" {
		req.Header.Set(api.SiteHeader, from)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Results []struct {
			URL string `json:"url"`
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("search_site: %d %v", resp.StatusCode, err)
	}
	for _, res := range r.Results {
		if res.URL == url {
			return true
		}
	}
	return false
}
