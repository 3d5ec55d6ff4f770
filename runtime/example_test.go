package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/runtime"
)

// mapStore is a runtime.Store over maps, for the example: commit n holds
// the resources as the n-th write left them, each with the commit that
// last wrote it as its resource version. A server's store
// (server.ReconcileStore) reads and writes a Git repository instead.
type mapStore struct {
	mu      sync.Mutex
	commits []map[string]*controller.Resource // by "<plural>/<namespace>/<name>"
}

var _ runtime.Store = (*mapStore)(nil)

func newMapStore(t controller.Type, rs ...*controller.Resource) *mapStore {
	first := map[string]*controller.Resource{}
	for _, r := range rs {
		r.Metadata.ResourceVersion = "0"
		first[t.Plural+"/"+r.Metadata.Namespace+"/"+r.Metadata.Name] = r
	}
	return &mapStore{commits: []map[string]*controller.Resource{first}}
}

func (s *mapStore) Head(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.Itoa(len(s.commits) - 1), nil
}

func (s *mapStore) at(commit string) (map[string]*controller.Resource, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := strconv.Atoi(commit)
	if err != nil || n < 0 || n >= len(s.commits) {
		return nil, fmt.Errorf("no commit %q", commit)
	}
	return s.commits[n], nil
}

func (s *mapStore) List(_ context.Context, commit string, t controller.Type, namespaces []string) ([]*controller.Resource, error) {
	files, err := s.at(commit)
	if err != nil {
		return nil, err
	}
	var out []*controller.Resource
	for _, r := range files {
		if r.Kind == t.Kind && (namespaces == nil || slices.Contains(namespaces, r.Metadata.Namespace)) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *mapStore) CommitTime(context.Context, string) (time.Time, error) {
	return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), nil
}

func (s *mapStore) Write(_ context.Context, req *runtime.WriteRequest) (*runtime.WriteResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	head := strconv.Itoa(len(s.commits) - 1)
	if req.Base != head {
		return nil, fmt.Errorf("%w: at %s, not %s", runtime.ErrStale, head, req.Base)
	}
	next := maps.Clone(s.commits[len(s.commits)-1])
	id := strconv.Itoa(len(s.commits))
	for _, c := range req.Changes {
		path := c.Type.Plural + "/" + c.Namespace + "/" + c.Name
		if c.Resource == nil {
			delete(next, path)
			continue
		}
		r := c.Resource.Clone()
		r.Metadata.ResourceVersion = id
		next[path] = r
	}
	s.commits = append(s.commits, next)
	return &runtime.WriteResult{Commit: id}, nil
}

// A reconciler whose Go transform writes one Gadget per Widget, twice its
// size; WaitIdle waits until the runtime has written it.
func Example() {
	widgets := controller.Type{Group: "test.cup.dev", Version: "v1", Kind: "Widget", Plural: "widgets"}
	gadgets := controller.Type{Group: "test.cup.dev", Version: "v1", Kind: "Gadget", Plural: "gadgets"}
	store := newMapStore(widgets, &controller.Resource{APIVersion: "test.cup.dev/v1", Kind: "Widget",
		Metadata: controller.Metadata{Namespace: "default", Name: "w"}, Spec: json.RawMessage(`{"size": 2}`)})
	double := runtime.TransformFunc(func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
		var w struct{ Size int }
		if err := json.Unmarshal(req.Primary.Spec, &w); err != nil {
			return nil, fmt.Errorf("%w: %v", runtime.ErrInvalidInput, err)
		}
		spec, err := json.Marshal(map[string]int{"size": 2 * w.Size})
		return &runtime.Response{Outputs: []*controller.Resource{{APIVersion: "test.cup.dev/v1", Kind: "Gadget",
			Metadata: controller.Metadata{Name: req.Primary.Metadata.Name}, Spec: spec}}}, err
	})
	rt, err := runtime.New(store, []*runtime.Reconciler{{
		Name: "double", For: widgets, Outputs: []runtime.Output{{Type: gadgets, Exclusive: true}},
		Transform: double, Write: runtime.Write{Mode: runtime.WriteDirect},
	}}, runtime.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := rt.WaitIdle(ctx); err != nil {
		fmt.Println(err)
		return
	}
	head, _ := store.Head(ctx)
	out, _ := store.List(ctx, head, gadgets, nil)
	for _, g := range out {
		fmt.Println(g.Metadata.Annotations[runtime.AnnotationOwner], string(g.Spec))
	}
	// Output: double/default/w {"size":4}
}
