package controller_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/sdk/go/controller"
	"github.com/cup-dev/cup/sdk/go/controller/controllertest"
)

// stub is a Handler whose methods a test sets; unset methods panic.
type stub struct {
	get  func(*controller.GetRequest) (*controller.Resource, error)
	list func(*controller.ListRequest) ([]*controller.Resource, error)
	put  func(*controller.PutRequest) error
}

func (s stub) Get(_ context.Context, req *controller.GetRequest) (*controller.Resource, error) {
	return s.get(req)
}

func (s stub) List(_ context.Context, req *controller.ListRequest) ([]*controller.Resource, error) {
	return s.list(req)
}

func (s stub) Put(_ context.Context, req *controller.PutRequest) error { return s.put(req) }

func (s stub) Delete(context.Context, *controller.DeleteRequest) error {
	panic("delete is not stubbed")
}

func resource(namespace, name string, labels map[string]string) *controller.Resource {
	return &controller.Resource{
		APIVersion: "example.com/v1", Kind: "Widget",
		Metadata: controller.Metadata{Namespace: namespace, Name: name, Labels: labels},
	}
}

const (
	gearJSON = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"namespace":"default","name":"gear","labels":{"size":"s"}},"spec":{"teeth":12}}`
	cogJSON  = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"namespace":"default","name":"cog","labels":{"size":"m"}}}`
)

// tree is a repository holding two widgets in files{}'s layout.
func tree() controllertest.MapDir {
	return controllertest.MapDir{
		"default/gear.json": {Data: []byte(gearJSON + "\n")},
		"default/cog.json":  {Data: []byte(cogJSON + "\n")},
		"default/README.md": {Data: []byte("not a widget\n")},
		"other/bolt.json":   {Data: []byte(`{"kind":"Widget","metadata":{"namespace":"other","name":"bolt"}}`)},
	}
}

func invalid(msg string) string {
	return fmt.Sprintf(`{"code":"invalid_argument","message":%q}`+"\n", msg)
}

