package wasm

import (
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/lru"
)

// A module's get and list are functions of their arguments, their
// environment and what they read of the tree: the module has no network,
// fake clocks and a fixed random source (see the package documentation).
// So a Controller records the paths a get or list opens, and after the
// run, what the module could learn of each (observe): that it is absent,
// a directory (and its entries' names and types, when the module listed
// it), or a file (its mode, size, modification time and content id). A later call with the
// same arguments, on a tree where each of those paths looks the same, gets
// the first run's output without running the module again: after a commit
// that changed other files, a get or list costs a few lookups of paths
// instead of an instance of the module and a parse of its files.
//
// Only a tree that names its files' content ([controller.ContentIDFS], as
// a Git tree does) is recorded; only runs that ended by the module's exit
// are kept, whatever its exit code; runs stopped by a limit, a timeout or
// the caller are not.

// DefaultReuseBytes is how much module output a Runtime keeps for reuse,
// by default: see [WithReuseBytes].
const DefaultReuseBytes = 64 << 20

// WithReuseBytes bounds the output of get and list runs the Runtime's
// Controllers keep to answer the same call on a tree where what the run
// read is unchanged, in bytes (stdout, stderr, and the paths read with what
// was found there, keys included); the least recently used go first. Zero
// keeps the default, [DefaultReuseBytes]; less than zero keeps none.
func WithReuseBytes(n int64) RuntimeOption {
	return func(c *runtimeConfig) { c.reuseBytes = n }
}

// maxRecordedPaths bounds the paths one run's record holds: a run that
// opens more is not kept. A list of a module that keeps each resource in a
// file of its own opens one path a resource; checking 20,000 paths takes
// a few tens of milliseconds, and their record some 3 MB.
const maxRecordedPaths = 20000

// reuseOverhead is what a kept run costs besides its bytes: the reused
// value, its slices, and each path's string headers.
const reuseOverhead = 128

// reused is a run kept for reuse: what it read, and its output.
type reused struct {
	paths []readPath
	res   *result
}

// readPath is a path a run opened, whether it listed it (a directory), and
// what it found there (see observe).
type readPath struct {
	path   string
	listed bool
	seen   string
}

// nextControllerID numbers the Controllers, whose kept runs are theirs
// alone: a Controller made anew runs another module, or another spec.
var nextControllerID atomic.Uint64

// reuseKey is the key of cl's kept run: the Controller, the verb, the type
// (the environment) and the arguments; NUL cannot occur in any of them
// (checkRequest).
func (c *Controller) reuseKey(cl *call) string {
	var b strings.Builder
	b.WriteString(strconv.FormatUint(c.id, 10))
	for _, s := range append([]string{cl.verb, cl.typ.APIVersion(), cl.typ.Group, cl.typ.Version, cl.typ.Kind, cl.typ.Plural}, cl.args...) {
		b.WriteByte(0)
		b.WriteString(s)
	}
	return b.String()
}

// runRead runs cl, a get or list of fsys, or gives the output of an earlier
// run of the same call that read what fsys holds.
func (c *Controller) runRead(ctx context.Context, cl *call, fsys fs.FS) (*result, error) {
	ids, ok := fsys.(controller.ContentIDFS)
	if !ok || c.reuse == nil {
		cl.fs = readOnlyMount(fsys)
		return c.run(ctx, cl)
	}
	key := c.reuseKey(cl)
	if r, ok := c.reuse.Get(key); ok && r.holds(ids) {
		c.obs.reused.WithLabelValues(c.name, cl.verb).Inc()
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.AddEvent("wasm output reused", trace.WithAttributes(
				attribute.String("cup.controller", c.name), attribute.String("cup.verb", cl.verb)))
		}
		// The output is shared, read-only: the resources decoded from it
		// keep copies (controller.ParseResource).
		return r.res, nil
	}
	rec := &recorder{FS: fsys, paths: map[string]bool{}}
	cl.fs = readOnlyMount(rec)
	res, err := c.run(ctx, cl)
	if err != nil {
		return nil, err
	}
	if r, ok := rec.kept(ids, res); ok {
		c.reuse.Add(key, r, r.size())
	}
	return res, nil
}

