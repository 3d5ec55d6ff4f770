package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/server"
)

// serveWith serves h with NewHTTPServer(opts) on 127.0.0.1 for the test's
// duration and returns its address.
func serveWith(t *testing.T, h http.Handler, opts ...server.HTTPOption) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = server.NewHTTPServer("", h, opts...)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.Listener.Addr().String()
}

// demoServer serves a copy of the demo repository with opts.
func demoServer(t *testing.T, opts ...server.Option) *server.Server {
	t.Helper()
	return servertest.Start(t, servertest.WithServerOptions(opts...)).Server
}

// trickle writes one byte to w every 20 ms until stop closes or a write
// fails, then closes done.
func trickle(w io.Writer, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
		}
	}
}

// TestTrickledBodyIsCutAtTheRequestTimeout sends a PUT whose body comes a
// byte at a time and never ends: the server must answer at its request
// timeout instead of reading for as long as the client writes.
func TestTrickledBodyIsCutAtTheRequestTimeout(t *testing.T) {
	t.Parallel()
	srv := demoServer(t, server.WithRequestTimeout(200*time.Millisecond))
	addr := serveWith(t, srv.Handler())

	t.Run("HTTP/1.1", func(t *testing.T) {
		t.Parallel()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "PUT %s/slow HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{", flagsPath, addr)
		stop, done := make(chan struct{}), make(chan struct{})
		go trickle(c, stop, done)
		defer func() { close(stop); <-done }()
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer while the body trickled (%v): %v", time.Since(start), err)
		}
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), "--request-timeout") {
			t.Fatalf("trickled PUT = %d %s, want 504 naming --request-timeout", res.StatusCode, body)
		}
	})
	t.Run("HTTP/2", func(t *testing.T) {
		t.Parallel()
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		hc := &http.Client{Transport: &http.Transport{Protocols: p}}
		defer hc.CloseIdleConnections()
		pr, pw := io.Pipe()
		stop, done := make(chan struct{}), make(chan struct{})
		go trickle(pw, stop, done)
		defer func() { close(stop); <-done; _ = pw.Close() }()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, "http://"+addr+flagsPath+"/slow", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		hc.Timeout = 10 * time.Second
		res, err := hc.Do(req)
		if err != nil {
			t.Fatalf("no answer while the body trickled: %v", err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.ProtoMajor != 2 || res.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), "--request-timeout") {
			t.Fatalf("trickled PUT over %s = %d %s, want 504 naming --request-timeout", res.Proto, res.StatusCode, body)
		}
	})
}

// closedWithin reports whether the peer closes c within d.
func closedWithin(c net.Conn, r io.Reader, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := r.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	addr := serveWith(t, ok, server.WithIdleTimeout(100*time.Millisecond))
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
	if res.Close {
		t.Fatal("the server closed the connection after the first request; the test needs keep-alive")
	}
	if !closedWithin(c, br, 10*time.Second) {
		t.Fatal("an idle keep-alive connection was still open 10s after an idle timeout of 100ms")
	}
}

func TestOversizedHeadersAreRefused(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	addr := serveWith(t, ok)
	for _, tc := range []struct {
		name, request string
		want          int
	}{
		{"small", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 32<<10) + "\r\n\r\n", http.StatusOK},
		{"header", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 100<<10) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
		{"request line", "GET /healthz?" + strings.Repeat("a", 1<<20) + " HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			go func() { _, _ = io.WriteString(c, tc.request) }()
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = res.Body.Close()
			if res.StatusCode != tc.want {
				t.Fatalf("status = %d, want %d", res.StatusCode, tc.want)
			}
		})
	}
}

// TestKeptAliveConnectionOutlivesTheRequestTimeout checks that the
// deadlines one call sets on its connection do not fail the next call on
// it: a request after more than the request timeout (and its grace for
// writing) is still answered, on the handler and on NewHTTPServer.
func TestKeptAliveConnectionOutlivesTheRequestTimeout(t *testing.T) {
	t.Parallel()
	srv := demoServer(t, server.WithRequestTimeout(100*time.Millisecond))
	extra := http.NewServeMux()
	extra.Handle("/", srv.Handler())
	extra.HandleFunc("GET /extra", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	for _, tc := range []struct {
		name string
		h    http.Handler
		path string
	}{
		{"handler", srv.Handler(), "/healthz"},
		{"route outside the handler", extra, "/extra"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := serveWith(t, tc.h)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(c)
			for i, path := range []string{flagsPath + "/dark-mode", tc.path} {
				if i > 0 {
					time.Sleep(300 * time.Millisecond) // past the first call's deadlines
				}
				fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
				res, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("GET %s on the kept-alive connection: %v", path, err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("GET %s = %d", path, res.StatusCode)
				}
			}
		})
	}
}
