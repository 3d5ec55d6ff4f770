package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"golang.org/x/sync/semaphore"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/lru"
)

// Controller runs a WASI command module for every call, as the package
// documentation describes. It is safe for concurrent use: each call runs in
// its own module instance.
type Controller struct {
	name    string
	spec    Spec // with defaults
	prog    program
	release func(context.Context) error // gives prog back to the runtime
	logger  *slog.Logger
	budget  *semaphore.Weighted // the runtime's memory budget in pages; nil when unbounded
	obs     *observer           // the runtime's metrics and tracer
	id      uint64              // tells its kept runs from other Controllers'
	reuse   *lru.Cache[*reused] // the runtime's kept runs; nil when it keeps none
}

var (
	_ controller.Controller   = (*Controller)(nil)
	_ controller.GetCostsList = (*Controller)(nil)
)

// GetCostsList reports what the Spec says of the module: whether its get
// reads as much as its list.
func (c *Controller) GetCostsList() bool { return c.spec.GetCostsList }

// wasiModule is the only module a controller's module may import from.
const wasiModule = "wasi_snapshot_preview1"

// New compiles module, the bytes of the file spec.Path names, into a
// Controller called name, which is argv[0] of every call and names the
// module in errors. Zero limits in spec take their defaults. New returns an
// error naming the controller when the bytes are not WebAssembly, the module
// is not a WASI command (it exports no _start, or imports from anything but
// wasi_snapshot_preview1), its memory starts above spec's limit, or that
// limit exceeds the runtime's memory budget (see [WithMemoryBudget]).
//
// Compiling takes from milliseconds to seconds; a Runtime with a cache
// directory keeps the result for the next process.
func New(ctx context.Context, rt *Runtime, name string, module []byte, spec *Spec) (*Controller, error) {
	switch {
	case rt == nil:
		return nil, fmt.Errorf("wasm controller %q: no runtime", name)
	case name == "" || strings.ContainsRune(name, 0):
		return nil, fmt.Errorf("wasm controller %q: the name must be non-empty and free of NUL bytes", name)
	case spec == nil:
		return nil, fmt.Errorf("wasm controller %q: no spec", name)
	}
	s, err := spec.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("wasm controller %q: %w", name, err)
	}
	if budget := rt.budgetPages(); rt.budget != nil && int64(s.MemoryLimitPages) > budget {
		return nil, fmt.Errorf("wasm controller %q: memoryLimitPages %d (%s) is more than the memory budget of every WASM controller's calls together, %d pages (%s): lower the limit or raise the budget (cupd --wasm-memory-bytes)",
			name, s.MemoryLimitPages, pagesSize(s.MemoryLimitPages), budget, pagesSize(uint32(budget)))
	}
	start := time.Now()
	prog, release, err := rt.compile(ctx, s.Path, module)
	if err != nil {
		return nil, fmt.Errorf("wasm controller %q: compiling module %s: %w", name, s.Path, err)
	}
	if err := checkModule(prog.m, module, s.MemoryLimitPages); err != nil {
		return nil, errors.Join(fmt.Errorf("wasm controller %q: module %s: %w", name, s.Path, err), release(ctx))
	}
	rt.cfg.logger.DebugContext(ctx, "compiled wasm controller", "controller", name, "module", s.Path,
		"bytes", len(module), "duration", elapsed(start))
	return &Controller{name: name, spec: s, prog: prog, release: release, logger: rt.cfg.logger, budget: rt.budget, obs: rt.obs,
		id: nextControllerID.Add(1), reuse: rt.reuse}, nil
}

// checkModule checks that m, compiled from module, is a WASI command whose
// memory fits in pages.
func checkModule(m wazero.CompiledModule, module []byte, pages uint32) error {
	if m.ExportedFunctions()["_start"] == nil {
		return errors.New("exports no _start function: build it as a WASI command (GOOS=wasip1 GOARCH=wasm for Go)")
	}
	for _, f := range m.ImportedFunctions() {
		if mod, fn, _ := f.Import(); mod != wasiModule {
			return fmt.Errorf("imports %s.%s: a controller module may only import from %s", mod, fn, wasiModule)
		}
	}
	for _, mem := range m.ImportedMemories() {
		mod, n, _ := mem.Import()
		return fmt.Errorf("imports memory %s.%s: a controller module must define its own", mod, n)
	}
	if min := memoryMin(module); min > uint64(pages) {
		return fmt.Errorf("needs %d pages of memory to start, more than memoryLimitPages %d", min, pages)
	}
	return nil
}

