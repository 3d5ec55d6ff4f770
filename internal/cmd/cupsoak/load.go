package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/benchrepo"
)

// The type the generated repository serves.
const (
	group     = "bench.cup.dev"
	version   = "v1"
	plural    = "items"
	namespace = "default"
)

// Labels with which a write records who wrote it.
const (
	labelWriter = "soak-writer"
	labelSeq    = "soak-seq"
)

// A class is what an answer says about whether a write happened.
type class int

const (
	// accepted: 2xx, the write is done.
	accepted class = iota
	// refused: 4xx, the write was definitively not done.
	refused
	// ambiguous: no answer, or 5xx: the write may or may not have been done.
	ambiguous
)

func (c class) String() string {
	return [...]string{"accepted", "refused", "ambiguous"}[c]
}

// A write is one keyed write request and every attempt at it.
type write struct {
	Key    string
	Writer int
	Seq    int
	Op     string // "put", "delete", or "external" (see runExternal)
	Name   string
	Via    string // "rest", "connect" or "git"
	// What a put sent, as JSON decodes it.
	Spec   map[string]any
	Labels map[string]string
	// The file and content of an external write.
	Path     string
	Content  []byte
	Attempts []attempt
}

// file is the file the write changes.
func (w *write) file(pathOf func(name string) string) string {
	if w.Path != "" {
		return w.Path
	}
	return pathOf(w.Name)
}

// An attempt is one request of a write and its answer.
type attempt struct {
	Outcome   string // e.g. "202", "409 aborted", "connect unavailable", "transport error"
	Class     class
	Commit    string // the commit cupd answered
	Replayed  bool
	Unchanged bool // 204, or WRITE_OUTCOME_UNCHANGED
	Latency   time.Duration
	Err       string
	Replica   int       // the cupd it was sent to
	Cut       bool      // the client gave up on it early on purpose (-cut-percent)
	Dropped   bool      // the client dropped its answer as if lost (-drop-percent)
	End       time.Time // when its answer came
}

// mayHaveLanded reports whether the write was not accepted and yet may be
// on the branch: its answers end ambiguous, or one of them was ambiguous
// and a later refusal cannot tell whether that one lands (a request that
// a cupd still makes after its client gave up).
func (w *write) mayHaveLanded() bool {
	switch w.Class() {
	case ambiguous:
		return true
	case refused:
		return slices.ContainsFunc(w.Attempts, func(a attempt) bool { return a.Class == ambiguous })
	}
	return false
}

// Class is what the write's answers say: accepted when one attempt was,
// else what the last attempt said.
func (w *write) Class() class {
	if a := w.acceptedAttempt(); a != nil {
		return accepted
	}
	if len(w.Attempts) == 0 {
		return ambiguous
	}
	return w.Attempts[len(w.Attempts)-1].Class
}

func (w *write) acceptedAttempt() *attempt {
	for i := range w.Attempts {
		if w.Attempts[i].Class == accepted {
			return &w.Attempts[i]
		}
	}
	return nil
}

// body is the REST body of a put.
func (w *write) body() []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": w.Labels}, "spec": w.Spec})
	return b
}

// budget bounds the requests of a run.
type budget struct {
	max  int64
	used atomic.Int64
}

func newBudget(max int64) *budget { return &budget{max: max} }

// take reserves one request, or reports that the budget is spent.
func (b *budget) take() bool { return b.used.Add(1) <= b.max }

func (b *budget) spent() bool { return b.used.Load() >= b.max }

// load is the writers and readers with the state they keep across phases.
type load struct {
	o       *options
	eps     []endpoint // one per cupd replica
	tr      *http.Transport
	hc      *http.Client
	writers []*writer
	readers []*reader
	// acked, when set, is called after replica accepted a write with a
	// new commit (the webhook fan-out).
	acked func(replica int)
}

// endpoint is one cupd replica as the clients reach it.
type endpoint struct {
	base string // its address
	rc   cupv1alpha1connect.ResourceServiceClient
}

type writer struct {
	id      int
	rng     *rand.Rand
	seq     int
	created int
	owned   []string
	present map[string]bool // what the writer believes exists
	known   map[string]bool // whether that belief is certain
	writes  []*write
	// anomalies are answers that contradict the writer's own accepted writes.
	anomalies []string
}

type reader struct {
	id      int
	replica int // the cupd it reads from, always the same
	rng     *rand.Rand
	lastSeq map[string]int
	lastAt  map[string]string // the commit lastSeq was read at
	stale   []string
	nStale  int
}