func TestRun(t *testing.T) {
	t.Parallel()
	const usage = "usage: get|put|delete <kind> <namespace> <name>, or list <kind> <namespace> [key=value ...]"
	env := map[string]string{
		"CUP_API_VERSION": "example.com/v1", "CUP_GROUP": "example.com", "CUP_VERSION": "v1",
		"CUP_KIND": "Widget", "CUP_PLURAL": "widgets", "HOME": "/",
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		stdin   string
		handler controller.Handler // files{} when nil
		code    int
		stdout  string
		stderr  string
		files   map[string]string // expected changes: path → content, "" for removed
	}{
		{name: "get", args: []string{"get", "Widget", "default", "gear"}, stdout: gearJSON + "\n"},
		{name: "get fills kind and namespace", args: []string{"get", "Widget", "other", "bolt"},
			stdout: `{"apiVersion":"","kind":"Widget","metadata":{"namespace":"other","name":"bolt"}}` + "\n"},
		{name: "get missing", args: []string{"get", "Widget", "default", "bolt"}, code: 2, stderr: "default/bolt.json: not found\n"},
		{name: "get invalid", args: []string{"get", "Widget", "default", "a/b"}, code: 1,
			stderr: invalid(`cannot store "a/b" in namespace "default"`)},
		{name: "get of another resource", args: []string{"get", "Widget", "default", "gear"}, code: 1,
			handler: stub{get: func(*controller.GetRequest) (*controller.Resource, error) {
				return resource("default", "cog", nil), nil
			}},
			stderr: `get Widget "gear" in namespace "default": the handler returned example.com/v1 Widget "cog" in namespace "default"` + "\n"},
		{name: "get of nothing", args: []string{"get", "Widget", "default", "gear"}, code: 1,
			handler: stub{get: func(*controller.GetRequest) (*controller.Resource, error) { return nil, nil }},
			stderr:  `get Widget "gear" in namespace "default": the handler returned a nil resource` + "\n"},
		{name: "get with a spec that is not an object", args: []string{"get", "Widget", "default", "gear"}, code: 1,
			handler: stub{get: func(*controller.GetRequest) (*controller.Resource, error) {
				r := resource("default", "gear", nil)
				r.Spec = []byte(`[1]`)
				return r, nil
			}},
			stderr: `get Widget "gear" in namespace "default": the handler returned gear: spec must be a JSON object` + "\n"},
		{name: "handler error", args: []string{"get", "Widget", "default", "gear"}, code: 1,
			handler: stub{get: func(*controller.GetRequest) (*controller.Resource, error) { return nil, errors.New("disk on fire") }},
			stderr:  "disk on fire\n"},
		{name: "handler error wrapping ErrInvalid", args: []string{"get", "Widget", "default", "gear"}, code: 1,
			handler: stub{get: func(*controller.GetRequest) (*controller.Resource, error) {
				return nil, fmt.Errorf("name too long: %w", controller.ErrInvalid)
			}},
			stderr: invalid("name too long: invalid argument")},
		{name: "panic", args: []string{"get", "Widget", "default", "gear"}, code: 1,
			handler: stub{}, stderr: "panic: runtime error: invalid memory address or nil pointer dereference\n"},

		{name: "list", args: []string{"list", "Widget", "default"}, stdout: "[" + cogJSON + "," + gearJSON + "]\n"},
		{name: "list with labels", args: []string{"list", "Widget", "default", "size=s"}, stdout: "[" + gearJSON + "]\n"},
		{name: "list matching nothing", args: []string{"list", "Widget", "default", "size=s", "color=red"}, stdout: "[]\n"},
		{name: "list of a missing namespace", args: []string{"list", "Widget", "nowhere"}, stdout: "[]\n"},
		{name: "list passes labels", args: []string{"list", "Widget", "default", "a=1", "b=", "a=1"},
			handler: stub{list: func(req *controller.ListRequest) ([]*controller.Resource, error) {
				if fmt.Sprint(req.Labels) != "map[a:1 b:]" {
					return nil, fmt.Errorf("labels %v", req.Labels)
				}
				return []*controller.Resource{resource("", "y", map[string]string{"a": "1", "b": ""}), resource("default", "x", nil)}, nil
			}},
			stdout: `[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"namespace":"default","name":"y","labels":{"a":"1","b":""}}}]` + "\n"},
		{name: "list with a duplicate", args: []string{"list", "Widget", "default"}, code: 1,
			handler: stub{list: func(*controller.ListRequest) ([]*controller.Resource, error) {
				return []*controller.Resource{resource("default", "x", nil), resource("default", "x", nil)}, nil
			}},
			stderr: `list Widget in namespace "default": two resources named "x"` + "\n"},
		{name: "list with a duplicate the labels leave out, as ListEach refuses it", args: []string{"list", "Widget", "default", "size=s"}, code: 1,
			handler: stub{list: func(*controller.ListRequest) ([]*controller.Resource, error) {
				return []*controller.Resource{resource("default", "x", nil), resource("default", "x", nil)}, nil
			}},
			stderr: `list Widget in namespace "default": two resources named "x"` + "\n"},
		{name: "list without a name", args: []string{"list", "Widget", "default"}, code: 1,
			handler: stub{list: func(*controller.ListRequest) ([]*controller.Resource, error) {
				return []*controller.Resource{resource("default", "", nil)}, nil
			}},
			stderr: `list Widget in namespace "default": the handler returned a resource without a name` + "\n"},
		{name: "list of another namespace", args: []string{"list", "Widget", "default"}, code: 1,
			handler: stub{list: func(*controller.ListRequest) ([]*controller.Resource, error) {
				return []*controller.Resource{resource("other", "x", nil)}, nil
			}},
			stderr: `list Widget in namespace "default": the handler returned example.com/v1 Widget "x" in namespace "other"` + "\n"},
		{name: "list not found", args: []string{"list", "Widget", "default"}, code: 2,
			handler: stub{list: func(*controller.ListRequest) ([]*controller.Resource, error) {
				return nil, fmt.Errorf("namespace default: %w", controller.ErrNotFound)
			}},
			stderr: "namespace default: not found\n"},

		{name: "put", args: []string{"put", "Widget", "default", "bolt"},
			stdin: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"namespace":"default","name":"bolt","resourceVersion":"1"},"spec":{"a":1,"b":[true]}}` + "\n",
			files: map[string]string{"default/bolt.json": `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"namespace":"default","name":"bolt"},"spec":{"a":1,"b":[true]}}` + "\n"}},
		{name: "put fills kind, namespace and name", args: []string{"put", "Widget", "default", "bolt"},
			stdin: `{"apiVersion":"example.com/v1","metadata":{},"spec":null}`,
			files: map[string]string{"default/bolt.json": `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"namespace":"default","name":"bolt"}}` + "\n"}},
		{name: "put of another name", args: []string{"put", "Widget", "default", "bolt"}, code: 1, stdin: gearJSON,
			stderr: invalid(`the resource on stdin is example.com/v1 Widget "gear" in namespace "default", the arguments name Widget "bolt" in namespace "default"`)},
		{name: "put of another kind", args: []string{"put", "Widget", "default", "gear"}, code: 1,
			stdin:  `{"kind":"Gadget","metadata":{"name":"gear"}}`,
			stderr: invalid(`the resource on stdin is Gadget "gear" in namespace "default", the arguments name Widget "gear" in namespace "default"`)},
		{name: "put to another namespace", args: []string{"put", "Widget", "other", "gear"}, code: 1, stdin: gearJSON,
			stderr: invalid(`the resource on stdin is example.com/v1 Widget "gear" in namespace "default", the arguments name Widget "gear" in namespace "other"`)},
		{name: "put without stdin", args: []string{"put", "Widget", "default", "gear"}, code: 1, stdin: " \n",
			stderr: invalid("put needs the resource as JSON on stdin")},
		{name: "put of bad JSON", args: []string{"put", "Widget", "default", "gear"}, code: 1, stdin: `{"kind":`,
			stderr: invalid("decoding the resource on stdin: unexpected EOF")},
		{name: "put of two resources", args: []string{"put", "Widget", "default", "gear"}, code: 1, stdin: gearJSON + gearJSON,
			stderr: invalid("decoding the resource on stdin: unexpected data after the resource")},
		{name: "put of a spec that is not an object", args: []string{"put", "Widget", "default", "gear"}, code: 1,
			stdin:  `{"kind":"Widget","metadata":{"name":"gear"},"spec":"on"}`,
			stderr: invalid("spec must be a JSON object")},
		{name: "put not found is an error", args: []string{"put", "Widget", "default", "gear"}, code: 1, stdin: gearJSON,
			handler: stub{put: func(*controller.PutRequest) error { return fmt.Errorf("parent: %w", controller.ErrNotFound) }},
			stderr:  "parent: not found\n"},

		{name: "delete", args: []string{"delete", "Widget", "default", "gear"}, files: map[string]string{"default/gear.json": ""}},
		{name: "delete missing", args: []string{"delete", "Widget", "default", "bolt"}, code: 2, stderr: "default/bolt.json: not found\n"},

		{name: "apiVersion from the environment", args: []string{"get", "Widget", "other", "bolt"}, env: env,
			stdout: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"namespace":"other","name":"bolt"}}` + "\n"},
		{name: "apiVersion from group and version", args: []string{"get", "Widget", "other", "bolt"},
			env:    map[string]string{"CUP_GROUP": "example.com", "CUP_VERSION": "v2"},
			stdout: `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"namespace":"other","name":"bolt"}}` + "\n"},
		{name: "apiVersion of the core group", args: []string{"get", "Widget", "other", "bolt"},
			env:    map[string]string{"CUP_VERSION": "v1"},
			stdout: `{"apiVersion":"v1","kind":"Widget","metadata":{"namespace":"other","name":"bolt"}}` + "\n"},
		{name: "get of another apiVersion", args: []string{"get", "Widget", "default", "gear"}, code: 1,
			env:    map[string]string{"CUP_API_VERSION": "example.com/v2"},
			stderr: `get example.com/v2 Widget "gear" in namespace "default": the handler returned example.com/v1 Widget "gear" in namespace "default"` + "\n"},
		{name: "type in the request", args: []string{"list", "Widget", "default"}, env: env,
			handler: stub{list: func(req *controller.ListRequest) ([]*controller.Resource, error) {
				want := controller.Type{APIVersion: "example.com/v1", Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets"}
				if req.Type != want {
					return nil, fmt.Errorf("type %+v", req.Type)
				}
				return nil, nil
			}},
			stdout: "[]\n"},
		{name: "put of another apiVersion", args: []string{"put", "Widget", "default", "gear"}, code: 1,
			env: map[string]string{"CUP_API_VERSION": "example.com/v2"}, stdin: gearJSON,
			stderr: invalid(`the resource on stdin is example.com/v1 Widget "gear" in namespace "default", the arguments name example.com/v2 Widget "gear" in namespace "default"`)},
		{name: "put fills apiVersion", args: []string{"put", "Widget", "default", "bolt"}, env: env, stdin: `{"metadata":{"name":"bolt"}}`,
			files: map[string]string{"default/bolt.json": `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"namespace":"default","name":"bolt"}}` + "\n"}},

		{name: "no arguments", code: 1, stderr: invalid("missing verb; " + usage)},
		{name: "unknown verb", args: []string{"patch", "Widget", "default", "gear"}, code: 1, stderr: invalid(`unknown verb "patch"; ` + usage)},
		{name: "get without a name", args: []string{"get", "Widget", "default"}, code: 1, stderr: invalid("get takes 3 arguments, not 2; " + usage)},
		{name: "delete with labels", args: []string{"delete", "Widget", "default", "gear", "a=b"}, code: 1,
			stderr: invalid("delete takes 3 arguments, not 4; " + usage)},
		{name: "list without a namespace", args: []string{"list", "Widget"}, code: 1, stderr: invalid("list takes at least 2 arguments, not 1; " + usage)},
		{name: "empty name", args: []string{"get", "Widget", "default", ""}, code: 1, stderr: invalid("empty name")},
		{name: "empty kind", args: []string{"list", "", "default"}, code: 1, stderr: invalid("empty kind")},
		{name: "bad selector", args: []string{"list", "Widget", "default", "size"}, code: 1, stderr: invalid(`label selector "size" is not key=value`)},
		{name: "selector without a key", args: []string{"list", "Widget", "default", "=s"}, code: 1, stderr: invalid(`label selector "=s" is not key=value`)},
		{name: "conflicting selector", args: []string{"list", "Widget", "default", "size=s", "size=m"}, code: 1,
			stderr: invalid("label selector asks for size=s and size=m")},
		{name: "unknown kind", args: []string{"list", "Gadget", "default"}, code: 1, stderr: invalid(`kind "Gadget" is not served by this module`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var m controller.Mux
			h := tt.handler
			if h == nil {
				h = files{}
			}
			m.Handle("Widget", h)
			dir := tree()
			r := controllertest.Run(t.Context(), &m, dir, controllertest.Call{Args: tt.args, Env: tt.env, Stdin: tt.stdin})
			if r.Code != tt.code || r.Stdout != tt.stdout || r.Stderr != tt.stderr {
				t.Errorf("Run(%q) = %d\nstdout %q\nstderr %q\nwant %d\nstdout %q\nstderr %q",
					tt.args, r.Code, r.Stdout, r.Stderr, tt.code, tt.stdout, tt.stderr)
			}
			want := tree()
			for p, content := range tt.files {
				if content == "" {
					delete(want, p)
				} else {
					want[p] = &fstest.MapFile{Data: []byte(content)}
				}
			}
			if got, want := dump(dir), dump(want); got != want {
				t.Errorf("tree after Run(%q):\n%s\nwant:\n%s", tt.args, got, want)
			}
		})
	}
}

