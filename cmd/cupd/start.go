package main

import (
	"net"
	"net/http"
	"sync/atomic"
)

// gate lets cupd bind its port before the slow part of start-up (cloning
// the repository, compiling WASM modules): until open is called it serves
// the starting handler (/healthz ok, /readyz 503, health NOT_SERVING) and
// accepts connections without a limit; from then on it serves the app's
// handler, and connections go through the app's limit. A connection
// accepted while the gate opens may escape the limit; it is one at most.
type gate struct {
	ln      net.Listener // the bound port
	handler atomic.Pointer[http.Handler]
	limited atomic.Pointer[net.Listener]
	state   atomic.Pointer[func(net.Conn, http.ConnState)]
}

func newGate(ln net.Listener, starting http.Handler) *gate {
	g := &gate{ln: ln}
	g.handler.Store(&starting)
	return g
}

// open switches to h, with listen limiting the connections accepted from
// now on and connState its http.Server's ConnState.
func (g *gate) open(h http.Handler, listen func(net.Listener) net.Listener, connState func(net.Conn, http.ConnState)) {
	l := listen(g.ln)
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

type gateListener struct{ g *gate }

func (l gateListener) Accept() (net.Conn, error) {
	if lim := l.g.limited.Load(); lim != nil {
		return (*lim).Accept()
	}
	return l.g.ln.Accept()
}

func (l gateListener) Close() error   { return l.g.ln.Close() }
func (l gateListener) Addr() net.Addr { return l.g.ln.Addr() }
