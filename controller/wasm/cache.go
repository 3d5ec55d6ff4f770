package wasm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
)

// Outcomes of a compile, the cache label of cup_wasm_compiles_total.
const (
	cacheHit    = "hit"    // loaded from the cache directory
	cacheMiss   = "miss"   // compiled, and written to the cache directory
	cacheMemory = "memory" // compiled without a cache directory
)

// openCache returns the compilation cache of a new wazero runtime: in
// cfg.cacheDir when it can be created and written to (r.dir is set then),
// else in memory, with a warning. r.mu is held.
func (r *Runtime) openCache(ctx context.Context) wazero.CompilationCache {
	dir := r.cfg.cacheDir
	if dir == "" {
		return wazero.NewCompilationCache()
	}
	cache, err := openCacheDir(dir)
	if err != nil {
		r.cfg.logger.WarnContext(ctx, "the WASM compilation cache directory cannot be used: compiling WASM modules in memory, and again at the next start",
			"dir", dir, "error", err)
		return wazero.NewCompilationCache()
	}
	r.dir = dir
	entries, temps := listCache(dir)
	r.entries = make(map[string]time.Time, len(entries))
	for _, e := range entries {
		r.entries[e.path] = e.mod
	}
	r.written = map[string]bool{}
	r.prune(ctx, entries, temps)
	return cache
}

// openCacheDir makes dir (0700) and a wazero cache in it, and checks that
// a file can be written there: wazero finds out only once it has compiled
// a module, and then fails the compile.
func openCacheDir(dir string) (wazero.CompilationCache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err == nil {
		err = errors.Join(f.Close(), os.Remove(f.Name()))
	}
	if err != nil {
		return nil, errors.Join(err, cache.Close(context.Background()))
	}
	return cache, nil
}

// cacheVersionDirs are the folders wazero keeps its entries in, one per
// wazero version, for this platform.
func cacheVersionDirs(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "wazero-*-"+goruntime.GOARCH+"-"+goruntime.GOOS))
	return m
}

// A cacheFile is a file of the cache directory.
type cacheFile struct {
	path string
	size int64
	mod  time.Time // when it was written
}

// listCache lists the compiled modules the cache directory holds, and
// apart the files wazero was writing (.tmp).
func listCache(dir string) (entries, temps []cacheFile) {
	for _, d := range cacheVersionDirs(dir) {
		es, _ := os.ReadDir(d)
		for _, e := range es {
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			f := cacheFile{filepath.Join(d, e.Name()), fi.Size(), fi.ModTime()}
			if strings.HasSuffix(e.Name(), ".tmp") {
				temps = append(temps, f)
			} else {
				entries = append(entries, f)
			}
		}
	}
	return entries, temps
}

// claim tells whether the compile that just finished wrote a new entry in
// the cache directory (a miss) or loaded one (a hit): wazero does not say.
// An entry appears (or is written again, in place of one it could not use)
// only when a compile that missed writes it, before that compile returns,
// so a compile that finds an entry new or rewritten since no compile
// claimed it claims it, as a miss. With compiles running at once, two may swap their
// entries (and their outcomes); the counts of hits and misses stay right.
func (r *Runtime) claim(ctx context.Context) string {
	// The directory is read under the lock: a listing taken before another
	// compile's claim could miss that compile's entry and take its own,
	// already claimed, for a hit.
	r.mu.Lock()
	defer r.mu.Unlock()
	entries, temps := listCache(r.dir)
	for _, e := range entries {
		if known, ok := r.entries[e.path]; !ok || !known.Equal(e.mod) {
			r.entries[e.path] = e.mod
			r.written[e.path] = true
			r.prune(ctx, entries, temps)
			return cacheMiss
		}
	}
	return cacheHit
}

// staleTemp is how old a file wazero was writing must be to be taken for
// one a process left behind when it ended.
const staleTemp = time.Hour