func dump(d controllertest.MapDir) string {
	var b strings.Builder
	_ = fs.WalkDir(d, ".", func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			data, _ := fs.ReadFile(d, p)
			fmt.Fprintf(&b, "%s: %s", p, data)
		}
		return err
	})
	return b.String()
}

func TestRunAnyKind(t *testing.T) {
	t.Parallel()
	var m controller.Mux
	m.Handle(controller.AnyKind, stub{get: func(req *controller.GetRequest) (*controller.Resource, error) {
		return &controller.Resource{APIVersion: "v1", Metadata: controller.Metadata{Name: req.Type.Kind}}, nil
	}})
	m.Handle("Widget", stub{get: func(*controller.GetRequest) (*controller.Resource, error) {
		return nil, controller.ErrNotFound
	}})
	for kind, want := range map[string]controllertest.Result{
		"Gadget": {Stdout: `{"apiVersion":"v1","kind":"Gadget","metadata":{"namespace":"ns","name":"Gadget"}}` + "\n"},
		"Widget": {Code: 2, Stderr: "not found\n"},
	} {
		if got := controllertest.Run(t.Context(), &m, nil, controllertest.Call{Args: []string{"get", kind, "ns", kind}}); got != want {
			t.Errorf("get %s = %+v, want %+v", kind, got, want)
		}
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("pipe closed") }

func TestRunStdoutError(t *testing.T) {
	t.Parallel()
	var m controller.Mux
	m.Handle("Widget", files{})
	var stderr strings.Builder
	dir := tree()
	code := m.Run(t.Context(), &controller.Invocation{
		Args: []string{"get", "Widget", "default", "gear"}, Stdout: failingWriter{}, Stderr: &stderr, FS: dir, Dir: dir,
	})
	if code != 1 || stderr.String() != "writing the result: pipe closed\n" {
		t.Errorf("Run = %d, stderr %q", code, stderr.String())
	}
}

func TestHandlePanics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, kind string
		h          controller.Handler
		want       string
	}{
		{"empty kind", "", files{}, "controller: Handle with an empty kind"},
		{"nil handler", "Gadget", nil, "controller: Handle with a nil handler for kind Gadget"},
		{"twice", "Widget", files{}, "controller: multiple handlers for kind Widget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var m controller.Mux
			m.Handle("Widget", files{})
			defer func() {
				if got := recover(); got != tt.want {
					t.Errorf("Handle panicked with %v, want %q", got, tt.want)
				}
			}()
			m.Handle(tt.kind, tt.h)
		})
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	err := controller.Invalid("name %q: %w", "x", controller.ErrNotFound)
	if !errors.Is(err, controller.ErrInvalid) || !errors.Is(err, controller.ErrNotFound) {
		t.Errorf("Invalid(...) = %v, does not wrap ErrInvalid and ErrNotFound", err)
	}
	if got, want := err.Error(), `name "x": not found`; got != want {
		t.Errorf("Invalid(...).Error() = %q, want %q", got, want)
	}
}

