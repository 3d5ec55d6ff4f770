package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/auth"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/source"
)

// Watches. A watch starts at a commit of the served branch (its head, or
// the revision it resumes from), sends the state there when asked, then
// walks the branch's first-parent history commit by commit, sending each
// commit's events (events.go) that its namespace, label selector and the
// policy let through. Once it reaches the head it waits for the head to
// move (watchHub) and walks on.
//
// Each watch has a producer goroutine, which computes (or finds memoised)
// what to send, and the call's own goroutine, which sends it; a buffer of
// WithWatchBuffer events lies between them. While it sends the initial
// state and the history it resumes from, the producer waits for room: the
// watch goes as fast as its client reads. Once live, an event that finds
// the buffer full closes the watch with ResourceExhausted and the revision
// to resume from: a client that cannot keep up costs a bounded buffer,
// and never slows other watchers or writes, which share nothing with it
// but memoised events.

// watchQuery is what a watch asks besides its type and namespace.
type watchQuery struct {
	labelSelector, fieldSelector string
	// revision is where to resume: a commit, or commit.n (WatchResponse.resume_revision).
	revision string
	// sendInitial is nil when the request left it unset.
	sendInitial *bool
	bookmarks   bool
	// ready, when set, is called once the watch has started, before its
	// first event (the REST form sends its headers then).
	ready func()
}

// watchEvent is one event as a watch sends it.
type watchEvent struct {
	typ        cupv1alpha1.WatchEventType
	entry      *entry // nil for bookmarks
	commit     string
	resume     string
	initialEnd bool
}

// errRevisionGone reports a watch's revision that is not in the served
// branch's first-parent history: the client must list again. The REST
// form answers it 410 Gone, as Kubernetes does.
var errRevisionGone = errors.New("revision not in the branch's history")

// errWatchTooSlow reports a watcher closed for falling behind.
var errWatchTooSlow = errors.New("watch fell behind")

// resumeError ends a watch that the client may resume from revision.
type resumeError struct {
	revision string
	err      error
}

func (e *resumeError) Error() string { return e.err.Error() }
func (e *resumeError) Unwrap() error { return e.err }

// headerResumeRevision carries, in the trailers of a watch closed with
// ResourceExhausted, the revision to resume from.
const headerResumeRevision = "Cup-Resume-Revision"

// resumeAt is the resume revision after the first n events of commit: the
// commit itself for none, else "<commit>.<n>". parseResume reads it.
func resumeAt(commit string, n int) string {
	if n == 0 {
		return commit
	}
	return commit + "." + strconv.Itoa(n)
}

// bookmark is a BOOKMARK at commit, to resume from resume.
func bookmark(commit, resume string, initialEnd bool) *watchEvent {
	return &watchEvent{typ: cupv1alpha1.WatchEventType_WATCH_EVENT_TYPE_BOOKMARK, commit: commit, resume: resume, initialEnd: initialEnd}
}

// parseResume splits a resume revision into its commit and the number of
// the commit's events already had.
func parseResume(rev string) (commit string, n int, err error) {
	commit, num, dotted := strings.Cut(rev, ".")
	if dotted {
		if n, err = strconv.Atoi(num); err != nil || n <= 0 || len(num) > 9 {
			return "", 0, fieldError("revision", "%q: what follows the dot must be a count of events, as resume_revision gives it", rev)
		}
	}
	if len(commit) < 4 || len(commit) > 40 || strings.Trim(commit, "0123456789abcdef") != "" {
		return "", 0, fieldError("revision", "%q must be a commit id (4 to 40 lowercase hexadecimal digits), optionally followed by .<n> as resume_revision gives it", rev)
	}
	return commit, n, nil
}

