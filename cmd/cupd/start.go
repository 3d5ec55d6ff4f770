package main

import (
	"net"
	"net/http"
	"sync/atomic"
)

// gate lets cupd bind its port before the slow part of start-up (cloning
// the repository, compiling WASM modules): until open is called it serves
// the starting handler (/healthz ok, /readyz 503, health NOT_SERVING) and
// accepts connections without a limit (each closes after one answer);
// from then on it serves the app's handler, and connections go through
// the app's limit, the one accepted while the gate opened included.
type gate struct {
	ln      net.Listener  // the bound port
	pending chan net.Conn // a connection accepted before open, to pass through the limit
	handler atomic.Pointer[http.Handler]
	limited atomic.Pointer[net.Listener]
	state   atomic.Pointer[func(net.Conn, http.ConnState)]
}

func newGate(ln net.Listener, starting http.Handler) *gate {
	g := &gate{ln: ln, pending: make(chan net.Conn, 1)}
	g.handler.Store(&starting)
	return g
}

// open switches to h, with listen limiting the connections accepted from
// now on and connState its http.Server's ConnState.
func (g *gate) open(h http.Handler, listen func(net.Listener) net.Listener, connState func(net.Conn, http.ConnState)) {
	l := listen(feed{g})
	g.limited.Store(&l)
	g.state.Store(&connState)
	g.handler.Store(&h)
}

// ServeHTTP serves with the current handler.
func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*g.handler.Load()).ServeHTTP(w, r) }

// ConnState is the http.Server's ConnState: the app's once open.
func (g *gate) ConnState(c net.Conn, s http.ConnState) {
	if f := g.state.Load(); f != nil {
		(*f)(c, s)
	}
}

// listener is what the http.Server accepts connections from.
func (g *gate) listener() net.Listener { return gateListener{g} }

// gateListener accepts from the port, through the app's limit once the
// gate is open. The http.Server calls Accept from one goroutine at a time.
type gateListener struct{ g *gate }

func (l gateListener) Accept() (net.Conn, error) {
	if lim := l.g.limited.Load(); lim != nil {
		return (*lim).Accept()
	}
	c, err := l.g.ln.Accept()
	if err != nil {
		return nil, err
	}
	lim := l.g.limited.Load()
	if lim == nil {
		return c, nil
	}
	// The gate opened while this Accept waited: the connection goes
	// through the limit like every later one.
	l.g.pending <- c
	return (*lim).Accept()
}

func (l gateListener) Close() error   { return l.g.ln.Close() }
func (l gateListener) Addr() net.Addr { return l.g.ln.Addr() }

// feed is the listener the app's limit wraps: it hands over the
// connection gateListener accepted while the gate opened, then accepts
// from the port.
type feed struct{ g *gate }

func (f feed) Accept() (net.Conn, error) {
	select {
	case c := <-f.g.pending:
		return c, nil
	default:
		return f.g.ln.Accept()
	}
}

func (f feed) Close() error   { return f.g.ln.Close() }
func (f feed) Addr() net.Addr { return f.g.ln.Addr() }