func TestMatchLabels(t *testing.T) {
	t.Parallel()
	r := resource("default", "gear", map[string]string{"size": "s", "color": ""})
	for sel, want := range map[string]bool{
		"":               true,
		"size=s":         true,
		"size=s,color=":  true,
		"size=m":         false,
		"shape=":         false,
		"size=s,shape=o": false,
	} {
		m := map[string]string{}
		for kv := range strings.SplitSeq(sel, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				m[k] = v
			}
		}
		if got := r.MatchLabels(m); got != want {
			t.Errorf("MatchLabels(%q) = %v, want %v", sel, got, want)
		}
	}
}

func TestRunNilStreams(t *testing.T) {
	t.Parallel()
	var m controller.Mux
	m.Handle("Widget", files{})
	dir := tree()
	for args, want := range map[string]int{"get Widget default gear": 0, "get Widget default cog-wheel": 2, "": 1} {
		if got := m.Run(t.Context(), &controller.Invocation{Args: strings.Fields(args), FS: dir, Dir: dir}); got != want {
			t.Errorf("Run(%q) with no stdin, stdout and stderr = %d, want %d", args, got, want)
		}
	}
}

// eachStub is a stub that lists one resource at a time.
type eachStub struct {
	stub
	each func(yield func(*controller.Resource) error) error
}