// watch streams the changes of the resources at (namespace "" for all)
// through send, until ctx ends, send fails, or the watch falls behind.
func (s *Server) watch(ctx context.Context, at ref, q watchQuery, send func(*watchEvent) error) error {
	if at.namespace != "" {
		if err := s.authorize(ctx, at.attributes(auth.VerbWatch)); err != nil {
			return err
		}
	} else if s.cfg.authz != nil {
		if _, ok := auth.FromContext(ctx); !ok {
			return s.authorize(ctx, at.attributes(auth.VerbWatch)) // Unauthenticated
		}
	}
	t, err := s.lookup(at.group, at.version, at.plural)
	if err != nil {
		return err
	}
	sel, err := parseFilter(q.labelSelector, q.fieldSelector)
	if err != nil {
		return err
	}
	h, err := s.historyOf()
	if err != nil {
		return err
	}
	select {
	case <-s.hub.closing:
		return errShuttingDown
	default:
	}
	release, err := s.watchers.acquire()
	if err != nil {
		return err
	}
	defer release()
	head, err := s.src.View(ctx, "")
	if err != nil {
		return err
	}
	w := &watcher{s: s, t: t, namespace: at.namespace, sel: sel, ctx: ctx, h: h, allowedNS: map[string]bool{}}
	w.start, w.skip = head.Commit, 0
	if q.revision != "" {
		commit, n, err := parseResume(q.revision)
		if err != nil {
			return err
		}
		snap, err := s.src.View(ctx, commit)
		if errors.Is(err, source.ErrRevisionNotFound) && s.catchUp(ctx) {
			// Another replica's commit, not fetched here yet: fetched now,
			// it is in the history of the new head.
			if head, err = s.src.View(ctx, ""); err != nil {
				return err
			}
			snap, err = s.src.View(ctx, commit)
		}
		if errors.Is(err, source.ErrRevisionNotFound) {
			return gone(q.revision)
		}
		if err != nil {
			return err
		}
		chain, ok, err := chainAfter(ctx, h, head.Commit, snap.Commit, maxResumeCommits)
		if err != nil {
			return err
		}
		if !ok {
			return gone(q.revision)
		}
		w.start, w.skip, w.chain = snap.Commit, n, chain
	}
	w.initial = q.revision == ""
	if q.sendInitial != nil {
		w.initial = *q.sendInitial
	}
	if at.namespace == "" && !w.initial {
		// Fail now, not at the first commit, when the namespaces cannot
		// be told.
		if _, err := s.namespacesAt(ctx, t, head); err != nil {
			return err
		}
	}
	if w.initial {
		w.skip = 0 // the state at the commit holds all of it
		// Fail before anything is sent when the namespaces cannot be told.
		snap, err := s.src.View(ctx, w.start)
		if err != nil {
			return err
		}
		if w.initialEvents, err = s.initialEvents(ctx, t, at.namespace, snap, sel); err != nil {
			return err
		}
	}
	w.bookmarks = q.bookmarks
	if q.ready != nil {
		q.ready()
	}
	return w.run(send)
}

// gone is the error for a revision a watch cannot resume from.
func gone(rev string) error {
	return &sentinelError{errRevisionGone, fmt.Sprintf(
		"revision %q is not in the first-parent history of the served branch (unknown, or the branch was force-pushed): list again and watch from the commit the list was read from",
		rev)}
}

// watcher is one watch.
type watcher struct {
	s         *Server
	t         *Type
	namespace string
	sel       filter
	ctx       context.Context
	h         source.History
	bookmarks bool
	allowedNS map[string]bool

	initial       bool
	initialEvents []rawEvent
	start         string   // the commit the watch starts at
	skip          int      // events of start already had (resuming inside it)
	chain         []string // commits after start up to the head, oldest first
}

// run sends the watch's events through send, from this goroutine, while a
// producer goroutine finds them.
func (w *watcher) run(send func(*watchEvent) error) error {
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	out := make(chan *watchEvent, w.s.cfg.watchBuffer)
	overflow := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- w.produce(ctx, out, overflow) }()
	w.s.obs.watchStarted()
	reason := "client"
	defer func() { w.s.obs.watchEnded(reason) }()
	resume := resumeAt(w.start, w.skip)
	deliver := func(ev *watchEvent) error {
		if err := send(ev); err != nil {
			// The client left, or stopped reading: its doing, not the
			// server's.
			if w.ctx.Err() != nil {
				return w.ctx.Err()
			}
			return connect.NewError(connect.CodeCanceled, fmt.Errorf("the watch's client stopped reading: %w", err))
		}
		w.s.obs.eventSent(ev.typ)
		if ev.resume != "" {
			resume = ev.resume
		}
		return nil
	}
	tooSlow := func() error {
		reason = "slow"
		return &resumeError{revision: resume, err: &sentinelError{errWatchTooSlow, fmt.Sprintf(
			"the watch fell more than %d events behind: resume from revision %s", w.s.cfg.watchBuffer, resume)}}
	}
	for {
		select {
		case ev := <-out:
			if err := deliver(ev); err != nil {
				return err
			}
		case <-overflow:
			return tooSlow()
		case <-w.s.hub.closing:
			reason = "shutdown"
			return errShuttingDown
		case err := <-done:
			select {
			case <-overflow:
				return tooSlow()
			default:
			}
			// Send what the producer left before it ended.
			for len(out) > 0 {
				if err := deliver(<-out); err != nil {
					return err
				}
			}
			if err == nil || ctx.Err() != nil {
				return w.ctx.Err()
			}
			reason = "error"
			return err
		}
	}
}