// memoryMin returns the largest initial size, in pages, of the memories
// module defines, exported or not (wazero tells only of exported ones). The
// module is known to be valid: wazero compiled it.
func memoryMin(module []byte) uint64 {
	var most uint64
	r := reader{b: module[min(8, len(module)):]} // after magic and version
	for !r.done() {
		id := r.byte()
		s := reader{b: r.bytes(r.u32())}
		if id != sectionMemory {
			continue
		}
		for range s.count() {
			most = max(most, uint64(s.limits()))
		}
	}
	return most
}

// Close releases the compiled module. Calls must not be running or made
// afterwards.
func (c *Controller) Close(ctx context.Context) error {
	return c.release(ctx)
}

// op names a call in messages.
func (c *Controller) op(verb string, typ controller.Type, namespace, name string) string {
	what := namespace
	if name != "" {
		what += "/" + name
	}
	return fmt.Sprintf("module %q: %s %s %s %s", c.name, verb, typ.APIVersion(), typ.Kind, what)
}

// checkRequest checks what becomes the arguments of a call, the name only
// when given: WASI arguments cannot be empty or hold NUL bytes.
func checkRequest(typ controller.Type, namespace string, name ...string) error {
	fields := []struct{ what, v string }{{"kind", typ.Kind}, {"version", typ.Version}, {"namespace", namespace}}
	for _, n := range name {
		fields = append(fields, struct{ what, v string }{"name", n})
	}
	for _, f := range fields {
		if f.v == "" || strings.ContainsRune(f.v, 0) {
			return fmt.Errorf("%w: the %s must be non-empty and free of NUL bytes, got %q", controller.ErrInvalid, f.what, f.v)
		}
	}
	return nil
}

// Get runs `get <kind> <namespace> <name>` on req.FS, read-only. On exit 0
// stdout must hold the resource, of the requested type, name and namespace
// (or none, which gets the requested one); a resource that does not parse,
// or is another, gives an error wrapping controller.ErrFailed. Exit 2
// gives one wrapping controller.ErrNotFound. See the package documentation
// for the other errors.
func (c *Controller) Get(ctx context.Context, req *controller.GetRequest) (*controller.Resource, error) {
	if req == nil || req.FS == nil {
		return nil, fmt.Errorf("%w: get: no file system", controller.ErrInvalid)
	}
	if err := checkRequest(req.Type, req.Namespace, req.Name); err != nil {
		return nil, err
	}
	cl := &call{
		op: c.op("get", req.Type, req.Namespace, req.Name), verb: "get", typ: req.Type,
		args: []string{req.Namespace, req.Name},
	}
	res, err := c.runRead(ctx, cl, req.FS)
	if err != nil {
		return nil, err
	}
	if res.exit != 0 {
		return nil, failure(cl, res)
	}
	c.logStderr(ctx, cl, res)
	if len(bytes.TrimSpace(res.stdout)) == 0 {
		return nil, fmt.Errorf("%s: %w: the module exited 0 and wrote nothing on stdout: a get must write the resource, or exit 2 when there is none", cl.op, controller.ErrFailed)
	}
	r, err := controller.ParseResource(res.stdout)
	if err != nil {
		return nil, c.invalidOutput(cl, err)
	}
	if err := c.checkResource(cl, r, req.Type, req.Namespace); err != nil {
		return nil, err
	}
	if r.Metadata.Name != req.Name {
		return nil, fmt.Errorf("%s: %w: the module wrote the resource named %q", cl.op, controller.ErrFailed, r.Metadata.Name)
	}
	return r, nil
}

// checkResource checks that r, which the module wrote, is of typ and in
// namespace or none, and completes it: the namespace set, no resourceVersion.
func (c *Controller) checkResource(cl *call, r *controller.Resource, typ controller.Type, namespace string) error {
	if r.APIVersion != typ.APIVersion() || r.Kind != typ.Kind {
		return fmt.Errorf("%s: %w: the module wrote a %s %s named %q", cl.op, controller.ErrFailed, r.APIVersion, r.Kind, r.Metadata.Name)
	}
	if r.Metadata.Namespace != "" && r.Metadata.Namespace != namespace {
		return fmt.Errorf("%s: %w: the module wrote %q of namespace %q", cl.op, controller.ErrFailed, r.Metadata.Name, r.Metadata.Namespace)
	}
	if r.Metadata.Name == "" {
		return fmt.Errorf("%s: %w: the module wrote a resource without a name", cl.op, controller.ErrFailed)
	}
	r.Metadata.Namespace = namespace
	r.Metadata.ResourceVersion = ""
	return nil
}

// invalidOutput reports output that does not parse as resources.
func (c *Controller) invalidOutput(cl *call, err error) error {
	target := cl.args[0] // the namespace
	if cl.verb != "list" {
		target += "/" + cl.args[1]
	}
	return fmt.Errorf("module %q wrote invalid JSON for %s %s: %w: %s", c.name, cl.verb, target, controller.ErrFailed, bounded(err.Error()))
}

