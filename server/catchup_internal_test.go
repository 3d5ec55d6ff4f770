package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCatchUp: callers share a catch-up in flight; one begins at most once
// a second, the rest are skipped; a failed one reports no change; none
// without WithCatchUp.
func TestCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			calls   int
			release = make(chan struct{})
			fail    error
		)
		reg := prometheus.NewRegistry()
		s := &Server{cfg: config{logger: slog.New(slog.DiscardHandler), metrics: reg}}
		var err error
		if s.obs, err = newObserver(&s.cfg, nil); err != nil {
			t.Fatal(err)
		}
		if s.catchUp(t.Context()) {
			t.Fatal("caught up without WithCatchUp")
		}
		s.catchUps = &catchUps{f: func(ctx context.Context) error {
			calls++
			if _, ok := ctx.Deadline(); !ok {
				t.Error("a catch-up without a deadline")
			}
			<-release
			return fail
		}}
		// Five at once share one.
		var wg sync.WaitGroup
		got := make([]bool, 5)
		for i := range got {
			wg.Go(func() { got[i] = s.catchUp(t.Context()) })
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		for i, ok := range got {
			if !ok {
				t.Errorf("caller %d: no catch-up", i)
			}
		}
		if calls != 1 {
			t.Errorf("%d catch-ups for 5 callers at once, want 1", calls)
		}
		// Within the second: skipped.
		time.Sleep(catchUpInterval - time.Millisecond)
		if s.catchUp(t.Context()) || calls != 1 {
			t.Errorf("a catch-up within %s of the last ran (%d in all)", catchUpInterval, calls)
		}
		// After it: runs, and a failure reports no change.
		time.Sleep(time.Millisecond)
		fail = errors.New("remote down")
		if s.catchUp(t.Context()) || calls != 2 {
			t.Errorf("a failed catch-up reported a change (%d in all)", calls)
		}
		for outcome, want := range map[string]float64{"fetched": 1, "skipped": 1, "failed": 1} {
			if got := testutil.ToFloat64(s.obs.watch.catchUps.WithLabelValues(outcome)); got != want {
				t.Errorf("cup_server_watch_catch_ups_total{outcome=%q} = %v, want %v", outcome, got, want)
			}
		}
	})
}
