// Package connlimit bounds the connections a server holds open at once.
//
// A listener wrapped by a [Limiter] accepts connections as usual while
// fewer than the limit are open; past it, it accepts each new connection and
// closes it at once instead of handing it to the server. Closing the excess
// (rather than leaving it in the kernel's accept queue, as
// golang.org/x/net/netutil.LimitListener does) fails a client fast, so it
// can retry or go elsewhere, keeps the accept queue drained, and lets the
// refusals be counted; the cost is one file descriptor for an instant per
// refused connection.
//
// Connections that carry no request are the cheapest to hold open and the
// first an attacker holds: with the server's ConnState set to
// [Limiter.ConnState], a connection arriving at the limit closes the
// connection that has been idle longest (or that never sent a request)
// instead of being refused, so that idle connections cannot lock out
// clients with work to do. Only when every connection is busy is the new
// one refused.
package connlimit

import (
	"container/list"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Limiter counts the open connections of the listeners it wraps, together,
// and refuses those past its limit. It is safe for concurrent use.
type Limiter struct {
	max      int64
	logger   *slog.Logger
	interval time.Duration
	now      func() time.Time

	open    atomic.Int64
	refused atomic.Uint64
	evicted atomic.Uint64

	mu      sync.Mutex
	idle    list.List // of *conn carrying no request, the longest idle first
	full    bool      // the last connection accepted was refused
	warned  bool      // and that was logged
	lastLog time.Time // when "limit reached" was last logged
	since   uint64    // refusals since then
}

// Option configures a Limiter.
type Option func(*Limiter)

// WithLogger sets the logger told when the limit is reached, and when
// connections are served again. Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(lm *Limiter) { lm.logger = l } }

// WithLogInterval sets the least time between two "limit reached" log
// lines, so that a server hovering at its limit does not flood the log.
// Default: one minute.
func WithLogInterval(d time.Duration) Option { return func(lm *Limiter) { lm.interval = d } }

// WithClock sets the clock WithLogInterval is measured on. Default:
// time.Now.
func WithClock(now func() time.Time) Option { return func(lm *Limiter) { lm.now = now } }

// New returns a Limiter allowing n open connections. Zero or less: no
// limit, but connections are still counted.
func New(n int, opts ...Option) *Limiter {
	l := &Limiter{max: int64(n), logger: slog.Default(), interval: time.Minute, now: time.Now}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Limit is the number of connections allowed open; zero or less for no
// limit.
func (l *Limiter) Limit() int { return int(l.max) }

// Open is the number of connections open now.
func (l *Limiter) Open() int { return int(l.open.Load()) }

// Refused is the number of connections refused so far.
func (l *Limiter) Refused() uint64 { return l.refused.Load() }

// Evicted is the number of idle connections closed so far to make room for
// new ones.
func (l *Limiter) Evicted() uint64 { return l.evicted.Load() }

// ConnState keeps track of which connections carry no request; set it as
// the http.Server's ConnState. Connections of other listeners are ignored.
func (l *Limiter) ConnState(nc net.Conn, state http.ConnState) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	c, ok := nc.(*conn)
	if !ok || c.l != l {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.el != nil {
		l.idle.Remove(c.el)
		c.el = nil
	}
	if (state == http.StateNew || state == http.StateIdle) && !c.closed.Load() {
		c.el = l.idle.PushBack(c)
	}
}

// evict closes the connection idle longest, reporting false when none is.
func (l *Limiter) evict() bool {
	l.mu.Lock()
	el := l.idle.Front()
	if el == nil {
		l.mu.Unlock()
		return false
	}
	c := l.idle.Remove(el).(*conn)
	c.el = nil
	l.mu.Unlock()
	l.evicted.Add(1)
	_ = c.Close()
	return true
}

// Listen wraps ln: its Accept returns only connections within the limit,
// and closing one frees its place.
func (l *Limiter) Listen(ln net.Listener) net.Listener { return &listener{Listener: ln, l: l} }

type listener struct {
	net.Listener
	l *Limiter
}

func (ln *listener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ln.l.take() {
			return &conn{Conn: c, l: ln.l}, nil
		}
		_ = c.Close()
	}
}

// take claims a place for a new connection, closing the connection idle
// longest to make one, or counts it refused.
func (l *Limiter) take() bool {
	if n := l.open.Add(1); l.max <= 0 || n <= l.max || l.evict() {
		l.transition(false)
		return true
	}
	l.open.Add(-1)
	l.refused.Add(1)
	l.transition(true)
	return false
}

// transition logs when the limit is first reached (at most once per
// interval), and when a connection is served again after that.
func (l *Limiter) transition(refused bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case refused && !l.full:
		l.full = true
		if now := l.now(); l.lastLog.IsZero() || now.Sub(l.lastLog) >= l.interval {
			l.lastLog, l.warned, l.since = now, true, 0
			l.logger.Warn("connection limit reached: refusing new connections until some close (cupd --max-connections)", "limit", l.max)
		}
		l.since++
	case refused:
		l.since++
	case l.full:
		l.full = false
		if l.warned {
			l.warned = false
			l.logger.Info("connection limit no longer reached: serving new connections again", "limit", l.max, "refused", l.since)
		}
	}
}

type conn struct {
	net.Conn
	l      *Limiter
	closed atomic.Bool
	el     *list.Element // in l.idle while the connection carries no request; guarded by l.mu
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.open.Add(-1)
	}
	return err
}

// Unwrap returns the connection the Limiter wraps.
func (c *conn) Unwrap() net.Conn { return c.Conn }