// newLoad makes the writers and readers of the cupd replicas at bases:
// every write request goes to a replica chosen at random, each reader
// reads from one replica.
func newLoad(o *options, bases []string) *load {
	conns := o.writers + o.readers + 4
	tr := &http.Transport{MaxIdleConns: conns * len(bases), MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute}
	hc := &http.Client{Transport: tr, Timeout: o.requestTimeout}
	l := &load{o: o, tr: tr, hc: hc}
	for _, b := range bases {
		l.eps = append(l.eps, endpoint{base: b, rc: cupv1alpha1connect.NewResourceServiceClient(hc, b)})
	}
	for id := range o.writers {
		w := &writer{id: id, rng: rand.New(rand.NewPCG(o.seed, uint64(id))), present: map[string]bool{}, known: map[string]bool{}}
		for i := id; i < o.resources; i += o.writers {
			w.owned = append(w.owned, benchrepo.Name(i))
			w.present[benchrepo.Name(i)], w.known[benchrepo.Name(i)] = true, true
		}
		l.writers = append(l.writers, w)
	}
	for id := range o.readers {
		l.readers = append(l.readers, &reader{id: id, replica: id % len(bases), rng: rand.New(rand.NewPCG(o.seed, uint64(1000+id))),
			lastSeq: map[string]int{}, lastAt: map[string]string{}})
	}
	return l
}

// closeIdle closes the client's idle connections, so that cupd holds no
// goroutine for them.
func (l *load) closeIdle() { l.tr.CloseIdleConnections() }

// writes returns every write of every writer.
func (l *load) writes() []*write {
	var all []*write
	for _, w := range l.writers {
		all = append(all, w.writes...)
	}
	return all
}

