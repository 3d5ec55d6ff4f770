package wasm

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/semaphore"

	"github.com/cup-dev/cup/internal/lru"
)

// runtimeConfig holds what RuntimeOptions set.
type runtimeConfig struct {
	cacheDir       string
	cacheMaxBytes  int64
	logger         *slog.Logger
	memoryBudget   int64
	metrics        prometheus.Registerer
	tracerProvider trace.TracerProvider
	reuseBytes     int64
}

// RuntimeOption configures a Runtime built by [NewRuntime].
type RuntimeOption func(*runtimeConfig)

// WithCacheDir keeps compiled machine code in dir, which is created if
// missing (mode 0700), so that a restarted process loads a module it
// compiled before instead of compiling it again. The directory must be
// reserved for this purpose; entries are specific to the wazero version.
// A directory that cannot be created or written to, or whose entries
// cannot be read back, does not stop compiling: the Runtime logs a warning
// and keeps compiled code in memory from then on (after a bad entry, it
// also empties the directory, so that the next process starts afresh). The
// default, and an empty dir, keep compiled code in memory only.
func WithCacheDir(dir string) RuntimeOption {
	return func(c *runtimeConfig) { c.cacheDir = dir }
}

// WithCacheMaxBytes bounds the cache directory of WithCacheDir to n bytes:
// when the Runtime opens it, and after each compile that writes an entry,
// the entries written longest ago (by any process or wazero version) are
// removed until the rest fit, except those this Runtime wrote and those new since it
// last looked (another compile's, about to be claimed). A removed
// entry only costs a compile at the next start that needs it. Unfinished
// entries (wazero's .tmp files) older than an hour are removed too. 0, the
// default, does not bound the directory.
func WithCacheMaxBytes(n int64) RuntimeOption {
	return func(c *runtimeConfig) { c.cacheMaxBytes = n }
}

