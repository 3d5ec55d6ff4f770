package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cup-dev/cup/internal/benchrepo"
)

// stallWatch gets one resource from cupd every interval, on a connection of
// its own, and when an answer takes longer than threshold saves cupd's
// goroutines (pprof, debug=2) while the get still waits, so that a stall
// can be told apart from a slow client and its cause read afterwards.
type stallWatch struct {
	d         *cupd
	dir       string
	threshold time.Duration
	interval  time.Duration

	mu     sync.Mutex
	probes int
	stalls []stall
	dumps  []string
}

type stall struct {
	at, took time.Duration
}

// maxDumps bounds the goroutine dumps a watch saves.
const maxDumps = 3

func (s *stallWatch) run(ctx context.Context, stop <-chan struct{}) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: time.Minute}
	defer hc.CloseIdleConnections()
	t0 := time.Now()
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			res, err := hc.Get(s.d.URL + benchrepo.Path + "/" + benchrepo.Name(0))
			if err == nil {
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		}()
		select {
		case <-done:
		case <-time.After(s.threshold):
			s.dump(ctx, start.Sub(t0))
			<-done
		}
		s.mu.Lock()
		s.probes++
		if took := time.Since(start); took > s.threshold {
			s.stalls = append(s.stalls, stall{at: start.Sub(t0), took: took})
		}
		s.mu.Unlock()
	}
}

func (s *stallWatch) dump(ctx context.Context, at time.Duration) {
	s.mu.Lock()
	n := len(s.dumps)
	s.mu.Unlock()
	if n >= maxDumps {
		return
	}
	g, err := s.d.debug(ctx, "/debug/pprof/goroutine?debug=2")
	if err != nil {
		g = err.Error()
	}
	path := filepath.Join(s.dir, fmt.Sprintf("stall-%d-at-%s.goroutines.txt", n+1, at.Round(time.Millisecond)))
	if os.WriteFile(path, []byte(g), 0o644) == nil {
		s.mu.Lock()
		s.dumps = append(s.dumps, path)
		s.mu.Unlock()
	}
}

// report says how many probes stalled.
func (s *stallWatch) report(out io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(out, "\nstall probes (a get every %v on a connection of its own): %d, of which %d took over %v\n",
		s.interval, s.probes, len(s.stalls), s.threshold)
	for i, st := range s.stalls {
		if i == 10 {
			fmt.Fprintf(out, "    ... and %d more\n", len(s.stalls)-10)
			break
		}
		fmt.Fprintf(out, "    %v at +%v (from the warm-up's start)\n", st.took.Round(time.Millisecond), st.at.Round(time.Millisecond))
	}
	for _, d := range s.dumps {
		fmt.Fprintf(out, "    cupd's goroutines during a stall: %s\n", d)
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		for _, line := range summarizeGoroutines(string(b)) {
			fmt.Fprintf(out, "      %s\n", line)
		}
	}
}

// kept reports whether the watch saved a dump, which the temporary
// directory must be kept for.
func (s *stallWatch) kept() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.dumps) > 0
}

// summarizeGoroutines counts the goroutines of a debug=2 dump by their
// state and innermost frame of the module (or, without one, innermost
// frame), most first.
func summarizeGoroutines(dump string) []string {
	counts := map[string]int{}
	total := 0
	for g := range strings.SplitSeq(dump, "\n\n") {
		lines := strings.Split(strings.TrimSpace(g), "\n")
		if len(lines) == 0 || !strings.HasPrefix(lines[0], "goroutine ") {
			continue
		}
		total++
		state := lines[0][strings.Index(lines[0], "[")+1:]
		state = strings.TrimSuffix(state, "]:")
		frame := ""
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "created by") {
				continue
			}
			fn := l
			if i := strings.LastIndex(l, "("); i > 0 {
				fn = l[:i] // the arguments
			}
			if frame == "" {
				frame = fn
			}
			if strings.HasPrefix(fn, "github.com/cup-dev/cup/") {
				frame = fn
				break
			}
		}
		counts[state+" in "+frame]++
	}
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b)) })
	out := []string{fmt.Sprintf("%d goroutines:", total)}
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%3d %s", counts[k], k))
	}
	return out
}
