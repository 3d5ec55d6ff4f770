// What a load phase measured, and how it is reported.

package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

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
