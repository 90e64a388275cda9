package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/askwp/askwpd/api"
	"github.com/askwp/askwpd/config"
	"github.com/askwp/askwpd/daemon"
)

// errNoServe means no serve answers for the state dir: askwpd index runs
// its pass itself.
var errNoServe = errors.New("no askwpd serve answers for this state dir")

// handoffDial bounds the connection to a serve: a stale serve.addr names
// a port nobody listens on (refused at once) or, rarely, a host that
// does not answer.
const handoffDial = 3 * time.Second

// serveClient returns an HTTP client and base URL for the serve recorded
// in stateDir, or errNoServe.
func serveClient(stateDir string) (*http.Client, string, error) {
	addr, err := daemon.ServeAddr(stateDir)
	if err != nil || addr == "" {
		return nil, "", errors.Join(errNoServe, err)
	}
	dialer := &net.Dialer{Timeout: handoffDial}
	tr := &http.Transport{Proxy: nil, DialContext: dialer.DialContext}
	base := ""
	if path, ok := config.SocketPath(addr); ok {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", path)
		}
		base = "http://localhost"
	} else {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %s holds %q: %w", errNoServe, daemon.ServeAddrFile, addr, err)
		}
		// A serve listening on every address is reached on loopback,
		// which its Host check accepts.
		if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		base = "http://" + net.JoinHostPort(host, port)
	}
	return &http.Client{Transport: tr}, base, nil
}

// handOff asks the serve that owns stateDir to run the pass, and streams
// its progress to stderr. It returns errNoServe when there is no serve to
// ask: no serve.addr, nobody answering there, or a daemon that refuses
// this state dir's token (one that took the address since).
func handOff(ctx context.Context, stateDir string, req api.IndexRequest, stderr io.Writer) error {
	client, base, err := serveClient(stateDir)
	if err != nil {
		return err
	}
	tok, err := os.ReadFile(filepath.Join(stateDir, "token"))
	if err != nil {
		return fmt.Errorf("%w: read its token: %w", errNoServe, err)
	}
	q := url.Values{}
	if req.Full {
		q.Set("full", "1")
	}
	if req.Wait {
		q.Set("wait", "1")
	}
	if req.Site != 0 {
		q.Set("site", strconv.FormatInt(req.Site, 10))
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/index?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	hr.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := client.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %w", errNoServe, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusNotFound, http.StatusMethodNotAllowed:
		// Another daemon, or a serve of a build without the hand-off.
		return fmt.Errorf("%w: %s answered %s", errNoServe, base, resp.Status)
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("askwpd serve at %s: %s: %s", base, resp.Status, strings.TrimSpace(string(b)))
	}
	return followPass(resp.Body, isTerminal(stderr), stderr)
}

// followPass reads the NDJSON of POST /v1/index until its last line: nil
// for "done", the refusal for "running", the error for "error".
func followPass(r io.Reader, tty bool, stderr io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	v := &passView{w: stderr, tty: tty, by: " by askwpd serve", start: time.Now()}
	for sc.Scan() {
		var ev api.IndexEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("askwpd serve's answer: %w", err)
		}
		if last, err := v.show(ev); last {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("askwpd serve's answer: %w", err)
	}
	return errors.New("askwpd serve's answer ended before the pass did (did serve stop?)")
}

// passView prints a pass's events, as they come, for askwpd index.
type passView struct {
	w   io.Writer
	tty bool
	// by says who ran the pass, after "indexed SITE".
	by    string
	bar   bool
	start time.Time
}

// show prints ev; last reports an event that ends the pass, and err how.
func (v *passView) show(ev api.IndexEvent) (last bool, err error) {
	if v.bar && ev.Event != "progress" {
		fmt.Fprintln(v.w)
		v.bar = false
	}
	switch ev.Event {
	case "progress":
		if v.tty {
			progress(v.w, ev.Done, ev.Total)
			v.bar = true
		}
	case "running":
		if ev.Site == 0 { // the last line: not asked to wait
			return true, fmt.Errorf("%s; not starting a second pass: wait for that one (askwpd index --wait), or use askwpd serve's admin page's \"reindex now\"", ev.Error)
		}
		fmt.Fprintf(v.w, "waiting: %s\n", ev.Error)
	case "site":
		if r := ev.Run; r != nil {
			fmt.Fprintf(v.w, "indexed %s%s in %s: %d discovered, %d fetched, %d indexed, %d unchanged, %d removed, %d errors\n",
				ev.Home, v.by, time.Since(v.start).Round(time.Millisecond), r.Discovered, r.Fetched, r.Indexed, r.Unchanged, r.Removed, r.Errors)
		}
	case "error":
		return true, errors.New(ev.Error)
	case "done":
		return true, nil
	}
	return false, nil
}
