package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawRequest sends request on a new connection to addr and reads the
// answer, within ten seconds.
func rawRequest(t *testing.T, addr, request string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = io.WriteString(c, request) }()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// closedByPeer reports whether the peer closes c within ten seconds.
func closedByPeer(c net.Conn, r io.Reader) bool {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := r.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestSlowClients starts cupd with short limits and plays clients that
// would hold its connections: a body trickled a byte at a time, an idle
// keep-alive connection, and an oversized header.
func TestSlowClients(t *testing.T) {
	url, _, _ := start(t, "--address", "127.0.0.1:0", "--request-timeout", "200ms", "--idle-timeout", "200ms", "--max-header-bytes", "16384")
	addr := strings.TrimPrefix(url, "http://")

	t.Run("trickled body", func(t *testing.T) {
		t.Parallel()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{", flagPath, addr)
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		defer func() { close(stop); <-done }()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer while the body trickled: %v", err)
		}
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), "--request-timeout") {
			t.Fatalf("trickled PUT = %d %s, want 504 naming --request-timeout", res.StatusCode, body)
		}
	})
	t.Run("idle keep-alive connection", func(t *testing.T) {
		t.Parallel()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		if res.StatusCode != http.StatusOK || res.Close {
			t.Fatalf("GET /healthz = %d (close %v), want 200 on a kept-alive connection", res.StatusCode, res.Close)
		}
		if !closedByPeer(c, br) {
			t.Fatal("an idle connection was open 10s after --idle-timeout 200ms")
		}
	})
	t.Run("oversized header", func(t *testing.T) {
		t.Parallel()
		if res, body := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\nX-Pad: "+strings.Repeat("a", 8<<10)+"\r\n\r\n"); res.StatusCode != http.StatusOK {
			t.Fatalf("8 KiB header = %d %s, want 200", res.StatusCode, body)
		}
		if res, body := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\nX-Pad: "+strings.Repeat("a", 64<<10)+"\r\n\r\n"); res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("64 KiB header past --max-header-bytes 16384 = %d %s, want 431", res.StatusCode, body)
		}
	})
}

// TestMaxConnections holds --max-connections connections busy and checks
// that the next one is closed unserved, counted and logged; that one is
// served again once a place frees; and that a connection carrying no
// request is closed to make room for a new one rather than lock it out.
func TestMaxConnections(t *testing.T) {
	const limit = 3
	url, _, _ := start(t, "--address", "127.0.0.1:0", "--max-connections", fmt.Sprint(limit))
	addr := strings.TrimPrefix(url, "http://")
	// Each held connection is busy: its PUT waits for a body that does not
	// come (until --request-timeout, longer than this test).
	held := make([]net.Conn, limit)
	for i := range held {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// cupd answers 100 Continue once its handler reads the body:
		// then the connection is busy.
		fmt.Fprintf(c, "PUT %s-held HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n", flagPath, addr)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || !strings.Contains(line, "100 Continue") {
			t.Fatalf("held connection %d: %q, %v; want 100 Continue", i, line, err)
		}
		held[i] = c
	}
	served := func() (*http.Response, []byte, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return nil, nil, err
		}
		b, err := io.ReadAll(res.Body)
		return res, b, err
	}
	if res, _, err := served(); err == nil {
		t.Fatalf("connection %d of %d allowed, all busy, was served: %s", limit+1, limit, res.Status)
	}
	// With a place free, a new connection is served (once cupd has seen
	// the closed one go).
	_ = held[0].Close()
	waitServed := func(what string) []byte {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if res, b, err := served(); err == nil && res.StatusCode == http.StatusOK {
				return b
			}
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitServed("no connection was served after one of the held ones closed")
	// An idle connection takes the free place; a new one closes it. The
	// idle one is served once first, so that it is known to hold the place:
	// dialled while cupd still counts the last served connection, it would
	// be refused instead.
	var idle net.Conn
	for deadline := time.Now().Add(10 * time.Second); idle == nil; {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if res, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			_, err = io.Copy(io.Discard, res.Body)
			if err == nil && res.StatusCode == http.StatusOK {
				idle = c
				break
			}
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			t.Fatal("no connection was served to become the idle one")
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer idle.Close()
	b := waitServed("a connection was not served while an idle one held the last place")
	if !strings.Contains(string(b), "cup_connections_refused_total") || strings.Contains(string(b), "cup_connections_refused_total 0") ||
		!strings.Contains(string(b), fmt.Sprintf("cup_connections_limit %d", limit)) {
		t.Fatalf("metrics lack the refused connection or the limit:\n%s", b)
	}
	_ = idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the idle connection: read = %v, want EOF: closed to make room", err)
	}
	b = waitServed("no connection was served after the idle one closed")
	if strings.Contains(string(b), "cup_connections_evicted_total 0") || !strings.Contains(string(b), "cup_connections_evicted_total") {
		t.Fatalf("metrics lack the evicted connection:\n%s", b)
	}
}

