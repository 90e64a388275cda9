package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/askwp/askwpd/internal/wptest"
)

type daemonProc struct {
	cmd       *exec.Cmd
	base      string
	token     string
	secret    []byte
	state     string
	exited    chan struct{}
	exitErr   error
	logPath   string
	client    *http.Client
	noRedir   *http.Client
	startedAt time.Time
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func buildDaemon(dir string) (string, error) {
	bin := filepath.Join(dir, "askwpd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/askwpd")
	cmd.Dir = wptest.RepoRoot()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build: %w", err)
	}
	return bin, nil
}

// indexOnce fills the state dir with `askwpd index`, unthrottled, so the
// served daemon starts with the whole site indexed.
func indexOnce(ctx context.Context, bin, state string, e map[string]string) error {
	cmd := exec.CommandContext(ctx, bin, "index", "--wp-root", e["WP_ROOT"], "--state-dir", state,
		"--set", "crawl.rate_per_sec=100000", "--set", "crawl.budget=1000000")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("askwpd index: %w: %s", err, out.String())
	}
	fmt.Printf("initial index: %.1fs: %s", time.Since(t0).Seconds(), out.String())
	return nil
}

// startDaemon starts askwpd serve on state. A timer slack above 0 is set
// for the daemon as systemd's TimerSlackNSec= does: a process inherits
// the slack of the thread that forked it.
func startDaemon(ctx context.Context, bin, state string, e map[string]string, schedule bool, slack time.Duration) (*daemonProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(state, "serve.log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--wp-root", e["WP_ROOT"], "--state-dir", state, "--listen", addr}
	if !schedule {
		args = append(args, "--set", "schedule.disabled=true")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startWithSlack(cmd, slack); err != nil {
		lf.Close()
		return nil, err
	}
	p := &daemonProc{cmd: cmd, base: "http://" + addr, state: state, exited: make(chan struct{}), logPath: logPath, startedAt: time.Now()}
	go func() {
		p.exitErr = cmd.Wait()
		lf.Close()
		close(p.exited)
	}()
	for i := 0; ; i++ {
		if r, err := http.Get(p.base + "/healthz"); err == nil {
			r.Body.Close()
			break
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("askwpd serve exited: %v (log: %s)", p.exitErr, tail(logPath))
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if i > 400 {
			p.stop()
			return nil, fmt.Errorf("askwpd serve did not come up (log: %s)", tail(logPath))
		}
	}
	tok, err := os.ReadFile(filepath.Join(state, "token"))
	if err != nil {
		p.stop()
		return nil, err
	}
	sec, err := os.ReadFile(filepath.Join(state, "webhook.secret"))
	if err != nil {
		p.stop()
		return nil, err
	}
	p.token, p.secret = strings.TrimSpace(string(tok)), []byte(strings.TrimSpace(string(sec)))
	tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second}
	p.client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	p.noRedir = &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return p, nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return string(b)
}

// stop sends SIGTERM (a graceful shutdown) and, after 20 s, SIGKILL.
func (p *daemonProc) stop() error {
	select {
	case <-p.exited:
		return p.exitErr
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.exitErr
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("askwpd serve did not stop in 20 s; killed")
	}
}

// memKB reads VmRSS and its split, RssAnon (heaps, stacks: what a leak
// grows) and RssFile (mostly the binary's own pages, faulted in as code
// paths first run, reclaimable), from /proc.
func (p *daemonProc) memKB() (rss, anon, file int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var n int64
		fmt.Sscan(v, &n)
		switch k {
		case "VmRSS":
			rss = n
		case "RssAnon":
			anon = n
		case "RssFile":
			file = n
		}
	}
	return rss, anon, file
}

// cpuSeconds reads the process's user + system CPU time from /proc.
func (p *daemonProc) cpuSeconds() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are
	// the 14th and 15th of the whole line.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// metrics reads /metrics into name{labels} → value.
func (p *daemonProc) metrics(ctx context.Context) (map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", p.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err == nil {
			m[l[:i]] = v
		}
	}
	return m, sc.Err()
}

type statusView struct {
	Crawling bool `json:"crawling"`
	Runs     []struct {
		ID         int64  `json:"id"`
		Kind       string `json:"kind"`
		Discovered int    `json:"discovered"`
		Fetched    int    `json:"fetched"`
		Indexed    int    `json:"indexed"`
		Unchanged  int    `json:"unchanged"`
		Errors     int    `json:"errors"`
		Error      string `json:"error"`
		StartedAt  string `json:"started_at"`
		FinishedAt string `json:"finished_at"`
	} `json:"runs"`
	Index struct {
		Documents int `json:"documents"`
		Chunks    int `json:"chunks"`
	} `json:"index"`
	// SearchIndex.Loads counts the in-memory index's builds: one at
	// start, and one for each reload, which under load costs a whole
	// read of the store and the caches' contents.
	SearchIndex struct {
		Loads int64 `json:"loads"`
	} `json:"search_index"`
	Freshness struct {
		PendingEvents   int   `json:"pending_events"`
		FailedEvents    int   `json:"failed_events"`
		LastEventLagMS  int64 `json:"last_event_lag_ms"`
		FrontierPending int   `json:"frontier_pending"`
	} `json:"freshness"`
}

func (p *daemonProc) status(ctx context.Context) (*statusView, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", p.base+"/v1/status", nil)
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("/v1/status: %s: %.200s", resp.Status, b)
	}
	var s statusView
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil, fmt.Errorf("/v1/status: %w", err)
	}
	return &s, nil
}

// reindex presses the admin page's "reindex now" with the bearer token.
func (p *daemonProc) reindex(ctx context.Context) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", p.base+"/admin/reindex", nil)
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.noRedir.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther {
		return "", fmt.Errorf("/admin/reindex: %s", resp.Status)
	}
	_, flash, _ := strings.Cut(loc, "reindex=")
	return flash, nil
}

// prSetTimerSlack and prGetTimerSlack are prctl(2)'s PR_SET_TIMERSLACK
// and PR_GET_TIMERSLACK.
const (
	prSetTimerSlack = 29
	prGetTimerSlack = 30
)

// startWithSlack starts cmd from a thread whose timer slack is slack, and
// puts the thread's own back.
func startWithSlack(cmd *exec.Cmd, slack time.Duration) error {
	if slack <= 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	if errno != 0 {
		return fmt.Errorf("reading the timer slack: %w", errno)
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, uintptr(slack.Nanoseconds()), 0); errno != 0 {
		return fmt.Errorf("setting the timer slack: %w", errno)
	}
	defer syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, old, 0)
	return cmd.Start()
}

// unitTimerSlack reads TimerSlackNSec= from the service unit, 0 when it
// has none or cannot be read. The unit is found from the source, so the
// default is the same from any working directory.
func unitTimerSlack() time.Duration {
	b, err := os.ReadFile(filepath.Join(wptest.RepoRoot(), "systemd", "askwpd.service"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "TimerSlackNSec=")
		if !ok {
			continue
		}
		// systemd takes a time span ("1ms") or a count of nanoseconds.
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Duration(n)
		}
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return 0
}
