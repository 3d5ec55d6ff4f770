package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/runtime"
	"github.com/cup-dev/cup/runtime/queue"
	"github.com/cup-dev/cup/server"
)

// The types of the suite, in group test.cup.dev, each served by a
// template controller from one JSON file per resource at
// <plural>/<namespace>/<name>.json: widgets are the primaries, parts
// their inputs, gadgets and reports the outputs (reports are computed
// from gadgets in the cascades).
var (
	widgetType = testType("Widget", "widgets")
	partType   = testType("Part", "parts")
	gadgetType = testType("Gadget", "gadgets")
	reportType = testType("Report", "reports")
	suiteTypes = []controller.Type{widgetType, partType, gadgetType, reportType}
)

func testType(kind, plural string) controller.Type {
	return controller.Type{Group: "test.cup.dev", Version: "v1", Kind: kind, Plural: plural}
}

// typesConfig is the .cup configuration that serves types.
func typesConfig(types ...controller.Type) []byte {
	var b strings.Builder
	for _, t := range types {
		singular := strings.ToLower(t.Kind)
		fmt.Fprintf(&b, `apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: %[1]s.%[2]s}
spec:
  group: %[2]s
  names: {kind: %[3]s, singular: %[4]s, plural: %[1]s}
  versions: {%[5]s: {schemaTarget: spec, schema: {type: object}}}
---
apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: %[1]s}
spec:
  type: template
  spec:
    list_template: "%[1]s/{{ .Namespace }}/*.json"
    resource_template: "%[1]s/{{ .Namespace }}/{{ .Name }}.json"
---
apiVersion: cup.dev/v1alpha1
kind: APIBinding
metadata: {name: %[1]s}
spec: {controller: %[1]s, resources: [%[2]s/%[5]s/%[1]s]}
---
`, t.Plural, t.Group, t.Kind, singular, t.Version)
	}
	return []byte(b.String())
}

// file is the repository file of a resource of the suite's types.
func file(t controller.Type, ns, name, metadata, spec string) (string, []byte) {
	if metadata == "" {
		metadata = "{}"
	}
	var md map[string]any
	if err := json.Unmarshal([]byte(metadata), &md); err != nil {
		panic(err)
	}
	md["namespace"], md["name"] = ns, name
	mdJSON, _ := json.Marshal(md)
	return fmt.Sprintf("%s/%s/%s.json", t.Plural, ns, name),
		fmt.Appendf(nil, `{"apiVersion": %q, "kind": %q, "metadata": %s, "spec": %s}`, t.APIVersion(), t.Kind, mdJSON, spec)
}

// files gathers (path, content) pairs into a map.
func files(pairs ...any) map[string][]byte {
	out := map[string][]byte{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[pairs[i].(string)] = pairs[i+1].([]byte)
	}
	return out
}

// harness is one server over an in-memory repository and one runtime
// over it, for one test: COSI's RuntimeSuite set-up and tear-down, as a
// value.
type harness struct {
	t     testing.TB
	srv   *servertest.Server
	rt    *runtime.Runtime
	store *recordingStore
	// clock is the fake clock, when the test asked for one.
	clock *queue.FakeClock
	reg   *prometheus.Registry
	stop  func() // ends Run and waits for it; idempotent
}

// config is what a test changes in its harness.
type config struct {
	files map[string][]byte
	opts  runtime.Options
	// fakeClock runs the runtime on a queue.FakeClock (Options.Clock).
	fakeClock bool
	// wrap, when set, puts a Store in front of the server's.
	wrap func(runtime.Store) runtime.Store
	// quiet discards the logs of the server and the runtime (for
	// benchmarks), which otherwise go to the test.
	quiet bool
}

// start serves the suite's types with c's files (and no demo files)
// and runs a runtime of rs over the server until the test ends. Writes
// through h.put and h.del poke the runtime, as the server does after
// each write of its own when the runtime is set on it.
func start(t testing.TB, c config, rs ...*runtime.Reconciler) *harness {
	t.Helper()
	fs := map[string][]byte{".cup/types.yaml": typesConfig(suiteTypes...)}
	maps.Copy(fs, c.files)
	opts := []servertest.Option{servertest.WithoutDemo(), servertest.WithFiles(fs)}
	if c.quiet {
		opts = append(opts, servertest.WithServerOptions(server.WithLogger(slog.New(slog.DiscardHandler))))
		c.opts.Logger = slog.New(slog.DiscardHandler)
	}
	srv := servertest.Start(t, opts...)
	h := &harness{t: t, srv: srv, reg: prometheus.NewRegistry()}
	h.store = &recordingStore{Store: srv.Server.ReconcileStore()}
	var store runtime.Store = h.store
	if c.wrap != nil {
		store = c.wrap(store)
	}
	o := c.opts
	if o.Poll == 0 {
		o.Poll = 5 * time.Millisecond
	}
	if o.Resync == 0 {
		o.Resync = -1
	}
	if o.Logger == nil {
		o.Logger = servertest.Logger(t)
	}
	o.Metrics = runtime.NewMetrics(h.reg)
	if c.fakeClock {
		h.clock = queue.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
		o.Clock = h.clock
	}
	rt, err := runtime.New(store, rs, o)
	if err != nil {
		t.Fatal(err)
	}
	h.rt = rt
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(h.stop)
	return h
}

