package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"connectrpc.com/connect"
)

// The defaults of the watch options.
const (
	// DefaultMaxWatches is the default of WithMaxWatches.
	DefaultMaxWatches = 4096
	// DefaultWatchBuffer is the default of WithWatchBuffer: 1,000 events.
	DefaultWatchBuffer = 1000
	// DefaultWatchBookmarkInterval is the default of
	// WithWatchBookmarkInterval: 30 seconds.
	DefaultWatchBookmarkInterval = 30 * time.Second
	// DefaultWatchPollInterval is the default of WithWatchPollInterval: a
	// second.
	DefaultWatchPollInterval = time.Second
)

// WithMaxWatches bounds the watches open at once; one more fails with
// ResourceExhausted. Zero keeps the default, [DefaultMaxWatches]; less than
// zero makes New fail.
func WithMaxWatches(n int) Option {
	return func(c *config) { c.maxWatches = orDefault(n, DefaultMaxWatches) }
}

// WithWatchBuffer sets how many events a watch may have waiting to be sent
// once it is live: a watch whose client falls further behind is closed with
// ResourceExhausted and the revision to resume from. Zero keeps the
// default, [DefaultWatchBuffer]; less than zero makes New fail.
func WithWatchBuffer(n int) Option {
	return func(c *config) { c.watchBuffer = orDefault(n, DefaultWatchBuffer) }
}

// WithWatchBookmarkInterval sets how often a watch that asked for bookmarks
// gets one. Zero keeps the default, [DefaultWatchBookmarkInterval]; less
// than zero makes New fail.
func WithWatchBookmarkInterval(d time.Duration) Option {
	return func(c *config) { c.bookmarkInterval = orDefault(d, DefaultWatchBookmarkInterval) }
}

// WithWatchPollInterval sets how often, while watches are open, the served
// branch's head is read, to see commits made outside this server (writes
// through it are seen at once). Zero keeps the default,
// [DefaultWatchPollInterval]; less than zero makes New fail.
func WithWatchPollInterval(d time.Duration) Option {
	return func(c *config) { c.watchPoll = orDefault(d, DefaultWatchPollInterval) }
}

// checkWatchConfig reports the first watch option New cannot use.
func checkWatchConfig(c *config) error {
	switch {
	case c.maxWatches <= 0:
		return fmt.Errorf("server: a watch limit of %d is not positive", c.maxWatches)
	case c.watchBuffer <= 0:
		return fmt.Errorf("server: a watch buffer of %d events is not positive", c.watchBuffer)
	case c.bookmarkInterval <= 0:
		return fmt.Errorf("server: a bookmark interval of %v is not positive", c.bookmarkInterval)
	case c.watchPoll <= 0:
		return fmt.Errorf("server: a watch poll interval of %v is not positive", c.watchPoll)
	}
	return nil
}

// CloseWatches ends every watch, open or to come, with Unavailable: the
// server is shutting down, and its clients resume elsewhere or later. Call
// it as the HTTP server shuts down (http.Server.RegisterOnShutdown): a
// watch lasts as long as its client wants, and would otherwise hold the
// shutdown until its timeout. It also cancels the listings the server
// reads in the background to answer Gets, and keeps new ones from
// starting.
func (s *Server) CloseWatches() {
	s.hub.closeOnce.Do(func() { close(s.hub.closing) })
	s.prefetch.stop()
}

// errShuttingDown ends the watches of a server that shuts down.
var errShuttingDown = connect.NewError(connect.CodeUnavailable, errors.New("the server is shutting down: watch again, from the last resume revision"))

// newWatchSlots bounds the watches open at once (--max-watches).
func newWatchSlots(n int) slots {
	return newSlots(n, func(n int) error {
		return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
			"the server has %d watches open, its limit (cupd --max-watches): retry later", n))
	})
}

// watchHub follows the head of the served branch for the live watches: one
// goroutine, running while any watch is live, reads the head every poll
// interval, and at once when poked (after a write through this server, or
// a fetch). Watches wait on changed and read head; they walk the commits
// between themselves.
type watchHub struct {
	s *Server

	mu      sync.Mutex
	cur     string        // the head last read; "" before the first read
	ch      chan struct{} // closed when cur changes
	members int
	stop    context.CancelFunc
	stopped chan struct{}
	pokes   chan struct{}

	// closing ends every watch when closed (CloseWatches).
	closing   chan struct{}
	closeOnce sync.Once
}

func newWatchHub(s *Server) *watchHub {
	return &watchHub{s: s, ch: make(chan struct{}), pokes: make(chan struct{}, 1), closing: make(chan struct{})}
}

// head is the head last read.
func (h *watchHub) head() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// changed is closed when the head changes after this call.
func (h *watchHub) changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ch
}

// poke asks for the head to be read now.
func (h *watchHub) poke() {
	select {
	case h.pokes <- struct{}{}:
	default:
	}
}

// join counts a live watch, starting the poller with the first, and reads
// the head now for the others.
func (h *watchHub) join() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.members++
	if h.members > 1 || h.stop != nil {
		// The poller runs, but the head it last read may be older than
		// the one this watch has reached (a fetch, or a commit outside
		// cupd, moved it since): read it now, or the watch would take
		// the older head for the branch going back.
		h.readLocked(context.Background())
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop, h.stopped = cancel, make(chan struct{})
	go h.poll(ctx, h.stopped)
	h.readLocked(ctx)
}

// leave uncounts a live watch, stopping the poller with the last; it
// returns once the poller is gone.
func (h *watchHub) leave() {
	h.mu.Lock()
	h.members--
	if h.members > 0 {
		h.mu.Unlock()
		return
	}
	stop, stopped := h.stop, h.stopped
	h.stop, h.stopped = nil, nil
	h.cur = "" // nobody follows it any more: the next poller starts afresh
	h.mu.Unlock()
	if stop != nil {
		stop()
		<-stopped
	}
}

func (h *watchHub) poll(ctx context.Context, stopped chan struct{}) {
	defer close(stopped)
	t := time.NewTicker(h.s.cfg.watchPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.pokes:
		}
		h.mu.Lock()
		h.readLocked(ctx)
		h.mu.Unlock()
	}
}

// readLocked reads the head and tells the watches when it moved. A failed
// read (the repository unreachable) leaves the head as it was: watches
// wait, and a later read catches up.
func (h *watchHub) readLocked(ctx context.Context) {
	snap, err := h.s.src.View(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			h.s.cfg.logger.DebugContext(ctx, "watch: reading the head of the served branch", "error", err)
		}
		return
	}
	if snap.Commit != h.cur {
		h.cur = snap.Commit
		close(h.ch)
		h.ch = make(chan struct{})
	}
}
