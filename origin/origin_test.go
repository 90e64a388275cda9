package origin

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"
)

func TestCandidates(t *testing.T) {
	site, _ := url.Parse("https://shop.example:8443/")
	cs, err := Candidates(site, "")
	if err != nil {
		t.Fatal(err)
	}
	if cs[0] != (Candidate{Scheme: "https", Address: "127.0.0.1:8443"}) {
		t.Errorf("first candidate %+v, want the site's own port on loopback", cs[0])
	}
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.Scheme+c.Address] {
			t.Errorf("%+v listed twice", c)
		}
		seen[c.Scheme+c.Address] = true
	}
	for _, want := range []string{"https127.0.0.1:443", "http127.0.0.1:80", "http[::1]:80"} {
		if !seen[want] {
			t.Errorf("no candidate %s in %+v", want, cs)
		}
	}
	cs, err = Candidates(site, "http://127.0.0.1:8080")
	if err != nil || len(cs) != 1 || cs[0] != (Candidate{Scheme: "http", Address: "127.0.0.1:8080", Configured: true}) {
		t.Errorf("configured: %+v %v, want it alone", cs, err)
	}
	for _, bad := range []string{"127.0.0.1:8080", "ftp://x/", "http://x/path"} {
		if _, err := Candidates(site, bad); err == nil {
			t.Errorf("origin %q accepted", bad)
		}
	}
}

func TestAnswer(t *testing.T) {
	// The plugin computes hash_hmac('sha256', nonce, secret): this is
	// PHP's answer for these inputs.
	if got, want := Answer("00112233445566778899aabbccddeeff", []byte("s3cret")), "95d1860497cd61cf0b1acc0b4a5ec866a5295100ea812883ec4e014b635908fd"; got != want {
		t.Fatalf("Answer = %q, want PHP's %q", got, want)
	}
	if Answer("a", []byte("k")) == Answer("a", []byte("k2")) || Answer("a", []byte("k")) == Answer("b", []byte("k")) {
		t.Error("the proof does not depend on both nonce and secret")
	}
}

// TestAmong_HangingServer: a server that accepts and never answers costs
// the probe's timeout, not the start, and is not taken for the origin.
func TestAmong_HangingServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	site, _ := url.Parse("https://shop.example/")
	start := time.Now()
	res, err := Among(context.Background(), site, []Candidate{{Scheme: "http", Address: ln.Addr().String()}}, []byte("secret-secret-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %v", took)
	}
	if res.Proven || res.Address != "" || res.Source != "public" || res.Warning == "" {
		t.Errorf("result %+v, want the public address with a warning", res)
	}
}