// put writes a resource through the server's REST API and pokes the
// runtime.
func (h *harness) put(t controller.Type, ns, name, metadata, spec string) {
	h.t.Helper()
	if metadata == "" {
		metadata = "{}"
	}
	r := h.srv.Do(h.t, "PUT", restPath(t, ns, name), fmt.Sprintf(`{"metadata": %s, "spec": %s}`, metadata, spec))
	if r.Status/100 != 2 {
		h.t.Fatalf("PUT %s %s/%s: %d %s", t.Kind, ns, name, r.Status, r.Body)
	}
	h.rt.Poke()
}

// del deletes a resource through the server's REST API and pokes the
// runtime.
func (h *harness) del(t controller.Type, ns, name string) {
	h.t.Helper()
	if r := h.srv.Do(h.t, "DELETE", restPath(t, ns, name), ""); r.Status/100 != 2 {
		h.t.Fatalf("DELETE %s %s/%s: %d %s", t.Kind, ns, name, r.Status, r.Body)
	}
	h.rt.Poke()
}

// commit writes files to the branch as another writer would (in one
// commit, nil content deleting), and pokes the runtime.
func (h *harness) commit(fs map[string][]byte) string {
	h.t.Helper()
	var c string
	var err error
	for range 20 { // the runtime may be writing too: try again on the new head
		if c, err = h.srv.Repo.Commit("main", fs, "another writer\n"); err == nil || !strings.Contains(err.Error(), "reference moved") {
			break
		}
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.rt.Poke()
	return c
}

func restPath(t controller.Type, ns, name string) string {
	return fmt.Sprintf("/apis/%s/%s/namespaces/%s/%s/%s", t.Group, t.Version, ns, t.Plural, name)
}

// get reads a resource at the head through the REST API; nil when it is
// not found.
func (h *harness) get(t controller.Type, ns, name string) *controller.Resource {
	h.t.Helper()
	r := h.srv.Do(h.t, "GET", restPath(t, ns, name), "")
	switch r.Status {
	case 404:
		return nil
	case 200:
	default:
		h.t.Fatalf("GET %s %s/%s: %d %s", t.Kind, ns, name, r.Status, r.Body)
	}
	res, err := controller.ParseResource([]byte(r.Body))
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// list reads every resource of t at the head, by namespace/name.
func (h *harness) list(t controller.Type) map[string]*controller.Resource {
	h.t.Helper()
	rs, err := h.srv.Server.ReconcileStore().List(h.t.Context(), h.srv.Head(h.t), t, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]*controller.Resource{}
	for _, r := range rs {
		out[r.Metadata.Namespace+"/"+r.Metadata.Name] = r
	}
	return out
}

// commits returns the number of commits on the branch.
func (h *harness) commits() int {
	h.t.Helper()
	log, err := h.srv.Repo.Log("main")
	if err != nil {
		h.t.Fatal(err)
	}
	return len(log)
}

// idle waits until the runtime has caught up with the head and has
// nothing to do (runtime.WaitIdle), for at most 10 s.
func (h *harness) idle() {
	h.t.Helper()
	h.waitIdle(10 * time.Second)
}

// waitIdle waits until the runtime is idle, for at most d.
func (h *harness) waitIdle(d time.Duration) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), d)
	defer cancel()
	if err := h.rt.WaitIdle(ctx); err != nil {
		h.t.Fatalf("the runtime is not idle after %s: %v", d, err)
	}
}