// run runs the writers and readers for d or until the budget is spent.
// Requests in flight at the end are let finish (within -request-timeout),
// and a write whose answer was ambiguous is still repeated, so that no
// answer is made ambiguous by the phase's end.
func (l *load) run(ctx context.Context, name string, d time.Duration, b *budget) *phaseStats {
	t0 := time.Now()
	deadline := t0.Add(d)
	more := func() bool { return ctx.Err() == nil && time.Now().Before(deadline) && !b.spent() }
	total := &phaseStats{name: name, start: t0, outcomes: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range l.writers {
		wg.Go(func() {
			s := &phaseStats{start: t0, outcomes: map[string]int{}}
			for more() {
				l.writeOnce(ctx, w, s, b)
			}
			mu.Lock()
			total.add(s)
			mu.Unlock()
		})
	}
	for _, r := range l.readers {
		wg.Go(func() {
			s := &phaseStats{start: t0, outcomes: map[string]int{}}
			for more() && b.take() {
				l.readOnce(ctx, r, s)
			}
			mu.Lock()
			total.add(s)
			mu.Unlock()
		})
	}
	wg.Wait()
	total.elapsed = time.Since(t0)
	total.budgetHit = b.spent()
	return total
}

// writeOnce makes the writer's next write, repeating it while its answer is
// ambiguous, and records every attempt.
func (l *load) writeOnce(ctx context.Context, w *writer, s *phaseStats, b *budget) {
	w.seq++
	wr := &write{
		Key:    fmt.Sprintf("soak%d-w%02d-%07d", l.o.seed, w.id, w.seq),
		Writer: w.id, Seq: w.seq, Op: "put", Via: "rest",
	}
	if w.rng.IntN(4) == 0 {
		wr.Via = "connect"
	}
	r := w.rng.IntN(100)
	var present []string
	if r < l.o.deletePercent {
		for _, n := range w.owned {
			if w.present[n] {
				present = append(present, n)
			}
		}
	}
	switch {
	case len(present) > 0:
		wr.Op, wr.Name = "delete", present[w.rng.IntN(len(present))]
	case r >= l.o.deletePercent && r < l.o.deletePercent+l.o.createPercent:
		wr.Name = fmt.Sprintf("soak-w%02d-%05d", w.id, w.created)
		w.created++
		w.owned = append(w.owned, wr.Name)
	default:
		wr.Name = w.owned[w.rng.IntN(len(w.owned))]
	}
	if wr.Op == "put" {
		wr.Labels = map[string]string{labelWriter: fmt.Sprintf("w%02d", w.id), labelSeq: strconv.Itoa(w.seq)}
		wr.Spec = map[string]any{
			"owner":    fmt.Sprintf("writer-%d@example.com", w.id),
			"replicas": float64(w.seq % 50),
			"enabled":  w.seq%2 == 0,
			"note":     fmt.Sprintf("cupsoak writer %d seq %d key %s %s", w.id, w.seq, wr.Key, strings.Repeat("n", 150)),
		}
	}
	// The first attempt goes to a replica chosen at random, each repeat
	// to another one: the idempotency key must hold across replicas.
	replica := w.rng.IntN(len(l.eps))
	for i := 0; i <= l.o.retries && ctx.Err() == nil; i++ {
		if i > 0 {
			time.Sleep(time.Duration(i) * 100 * time.Millisecond)
			if n := len(l.eps); n > 1 {
				replica = (replica + 1 + w.rng.IntN(n-1)) % n
			}
		}
		if !b.take() {
			break
		}
		// Some first attempts are given up early, or their answer
		// dropped, leaving the write ambiguous on purpose, so that its
		// repeat tests the key.
		var cut time.Duration
		drop := false
		if i == 0 && i < l.o.retries {
			switch p := w.rng.IntN(100); {
			case p < l.o.cutPercent:
				cut = time.Duration(10+w.rng.IntN(490)) * time.Millisecond
			case p < l.o.cutPercent+l.o.dropPercent:
				drop = true
			}
		}
		t0 := time.Now()
		a := l.send(ctx, wr, replica, cut)
		if a.Class == accepted && !a.Unchanged && !a.Replayed && l.acked != nil {
			l.acked(replica)
		}
		if drop && a.Class == accepted {
			a.Class, a.Dropped = ambiguous, true
		}
		wr.Attempts = append(wr.Attempts, a)
		what := wr.Op + "/" + wr.Via + " " + a.Outcome
		switch {
		case a.Cut:
			what += " (given up)"
		case a.Dropped:
			what += " (answer dropped)"
		}
		s.wrote(what, t0, a.Latency)
		s.outcomes[what]++
		if a.Class != ambiguous {
			break
		}
	}
	if len(wr.Attempts) == 0 {
		w.seq-- // never sent
		return
	}
	w.writes = append(w.writes, wr)
	last := wr.Attempts[len(wr.Attempts)-1]
	switch c := wr.Class(); {
	case c == accepted:
		if a := wr.acceptedAttempt(); a.Unchanged {
			w.anomalies = append(w.anomalies, fmt.Sprintf("%s %s (key %s) with a new body was answered %q: unchanged, no commit", wr.Op, wr.Name, wr.Key, a.Outcome))
		}
		w.present[wr.Name], w.known[wr.Name] = wr.Op == "put", true
	case c == refused && wr.Op == "delete" && isNotFound(last.Outcome):
		if w.known[wr.Name] && w.present[wr.Name] && len(wr.Attempts) == 1 {
			w.anomalies = append(w.anomalies, fmt.Sprintf("delete %s (key %s) answered %q although this writer's last write of it was accepted and put it",
				wr.Name, wr.Key, last.Outcome))
		}
		w.present[wr.Name], w.known[wr.Name] = false, true
	case wr.mayHaveLanded():
		w.present[wr.Name], w.known[wr.Name] = wr.Op == "put", false
	}
}

func isNotFound(outcome string) bool {
	return strings.HasPrefix(outcome, "404") || outcome == "connect not_found"
}

// readOnce makes one read: a get or a list, over REST or Connect.
func (l *load) readOnce(ctx context.Context, r *reader, s *phaseStats) {
	ctx, cancel := context.WithTimeout(ctx, l.o.requestTimeout)
	defer cancel()
	var name string
	if r.rng.IntN(5) == 0 {
		name = fmt.Sprintf("soak-w%02d-%05d", r.rng.IntN(l.o.writers), r.rng.IntN(64))
	} else {
		name = benchrepo.Name(r.rng.IntN(l.o.resources))
	}
	t0 := time.Now()
	var kind, outcome string
	switch p := r.rng.IntN(100); {
	case p < 45:
		kind, outcome = "get/rest", l.getREST(ctx, r, name)
	case p < 70:
		kind, outcome = "get/connect", l.getConnect(ctx, r, name)
	case p < 85:
		kind, outcome = "list/rest", l.listREST(ctx, r)
	default:
		kind, outcome = "list/connect", l.listConnect(ctx, r)
	}
	s.read(kind+" "+outcome, t0, time.Since(t0))
	s.outcomes[kind+" "+outcome]++
}

// saw records that the reader read name with labels at commit, and notes a
// read that went back to an older write of it.
func (r *reader) saw(name string, labels map[string]string, commit string) {
	seq, _ := strconv.Atoi(labels[labelSeq]) // 0: as generated
	if last, ok := r.lastSeq[name]; ok && seq < last {
		r.nStale++
		if len(r.stale) < 20 {
			r.stale = append(r.stale, fmt.Sprintf("reader %d read %s at seq %d (commit %.12s) after seq %d (commit %.12s)",
				r.id, name, seq, commit, last, r.lastAt[name]))
		}
		return
	}
	r.lastSeq[name], r.lastAt[name] = seq, commit
}

// servedCommit asks a cupd replica which commit it serves now.
func (l *load) servedCommit(ctx context.Context, replica int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.eps[replica].base+benchrepo.Path+"?limit=1", nil)
	if err != nil {
		return "", err
	}
	res, err := l.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("list: %s", res.Status)
	}
	return res.Header.Get("Cup-Commit"), nil
}

// consistency is check 6: what the clients saw contradicts nothing they
// were told.
func (l *load) consistency(writes []*write) *checkResult {
	c := &checkResult{Name: "6 clients saw a consistent cupd"}
	n := 0
	for _, r := range l.readers {
		n += r.nStale
		c.Failures = append(c.Failures, r.stale...)
	}
	if n > 0 {
		c.Failures = append(c.Failures, fmt.Sprintf("%d reads in all went back to an older write of a resource", n))
	}
	for _, w := range l.writers {
		c.Failures = append(c.Failures, w.anomalies...)
	}
	tracked := 0
	for _, r := range l.readers {
		tracked += len(r.lastSeq)
	}
	c.Notes = append(c.Notes, fmt.Sprintf("%d (reader, resource) pairs followed for going back", tracked))
	slices.SortStableFunc(c.Failures, func(a, b string) int { return cmp.Compare(a, b) })
	return c
}
