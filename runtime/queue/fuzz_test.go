package queue_test

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cup-dev/cup/runtime/queue"
)

// The fuzz test drives a queue single-threaded with operations decoded
// from the input and compares it after every step with a model written
// straight from the documented semantics.

const (
	fuzzKeys = 5
	fuzzMax  = 3 // MaxItems, below fuzzKeys so that ErrFull happens
)

var fuzzBackoff = queue.Backoff{Base: 10 * time.Millisecond, Factor: 2, Jitter: 0.5, Cap: 100 * time.Millisecond}

// refDelay is the backoff formula of the Queue documentation.
func refDelay(b queue.Backoff, n int, r float64) time.Duration {
	d := min(float64(b.Base)*math.Pow(b.Factor, float64(n)), float64(b.Cap))
	d *= 1 + b.Jitter*(2*r-1)
	return time.Duration(max(0, min(d, float64(b.Cap))))
}

type mstate int

const (
	mAbsent mstate = iota
	mReady
	mWaiting
	mInFlight
)

type mkey struct {
	st        mstate
	due       time.Duration // waiting, or pending with pendingAt
	seq       int
	pending   bool
	pendingAt bool
	owed      bool // added since the last processing began
}

type model struct {
	now      time.Duration
	keys     [fuzzKeys]mkey
	ready    []int
	seq      int
	failures [fuzzKeys]int
	adds     uint64
	retries  uint64
	shut     bool
}

func (m *model) held() int {
	n := len(m.ready)
	for _, k := range m.keys {
		if k.st == mWaiting || k.pending {
			n++
		}
	}
	return n
}

func (m *model) park(k int, due time.Duration) {
	m.seq++
	m.keys[k].st, m.keys[k].due, m.keys[k].seq = mWaiting, due, m.seq
}

// add applies Add (d <= 0) or AddAfter and returns the expected error.
func (m *model) add(k int, d time.Duration) error {
	if m.shut {
		return queue.ErrShutDown
	}
	e := &m.keys[k]
	due := m.now + d
	switch e.st {
	case mAbsent:
		if m.held() >= fuzzMax {
			return queue.ErrFull
		}
		if d <= 0 {
			e.st = mReady
			m.ready = append(m.ready, k)
		} else {
			m.park(k, due)
		}
	case mWaiting:
		if d <= 0 {
			e.st = mReady
			m.ready = append(m.ready, k)
		} else if due < e.due {
			m.park(k, due)
		}
	case mInFlight:
		if !e.pending && m.held() >= fuzzMax {
			return queue.ErrFull
		}
		switch {
		case d <= 0:
			e.pending, e.pendingAt = true, false
		case !e.pending:
			e.pending, e.pendingAt, e.due = true, true, due
		case e.pendingAt && due < e.due:
			e.due = due
		}
	}
	e.owed = true
	m.adds++
	return nil
}

func (m *model) step(d time.Duration) {
	m.now += d
	var due []int
	for k, e := range m.keys {
		if e.st == mWaiting && e.due <= m.now {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b int) int {
		return cmp.Or(cmp.Compare(m.keys[a].due, m.keys[b].due), cmp.Compare(m.keys[a].seq, m.keys[b].seq))
	})
	for _, k := range due {
		m.keys[k].st = mReady
	}
	m.ready = append(m.ready, due...)
}

func (m *model) done(k int) {
	e := &m.keys[k]
	if e.st != mInFlight {
		return
	}
	switch {
	case !e.pending:
		e.st = mAbsent
	case e.pendingAt && e.due > m.now:
		m.park(k, e.due)
	default:
		e.st = mReady
		m.ready = append(m.ready, k)
	}
	e.pending, e.pendingAt = false, false
}

func (m *model) shutDown() {
	m.shut = true
	m.ready = nil
	for k := range m.keys {
		e := &m.keys[k]
		if e.st != mInFlight {
			*e = mkey{}
		}
		e.pending, e.pendingAt, e.owed = false, false, false
	}
}

type fuzzer struct {
	t     *testing.T
	q     *queue.Queue[int]
	clock *queue.FakeClock
	m     model
	r     float64 // what the queue's Rand returns next
}

func (f *fuzzer) wantErr(op string, got, want error) {
	f.t.Helper()
	if !errors.Is(got, want) || (got == nil) != (want == nil) {
		f.t.Fatalf("%s: err = %v, want %v", op, got, want)
	}
}

func (f *fuzzer) get() {
	f.t.Helper()
	if n := f.q.Len(); n != len(f.m.ready) {
		f.t.Fatalf("Len() = %d, model has %v ready", n, f.m.ready)
	}
	if len(f.m.ready) == 0 && !f.m.shut {
		return // Get would block
	}
	k, ok := f.q.Get(f.t.Context())
	if f.m.shut {
		if ok {
			f.t.Fatalf("Get after ShutDown = %d, true", k)
		}
		return
	}
	if want := f.m.ready[0]; !ok || k != want {
		f.t.Fatalf("Get() = %d, %v; want %d (ready %v)", k, ok, want, f.m.ready)
	}
	if f.m.keys[k].st != mReady {
		f.t.Fatalf("Get() handed out key %d in state %d", k, f.m.keys[k].st)
	}
	f.m.ready = f.m.ready[1:]
	f.m.keys[k].st, f.m.keys[k].owed = mInFlight, false
}