// holds reports whether each path r read looks in fsys as it did.
func (r *reused) holds(fsys controller.ContentIDFS) bool {
	for _, p := range r.paths {
		if seen, ok := observe(fsys, p.path, p.listed); !ok || seen != p.seen {
			return false
		}
	}
	return true
}

// size is what r takes, as the cache counts it.
func (r *reused) size() int64 {
	n := int64(reuseOverhead + len(r.res.stdout) + len(r.res.stderr))
	for _, p := range r.paths {
		n += int64(len(p.path)+len(p.seen)) + 40
	}
	return n
}

// recorder is the tree a get or list module reads, recording the paths it
// opens, and which directories it lists.
type recorder struct {
	fs.FS
	mu    sync.Mutex
	paths map[string]bool // path → listed
	bad   bool            // an open failed otherwise than for absence, or too many paths
}

func (r *recorder) Open(name string) (fs.File, error) {
	f, err := r.FS.Open(name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.paths[name]; !ok {
		r.paths[name] = false
	}
	if len(r.paths) > maxRecordedPaths || err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.bad = true
	}
	if d, ok := f.(fs.ReadDirFile); ok && err == nil {
		return &recordedDir{ReadDirFile: d, r: r, name: name}, nil
	}
	return f, err
}

// recordedDir is a directory a module opened: listing it is recorded.
type recordedDir struct {
	fs.ReadDirFile
	r    *recorder
	name string
}

func (d *recordedDir) ReadDir(n int) ([]fs.DirEntry, error) {
	d.r.mu.Lock()
	d.r.paths[d.name] = true
	d.r.mu.Unlock()
	return d.ReadDirFile.ReadDir(n)
}

// kept returns what to keep of res, the run that read through r; ok is
// false when it cannot be reused.
func (r *recorder) kept(fsys controller.ContentIDFS, res *result) (*reused, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bad {
		return nil, false
	}
	k := &reused{paths: make([]readPath, 0, len(r.paths)), res: res}
	for p, listed := range r.paths {
		seen, ok := observe(fsys, p, listed)
		if !ok {
			return nil, false
		}
		k.paths = append(k.paths, readPath{path: p, listed: listed, seen: seen})
	}
	return k, true
}

// observe returns what a module that opens p in fsys can learn of it,
// listing it when listed: "-" when it is absent; for a directory its mode,
// modification time and, when listed, the digest of its entries' names and
// types; for a file its mode, size, modification time and content id. ok
// is false when fsys cannot tell (an error other than absence).
func observe(fsys controller.ContentIDFS, p string, listed bool) (seen string, ok bool) {
	fi, err := fs.Stat(fsys, p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "-", true
	case err != nil:
		return "", false
	case fi.IsDir():
		seen = "d" + strconv.FormatUint(uint64(fi.Mode()), 8) + " " + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
		if !listed {
			return seen, true
		}
		entries, err := fs.ReadDir(fsys, p)
		if err != nil {
			return "", false
		}
		h := sha256.New()
		for _, e := range entries {
			h.Write(strconv.AppendQuote(nil, e.Name()))
			h.Write(strconv.AppendUint(nil, uint64(e.Type()), 8))
			h.Write([]byte{'\n'})
		}
		return seen + " " + string(h.Sum(nil)), true
	}
	id, err := fsys.ContentID(p)
	if err != nil {
		return "", false
	}
	return "f" + strconv.FormatUint(uint64(fi.Mode()), 8) + " " + strconv.FormatInt(fi.Size(), 10) + " " +
		strconv.FormatInt(fi.ModTime().UnixNano(), 10) + " " + id, true
}

// newReuse is the Runtime's cache of kept runs, nil when it keeps none.
func newReuse(cfg *runtimeConfig) *lru.Cache[*reused] {
	switch {
	case cfg.reuseBytes < 0:
		return nil
	case cfg.reuseBytes == 0:
		return lru.New[*reused](DefaultReuseBytes)
	}
	return lru.New[*reused](cfg.reuseBytes)
}