// prune keeps the cache directory, whose listing is entries and temps,
// within cfg.cacheMaxBytes, if set (see WithCacheMaxBytes), and counts what
// it holds. r.mu is held.
func (r *Runtime) prune(ctx context.Context, entries, temps []cacheFile) {
	limit := r.cfg.cacheMaxBytes
	var errs []error
	if limit > 0 {
		for _, f := range temps {
			if time.Since(f.mod) > staleTemp {
				errs = append(errs, os.Remove(f.path))
			}
		}
	}
	var total int64
	for _, f := range entries {
		total += f.size
	}
	var removed int
	var freed int64
	if limit > 0 && total > limit {
		// Oldest first; the same time, by name, so that processes agree.
		files := slices.Clone(entries)
		slices.SortFunc(files, func(a, b cacheFile) int {
			if c := a.mod.Compare(b.mod); c != 0 {
				return c
			}
			return strings.Compare(a.path, b.path)
		})
		for _, f := range files {
			if total <= limit {
				break
			}
			if known, ok := r.entries[f.path]; r.written[f.path] || !ok || !known.Equal(f.mod) {
				// This runtime's, or new since it last looked: another of
				// its compiles (or another process) is about to claim it.
				continue
			}
			if err := os.Remove(f.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
				continue
			}
			delete(r.entries, f.path)
			total -= f.size
			freed += f.size
			removed++
		}
	}
	r.obs.cacheBytes.Set(float64(total))
	if removed > 0 {
		r.obs.cacheEvictions.Add(float64(removed))
		r.cfg.logger.InfoContext(ctx, "removed the compiled WASM modules written longest ago from the cache directory, to keep it within its bound",
			"dir", r.dir, "removed", removed, "freed_bytes", freed, "bytes", total, "max_bytes", limit)
	}
	if err := errors.Join(errs...); err != nil {
		r.cfg.logger.WarnContext(ctx, "could not remove files from the WASM compilation cache directory", "dir", r.dir, "error", err)
	}
}

// compileNew compiles module, logs how long it took and counts it: made
// interruptible (see interrupt.go) when it can be, and else as it is, with
// wazero's checks. A module that does not compile once rewritten is
// compiled as it is, which tells whether the module or the rewrite is at
// fault.
func (r *Runtime) compileNew(ctx context.Context, name string, module []byte) (program, error) {
	rewritten, err := interruptible(module)
	if err == nil {
		var p program
		if p, err = r.compileInterruptible(ctx, name, rewritten); err == nil || ctx.Err() != nil {
			return p, err
		}
	}
	return r.compileChecked(ctx, name, module, err)
}

// compileInterruptible compiles module, made interruptible. A compile that
// fails with the cache directory is tried again in memory: if that works,
// the directory was at fault (an entry that cannot be read back, a full
// disk), and every later compile is made in memory.
func (r *Runtime) compileInterruptible(ctx context.Context, name string, module []byte) (program, error) {
	rt, err := r.runtime(ctx)
	if err != nil {
		return program{}, err
	}
	r.mu.Lock()
	// On the directory's failure alone: mem exists also after a module
	// that failed both ways, which says nothing of the directory.
	if r.dirFailed {
		rt = r.mem.rt
	}
	withDir := r.dir != "" && !r.dirFailed
	r.mu.Unlock()
	start := time.Now()
	m, err := rt.CompileModule(ctx, module)
	outcome := cacheMemory
	switch {
	case err == nil && withDir:
		outcome = r.claim(ctx)
	case err != nil && withDir && ctx.Err() == nil:
		mem, merr := r.inMemory(ctx, &r.mem, false)
		if merr != nil {
			return program{}, errors.Join(err, merr)
		}
		m2, err2 := mem.CompileModule(ctx, module)
		if err2 != nil {
			return program{}, err2 // the module's fault, not the directory's
		}
		r.cacheFailed(ctx, err)
		rt, m, err = mem, m2, nil
	}
	if err != nil {
		return program{}, err
	}
	r.compiled(ctx, name, len(module), outcome, start)
	return program{m: m, rt: rt, interruptible: true}, nil
}

// compiled logs and counts a compile that began at start.
func (r *Runtime) compiled(ctx context.Context, name string, size int, outcome string, start time.Time, attrs ...any) {
	d := time.Since(start)
	r.obs.compiles.WithLabelValues(outcome).Inc()
	r.obs.compileDuration.WithLabelValues(outcome).Observe(d.Seconds())
	r.cfg.logger.InfoContext(ctx, "compiled wasm module", append([]any{"module", name, "bytes", size, "cache", outcome, "duration", elapsed(start)}, attrs...)...)
}

