package connlimit_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/connlimit"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve accepts connections from ln until it closes, and hands each to
// the channel it returns.
func serve(t *testing.T, ln net.Listener) <-chan net.Conn {
	t.Helper()
	conns := make(chan net.Conn, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		close(conns)
		for c := range conns {
			_ = c.Close()
		}
	})
	return conns
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedByPeer reports whether the server closed c, waiting up to ten
// seconds for it.
func closedByPeer(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

func TestLimiter(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	lim := connlimit.New(2, connlimit.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := serve(t, lim.Listen(inner))
	addr := inner.Addr().String()

	// Two connections are served.
	dial(t, addr)
	dial(t, addr)
	first, second := <-conns, <-conns
	if lim.Open() != 2 {
		t.Fatalf("Open() = %d, want 2", lim.Open())
	}
	// The third and fourth are closed at once, and counted, and logged once.
	for range 2 {
		if c := dial(t, addr); !closedByPeer(t, c) {
			t.Fatal("a connection past the limit was not closed")
		}
	}
	if lim.Refused() != 2 || lim.Open() != 2 {
		t.Fatalf("Refused() = %d, Open() = %d, want 2 and 2", lim.Refused(), lim.Open())
	}
	if n := strings.Count(logs.String(), "connection limit reached"); n != 1 {
		t.Fatalf("logged the limit %d times, want once:\n%s", n, logs)
	}
	// Closing one frees its place, once, however often it is closed.
	_ = first.Close()
	_ = first.Close()
	if lim.Open() != 1 {
		t.Fatalf("Open() after a close = %d, want 1", lim.Open())
	}
	c := dial(t, addr)
	served := <-conns
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(served, make([]byte, 1)); err != nil {
		t.Fatalf("the connection after a place freed was not served: %v", err)
	}
	if !strings.Contains(logs.String(), "serving new connections again") || !strings.Contains(logs.String(), "refused=2") {
		t.Fatalf("no log line on serving again, with the refusals counted:\n%s", logs)
	}
	_ = second.Close()
	_ = served.Close()
	if lim.Open() != 0 {
		t.Fatalf("Open() with everything closed = %d", lim.Open())
	}
}

func TestLimiterLogsAtMostOncePerInterval(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	var now atomic.Int64 // seconds
	lim := connlimit.New(1, connlimit.WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
		connlimit.WithLogInterval(time.Minute), connlimit.WithClock(func() time.Time { return time.Unix(now.Load(), 0) }))
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := serve(t, lim.Listen(inner))
	addr := inner.Addr().String()
	dial(t, addr)
	held := <-conns
	// Hovering at the limit: refused, freed, taken, refused again.
	for range 3 {
		if c := dial(t, addr); !closedByPeer(t, c) {
			t.Fatal("a connection past the limit was not closed")
		}
		_ = held.Close()
		dial(t, addr)
		held = <-conns
	}
	if n := strings.Count(logs.String(), "connection limit reached"); n != 1 {
		t.Fatalf("logged the limit %d times within a minute, want once:\n%s", n, logs)
	}
	now.Add(60)
	if c := dial(t, addr); !closedByPeer(t, c) {
		t.Fatal("a connection past the limit was not closed")
	}
	if n := strings.Count(logs.String(), "connection limit reached"); n != 2 {
		t.Fatalf("logged the limit %d times over a minute, want twice:\n%s", n, logs)
	}
	_ = held.Close()
}

// TestIdleConnectionsMakeRoom: connections that carry no request cannot
// lock a server out: at the limit, a new connection closes the one idle
// longest; only busy connections make the server refuse.
func TestIdleConnectionsMakeRoom(t *testing.T) {
	t.Parallel()
	l := connlimit.New(2, connlimit.WithLogger(slog.New(slog.DiscardHandler)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	busy, release := make(chan struct{}, 2), make(chan struct{})
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/busy" {
				busy <- struct{}{}
				<-release
			}
			_, _ = io.WriteString(w, "ok")
		}),
		ConnState: l.ConnState,
	}
	go func() { _ = srv.Serve(l.Listen(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := ln.Addr().String()

	get := func(path string) (string, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return "", err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
			return "", err
		}
		b, err := io.ReadAll(c)
		return string(b), err
	}
	// Two connections that never send a request fill the limit.
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		idle = append(idle, c)
	}
	for l.Open() < 2 {
		time.Sleep(time.Millisecond)
	}
	if res, err := get("/"); err != nil || !strings.Contains(res, "200 OK") {
		t.Fatalf("a request while idle connections fill the limit = %q, %v; want 200", res, err)
	}
	if l.Evicted() == 0 {
		t.Fatal("no idle connection was closed to make room")
	}
	_ = idle[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idle[0].Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the connection idle longest: read = %v, want EOF (closed)", err)
	}

	// The server closes the request's connection after the client has
	// read its response: wait until it has, so that the busy connections
	// below find idle[1] the only one to close.
	for l.Open() > 1 {
		time.Sleep(time.Millisecond)
	}

	// Two busy connections: a third is refused.
	failed := make(chan error, 2)
	for range 2 {
		go func() {
			if _, err := get("/busy"); err != nil {
				failed <- err
			}
		}()
		select {
		case <-busy:
		case err := <-failed:
			t.Fatalf("a request with room for it (idle[1] idle, %d open) failed: %v", l.Open(), err)
		}
	}
	if res, _ := get("/"); strings.Contains(res, "200 OK") {
		t.Fatalf("a request while busy connections fill the limit was served: %q", res)
	}
	if l.Refused() == 0 {
		t.Fatal("no connection was refused")
	}
	close(release)
}
