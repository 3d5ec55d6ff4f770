package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source/local"
)

// originalController behaves as the original Cup's Flipt controller does
// through cup's wasm controller: it keeps a namespace's flags in one file,
// fails (exit 1, controller.ErrFailed) to get a missing flag, gets nothing
// (also a fault) in a namespace without a file, and deletes a missing flag
// by writing nothing.
type originalController struct{}

func (originalController) file(ns string) string { return ns + "/features.json" }

func (c originalController) read(fsys fs.FS, ns string) (map[string]json.RawMessage, error) {
	b, err := fs.ReadFile(fsys, c.file(ns))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var flags map[string]json.RawMessage
	return flags, json.Unmarshal(b, &flags)
}

func (c originalController) resource(ns, name string, spec json.RawMessage) *controller.Resource {
	return &controller.Resource{APIVersion: "flipt.io/v1alpha1", Kind: "Flag",
		Metadata: controller.Metadata{Namespace: ns, Name: name}, Spec: spec}
}

func (c originalController) Get(ctx context.Context, req *controller.GetRequest) (*controller.Resource, error) {
	flags, err := c.read(req.FS, req.Namespace)
	switch {
	case err != nil:
		return nil, err
	case flags == nil:
		return nil, fmt.Errorf(`module "flipt": get %s: %w: the module exited 0 and wrote nothing on stdout`, req.Name, controller.ErrFailed)
	case flags[req.Name] == nil:
		return nil, fmt.Errorf(`module "flipt": get %s: %w: exit code 1: flag %s/%s: boom`, req.Name, controller.ErrFailed, req.Namespace, req.Name)
	}
	return c.resource(req.Namespace, req.Name, flags[req.Name]), nil
}

func (c originalController) List(ctx context.Context, req *controller.ListRequest) ([]*controller.Resource, error) {
	flags, err := c.read(req.FS, req.Namespace)
	if err != nil {
		return nil, err
	}
	var out []*controller.Resource
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range flags {
			if !yield(k) {
				return
			}
		}
	}) {
		out = append(out, c.resource(req.Namespace, name, flags[name]))
	}
	return out, nil
}

func (c originalController) write(fsys controller.WriteFS, ns string, flags map[string]json.RawMessage) error {
	b, err := json.Marshal(flags)
	if err != nil {
		return err
	}
	return fsys.WriteFile(c.file(ns), b, 0o644)
}

func (c originalController) Put(ctx context.Context, req *controller.PutRequest) error {
	ns := req.Resource.Metadata.Namespace
	flags, err := c.read(req.FS, ns)
	if err != nil {
		return err
	}
	if flags == nil {
		flags = map[string]json.RawMessage{}
	}
	spec := req.Resource.Spec
	if len(spec) == 0 {
		spec = json.RawMessage("{}")
	}
	flags[req.Resource.Metadata.Name] = spec
	return c.write(req.FS, ns, flags)
}

func (c originalController) Delete(ctx context.Context, req *controller.DeleteRequest) error {
	flags, err := c.read(req.FS, req.Namespace)
	if err != nil || flags[req.Name] == nil {
		return err
	}
	delete(flags, req.Name)
	return c.write(req.FS, req.Namespace, flags)
}

// TestControllerFailingOnMissingResources checks that every verb works with
// a controller that fails, rather than exiting 2, to get a missing
// resource, as the original Cup's are written.
func TestControllerFailingOnMissingResources(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "repo.git")
	if _, err := gitrepo.Init(dir, "main", map[string][]byte{
		"default/features.json": []byte(`{"old": {"enabled": true}}`),
	}, "init"); err != nil {
		t.Fatal(err)
	}
	src, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	typ := &Type{Type: controller.Type{Group: "flipt.io", Version: "v1alpha1", Kind: "Flag", Plural: "flags"}, Singular: "flag", Controller: originalController{}}
	s, err := New(src, []*Type{typ})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	put := func(ns, name, rv string) error {
		_, _, err := s.put(ctx, ref{"flipt.io", "v1alpha1", "flags", ns, name},
			&putInput{resource: controller.Resource{Spec: json.RawMessage(`{"enabled": false}`)}}, writeOptions{precondition: rv})
		return err
	}
	del := func(ns, name string) error {
		_, err := s.del(ctx, ref{"flipt.io", "v1alpha1", "flags", ns, name}, writeOptions{})
		return err
	}
	get := func(ns, name string) error {
		_, _, err := s.get(ctx, ref{"flipt.io", "v1alpha1", "flags", ns, name}, "")
		return err
	}
	// Create, in a namespace with a file and in one without.
	for _, ns := range []string{"default", "other"} {
		if err := put(ns, "new", ""); err != nil {
			t.Fatalf("creating a flag in %s: %v", ns, err)
		}
		if err := get(ns, "new"); err != nil {
			t.Fatalf("getting the created flag in %s: %v", ns, err)
		}
	}
	// Update.
	if err := put("default", "old", ""); err != nil {
		t.Fatalf("updating a flag: %v", err)
	}
	// Delete, then a delete of what is not there.
	if err := del("default", "old"); err != nil {
		t.Fatalf("deleting a flag: %v", err)
	}
	if err := del("default", "old"); connect.CodeOf(toConnect(err)) != connect.CodeNotFound {
		t.Errorf("deleting a missing flag = %v, want NotFound", err)
	}
	// A precondition needs the current resource: the fault is the answer,
	// with the controller's words.
	err = put("default", "gone", "0123")
	if ce := toConnect(err); ce.Code() != connect.CodeInternal || !strings.Contains(ce.Message(), "flag default/gone: boom") ||
		!strings.Contains(ce.Message(), `module "flipt"`) {
		t.Errorf("a put with a precondition on a flag the controller fails to get = %v, want Internal with its message", ce)
	}
	// A read of it says what the controller said.
	if ce := toConnect(get("default", "gone")); ce.Code() != connect.CodeInternal || !strings.Contains(ce.Message(), "flag default/gone: boom") {
		t.Errorf("get = %v, want Internal with the controller's message", ce)
	}
}