// compileChecked compiles module, which could not be made interruptible
// (why says why), in the runtime with wazero's checks: its loops run
// several times slower. It compiles in memory, again at each start: few
// modules need it (those with SIMD, threads, exceptions or a start
// section), and the cache directory's bound and outcomes count the
// interruptible ones.
func (r *Runtime) compileChecked(ctx context.Context, name string, module []byte, why error) (program, error) {
	rt, err := r.inMemory(ctx, &r.checked, true)
	if err != nil {
		return program{}, err
	}
	start := time.Now()
	m, err := rt.CompileModule(ctx, module)
	if err != nil {
		return program{}, err
	}
	r.compiled(ctx, name, len(module), cacheMemory, start, "interruptible", false, "why", why.Error())
	return program{m: m, rt: rt}, nil
}

// A memRuntime is a wazero runtime that compiles in memory.
type memRuntime struct {
	rt    wazero.Runtime // nil until made
	cache wazero.CompilationCache
}

// inMemory returns the runtime of m, making it on first use, with wazero's
// checks when checked is set (see newWazero).
func (r *Runtime) inMemory(ctx context.Context, m *memRuntime, checked bool) (wazero.Runtime, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("wasm runtime is closed")
	}
	if m.rt == nil {
		cache := wazero.NewCompilationCache()
		rt, err := newWazero(ctx, cache, checked)
		if err != nil {
			return nil, errors.Join(err, cache.Close(ctx))
		}
		m.rt, m.cache = rt, cache
	}
	return m.rt, nil
}

// cacheFailed logs, once, that the cache directory failed with err, and
// empties it of wazero's entries, so that the next process compiles
// afresh rather than fail on them again.
func (r *Runtime) cacheFailed(ctx context.Context, err error) {
	r.mu.Lock()
	first := !r.dirFailed
	r.dirFailed = true
	r.mu.Unlock()
	if !first {
		return
	}
	var errs []error
	for _, d := range cacheVersionDirs(r.dir) {
		errs = append(errs, os.RemoveAll(d))
	}
	r.cfg.logger.WarnContext(ctx, "the WASM compilation cache directory failed: compiling WASM modules in memory from now on; its entries were removed for the next start",
		"dir", r.dir, "error", err, "remove_error", errors.Join(errs...))
}

// Module is a WASM module to compile ahead of the Controllers made from
// it (see [Runtime.Precompile]).
type Module struct {
	// Name names the module in the log and in progress reports: its path.
	Name  string
	Bytes []byte
}

// Precompile compiles modules at once, GOMAXPROCS of them at a time, so
// that Controllers made from the same bytes before release is called find
// them compiled rather than compile them one after the other. done, when
// not nil, is called as each module is done (compiled or failed), with how
// many are done so far and the names of those still compiling; calls to
// it do not overlap. A module that fails to compile is not reported here:
// [New] compiles it again and says what is wrong, naming its controller.
// release gives back what Precompile holds; Controllers made meanwhile keep
// their modules.
func (r *Runtime) Precompile(ctx context.Context, modules []Module, done func(n int, compiling []string)) (release func(context.Context) error) {
	var (
		mu        sync.Mutex
		releases  []func(context.Context) error
		n         int
		compiling = map[string]int{}
	)
	for _, m := range modules {
		compiling[m.Name]++
	}
	sem := make(chan struct{}, max(goruntime.GOMAXPROCS(0), 1))
	var wg sync.WaitGroup
	for _, m := range modules {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, rel, err := r.compile(ctx, m.Name, m.Bytes)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				releases = append(releases, rel)
			} else {
				r.cfg.logger.DebugContext(ctx, "compiling a wasm module ahead failed", "module", m.Name, "error", err)
			}
			n++
			if compiling[m.Name]--; compiling[m.Name] == 0 {
				delete(compiling, m.Name)
			}
			if done != nil {
				done(n, slices.Sorted(maps.Keys(compiling)))
			}
		})
	}
	wg.Wait()
	return func(ctx context.Context) error {
		var errs []error
		for _, rel := range releases {
			errs = append(errs, rel(ctx))
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("wasm runtime: releasing precompiled modules: %w", err)
		}
		return nil
	}
}