// logStderr logs what a successful call wrote to stderr, if anything.
func (c *Controller) logStderr(ctx context.Context, cl *call, res *result) {
	if len(res.stderr) > 0 {
		c.logger.DebugContext(ctx, "wasm controller wrote to stderr", "call", cl.op, "stderr", bounded(string(res.stderr)))
	}
}

// maxCrashLog bounds what of a crashed module's stderr logCrash logs.
const maxCrashLog = 16 << 10

// logCrash logs at debug level what a module that crashed or ran out of
// memory wrote to stderr, stack traces included, up to maxCrashLog bytes:
// errors carry its first lines only.
func (c *Controller) logCrash(ctx context.Context, cl *call, res *result) {
	s := res.stderr
	more := 0
	if len(s) > maxCrashLog {
		s, more = s[:maxCrashLog], len(s)-maxCrashLog
	}
	c.logger.DebugContext(ctx, "wasm controller crashed", "call", cl.op, "stderr", string(s), "stderr_cut_bytes", more)
}

// List runs `list <kind> <namespace> [key=value ...]` on req.FS, read-only.
// The key=value arguments are req.Selector's terms when it is a conjunction
// of label equalities that tells them (a Kubernetes labels.Selector does);
// otherwise there are none. Either way List keeps only the resources
// req.Selector matches.
//
// On exit 0 stdout holds the resources as a JSON array or as JSON values one
// after the other. Resources of other types are skipped; one that does not
// parse, is of another namespace, or shares its name with another gives an
// error wrapping controller.ErrFailed. Exit 2 means the namespace has
// none. The result is sorted by name.
func (c *Controller) List(ctx context.Context, req *controller.ListRequest) ([]*controller.Resource, error) {
	var sel controller.Selector
	if req != nil {
		sel = req.Selector
	}
	cl, items, err := c.listItems(ctx, req, sel)
	if err != nil {
		return nil, err
	}
	out := make([]*controller.Resource, 0, len(items))
	for i, item := range items {
		r, err := c.decodeItem(cl, req, i, item)
		if err != nil {
			return nil, err
		}
		if r != nil {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *controller.Resource) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	for i := 1; i < len(out); i++ {
		if out[i-1].Metadata.Name == out[i].Metadata.Name {
			return nil, fmt.Errorf("%s: %w: the module wrote %q twice", cl.op, controller.ErrFailed, out[i].Metadata.Name)
		}
	}
	if req.Selector != nil {
		out = slices.DeleteFunc(out, func(r *controller.Resource) bool { return !req.Selector.Matches(r.Metadata.Labels) })
	}
	return out, nil
}

var _ controller.KeyedLister = (*Controller)(nil)

// ListKeyed runs list as List does, without the selector's arguments, and
// returns the resources undecoded: each keyed by the digest of the JSON
// the module wrote for it, which decodes to the same resource whenever it
// is the same. A server that keeps decoded resources by key decodes only
// what changed: after a write to one entry of a file of 10,000, one; after
// an output reused whole (see [WithReuseBytes]), none. Resources of
// other types decode to nil; Decode's errors are List's.
func (c *Controller) ListKeyed(ctx context.Context, req *controller.ListRequest) ([]controller.Listed, error) {
	cl, items, err := c.listItems(ctx, req, nil)
	if err != nil {
		return nil, err
	}
	out := make([]controller.Listed, len(items))
	for i, item := range items {
		sum := sha256.Sum256(item)
		out[i] = controller.Listed{
			Key:    string(sum[:]),
			Origin: fmt.Sprintf("item %d of module %q's list", i, c.name),
			Decode: func() (*controller.Resource, error) { return c.decodeItem(cl, req, i, item) },
		}
	}
	return out, nil
}

// listItems runs list for req, with sel's terms as arguments when sel is
// not nil, and splits its output into the resources' JSON.
func (c *Controller) listItems(ctx context.Context, req *controller.ListRequest, sel controller.Selector) (*call, []json.RawMessage, error) {
	if req == nil || req.FS == nil {
		return nil, nil, fmt.Errorf("%w: list: no file system", controller.ErrInvalid)
	}
	if err := checkRequest(req.Type, req.Namespace); err != nil {
		return nil, nil, err
	}
	args := []string{req.Namespace}
	if sel != nil {
		args = append(args, selectorArgs(sel)...)
	}
	cl := &call{op: c.op("list", req.Type, req.Namespace, ""), verb: "list", typ: req.Type, args: args}
	res, err := c.runRead(ctx, cl, req.FS)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case res.exit == 2 && !goCrashed(res.stderr):
		if _, _, ok := reported(res.stderr); !ok {
			return cl, nil, nil
		}
		return nil, nil, failure(cl, res)
	case res.exit != 0:
		return nil, nil, failure(cl, res)
	}
	c.logStderr(ctx, cl, res)
	items, err := splitValues(res.stdout)
	if err != nil {
		return nil, nil, c.invalidOutput(cl, err)
	}
	return cl, items, nil
}

