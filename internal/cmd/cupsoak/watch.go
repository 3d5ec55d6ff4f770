// Watchers: REST watches on every cupd replica, and the check that each saw
// every change of the branch once, in order.

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cup-dev/cup/internal/benchrepo"
)

// A watcher follows the items of one replica with a REST watch: first the
// state at some commit (ADDED events up to the initial-events-end
// BOOKMARK), then every change after it. It drops its stream every
// -watch-reconnect or so on purpose and resumes from the revision of its
// last event, as it does when the stream breaks.
type watcher struct {
	id, replica int
	base        string
	hc          *http.Client
	rng         *rand.Rand
	every       time.Duration // mean time between deliberate reconnects

	mu sync.Mutex
	// start is the commit of the state the watch began with; "" until its
	// initial events ended.
	start string
	// state is what the watcher knows of every item, by name.
	state map[string]watchedItem
	// events are the changes after start, in the order they came.
	events []seenEvent
	// resume is the revision to resume from: the last event's.
	resume string
	// commits are the commits seen in events.
	commits map[string]bool
	// planned and broken count the streams dropped on purpose and those
	// that ended otherwise; errs are the first unexpected ends.
	planned, broken int
	errs            []string
}

// watchedItem is what a watch says of an item.
type watchedItem struct {
	Labels map[string]string
	Spec   map[string]any
}

// A seenEvent is one change a watcher got.
type seenEvent struct {
	Commit, Name, Type string
	At                 time.Time
}

// watchLine is one line of a REST watch.
type watchLine struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Name            string            `json:"name"`
			Labels          map[string]string `json:"labels"`
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec    map[string]any `json:"spec"`
		Message string         `json:"message"`
	} `json:"object"`
	Commit         string `json:"commit"`
	ResumeRevision string `json:"resumeRevision"`
}

func newWatcher(o *options, id, replica int, base string) *watcher {
	return &watcher{
		id: id, replica: replica, base: base, every: o.watchReconnect,
		// No timeout: a watch lasts until it is dropped.
		hc:    &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}},
		rng:   rand.New(rand.NewPCG(o.seed, uint64(2000+id))),
		state: map[string]watchedItem{}, commits: map[string]bool{},
	}
}

// run watches until ctx is done.
func (w *watcher) run(ctx context.Context) {
	defer w.hc.CloseIdleConnections()
	for ctx.Err() == nil {
		var d time.Duration
		if w.every > 0 {
			d = w.every/2 + time.Duration(w.rng.Int64N(int64(w.every)))
		}
		err := w.stream(ctx, d)
		w.mu.Lock()
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, errPlanned):
			w.planned++
		default:
			w.broken++
			if len(w.errs) < 10 {
				w.errs = append(w.errs, err.Error())
			}
		}
		w.mu.Unlock()
		if !errors.Is(err, errPlanned) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// errPlanned ends a stream the watcher dropped on purpose.
var errPlanned = errors.New("dropped on purpose")

// stream runs one watch request, for d when d is positive.
func (w *watcher) stream(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if d > 0 {
		t := time.AfterFunc(d, func() { cancel(errPlanned) })
		defer t.Stop()
	}
	w.mu.Lock()
	q := url.Values{"watch": {"true"}}
	if w.start == "" {
		// The state first: begin afresh.
		q.Set("sendInitialEvents", "true")
		clear(w.state)
	} else {
		q.Set("resourceVersion", w.resume)
	}
	w.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.base+benchrepo.Path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	res, err := w.hc.Do(req)
	if err != nil {
		return orPlanned(ctx, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1000))
		return fmt.Errorf("watch of cupd %d from %q: %s: %s", w.replica, q.Get("resourceVersion"), res.Status, b)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var ln watchLine
		if err := json.Unmarshal(sc.Bytes(), &ln); err != nil {
			return fmt.Errorf("watch line %.200q: %v", sc.Bytes(), err)
		}
		if err := w.apply(&ln, time.Now()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return orPlanned(ctx, err)
	}
	return orPlanned(ctx, io.ErrUnexpectedEOF)
}

// orPlanned is errPlanned when ctx was ended on purpose, else err.
func orPlanned(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errPlanned) {
		return errPlanned
	}
	return err
}