// TestAllowedHosts checks the guard against DNS rebinding: a cupd on
// loopback answers only to loopback names, and to those --allowed-hosts
// adds.
func TestAllowedHosts(t *testing.T) {
	url, _, _ := start(t, "--address", "127.0.0.1:0")
	addr := strings.TrimPrefix(url, "http://")
	_, port, _ := net.SplitHostPort(addr)
	other, _, _ := start(t, "--address", "127.0.0.1:0", "--allowed-hosts", "cup.example,*.cup.test")
	otherAddr := strings.TrimPrefix(other, "http://")
	for _, tc := range []struct {
		addr, host, path string
		want             int
	}{
		{addr, "evil.example", "/readyz", http.StatusMisdirectedRequest},
		{addr, "evil.example:" + port, flagPath, http.StatusMisdirectedRequest},
		{addr, "localhost.evil.example", "/metrics", http.StatusMisdirectedRequest},
		{addr, "cup.example", "/healthz", http.StatusMisdirectedRequest},
		{addr, "localhost:" + port, flagPath, http.StatusOK},
		{addr, "LocalHost", "/healthz", http.StatusOK},
		{addr, "app.localhost:" + port, "/healthz", http.StatusOK},
		{addr, "127.0.0.1:" + port, "/healthz", http.StatusOK},
		{addr, "[::1]:" + port, "/healthz", http.StatusOK},
		{otherAddr, "cup.example", flagPath, http.StatusOK},
		{otherAddr, "a.cup.test:8080", "/healthz", http.StatusOK},
		{otherAddr, "localhost", "/healthz", http.StatusOK},
		{otherAddr, "evil.example", "/healthz", http.StatusMisdirectedRequest},
	} {
		t.Run(tc.host+tc.path, func(t *testing.T) {
			t.Parallel()
			res, body := rawRequest(t, tc.addr, "GET "+tc.path+" HTTP/1.1\r\nHost: "+tc.host+"\r\nConnection: close\r\n\r\n")
			if res.StatusCode != tc.want {
				t.Fatalf("Host %s = %d %s, want %d", tc.host, res.StatusCode, body, tc.want)
			}
			if tc.want == http.StatusMisdirectedRequest && !strings.Contains(body, "--allowed-hosts") {
				t.Fatalf("refusal %q does not name --allowed-hosts", body)
			}
		})
	}
}

// TestWebhookLimits checks that webhook calls are refused before their
// body is read when their token is wrong, and that a body past the limit
// is refused.
func TestWebhookLimits(t *testing.T) {
	_, remote := serveDemoRemote(t)
	t.Setenv("CUPD_GIT_TOKEN", "s3cret")
	url, _, _ := start(t, "--address", "127.0.0.1:0", "--repository", remote, "--git-user", "alice",
		"--fetch-interval", "0", "--webhook-secret", "hook")
	addr := strings.TrimPrefix(url, "http://")
	for _, tc := range []struct {
		name, header string
		want         int
	}{
		{"no secret", "", http.StatusUnauthorized},
		{"wrong bearer", "Authorization: Bearer nope\r\n", http.StatusUnauthorized},
		{"wrong GitLab token", "X-Gitlab-Token: nope\r\n", http.StatusUnauthorized},
		{"bearer", "Authorization: Bearer hook\r\n", http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The body is announced and never sent: only a call answered
			// without reading it gets an answer.
			res, body := rawRequest(t, addr, "POST /hooks/fetch HTTP/1.1\r\nHost: "+addr+"\r\n"+tc.header+"Content-Length: 1000\r\n\r\n")
			if res.StatusCode != tc.want {
				t.Fatalf("= %d %s, want %d", res.StatusCode, body, tc.want)
			}
		})
	}
	t.Run("body past the limit", func(t *testing.T) {
		code, body := do(t, "POST", url+"/hooks/fetch", strings.Repeat("x", 2<<20), "X-Hub-Signature-256", "sha256=00")
		if code != http.StatusRequestEntityTooLarge {
			t.Fatalf("a 2 MiB signed webhook = %d %s, want 413", code, body)
		}
	})
}