func (s eachStub) ListEach(_ context.Context, _ *controller.ListRequest, yield func(*controller.Resource) error) error {
	return s.each(yield)
}

// TestListEach: the list of an EachLister is printed as it comes, in its
// order, filtered and checked; a name twice and a resource of another
// namespace are errors.
func TestListEach(t *testing.T) {
	t.Parallel()
	env := map[string]string{"CUP_API_VERSION": "example.com/v1"}
	run := func(rs ...*controller.Resource) controllertest.Result {
		var m controller.Mux
		m.Handle("Widget", eachStub{each: func(yield func(*controller.Resource) error) error {
			for _, r := range rs {
				if err := yield(r); err != nil {
					return err
				}
			}
			return nil
		}})
		return controllertest.Run(t.Context(), &m, nil, controllertest.Call{Args: []string{"list", "Widget", "ns", "team=a"}, Env: env})
	}
	r := run(resource("", "b", map[string]string{"team": "a"}), resource("", "c", nil), resource("ns", "a", map[string]string{"team": "a"}))
	want := `[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"namespace":"ns","name":"b","labels":{"team":"a"}}},` + "\n" +
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"namespace":"ns","name":"a","labels":{"team":"a"}}}]` + "\n"
	if r.Code != 0 || r.Stdout != want {
		t.Errorf("list = %+v, want stdout %s", r, want)
	}
	if r := run(); r.Code != 0 || r.Stdout != "[]\n" {
		t.Errorf("empty list = %+v", r)
	}
	if r := run(resource("", "a", nil), resource("", "a", nil)); r.Code != 1 || !strings.Contains(r.Stderr, `two resources named "a"`) {
		t.Errorf("list with a name twice = %+v", r)
	}
	if r := run(resource("other", "a", nil)); r.Code != 1 || !strings.Contains(r.Stderr, `the handler returned`) {
		t.Errorf("list of another namespace = %+v", r)
	}
}