// apply takes one line of the watch.
func (w *watcher) apply(ln *watchLine, at time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := &ln.Object.Metadata
	switch ln.Type {
	case "BOOKMARK":
		if w.start == "" && m.Annotations["k8s.io/initial-events-end"] == "true" {
			w.start, w.resume = m.ResourceVersion, m.ResourceVersion
		}
		return nil
	case "ERROR":
		if m.ResourceVersion != "" {
			w.resume = m.ResourceVersion
		}
		return fmt.Errorf("watch of cupd %d ended with an error: %s", w.replica, ln.Object.Message)
	case "ADDED", "MODIFIED", "DELETED":
	default:
		return fmt.Errorf("watch of cupd %d: event of type %q", w.replica, ln.Type)
	}
	if ln.Type == "DELETED" {
		delete(w.state, m.Name)
	} else {
		w.state[m.Name] = watchedItem{Labels: m.Labels, Spec: ln.Object.Spec}
	}
	if w.start == "" {
		return nil // the initial state
	}
	w.events = append(w.events, seenEvent{Commit: ln.Commit, Name: m.Name, Type: ln.Type, At: at})
	w.commits[ln.Commit] = true
	w.resume = ln.ResumeRevision
	return nil
}

// saw reports whether the watcher got an event of commit.
func (w *watcher) saw(commit string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.commits[commit]
}

// expectedEvent is a change of an item that a commit of the branch made.
type expectedEvent struct{ Commit, Name, Type string }

// branchEvents are the changes of the items the commits of st made, in
// order, and the index into them where each commit's begin.
func branchEvents(st *remoteState) (events []expectedEvent, from map[string]int) {
	tree := make(map[string]bool, len(st.InitialTree))
	for p := range st.InitialTree {
		tree[p] = true
	}
	from = map[string]int{st.Initial: 0}
	for _, c := range st.Commits {
		for _, ch := range c.Changes {
			name, ok := itemName(ch.Path)
			if !ok {
				continue
			}
			typ := "ADDED"
			switch {
			case ch.Blob == "":
				typ = "DELETED"
			case tree[ch.Path]:
				typ = "MODIFIED"
			}
			tree[ch.Path] = ch.Blob != ""
			events = append(events, expectedEvent{Commit: c.ID, Name: name, Type: typ})
		}
		from[c.ID] = len(events)
	}
	return events, from
}

// itemName is the name of the item whose file is p, if p is one (see
// pathOf).
func itemName(p string) (string, bool) {
	name := strings.TrimSuffix(path.Base(p), ".json")
	return name, pathOf(name) == p
}

// checkWatchers is check 8: every watcher saw every change after its
// start, once and in order, and ended with the remote's final items.
// blobs holds the content of every item file of the final tree.
func checkWatchers(watchers []*watcher, st *remoteState, blobs map[string][]byte) *checkResult {
	c := &checkResult{Name: "8 every watcher on every replica saw every change once, in order, and ends at the final tree"}
	events, from := branchEvents(st)
	final := map[string]watchedItem{}
	for p, b := range st.FinalTree {
		name, ok := itemName(p)
		if !ok {
			continue
		}
		var f struct {
			Metadata struct{ Labels map[string]string }
			Spec     map[string]any
		}
		if err := json.Unmarshal(blobs[b], &f); err != nil {
			c.failf("%s at the head is not JSON: %v", p, err)
			continue
		}
		final[name] = watchedItem{Labels: f.Metadata.Labels, Spec: f.Spec}
	}
	var planned, broken, seen int
	for _, w := range watchers {
		w.mu.Lock()
		planned, broken, seen = planned+w.planned, broken+w.broken, seen+len(w.events)
		who := fmt.Sprintf("watcher %d on cupd %d", w.id, w.replica)
		i, ok := from[w.start]
		if !ok {
			c.failf("%s began at commit %q, which is not on the branch", who, w.start)
			w.mu.Unlock()
			continue
		}
		want := events[i:]
		if d := diffEvents(w.events, want); d != "" {
			c.failf("%s (from %.12s, %d events, %d expected): %s", who, w.start, len(w.events), len(want), d)
		}
		missing, wrong := 0, 0
		var example string
		for name, it := range final {
			got, ok := w.state[name]
			switch {
			case !ok:
				missing++
			case !sameItem(got, it):
				wrong++
			default:
				continue
			}
			if example == "" {
				example = name
			}
		}
		extra := 0
		for name := range w.state {
			if _, ok := final[name]; !ok {
				extra++
				if example == "" {
					example = name
				}
			}
		}
		if missing+wrong+extra > 0 {
			c.failf("%s ends with items other than the head's: %d missing, %d different, %d extra (e.g. %s)", who, missing, wrong, extra, example)
		}
		for _, e := range w.errs {
			c.Notes = append(c.Notes, fmt.Sprintf("%s: stream ended: %.300s", who, e))
		}
		w.mu.Unlock()
	}
	c.Notes = append(c.Notes, fmt.Sprintf("%d watchers, %d events seen in all; %d streams dropped on purpose and %d broken, each resumed from its last event",
		len(watchers), seen, planned, broken))
	return c
}

