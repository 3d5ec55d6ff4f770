package wasm

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// runtimeConfig holds what RuntimeOptions set.
type runtimeConfig struct {
	cacheDir string
	logger   *slog.Logger
}

// RuntimeOption configures a Runtime built by [NewRuntime].
type RuntimeOption func(*runtimeConfig)

// WithCacheDir keeps compiled machine code in dir, which is created if
// missing, so that a restarted process loads a module it compiled before
// instead of compiling it again. The directory must be reserved for this
// purpose; entries are specific to the wazero version. The default, and an
// empty dir, keep compiled code in memory only.
func WithCacheDir(dir string) RuntimeOption {
	return func(c *runtimeConfig) { c.cacheDir = dir }
}

// WithLogger sets the logger that receives debug records: how long modules
// took to compile, and what successful calls wrote to stderr. The default
// discards them; a nil l keeps the default.
func WithLogger(l *slog.Logger) RuntimeOption {
	return func(c *runtimeConfig) {
		if l != nil {
			c.logger = l
		}
	}
}

// Runtime compiles and runs the modules of wasm Controllers. Controllers
// share it, and with it wazero's compilation cache: two controllers of the
// same module share its machine code. A Runtime is safe for concurrent use;
// Close it after the Controllers built on it are done.
type Runtime struct {
	cfg runtimeConfig

	mu        sync.Mutex
	cache     wazero.CompilationCache // nil until first needed
	rt        wazero.Runtime          // nil until first needed
	closed    bool
	compiling map[[sha256.Size]byte]*sync.Mutex     // by module digest
	compiled  map[[sha256.Size]byte]*compiledModule // by module digest
}

// compiledModule is a compiled module shared by the controllers made from
// the same bytes.
type compiledModule struct {
	m    wazero.CompiledModule
	refs int
}

// compile returns the compiled form of module, compiling it only when no
// controller of this runtime holds it already: even a compilation found in
// wazero's cache decodes the module again (35 ms for a 5 MB Go module).
// Compilations of the same module take turns, since wazero shares one only
// once it has finished. release gives the module back; the last release
// closes it.
func (r *Runtime) compile(ctx context.Context, rt wazero.Runtime, module []byte) (_ wazero.CompiledModule, release func(context.Context) error, _ error) {
	sum := sha256.Sum256(module)
	r.mu.Lock()
	if r.compiling == nil {
		r.compiling = make(map[[sha256.Size]byte]*sync.Mutex)
		r.compiled = make(map[[sha256.Size]byte]*compiledModule)
	}
	l := r.compiling[sum]
	if l == nil {
		l = new(sync.Mutex)
		r.compiling[sum] = l
	}
	r.mu.Unlock()
	l.Lock()
	defer l.Unlock()
	r.mu.Lock()
	cm := r.compiled[sum]
	if cm != nil {
		cm.refs++
	}
	r.mu.Unlock()
	if cm == nil {
		m, err := rt.CompileModule(ctx, module)
		if err != nil {
			return nil, nil, err
		}
		cm = &compiledModule{m: m, refs: 1}
		r.mu.Lock()
		r.compiled[sum] = cm
		r.mu.Unlock()
	}
	var once sync.Once
	return cm.m, func(ctx context.Context) (err error) {
		once.Do(func() {
			r.mu.Lock()
			cm.refs--
			last := cm.refs == 0
			if last && r.compiled[sum] == cm {
				delete(r.compiled, sum)
			}
			r.mu.Unlock()
			if last {
				err = cm.m.Close(ctx)
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
	return &Runtime{cfg: cfg}, nil
}

// runtime returns the wazero runtime, creating it (and the compilation
// cache) on first use.
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
	if r.cfg.cacheDir == "" {
		r.cache = wazero.NewCompilationCache()
	} else {
		cache, err := wazero.NewCompilationCacheWithDir(r.cfg.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm runtime: compilation cache in %s: %w", r.cfg.cacheDir, err)
		}
		r.cache = cache
	}
	cfg := wazero.NewRuntimeConfig().
		WithCompilationCache(r.cache).
		WithCloseOnContextDone(true)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return nil, errors.Join(fmt.Errorf("wasm runtime: instantiating WASI: %w", err), rt.Close(ctx), r.cache.Close(ctx))
	}
	r.rt = rt
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
	if r.rt == nil {
		return nil
	}
	return errors.Join(r.rt.Close(ctx), r.cache.Close(ctx))
}
