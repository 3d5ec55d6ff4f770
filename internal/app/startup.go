// Start-up: the steps Open goes through, reported as they begin (cupd's
// /readyz says which it is at) and timed.

package app

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cup-dev/cup/controller/wasm"
)

// Start-up phases, the phase label of cup_startup_seconds.
const (
	phaseDemo          = "demo"          // building the embedded demo's repository
	phaseRepository    = "repository"    // opening or cloning the repository
	phaseConfiguration = "configuration" // reading the configuration and its modules
	phaseWASM          = "wasm"          // compiling the WASM modules
	phaseBuild         = "build"         // building the controllers, the server and the reconcilers
)

// startup reports and times Open's steps.
type startup struct {
	log      *slog.Logger
	progress func(string) // Options.Progress; nil: none
	phase    string       // the phase going on; "" before the first
	began    time.Time    // when phase began
	start    time.Time    // when Open began
	took     map[string]time.Duration
}

func newStartup(opts Options) *startup {
	now := time.Now()
	return &startup{log: opts.Logger, progress: opts.Progress, start: now, began: now, took: map[string]time.Duration{}}
}

// step says what start-up does now; a phase other than the one going on
// ends that one.
func (s *startup) step(phase, what string) {
	if phase != s.phase {
		s.end()
		s.phase, s.began = phase, time.Now()
	}
	if s.progress != nil {
		s.progress(what)
	}
}

// end ends the phase going on, logging how long it took.
func (s *startup) end() {
	if s.phase == "" {
		return
	}
	d := time.Since(s.began)
	s.took[s.phase] += d
	s.log.Info("start-up phase done", "phase", s.phase, "duration", d.Round(time.Microsecond))
	s.phase = ""
}

// register ends the phase going on and registers the phases' durations in
// reg as cup_startup_seconds{phase}, the whole of Open as phase "total".
func (s *startup) register(reg prometheus.Registerer) {
	s.end()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "cup_startup_seconds",
		Help: "How long each phase of start-up took (demo, repository, configuration, wasm, build), and all of them (total), in seconds.",
	}, []string{"phase"})
	for p, d := range s.took {
		g.WithLabelValues(p).Set(d.Seconds())
	}
	g.WithLabelValues("total").Set(time.Since(s.start).Seconds())
	reg.MustRegister(g)
}

// precompile compiles every WASM module of files (the bytes that start
// as WebAssembly does) with rt at once, reporting how many are done. The
// controllers and reconcilers made before release is called find them
// compiled.
func (s *startup) precompile(ctx context.Context, rt *wasm.Runtime, files map[string]map[string][]byte) (release func(context.Context) error) {
	var mods []wasm.Module
	for _, key := range slices.Sorted(maps.Keys(files)) {
		for _, p := range slices.Sorted(maps.Keys(files[key])) {
			if b := files[key][p]; strings.HasPrefix(string(b[:min(len(b), 4)]), "\x00asm") {
				mods = append(mods, wasm.Module{Name: p, Bytes: b})
			}
		}
	}
	if len(mods) == 0 {
		return func(context.Context) error { return nil }
	}
	names := make([]string, len(mods))
	for i, m := range mods {
		names[i] = m.Name
	}
	s.step(phaseWASM, compilingText(0, len(mods), names))
	return rt.Precompile(ctx, mods, func(n int, compiling []string) {
		s.step(phaseWASM, compilingText(n, len(mods), compiling))
	})
}

// compilingText is the progress of compiling n modules out of total, with
// the names of those still compiling.
func compilingText(n, total int, compiling []string) string {
	t := fmt.Sprintf("compiling WASM modules %d/%d", n, total)
	if len(compiling) > 0 {
		t += " (" + strings.Join(compiling, ", ") + ")"
	}
	return t
}
