package main

import (
	"net"
	"net/http"
	"testing"
)

// counted marks the connections a listener it wraps accepts.
type counted struct{ net.Listener }

type countedConn struct{ net.Conn }

func (l counted) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countedConn{c}, nil
}

// entered tells when the first Accept on it has begun.
type entered struct {
	net.Listener
	once chan struct{}
}

func (l *entered) Accept() (net.Conn, error) {
	select {
	case <-l.once:
	default:
		close(l.once)
	}
	return l.Listener.Accept()
}

// TestGateLimitsTheWaitingAccept opens the gate while an Accept waits on
// the port: the connection it then gets goes through the limit too.
func TestGateLimitsTheWaitingAccept(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	waiting := &entered{Listener: ln, once: make(chan struct{})}
	g := newGate(waiting, http.NotFoundHandler())
	gl := g.listener()
	t.Cleanup(func() { _ = gl.Close() })

	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := gl.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	<-waiting.once // an Accept waits on the port, with the gate closed
	g.open(http.NotFoundHandler(), func(l net.Listener) net.Listener { return counted{l} }, func(net.Conn, http.ConnState) {})
	for range 2 { // the Accept that waited, then one made after open
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := <-accepted
		if _, ok := got.(countedConn); !ok {
			t.Errorf("accepted %T after the gate opened, want it through the limit", got)
		}
		_ = got.Close()
		go func() {
			c, err := gl.Accept()
			if err == nil {
				accepted <- c
			}
		}()
	}
}