// WithLogger sets the logger that receives a record of each module
// compiled (how long it took, and whether the cache directory had it),
// warnings about the cache directory, and debug records of what successful
// calls wrote to stderr. The default discards them; a nil l keeps the
// default.
func WithLogger(l *slog.Logger) RuntimeOption {
	return func(c *runtimeConfig) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithMemoryBudget bounds the memory of the module instances running at
// once, in bytes: a call counts its module's whole memory limit (the
// Spec's MemoryLimitPages) against the budget from before the instance is
// made until it is gone, and waits, until its context ends, while the
// budget has no room for it. So the memory limits of the instances the
// Runtime's Controllers run at once never add up to more than n, however
// many calls arrive. [New] refuses a Spec whose limit alone exceeds n.
// Zero or less, the default: no bound.
func WithMemoryBudget(n int64) RuntimeOption {
	return func(c *runtimeConfig) { c.memoryBudget = n }
}

// Runtime compiles and runs the modules of wasm Controllers. Controllers
// share it, and with it wazero's compilation cache: two controllers of the
// same module share its machine code. A Runtime is safe for concurrent use;
// Close it after the Controllers built on it are done.
type Runtime struct {
	cfg runtimeConfig
	// budget holds the pages of WithMemoryBudget; nil when unbounded.
	budget *semaphore.Weighted
	obs    *observer
	// reuse keeps get and list runs for the same calls on trees where what
	// they read is unchanged (see reuse.go); nil when it keeps none.
	reuse *lru.Cache[*reused]

	mu    sync.Mutex
	cache wazero.CompilationCache // nil until first needed
	rt    wazero.Runtime          // nil until first needed
	// dir is the cache directory: cfg.cacheDir once it proved usable, ""
	// when there is none; after it failed, dirFailed is set (see cache.go).
	dir string
	// mem compiles in memory once the cache directory failed while
	// compiling; checked compiles, in memory, the modules that cannot be
	// made interruptible (see interrupt.go), with wazero's own checks.
	// Both are made on first use (see inMemory).
	mem, checked memRuntime
	dirFailed    bool // cacheFailed has been called
	// entries are the cache directory's entries known to r: there when
	// r first looked, or claimed by a compile as its own (see claim).
	entries map[string]time.Time
	// written are the entries r's compiles wrote, which prune keeps.
	written map[string]bool
	closed  bool
	modules map[[sha256.Size]byte]*compiledModule // by module digest
}

// compiledModule is a module being compiled or compiled, shared by the
// controllers made from the same bytes. It is in Runtime.modules while refs
// is not 0.
type compiledModule struct {
	// mu is held while compiling, so that compilations of the module take
	// turns.
	mu sync.Mutex
	p  program // guarded by mu; p.m is nil until compiled
	// refs counts the compile calls waiting for m or holding it, guarded by
	// Runtime.mu.
	refs int
}

// A program is a compiled module and how to run it.
type program struct {
	m  wazero.CompiledModule
	rt wazero.Runtime // the runtime m was compiled in
	// interruptible tells that m was rewritten to stop when its stop
	// global is set (see interrupt.go); otherwise rt is one with wazero's
	// checks.
	interruptible bool
}

// compile returns the compiled form of module, and the wazero runtime to
// instantiate it in, compiling it only when no controller of this runtime
// holds it already: even a compilation found in wazero's cache decodes the
// module again (35 ms for a 5 MB Go module). Compilations of the same
// module take turns, since wazero shares one only once it has finished;
// after a failed one, the next in turn tries again. name names the module
// in the log. release gives the module back; the last release closes it.
func (r *Runtime) compile(ctx context.Context, name string, module []byte) (_ program, release func(context.Context) error, _ error) {
	sum := sha256.Sum256(module)
	r.mu.Lock()
	if r.modules == nil {
		r.modules = make(map[[sha256.Size]byte]*compiledModule)
	}
	cm := r.modules[sum]
	if cm == nil {
		cm = new(compiledModule)
		r.modules[sum] = cm
	}
	cm.refs++
	r.mu.Unlock()
	// drop gives back this call's reference and reports whether it was the
	// last, which removes cm from r.modules.
	drop := func() (last bool) {
		r.mu.Lock()
		defer r.mu.Unlock()
		cm.refs--
		if cm.refs == 0 {
			delete(r.modules, sum)
			return true
		}
		return false
	}
	cm.mu.Lock()
	if cm.p.m == nil {
		p, err := r.compileNew(ctx, name, module)
		if err != nil {
			cm.mu.Unlock()
			drop()
			return program{}, nil, err
		}
		cm.p = p
	}
	p := cm.p
	cm.mu.Unlock()
	var once sync.Once
	return p, func(ctx context.Context) (err error) {
		once.Do(func() {
			if drop() {
				err = p.m.Close(ctx)
			}
		})
		return err
	}, nil
}

// NewRuntime returns a Runtime configured by opts. It does no I/O: the cache
// directory is created when the first module is compiled.
func NewRuntime(opts ...RuntimeOption) (*Runtime, error) {
	cfg := runtimeConfig{logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	obs, err := newObserver(&cfg)
	if err != nil {
		return nil, err
	}
	r := &Runtime{cfg: cfg, obs: obs, reuse: newReuse(&cfg)}
	if r.reuse != nil {
		if err := obs.registerReuse(&cfg, r.reuse); err != nil {
			return nil, err
		}
	}
	if cfg.memoryBudget > 0 {
		r.budget = semaphore.NewWeighted(cfg.memoryBudget >> 16)
	}
	return r, nil
}

// budgetPages is the memory budget in whole pages; meaningless when
// r.budget is nil (unbounded).
func (r *Runtime) budgetPages() int64 {
	return r.cfg.memoryBudget >> 16
}

// runtime returns the wazero runtime, creating it (and the compilation
// cache) on first use. A cache directory that cannot be used (it cannot be
// created or written to) does not stop it: it logs a warning and keeps
// compiled code in memory.
//
// Its memory limit is wazero's default, the 4 GiB a module can address:
// wazero refuses to grow memory past its limit without telling anybody, so
// that a call stopped for want of memory could not report ErrLimit. Each
// call enforces its Spec's limit with a memory allocator that notices
// instead (see memoryLimiter).
func (r *Runtime) runtime(ctx context.Context) (wazero.Runtime, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("wasm runtime is closed")
	}
	if r.rt != nil {
		return r.rt, nil
	}
	cache := r.openCache(ctx)
	rt, err := newWazero(ctx, cache, false)
	if err != nil {
		return nil, errors.Join(err, cache.Close(ctx))
	}
	r.rt, r.cache = rt, cache
	return rt, nil
}

// newWazero returns a wazero runtime compiling into cache, with WASI, and
// with wazero's checks that stop a module once its context is done when
// checked is set.
func newWazero(ctx context.Context, cache wazero.CompilationCache, checked bool) (wazero.Runtime, error) {
	cfg := wazero.NewRuntimeConfig().
		WithCompilationCache(cache).
		WithCloseOnContextDone(checked)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return nil, errors.Join(fmt.Errorf("wasm runtime: instantiating WASI: %w", err), rt.Close(ctx))
	}
	return rt, nil
}

// Close releases the compiled code of every Controller built on r, and the
// cache (a cache directory stays on disk). Calls made afterwards fail.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	if r.rt != nil {
		errs = append(errs, r.rt.Close(ctx), r.cache.Close(ctx))
	}
	for _, m := range []memRuntime{r.mem, r.checked} {
		if m.rt != nil {
			errs = append(errs, m.rt.Close(ctx), m.cache.Close(ctx))
		}
	}
	return errors.Join(errs...)
}