// compare checks the queue's invariants and observable state against the
// model.
func (f *fuzzer) compare() {
	f.t.Helper()
	if err := queue.CheckInvariants(f.q); err != nil {
		f.t.Fatal(err)
	}
	want := queue.Stats{Ready: len(f.m.ready), Adds: f.m.adds, Retries: f.m.retries}
	for _, e := range f.m.keys {
		switch e.st {
		case mWaiting:
			want.Waiting++
		case mInFlight:
			want.InFlight++
		}
	}
	got := f.q.Stats()
	got.LongestRunning = 0
	if got != want {
		f.t.Fatalf("Stats() = %+v, model %+v", got, want)
	}
	for k := range fuzzKeys {
		if got, want := f.q.Failures(k), f.m.failures[k]; got != want {
			f.t.Fatalf("Failures(%d) = %d, model %d", k, got, want)
		}
	}
}

// drain finishes all work, stepping past every deadline, and checks that
// every key added since its last processing got processed.
func (f *fuzzer) drain() {
	f.t.Helper()
	doneAll := func() {
		for k := range fuzzKeys {
			f.q.Done(k)
			f.m.done(k)
		}
	}
	// Adds stop here, so one round makes every pending key ready or
	// waiting and hands it out; the second finds nothing left.
	for range 2 {
		doneAll()
		f.clock.Step(time.Hour)
		f.m.step(time.Hour)
		for len(f.m.ready) > 0 {
			f.get()
		}
		f.compare()
	}
	doneAll()
	f.compare()
	for k, e := range f.m.keys {
		if e.owed && !f.m.shut {
			f.t.Fatalf("key %d was added but never processed", k)
		}
	}
	if s := f.q.Stats(); s.Ready+s.Waiting+s.InFlight != 0 {
		f.t.Fatalf("Stats() after draining = %+v", s)
	}
}

func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 1, 3, 0, 0, 1, 4, 1, 3, 0})
	f.Add([]byte{1, 42, 1, 7, 5, 20, 3, 0, 5, 200, 3, 0})
	f.Add([]byte{2, 0, 2, 5, 3, 0, 2, 10, 4, 0, 5, 255, 5, 255, 3, 0, 6, 0, 2, 0})
	f.Add([]byte{0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 3, 0, 0, 0, 1, 80, 4, 0, 7, 255, 0, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		clock := queue.NewFakeClock(epoch)
		fz := &fuzzer{t: t, clock: clock}
		fz.q = queue.New[int](queue.Options{
			Backoff:  fuzzBackoff,
			Clock:    clock,
			MaxItems: fuzzMax,
			Rand:     func() float64 { return fz.r },
		})
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%8, ops[i+1]
			k := int(arg) % fuzzKeys
			switch op {
			case 0:
				fz.wantErr("Add", fz.q.Add(k), fz.m.add(k, 0))
			case 1:
				d := time.Duration(arg/fuzzKeys%8) * 10 * time.Millisecond
				fz.wantErr("AddAfter", fz.q.AddAfter(k, d), fz.m.add(k, d))
			case 2:
				fz.r = float64(arg/fuzzKeys) / 52 // in [0, 1)
				n := fz.m.failures[k]
				d := refDelay(fuzzBackoff, n, fz.r)
				if d < 0 || d > fuzzBackoff.Cap {
					t.Fatalf("backoff delay %v outside [0, %v]", d, fuzzBackoff.Cap)
				}
				if got := fuzzBackoff.Delay(n, fz.r); got != d {
					t.Fatalf("Delay(%d, %v) = %v, want %v", n, fz.r, got, d)
				}
				err := fz.m.add(k, d)
				if err == nil {
					fz.m.failures[k]++
					fz.m.retries++
				}
				fz.wantErr("AddRateLimited", fz.q.AddRateLimited(k), err)
			case 3:
				fz.get()
			case 4:
				fz.q.Done(k)
				fz.m.done(k)
			case 5:
				d := time.Duration(arg) * time.Millisecond
				clock.Step(d)
				fz.m.step(d)
			case 6:
				fz.q.Forget(k)
				fz.m.failures[k] = 0
			case 7:
				if arg == 255 {
					fz.q.ShutDown()
					fz.m.shutDown()
				} else {
					clock.Step(time.Hour)
					fz.m.step(time.Hour)
				}
			}
			fz.compare()
		}
		fz.drain()
		fz.q.ShutDown()
	})
}