// produce finds the watch's events and puts them in out, until ctx ends,
// or an event finds out full once the watch is live (then it closes
// overflow).
func (w *watcher) produce(ctx context.Context, out chan<- *watchEvent, overflow chan<- struct{}) error {
	live := false
	put := func(ev *watchEvent) bool {
		if live {
			select {
			case out <- ev:
				return true
			default:
				close(overflow)
				return false
			}
		}
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	// emit sends the events of commit, from the skip-th on.
	emit := func(commit string, evs []rawEvent, skip int) bool {
		sent := w.filter(commit, evs)
		for i := skip; i < len(sent); i++ {
			if !put(sent[i]) {
				return false
			}
		}
		return true
	}
	if w.initial {
		for _, ev := range w.filter(w.start, w.initialEvents) {
			ev.resume = ""
			if !put(ev) {
				return nil
			}
		}
		w.initialEvents = nil
		if !put(bookmark(w.start, w.start, true)) {
			return nil
		}
	}
	if !w.initial {
		// The watch is established: say where it starts, which also gets
		// the answer's headers to a client that waits for them.
		if !put(bookmark(w.start, resumeAt(w.start, w.skip), false)) {
			return nil
		}
	}
	if w.skip > 0 {
		parent, err := firstParent(ctx, w.h, w.start)
		if err != nil {
			return err
		}
		evs, err := w.s.events(ctx, w.t, w.namespace, parent, w.start)
		if err != nil {
			return err
		}
		if !emit(w.start, evs, w.skip) {
			return nil
		}
	}
	cursor := w.start
	step := func(chain []string) (bool, error) {
		for _, c := range chain {
			evs, err := w.s.events(ctx, w.t, w.namespace, cursor, c)
			if err != nil {
				return false, err
			}
			if !emit(c, evs, 0) {
				return false, nil
			}
			cursor = c
		}
		return true, nil
	}
	if ok, err := step(w.chain); !ok || err != nil {
		return err
	}
	w.chain = nil
	live = true
	var tick <-chan time.Time
	if w.bookmarks {
		t := time.NewTicker(w.s.cfg.bookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	hub := w.s.hub
	hub.join()
	defer hub.leave()
	for {
		changed := hub.changed()
		head := hub.head()
		if head == "" || head == cursor {
			select {
			case <-ctx.Done():
				return nil
			case <-changed:
			case <-tick:
				if !put(bookmark(cursor, cursor, false)) {
					return nil
				}
			}
			continue
		}
		chain, ok, err := chainAfter(ctx, w.h, head, cursor, maxLiveCommits)
		if err != nil {
			return err
		}
		if !ok {
			// A force-push, or a jump too far to walk: the difference,
			// as one change at the new head.
			evs, err := w.s.events(ctx, w.t, w.namespace, cursor, head)
			if err != nil {
				return err
			}
			if !emit(head, evs, 0) {
				return nil
			}
			cursor = head
			continue
		}
		if ok, err := step(chain); !ok || err != nil {
			return err
		}
	}
}

// filter turns a commit's raw events into what this watch sends, with
// their resume revisions.
func (w *watcher) filter(commit string, evs []rawEvent) []*watchEvent {
	var out []*watchEvent
	for i := range evs {
		e := &evs[i]
		if !w.allowed(e.namespace) {
			continue
		}
		oldIn := e.old != nil && w.sel.matches(e.namespace, e.old)
		newIn := e.new != nil && w.sel.matches(e.namespace, e.new)
		ev := &watchEvent{commit: commit, entry: e.new}
		switch {
		case !oldIn && newIn:
			ev.typ = cupv1alpha1.WatchEventType_WATCH_EVENT_TYPE_ADDED
		case oldIn && newIn:
			ev.typ = cupv1alpha1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED
		case oldIn && !newIn:
			ev.typ = cupv1alpha1.WatchEventType_WATCH_EVENT_TYPE_DELETED
			if e.new == nil {
				ev.entry = e.old
			}
		default:
			continue
		}
		out = append(out, ev)
	}
	for i, ev := range out {
		ev.resume = commit // the last: the whole commit is had
		if i < len(out)-1 {
			ev.resume = resumeAt(commit, i+1)
		}
	}
	return out
}

// allowed reports whether the policy lets the watch see namespace.
func (w *watcher) allowed(namespace string) bool {
	if w.s.cfg.authz == nil || w.namespace != "" {
		return true // a watch of one namespace was authorized at its start
	}
	ok, seen := w.allowedNS[namespace]
	if !seen {
		ok = w.s.allowed(w.ctx, auth.Attributes{Verb: auth.VerbWatch, Group: w.t.Group, Plural: w.t.Plural, Namespace: namespace})
		if len(w.allowedNS) < 10000 {
			w.allowedNS[namespace] = ok
		}
	}
	return ok
}

// resumeTrailer sets the trailer naming where to resume on err's Connect
// form, when err is a resumeError.
func resumeTrailer(err error, ce *connect.Error) {
	var re *resumeError
	if ce != nil && errors.As(err, &re) {
		ce.Meta().Set(headerResumeRevision, re.revision)
	}
}
