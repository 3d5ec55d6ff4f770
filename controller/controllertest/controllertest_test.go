package controllertest_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"testing"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/controllertest"
)

// TestRun runs the suite against a controller that keeps every resource in
// a single file, as a WASM controller might: the suite must not care.
func TestRun(t *testing.T) {
	t.Parallel()
	controllertest.Run(t, func(t *testing.T) controller.Controller { return dbController{} })
}

// TestRunKeyed runs the suite against dbController with ListKeyed, so that
// the suite's checks of a KeyedLister run on a controller keeping several
// resources in one file too.
func TestRunKeyed(t *testing.T) {
	t.Parallel()
	controllertest.Run(t, func(t *testing.T) controller.Controller { return keyedDB{} })
}

// keyedDB is dbController with ListKeyed: a Listed per resource of the
// namespace, its key the file's content identifier and the resource's index
// when the file system has identifiers.
type keyedDB struct{ dbController }

var _ controller.KeyedLister = keyedDB{}

func (keyedDB) ListKeyed(_ context.Context, req *controller.ListRequest) ([]controller.Listed, error) {
	rs, err := load(req.FS)
	if err != nil {
		return nil, err
	}
	var id string
	if ids, ok := req.FS.(controller.ContentIDFS); ok && len(rs) > 0 {
		if id, err = ids.ContentID(dbPath); err != nil {
			return nil, err
		}
	}
	var out []controller.Listed
	for i, r := range rs {
		if !is(r, req.Type, req.Namespace, r.Metadata.Name) {
			continue
		}
		l := controller.Listed{Origin: dbPath, Decode: func() (*controller.Resource, error) { return r.Clone(), nil }}
		if id != "" {
			l.Key = fmt.Sprintf("%s/%d", id, i)
		}
		out = append(out, l)
	}
	return out, nil
}

// dbController stores all resources in db.json, a JSON array sorted by
// type, namespace and name.
type dbController struct{}

const dbPath = "db.json"

var _ controller.Controller = dbController{}

func load(fsys fs.FS) ([]*controller.Resource, error) {
	data, err := fs.ReadFile(fsys, dbPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rs []*controller.Resource
	if err := json.Unmarshal(data, &rs); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", controller.ErrMalformed, dbPath, err)
	}
	return rs, nil
}

func save(fsys controller.WriteFS, rs []*controller.Resource) error {
	slices.SortFunc(rs, func(a, b *controller.Resource) int {
		return cmp.Or(cmp.Compare(a.APIVersion, b.APIVersion), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Metadata.Namespace, b.Metadata.Namespace), cmp.Compare(a.Metadata.Name, b.Metadata.Name))
	})
	data, err := json.Marshal(rs)
	if err != nil {
		return err
	}
	return fsys.WriteFile(dbPath, data, 0o644)
}

func is(r *controller.Resource, typ controller.Type, namespace, name string) bool {
	return r.APIVersion == typ.APIVersion() && r.Kind == typ.Kind && r.Metadata.Namespace == namespace && r.Metadata.Name == name
}

func (dbController) Get(_ context.Context, req *controller.GetRequest) (*controller.Resource, error) {
	rs, err := load(req.FS)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if is(r, req.Type, req.Namespace, req.Name) {
			return r, nil
		}
	}
	return nil, controller.ErrNotFound
}

func (dbController) List(_ context.Context, req *controller.ListRequest) ([]*controller.Resource, error) {
	rs, err := load(req.FS)
	if err != nil {
		return nil, err
	}
	var out []*controller.Resource
	for _, r := range rs {
		if is(r, req.Type, req.Namespace, r.Metadata.Name) && (req.Selector == nil || req.Selector.Matches(r.Metadata.Labels)) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (dbController) Put(_ context.Context, req *controller.PutRequest) error {
	rs, err := load(req.FS)
	if err != nil {
		return err
	}
	in := req.Resource.Clone()
	in.Metadata.ResourceVersion = ""
	rs = slices.DeleteFunc(rs, func(r *controller.Resource) bool {
		return is(r, req.Type, in.Metadata.Namespace, in.Metadata.Name)
	})
	return save(req.FS, append(rs, in))
}

func (dbController) Delete(_ context.Context, req *controller.DeleteRequest) error {
	rs, err := load(req.FS)
	if err != nil {
		return err
	}
	n := len(rs)
	rs = slices.DeleteFunc(rs, func(r *controller.Resource) bool { return is(r, req.Type, req.Namespace, req.Name) })
	if len(rs) == n {
		return controller.ErrNotFound
	}
	return save(req.FS, rs)
}