// decodeItem decodes item i of cl's output: nil for a resource of another
// type (kinds may share a module), an error wrapping ErrFailed for one that
// does not parse or belongs to another namespace.
func (c *Controller) decodeItem(cl *call, req *controller.ListRequest, i int, item json.RawMessage) (*controller.Resource, error) {
	r, err := controller.ParseResource(item)
	if err != nil {
		return nil, c.invalidOutput(cl, fmt.Errorf("item %d: %w", i, err))
	}
	if r.APIVersion != req.Type.APIVersion() || r.Kind != req.Type.Kind {
		return nil, nil
	}
	if err := c.checkResource(cl, r, req.Type, req.Namespace); err != nil {
		return nil, err
	}
	return r, nil
}

// splitValues splits the output of list: a JSON array, or JSON values one
// after the other (any white space between), or nothing.
func splitValues(out []byte) ([]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(trimmed, &items); err != nil {
			return nil, err
		}
		return items, nil
	}
	var items []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	for {
		var item json.RawMessage
		if err := dec.Decode(&item); errors.Is(err, io.EOF) {
			return items, nil
		} else if err != nil {
			return nil, fmt.Errorf("after %d resources: %w", len(items), err)
		}
		items = append(items, item)
	}
}

// Put runs `put <kind> <namespace> <name>` with the resource on stdin, in its
// file form (see controller.Resource.MarshalFile), and the tree mounted
// writable. The resource must be of the requested type, and have a
// namespace and a name. The module's changes reach req.FS only when it
// exits 0, so a failed Put writes nothing; files it rewrites with the bytes
// they had are left alone.
func (c *Controller) Put(ctx context.Context, req *controller.PutRequest) error {
	if req == nil || req.FS == nil || req.Resource == nil {
		return fmt.Errorf("%w: put: no file system or resource", controller.ErrInvalid)
	}
	r := req.Resource
	if r.APIVersion != req.Type.APIVersion() || r.Kind != req.Type.Kind {
		return fmt.Errorf("%w: resource is a %s %s, the request is for %s %s",
			controller.ErrInvalid, r.APIVersion, r.Kind, req.Type.APIVersion(), req.Type.Kind)
	}
	if err := checkRequest(req.Type, r.Metadata.Namespace, r.Metadata.Name); err != nil {
		return err
	}
	if s := bytes.TrimSpace(r.Spec); len(s) > 0 && s[0] != '{' && string(s) != "null" {
		return fmt.Errorf("%w: spec must be a JSON object", controller.ErrInvalid)
	}
	stdin, err := r.MarshalFile()
	if err != nil {
		return fmt.Errorf("%w: %v", controller.ErrInvalid, err)
	}
	return c.write(ctx, req.FS, &call{
		op: c.op("put", req.Type, r.Metadata.Namespace, r.Metadata.Name), verb: "put", typ: req.Type,
		args: []string{r.Metadata.Namespace, r.Metadata.Name}, stdin: stdin,
	})
}

// Delete runs `delete <kind> <namespace> <name>` with the tree mounted
// writable. Exit 2 gives an error wrapping controller.ErrNotFound. As for
// Put, the module's changes reach req.FS only when it exits 0.
func (c *Controller) Delete(ctx context.Context, req *controller.DeleteRequest) error {
	if req == nil || req.FS == nil {
		return fmt.Errorf("%w: delete: no file system", controller.ErrInvalid)
	}
	if err := checkRequest(req.Type, req.Namespace, req.Name); err != nil {
		return err
	}
	return c.write(ctx, req.FS, &call{
		op: c.op("delete", req.Type, req.Namespace, req.Name), verb: "delete", typ: req.Type,
		args: []string{req.Namespace, req.Name},
	})
}

// write runs a put or delete call on an overlay of fsys and applies its
// changes to fsys if the module exited 0.
func (c *Controller) write(ctx context.Context, fsys controller.WriteFS, cl *call) error {
	ov := newOverlay(fsys)
	cl.fs = ov
	res, err := c.run(ctx, cl)
	if err != nil {
		return err
	}
	if ov.full {
		return fmt.Errorf("%s: %w: the files the module opened and wrote would hold more than %d MiB%s", cl.op, controller.ErrLimit, maxWrittenBytes>>20, said(res.stderr))
	}
	if res.exit != 0 {
		return failure(cl, res)
	}
	c.logStderr(ctx, cl, res)
	if err := ov.apply(fsys); err != nil {
		return fmt.Errorf("%s: storing the module's changes: %w", cl.op, err)
	}
	return nil
}
