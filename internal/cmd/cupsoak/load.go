package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
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
	base    string // cupd's address
	tr      *http.Transport
	hc      *http.Client
	rc      cupv1alpha1connect.ResourceServiceClient
	writers []*writer
	readers []*reader
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
	rng     *rand.Rand
	lastSeq map[string]int
	lastAt  map[string]string // the commit lastSeq was read at
	stale   []string
	nStale  int
}

func newLoad(o *options, base string) *load {
	conns := o.writers + o.readers + 4
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute}
	hc := &http.Client{Transport: tr, Timeout: o.requestTimeout}
	l := &load{o: o, base: base, tr: tr, hc: hc, rc: cupv1alpha1connect.NewResourceServiceClient(hc, base)}
	for id := range o.writers {
		w := &writer{id: id, rng: rand.New(rand.NewPCG(o.seed, uint64(id))), present: map[string]bool{}, known: map[string]bool{}}
		for i := id; i < o.resources; i += o.writers {
			w.owned = append(w.owned, benchrepo.Name(i))
			w.present[benchrepo.Name(i)], w.known[benchrepo.Name(i)] = true, true
		}
		l.writers = append(l.writers, w)
	}
	for id := range o.readers {
		l.readers = append(l.readers, &reader{id: id, rng: rand.New(rand.NewPCG(o.seed, uint64(1000+id))),
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

// phaseStats are the figures of one phase.
type phaseStats struct {
	name     string
	start    time.Time
	elapsed  time.Duration
	reads    []time.Duration // every read request
	writes   []time.Duration // every write attempt
	outcomes map[string]int  // "<request> <outcome>"
	// readEnd and writeEnd are when the last read and write ended, from
	// the start: writers finish the write they are making at the end of the
	// phase, so writeEnd may be later than the phase's duration.
	readEnd, writeEnd time.Duration
	// The slowest reads and write attempts, slowest first.
	slowReads, slowWrites []slow
	budgetHit             bool
}

// slow is one slow request.
type slow struct {
	what    string
	at      time.Duration // when it started, from the phase's start
	latency time.Duration
}

// maxSlow is how many of the slowest reads and writes a phase keeps.
const maxSlow = 5

func (p *phaseStats) read(what string, t0 time.Time, lat time.Duration) {
	p.reads = append(p.reads, lat)
	p.slowReads = slowest(p.slowReads, slow{what: what, at: t0.Sub(p.start), latency: lat})
	p.readEnd = max(p.readEnd, t0.Add(lat).Sub(p.start))
}

func (p *phaseStats) wrote(what string, t0 time.Time, lat time.Duration) {
	p.writes = append(p.writes, lat)
	p.slowWrites = slowest(p.slowWrites, slow{what: what, at: t0.Sub(p.start), latency: lat})
	p.writeEnd = max(p.writeEnd, t0.Add(lat).Sub(p.start))
}

// slowest adds to list, the slowest requests, those of add that are
// among the maxSlow slowest.
func slowest(list []slow, add ...slow) []slow {
	for _, s := range add {
		if len(list) == maxSlow && s.latency <= list[maxSlow-1].latency {
			continue
		}
		list = append(list, s)
		slices.SortFunc(list, func(a, b slow) int { return cmp.Compare(b.latency, a.latency) })
		list = list[:min(len(list), maxSlow)]
	}
	return list
}

func (p *phaseStats) add(q *phaseStats) {
	p.reads = append(p.reads, q.reads...)
	p.writes = append(p.writes, q.writes...)
	for k, v := range q.outcomes {
		p.outcomes[k] += v
	}
	p.readEnd, p.writeEnd = max(p.readEnd, q.readEnd), max(p.writeEnd, q.writeEnd)
	p.slowReads = slowest(p.slowReads, q.slowReads...)
	p.slowWrites = slowest(p.slowWrites, q.slowWrites...)
}

// rate is n requests per second of d.
func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func (p *phaseStats) oneLine() string {
	return fmt.Sprintf("%v, %d reads (%.0f/s over %v), %d write requests (%.0f/s over %v)", p.elapsed.Round(time.Millisecond),
		len(p.reads), rate(len(p.reads), p.readEnd), p.readEnd.Round(time.Millisecond),
		len(p.writes), rate(len(p.writes), p.writeEnd), p.writeEnd.Round(time.Millisecond))
}

func (p *phaseStats) report(out io.Writer) {
	bound := "ran its full duration"
	if p.budgetHit {
		bound = "stopped by -max-requests"
	}
	fmt.Fprintf(out, "\n%s: %v, %s\n", p.name, p.elapsed.Round(time.Millisecond), bound)
	for _, r := range []struct {
		what string
		lat  []time.Duration
		end  time.Duration
	}{{"reads ", p.reads, p.readEnd}, {"writes", p.writes, p.writeEnd}} {
		fmt.Fprintf(out, "  %s %8d requests %9.1f req/s (over %v)  p50 %-10v p99 %-10v max %v\n", r.what, len(r.lat),
			rate(len(r.lat), r.end), r.end.Round(time.Millisecond), pct(r.lat, 50), pct(r.lat, 99), pct(r.lat, 100))
	}
	fmt.Fprintf(out, "  slowest requests:\n")
	for _, s := range append(p.slowReads, p.slowWrites...) {
		fmt.Fprintf(out, "    %-10v %-36s started at +%v\n", pct([]time.Duration{s.latency}, 0), s.what, s.at.Round(time.Millisecond))
	}
	fmt.Fprintf(out, "  outcomes:\n")
	for _, k := range slices.Sorted(maps.Keys(p.outcomes)) {
		fmt.Fprintf(out, "    %-40s %8d\n", k, p.outcomes[k])
	}
}

// reportWrites counts the writes by what their answers said.
func reportWrites(out io.Writer, writes []*write) {
	byClass := map[class]int{}
	ops := map[string]int{}
	final := map[string]int{}
	retried, replayed, unchanged := 0, 0, 0
	for _, w := range writes {
		c := w.Class()
		byClass[c]++
		ops[w.Op+"/"+w.Via]++
		if len(w.Attempts) > 1 {
			retried++
		}
		if a := w.acceptedAttempt(); a != nil {
			if a.Replayed {
				replayed++
			}
			if a.Unchanged {
				unchanged++
			}
		} else if len(w.Attempts) > 0 {
			final[c.String()+": "+w.Attempts[len(w.Attempts)-1].Outcome]++
		}
	}
	fmt.Fprintf(out, "\nwrite requests (warm-up included, each with its own idempotency key): %d\n", len(writes))
	fmt.Fprintf(out, "  by operation: %s\n", joinCounts(ops))
	fmt.Fprintf(out, "  accepted %d (%d answered as a replay, %d as unchanged), refused %d, ambiguous %d; %d repeated after an ambiguous answer\n",
		byClass[accepted], replayed, unchanged, byClass[refused], byClass[ambiguous], retried)
	if len(final) > 0 {
		fmt.Fprintf(out, "  not accepted, by last answer: %s\n", joinCounts(final))
	}
}

func joinCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
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
	for i := 0; i <= l.o.retries && ctx.Err() == nil; i++ {
		if i > 0 {
			time.Sleep(time.Duration(i) * 100 * time.Millisecond)
		}
		if !b.take() {
			break
		}
		t0 := time.Now()
		a := l.send(ctx, wr)
		wr.Attempts = append(wr.Attempts, a)
		s.wrote(wr.Op+"/"+wr.Via+" "+a.Outcome, t0, a.Latency)
		s.outcomes[wr.Op+"/"+wr.Via+" "+a.Outcome]++
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
	case c == ambiguous:
		w.present[wr.Name], w.known[wr.Name] = wr.Op == "put", false
	}
}

func isNotFound(outcome string) bool {
	return strings.HasPrefix(outcome, "404") || outcome == "connect not_found"
}

// send makes one attempt at a write.
func (l *load) send(ctx context.Context, wr *write) attempt {
	ctx, cancel := context.WithTimeout(ctx, l.o.requestTimeout)
	defer cancel()
	t0 := time.Now()
	var a attempt
	if wr.Via == "connect" {
		a = l.sendConnect(ctx, wr)
	} else {
		a = l.sendREST(ctx, wr)
	}
	a.Latency = time.Since(t0)
	return a
}

func (l *load) sendREST(ctx context.Context, wr *write) attempt {
	method, body := http.MethodDelete, []byte(nil)
	if wr.Op == "put" {
		method, body = http.MethodPut, wr.body()
	}
	req, err := http.NewRequestWithContext(ctx, method, l.base+benchrepo.Path+"/"+wr.Name, bytes.NewReader(body))
	if err != nil {
		return attempt{Outcome: "request error", Class: ambiguous, Err: err.Error()}
	}
	req.Header.Set("Idempotency-Key", wr.Key)
	req.Header.Set("Content-Type", "application/json")
	res, err := l.hc.Do(req)
	if err != nil {
		return attempt{Outcome: "transport error", Class: ambiguous, Err: err.Error()}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return attempt{Outcome: fmt.Sprintf("%d, then transport error", res.StatusCode), Class: ambiguous, Err: err.Error()}
	}
	a := attempt{Outcome: strconv.Itoa(res.StatusCode), Class: statusClass(res.StatusCode)}
	switch {
	case res.StatusCode/100 == 2:
		a.Commit = res.Header.Get("Cup-Commit")
		a.Replayed = res.Header.Get("Idempotent-Replayed") == "true"
		a.Unchanged = res.StatusCode == http.StatusNoContent
	default:
		var e struct{ Code, Message string }
		_ = json.Unmarshal(b, &e)
		a.Outcome += " " + e.Code
		a.Err = e.Message
	}
	return a
}

// statusClass is what an HTTP status says about a write.
func statusClass(status int) class {
	switch {
	case status/100 == 2:
		return accepted
	case status/100 == 4 && status != 499: // 499: the request was cancelled
		return refused
	}
	return ambiguous
}

func (l *load) sendConnect(ctx context.Context, wr *write) attempt {
	var res *cupv1alpha1.WriteResult
	var err error
	if wr.Op == "put" {
		spec, serr := structpb.NewStruct(wr.Spec)
		if serr != nil {
			return attempt{Outcome: "request error", Class: ambiguous, Err: serr.Error()}
		}
		var out *connect.Response[cupv1alpha1.PutResponse]
		out, err = l.rc.Put(ctx, connect.NewRequest(&cupv1alpha1.PutRequest{
			Group: group, Version: version, Plural: plural, Namespace: namespace, Name: wr.Name, IdempotencyKey: wr.Key,
			Resource: &cupv1alpha1.Resource{Metadata: &cupv1alpha1.ObjectMeta{Labels: wr.Labels}, Spec: spec},
		}))
		if err == nil {
			res = out.Msg.GetResult()
		}
	} else {
		var out *connect.Response[cupv1alpha1.DeleteResponse]
		out, err = l.rc.Delete(ctx, connect.NewRequest(&cupv1alpha1.DeleteRequest{
			Group: group, Version: version, Plural: plural, Namespace: namespace, Name: wr.Name, IdempotencyKey: wr.Key,
		}))
		if err == nil {
			res = out.Msg.GetResult()
		}
	}
	if err != nil {
		// A transport error is a Connect error too (unavailable, unknown):
		// ambiguous either way.
		c := connect.CodeOf(err)
		return attempt{Outcome: "connect " + c.String(), Class: codeClass(c), Err: err.Error()}
	}
	return attempt{Outcome: "connect ok", Class: accepted, Commit: res.GetCommit(), Replayed: res.GetReplayed(),
		Unchanged: res.GetOutcome() == cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED}
}

// codeClass is what a Connect code says about a write: the codes the
// Connect protocol maps to 4xx statuses are refusals.
func codeClass(c connect.Code) class {
	switch c {
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodeOutOfRange,
		connect.CodeNotFound, connect.CodeAlreadyExists, connect.CodeAborted, connect.CodePermissionDenied,
		connect.CodeResourceExhausted, connect.CodeUnauthenticated:
		return refused
	}
	return ambiguous
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

func (l *load) getREST(ctx context.Context, r *reader, name string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.base+benchrepo.Path+"/"+name, nil)
	if err != nil {
		return "request error"
	}
	res, err := l.hc.Do(req)
	if err != nil {
		return "transport error"
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return "transport error"
	}
	if res.StatusCode != http.StatusOK {
		var e struct{ Code string }
		_ = json.Unmarshal(b, &e)
		return strings.TrimSpace(strconv.Itoa(res.StatusCode) + " " + e.Code)
	}
	var item struct {
		Metadata struct{ Labels map[string]string }
	}
	if err := json.Unmarshal(b, &item); err != nil {
		return "200 but not JSON"
	}
	r.saw(name, item.Metadata.Labels, res.Header.Get("Cup-Commit"))
	return "200"
}

func (l *load) getConnect(ctx context.Context, r *reader, name string) string {
	res, err := l.rc.Get(ctx, connect.NewRequest(&cupv1alpha1.GetRequest{
		Group: group, Version: version, Plural: plural, Namespace: namespace, Name: name,
	}))
	if err != nil {
		return connect.CodeOf(err).String()
	}
	r.saw(name, res.Msg.GetResource().GetMetadata().GetLabels(), res.Msg.GetCommit())
	return "ok"
}

func (l *load) listREST(ctx context.Context, r *reader) string {
	url := l.base + benchrepo.Path
	if r.rng.IntN(2) == 0 {
		url += fmt.Sprintf("?labelSelector=team%%3Dteam-%d", r.rng.IntN(7))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "request error"
	}
	res, err := l.hc.Do(req)
	if err != nil {
		return "transport error"
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return "transport error"
	}
	return strconv.Itoa(res.StatusCode)
}

func (l *load) listConnect(ctx context.Context, r *reader) string {
	res, err := l.rc.List(ctx, connect.NewRequest(&cupv1alpha1.ListRequest{
		Group: group, Version: version, Plural: plural, Namespace: namespace, PageSize: 100,
	}))
	if err != nil {
		return connect.CodeOf(err).String()
	}
	for _, it := range res.Msg.GetItems() {
		r.saw(it.GetMetadata().GetName(), it.GetMetadata().GetLabels(), res.Msg.GetCommit())
	}
	return "ok"
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

// servedCommit asks cupd which commit it serves now.
func (l *load) servedCommit(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.base+benchrepo.Path+"?limit=1", nil)
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

// pct is the p-th percentile of d.
func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	v := s[(len(s)-1)*p/100]
	if v > time.Millisecond {
		return v.Round(10 * time.Microsecond)
	}
	return v.Round(time.Microsecond)
}