// counter returns the value of a counter of the runtime's metrics, summed
// over the series whose labels include labels (name, value pairs).
func (h *harness) counter(name string, labels ...string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metrics
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// eventually polls cond until it holds, for at most 10 s.
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, got := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s after 10 s", what, got)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// recordingStore counts the writes that reach the server's store.
type recordingStore struct {
	runtime.Store
	mu     sync.Mutex
	writes []recordedWrite
	// written, when set, is called after each write that made a commit.
	written func(recordedWrite)
}

// recordedWrite is one Write call and what came of it.
type recordedWrite struct {
	req    *runtime.WriteRequest
	commit string
	err    error
}

func (s *recordingStore) Write(ctx context.Context, req *runtime.WriteRequest) (*runtime.WriteResult, error) {
	res, err := s.Store.Write(ctx, req)
	w := recordedWrite{req: req, err: err}
	if res != nil {
		w.commit = res.Commit
	}
	s.mu.Lock()
	s.writes = append(s.writes, w)
	written := s.written
	s.mu.Unlock()
	if written != nil && w.err == nil && w.commit != "" {
		written(w)
	}
	return res, err
}

// committed returns the writes that made a commit.
func (s *recordingStore) committed() []recordedWrite {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []recordedWrite
	for _, w := range s.writes {
		if w.err == nil && w.commit != "" {
			out = append(out, w)
		}
	}
	return out
}

// stale returns the writes refused as stale.
func (s *recordingStore) stale() []recordedWrite {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []recordedWrite
	for _, w := range s.writes {
		if errors.Is(w.err, runtime.ErrStale) {
			out = append(out, w)
		}
	}
	return out
}

// specOf decodes a resource's spec into a map.
func specOf(t testing.TB, r *controller.Resource) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Spec, &m); err != nil {
		t.Fatalf("%s %s: spec: %v", r.Kind, r.Metadata.Name, err)
	}
	return m
}

// boundRefs decodes an output's bound references.
func boundRefs(t testing.TB, r *controller.Resource) []string {
	t.Helper()
	var refs []string
	if err := json.Unmarshal([]byte(r.Metadata.Annotations[runtime.AnnotationBoundReferences]), &refs); err != nil {
		t.Fatalf("%s %s: bound references %q: %v", r.Kind, r.Metadata.Name, r.Metadata.Annotations[runtime.AnnotationBoundReferences], err)
	}
	return refs
}

// inputRef is an input as bound references name it.
func inputRef(t controller.Type, ns, name string) string {
	return t.Group + "/" + t.Kind + "/" + ns + "/" + name
}

// summarize is the suite's usual transform: one Gadget named after the
// primary whose spec holds the primary's spec and each input's spec by
// "<kind>/<name>". It is a pure function of the request.
func summarize(req *runtime.Request) (*runtime.Response, error) {
	return summarizeAs(gadgetType)(req)
}

// summarizeAs is summarize with an output of type t.
func summarizeAs(t controller.Type) func(*runtime.Request) (*runtime.Response, error) {
	return func(req *runtime.Request) (*runtime.Response, error) {
		return summarizeTo(t, req)
	}
}

func summarizeTo(t controller.Type, req *runtime.Request) (*runtime.Response, error) {
	inputs := map[string]json.RawMessage{}
	for _, in := range req.Inputs {
		inputs[in.Kind+"/"+in.Metadata.Name] = in.Spec
	}
	spec, err := json.Marshal(map[string]any{"primary": req.Primary.Spec, "inputs": inputs})
	if err != nil {
		return nil, err
	}
	return &runtime.Response{Outputs: []*controller.Resource{{
		APIVersion: t.APIVersion(), Kind: t.Kind,
		Metadata: controller.Metadata{Name: req.Primary.Metadata.Name}, Spec: spec,
	}}}, nil
}

// inputNames returns the sorted input names of a summarize output.
func inputNames(t testing.TB, r *controller.Resource) []string {
	t.Helper()
	if r == nil {
		return nil
	}
	m, _ := specOf(t, r)["inputs"].(map[string]any)
	return slices.Sorted(maps.Keys(m))
}

// reconciler builds a direct-mode reconciler with gadgets as its
// exclusive output.
func reconciler(name string, tr runtime.TransformFunc, watches ...runtime.Watch) *runtime.Reconciler {
	return &runtime.Reconciler{
		Name:      name,
		For:       widgetType,
		Watches:   watches,
		Outputs:   []runtime.Output{{Type: gadgetType, Exclusive: true}},
		Transform: tr,
		Write:     runtime.Write{Mode: runtime.WriteDirect},
	}
}

// pure adapts a function of the request alone to a TransformFunc.
func pure(f func(*runtime.Request) (*runtime.Response, error)) runtime.TransformFunc {
	return func(_ context.Context, req *runtime.Request) (*runtime.Response, error) { return f(req) }
}
