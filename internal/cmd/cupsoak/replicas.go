// Several cupd replicas on one remote: how a write one of them made
// reaches the others, and what their metrics say of lost push races.

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// How the replicas learn of each other's commits (-propagate).
const (
	// propagateWebhook: after each accepted write, cupsoak calls
	// POST /hooks/fetch on every other replica, as the Git host's push
	// webhook would; --fetch-interval remains as a backstop.
	propagateWebhook = "webhook"
	// propagateFetch: only cupd's own fetches every --fetch-interval.
	propagateFetch = "fetch"
)

// fanout calls POST /hooks/fetch on replicas when told that another one
// made a commit. Each replica has one caller: calls asked for while one is
// under way are made once after it, as cupd itself shares overlapping
// calls.
type fanout struct {
	hc    *http.Client
	bases []string
	pokes []chan struct{}
	calls atomic.Int64
	fails atomic.Int64
	wg    sync.WaitGroup
}

func newFanout(ctx context.Context, bases []string) *fanout {
	f := &fanout{hc: &http.Client{Timeout: time.Minute}, bases: bases}
	for i := range bases {
		ch := make(chan struct{}, 1)
		f.pokes = append(f.pokes, ch)
		f.wg.Go(func() { f.serve(ctx, i, ch) })
	}
	return f
}

// acked tells every replica but from that from made a commit.
func (f *fanout) acked(from int) {
	for i, ch := range f.pokes {
		if i == from {
			continue
		}
		select {
		case ch <- struct{}{}:
		default: // a call is asked for already
		}
	}
}

// all asks every replica to fetch now.
func (f *fanout) all() { f.acked(-1) }

func (f *fanout) serve(ctx context.Context, i int, pokes <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-pokes:
		}
		f.calls.Add(1)
		if err := f.call(ctx, f.bases[i]); err != nil && ctx.Err() == nil {
			f.fails.Add(1)
		}
	}
}

func (f *fanout) call(ctx context.Context, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/hooks/fetch", nil)
	if err != nil {
		return err
	}
	res, err := f.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("POST /hooks/fetch: %s", res.Status)
	}
	return nil
}

// stop waits for the callers to end once ctx is done.
func (f *fanout) stop() {
	f.wg.Wait()
	f.hc.CloseIdleConnections()
}

// gitMetrics are a replica's counts of fetches and pushes by outcome
// (cup_git_fetches_total, cup_git_pushes_total).
type gitMetrics struct {
	fetches, pushes map[string]float64
}

// readGitMetrics reads a replica's /metrics.
func readGitMetrics(ctx context.Context, hc *http.Client, base string) (gitMetrics, error) {
	m := gitMetrics{fetches: map[string]float64{}, pushes: map[string]float64{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return m, err
	}
	res, err := hc.Do(req)
	if err != nil {
		return m, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return m, fmt.Errorf("GET /metrics: %s", res.Status)
	}
	return m, parseGitMetrics(res.Body, &m)
}

// parseGitMetrics reads the counters of the Prometheus text format in r,
// lines such as cup_git_pushes_total{outcome="conflict"} 3.
func parseGitMetrics(r io.Reader, m *gitMetrics) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var into map[string]float64
		switch {
		case strings.HasPrefix(line, "cup_git_fetches_total{"):
			into = m.fetches
		case strings.HasPrefix(line, "cup_git_pushes_total{"):
			into = m.pushes
		default:
			continue
		}
		_, rest, _ := strings.Cut(line, `outcome="`)
		outcome, rest, ok := strings.Cut(rest, `"}`)
		if !ok {
			return fmt.Errorf("metrics line %q", line)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			return fmt.Errorf("metrics line %q: %v", line, err)
		}
		into[outcome] += v
	}
	return sc.Err()
}

// String is the counts in one line.
func (m gitMetrics) String() string {
	return fmt.Sprintf("pushes: %.0f landed, %.0f lost a race (conflict), %.0f rejected, %.0f failed; fetches: %.0f brought commits, %.0f found nothing new, %.0f failed",
		m.pushes["success"], m.pushes["conflict"], m.pushes["rejected"], m.pushes["error"]+m.pushes["canceled"],
		m.fetches["success"], m.fetches["unchanged"], m.fetches["error"]+m.fetches["canceled"])
}

// awaitHead waits until replica serves commit head, asking it every
// 100ms, for at most wait, and returns how long it waited.
func (l *load) awaitHead(ctx context.Context, replica int, head string, wait time.Duration) (time.Duration, error) {
	t0 := time.Now()
	for {
		served, err := l.servedCommit(ctx, replica)
		if err != nil {
			return time.Since(t0), err
		}
		if served == head {
			return time.Since(t0), nil
		}
		if time.Since(t0) > wait {
			return time.Since(t0), fmt.Errorf("cupd %d serves commit %s %v after the load, but the remote's %s is at %s", replica, served, wait, branch, head)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reportRaces says how often pushes lost a race, and what the writes
// whose first request was given up and repeated elsewhere were answered.
func reportRaces(out io.Writer, writes []*write, conflicts float64) {
	var attempts, aborted, cut, dropped, elsewhere, replayed, madeThere, acceptedWrites int
	for _, w := range writes {
		attempts += len(w.Attempts)
		for i, a := range w.Attempts {
			if strings.HasSuffix(a.Outcome, "aborted") {
				aborted++
			}
			if a.Cut {
				cut++
			}
			if a.Dropped {
				dropped++
			}
			if i > 0 && a.Replica != w.Attempts[i-1].Replica {
				elsewhere++
			}
		}
		a := w.acceptedAttempt()
		if a != nil {
			acceptedWrites++
		}
		if a != nil && len(w.Attempts) > 1 && a.Replica != w.Attempts[0].Replica {
			if a.Replayed {
				replayed++
			} else {
				madeThere++
			}
		}
	}
	fmt.Fprintf(out, "  pushes that lost a race (not a fast-forward: the replica fetched and applied the write again on the new head): %.0f, %.2f per accepted write\n",
		conflicts, conflicts/float64(max(acceptedWrites, 1)))
	fmt.Fprintf(out, "  ABORTED answers (the branch moved on every try): %d of %d write requests (%.2f%%)\n",
		aborted, attempts, 100*float64(aborted)/float64(max(attempts, 1)))
	if elsewhere > 0 || cut > 0 || dropped > 0 {
		fmt.Fprintf(out, "  requests given up on purpose: %d, answers dropped on purpose: %d; repeats sent to another replica: %d, and %d writes accepted there: %d as a replay of the commit an earlier request made, %d made there\n",
			cut, dropped, elsewhere, replayed+madeThere, replayed, madeThere)
	}
}
