// Command freshness measures publish → searchable through the event path
// on the real test WordPress.
//
// For each sample, PHP records microtime(true) just before wp_insert_post
// and prints it with the new post's ID and permalink once the call
// returns. This program then sends the signed post_published event
// itself, as the shim does on shutdown, so the number does not depend on
// the shim being installed or on PHP's shutdown order, and polls POST /v1/tools/search_site on a running daemon (askwpd serve, in
// process, on a free loopback port) until the post's URL is a result.
// Latency = the first hit's time − the PHP timestamp.
//
// It holds the test site lock for the whole run and deletes its posts.
//
// Usage: go run ./bench/freshness [-n 20]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/crawl"
	"github.com/askwp/askwpd/daemon"
	"github.com/askwp/askwpd/internal/wptest"
)

func main() {
	n := flag.Int("n", 20, "samples")
	flag.Parse()
	if err := run(*n); err != nil {
		fmt.Fprintln(os.Stderr, "bench/freshness:", err)
		os.Exit(1)
	}
}

func env() (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(wptest.RepoRoot(), ".wp-test", "env"))
	if err != nil {
		return nil, fmt.Errorf("the test WordPress is not up: %w", err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = strings.Trim(v, `"'`)
		}
	}
	return m, nil
}

func php(e map[string]string, code string) (string, error) {
	u := strings.TrimPrefix(strings.TrimPrefix(e["SITE_URL"], "http://"), "https://")
	host, _, _ := strings.Cut(u, ":")
	script := `$_SERVER['HTTP_HOST'] = '` + host + `'; $_SERVER['REQUEST_URI'] = '/'; define('WP_USE_THEMES', false); require '` +
		strings.TrimRight(e["WP_ROOT"], "/") + `/wp-load.php'; ` + code
	out, err := exec.Command("php", "-r", script).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("php: %v: %s", err, out)
	}
	return string(out), nil
}

func run(n int) error {
	e, err := env()
	if err != nil {
		return err
	}
	lf, err := os.OpenFile(filepath.Join(wptest.RepoRoot(), ".wp-test", "test.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	locked := time.Now()
	defer func() {
		syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
		fmt.Printf("site lock held for %.1fs\n", time.Since(locked).Seconds())
	}()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	state, err := os.MkdirTemp("", "askwpd-bench-fresh-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	cfg := config.Default()
	cfg.WPRoot = e["WP_ROOT"]
	cfg.StateDir = state
	cfg.Listen = addr
	cfg.Schedule.Disabled = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := daemon.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer d.Close()
	t0 := time.Now()
	if _, err := d.Index(ctx, daemon.IndexOptions{}); err != nil {
		return err
	}
	fmt.Printf("initial index: %.1fs\n", time.Since(t0).Seconds())
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx) }()
	base := "http://" + addr
	for i := 0; ; i++ {
		if r, err := http.Get(base + "/healthz"); err == nil {
			r.Body.Close()
			break
		}
		if i > 200 {
			return fmt.Errorf("daemon did not come up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	token, _ := os.ReadFile(filepath.Join(state, "token"))
	secret, _ := os.ReadFile(filepath.Join(state, "webhook.secret"))
	tok, sec := strings.TrimSpace(string(token)), []byte(strings.TrimSpace(string(secret)))

	send := func(ev map[string]any) error {
		body, _ := json.Marshal(map[string]any{"events": []any{ev}})
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req, _ := http.NewRequest("POST", base+"/v1/events", bytes.NewReader(body))
		req.Header.Set(api.HeaderTimestamp, ts)
		req.Header.Set(api.HeaderSignature, api.Sign(sec, ts, body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 202 {
			return fmt.Errorf("event answered %d", resp.StatusCode)
		}
		return nil
	}
	search := func(q, want string) (bool, error) {
		body, _ := json.Marshal(map[string]any{"query": q, "limit": 5})
		req, _ := http.NewRequest("POST", base+"/v1/tools/search_site", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		var r struct {
			Results []struct {
				URL string `json:"url"`
			} `json:"results"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return false, err
		}
		for _, h := range r.Results {
			if h.URL == want {
				return true, nil
			}
		}
		return false, nil
	}

	var lat []time.Duration
	var ids []int64
	defer func() {
		for _, id := range ids {
			php(e, fmt.Sprintf(`wp_delete_post(%d, true);`, id))
			send(map[string]any{"id": fmt.Sprintf("bench-del-%d-%d", id, time.Now().UnixNano()), "type": "post_deleted", "post_id": id})
		}
	}()
	for i := range n {
		w := fmt.Sprintf("zqfresh%d%s", i, strconv.FormatInt(time.Now().UnixNano()%1e8, 36))
		out, err := php(e, `$t0 = microtime(true); $id = wp_insert_post(array('post_title' => 'Bench `+w+`', 'post_content' => '<p>The `+w+` paragraph about a benchmark of freshness.</p>', 'post_status' => 'publish'));
			echo json_encode(array('t0' => $t0, 't1' => microtime(true), 'id' => $id, 'url' => get_permalink($id)));`)
		if err != nil {
			return err
		}
		var p struct {
			T0, T1 float64
			ID     int64
			URL    string
		}
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &p); err != nil {
			return fmt.Errorf("php: %v: %s", err, out)
		}
		ids = append(ids, p.ID)
		start := time.Unix(0, int64(p.T0*1e9))
		if err := send(map[string]any{"id": fmt.Sprintf("bench-%d-%d", p.ID, time.Now().UnixNano()), "type": "post_published",
			"post_id": p.ID, "post_type": "post", "status": "publish", "public": true, "url": p.URL}); err != nil {
			return err
		}
		sent := time.Now()
		want := crawl.Canonical(p.URL)
		for {
			ok, err := search(w, want)
			if err != nil {
				return err
			}
			if ok {
				break
			}
			if time.Since(start) > 30*time.Second {
				return fmt.Errorf("post %d not searchable after 30 s", p.ID)
			}
			time.Sleep(5 * time.Millisecond)
		}
		l := time.Since(start)
		lat = append(lat, l)
		fmt.Printf("sample %2d: post %d searchable %.0f ms after wp_insert_post (wp_insert_post took %.0f ms; event sent at +%.0f ms)\n",
			i+1, p.ID, ms(l), (p.T1-p.T0)*1000, ms(sent.Sub(start)))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Printf("\npublish → searchable over %d samples: p50 %.0f ms, p95 %.0f ms, max %.0f ms (target p95 <= 1000 ms)\n",
		len(lat), ms(lat[len(lat)/2]), ms(lat[(len(lat)*95+99)/100-1]), ms(lat[len(lat)-1]))
	cancel()
	<-served
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