func sameItem(a, b watchedItem) bool {
	return reflect.DeepEqual(a.Labels, b.Labels) && reflect.DeepEqual(a.Spec, b.Spec)
}

// diffEvents says how got differs from want, or "".
func diffEvents(got []seenEvent, want []expectedEvent) string {
	g := make([]expectedEvent, len(got))
	for i, e := range got {
		g[i] = expectedEvent{Commit: e.Commit, Name: e.Name, Type: e.Type}
	}
	if slices.Equal(g, want) {
		return ""
	}
	count := map[expectedEvent]int{}
	for _, e := range g {
		count[e]++
	}
	var missing, dup, extra int
	wanted := map[expectedEvent]bool{}
	for _, e := range want {
		wanted[e] = true
		if count[e] == 0 {
			missing++
		}
	}
	for e, n := range count {
		if !wanted[e] {
			extra += n
		} else if n > 1 {
			dup += n - 1
		}
	}
	first := min(len(g), len(want))
	for i := range first {
		if g[i] != want[i] {
			first = i
			break
		}
	}
	at := "the end"
	switch {
	case first < len(g) && first < len(want):
		at = fmt.Sprintf("event %d: got %s %s at %.12s, want %s %s at %.12s", first, g[first].Type, g[first].Name, g[first].Commit,
			want[first].Type, want[first].Name, want[first].Commit)
	case first < len(want):
		at = fmt.Sprintf("event %d: got nothing, want %s %s at %.12s", first, want[first].Type, want[first].Name, want[first].Commit)
	case first < len(g):
		at = fmt.Sprintf("event %d: got %s %s at %.12s, want nothing", first, g[first].Type, g[first].Name, g[first].Commit)
	}
	return fmt.Sprintf("%d missing, %d duplicated, %d unexpected; first difference at %s; got %s; want %s", missing, dup, extra, at,
		eventWindow(g, first), eventWindow(want, first))
}

// eventWindow shows the events of es around index i.
func eventWindow(es []expectedEvent, i int) string {
	var parts []string
	for j := max(0, i-2); j < min(len(es), i+4); j++ {
		parts = append(parts, fmt.Sprintf("%d:%s %s@%.8s", j, es[j].Type, es[j].Name, es[j].Commit))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// propagation is how long after a write's answer each watcher got its
// event: on the replica that took the write, and on the others.
func propagation(watchers []*watcher, writes []*write) (same, other []time.Duration) {
	type ack struct {
		at      time.Time
		replica int
	}
	acks := map[string]ack{}
	for _, w := range writes {
		a := w.acceptedAttempt()
		if a == nil || a.Commit == "" || a.Unchanged || a.Replayed {
			continue
		}
		acks[a.Commit] = ack{at: a.End, replica: a.Replica}
	}
	for _, w := range watchers {
		w.mu.Lock()
		for _, e := range w.events {
			a, ok := acks[e.Commit]
			if !ok {
				continue
			}
			if d := e.At.Sub(a.at); a.replica == w.replica {
				same = append(same, d)
			} else {
				other = append(other, d)
			}
		}
		w.mu.Unlock()
	}
	return same, other
}

// awaitWatchers waits until every watcher has had its initial state.
func awaitWatchers(ctx context.Context, watchers []*watcher, wait time.Duration) error {
	t0 := time.Now()
	for _, w := range watchers {
		for {
			w.mu.Lock()
			started, errs := w.start != "", slices.Clone(w.errs)
			w.mu.Unlock()
			if started {
				break
			}
			if time.Since(t0) > wait || ctx.Err() != nil {
				return fmt.Errorf("watcher %d on cupd %d had no initial state after %v: %s", w.id, w.replica, wait, strings.Join(errs, "; "))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// awaitLastChange waits until every watcher saw the branch's last change
// of an item, for at most wait.
func awaitLastChange(ctx context.Context, watchers []*watcher, st *remoteState, wait time.Duration) error {
	events, _ := branchEvents(st)
	if len(events) == 0 {
		return nil
	}
	last := events[len(events)-1].Commit
	t0 := time.Now()
	for _, w := range watchers {
		for !w.saw(last) {
			if time.Since(t0) > wait || ctx.Err() != nil {
				return fmt.Errorf("watcher %d on cupd %d did not see commit %.12s within %v", w.id, w.replica, last, wait)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// itemBlobs reads the content of every item file of the remote's final
// tree.
func itemBlobs(ctx context.Context, g *gitCmd, dir string, st *remoteState) (map[string][]byte, error) {
	var ids []string
	for p, b := range st.FinalTree {
		if _, ok := itemName(p); ok {
			ids = append(ids, b)
		}
	}
	slices.Sort(ids)
	return catBlobs(ctx, g, dir, slices.Compact(ids))
}
