package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/cup-dev/cup/sdk/go/controller"
	"github.com/cup-dev/cup/sdk/go/controller/controllertest"
)

// files keeps each resource as a JSON file <namespace>/<name>.json.
// A module's main function would be:
//
//	controller.Handle("Widget", files{})
//	controller.Main()
type files struct{}

var _ controller.Handler = files{}

func (files) path(namespace, name string) (string, error) {
	p := namespace + "/" + name + ".json"
	if !fs.ValidPath(p) || strings.Count(p, "/") != 1 {
		return "", controller.Invalid("cannot store %q in namespace %q", name, namespace)
	}
	return p, nil
}

func (f files) Get(_ context.Context, req *controller.GetRequest) (*controller.Resource, error) {
	p, err := f.path(req.Namespace, req.Name)
	if err != nil {
		return nil, err
	}
	return read(req.FS, p)
}

func (f files) List(_ context.Context, req *controller.ListRequest) ([]*controller.Resource, error) {
	entries, err := fs.ReadDir(req.FS, req.Namespace)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var rs []*controller.Resource
	for _, e := range entries {
		if e.Type().IsRegular() && path.Ext(e.Name()) == ".json" {
			r, err := read(req.FS, req.Namespace+"/"+e.Name())
			if err != nil {
				return nil, err
			}
			rs = append(rs, r)
		}
	}
	return rs, nil
}

func (f files) Put(_ context.Context, req *controller.PutRequest) error {
	p, err := f.path(req.Resource.Metadata.Namespace, req.Resource.Metadata.Name)
	if err != nil {
		return err
	}
	data, err := json.Marshal(req.Resource)
	if err != nil {
		return err
	}
	return req.Dir.WriteFile(p, append(data, '\n'))
}

func (f files) Delete(_ context.Context, req *controller.DeleteRequest) error {
	p, err := f.path(req.Namespace, req.Name)
	if err != nil {
		return err
	}
	if err := req.Dir.Remove(p); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", p, controller.ErrNotFound)
	} else if err != nil {
		return err
	}
	return nil
}

func read(fsys fs.FS, p string) (*controller.Resource, error) {
	data, err := fs.ReadFile(fsys, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", p, controller.ErrNotFound)
	} else if err != nil {
		return nil, err
	}
	var r controller.Resource
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return &r, nil
}

// A handler serves the four verbs of the protocol; Mux.Run, which Main calls
// with the process's arguments, environment, standard streams and the tree
// at "/", does the rest.
func Example() {
	var m controller.Mux
	m.Handle("Widget", files{})
	dir := controllertest.MapDir{}
	call := func(stdin string, args ...string) {
		r := controllertest.Run(context.Background(), &m, dir, controllertest.Call{
			Args:  args,
			Env:   map[string]string{"CUP_API_VERSION": "example.com/v1"},
			Stdin: stdin,
		})
		fmt.Printf("%d %q %q\n", r.Code, r.Stdout, r.Stderr)
	}

	call(`{"kind":"Widget","metadata":{"name":"gear","labels":{"size":"s"}},"spec":{"teeth":12}}`,
		"put", "Widget", "default", "gear")
	fmt.Printf("%s", dir["default/gear.json"].Data)
	call("", "get", "Widget", "default", "gear")
	call("", "list", "Widget", "default", "size=m")
	call("", "delete", "Widget", "default", "cog")
	call("", "get", "Gadget", "default", "gear")
	// Output:
	// 0 "" ""
	// {"apiVersion":"example.com/v1","kind":"Widget","metadata":{"namespace":"default","name":"gear","labels":{"size":"s"}},"spec":{"teeth":12}}
	// 0 "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"namespace\":\"default\",\"name\":\"gear\",\"labels\":{\"size\":\"s\"}},\"spec\":{\"teeth\":12}}\n" ""
	// 0 "[]\n" ""
	// 2 "" "default/cog.json: not found\n"
	// 1 "" "{\"code\":\"invalid_argument\",\"message\":\"kind \\\"Gadget\\\" is not served by this module\"}\n"
}

// Invalid reports a request the handler cannot serve; the module prints it as
// JSON so that cupd answers InvalidArgument.
func ExampleInvalid() {
	var m controller.Mux
	m.Handle("Widget", files{})
	r := controllertest.Run(context.Background(), &m, controllertest.MapDir{}, controllertest.Call{
		Args: []string{"get", "Widget", "default", "a/b"},
	})
	fmt.Print(r.Code, " ", r.Stderr)
	// Output:
	// 1 {"code":"invalid_argument","message":"cannot store \"a/b\" in namespace \"default\""}
}
