package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"sigs.k8s.io/yaml"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/template"
	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/server"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/local"
)

// fuzzItem is a resource file of the fuzzed repository.
func fuzzItem(kind, namespace, name, spec string) []byte {
	return fmt.Appendf(nil, `{"apiVersion": "fuzz.cup.dev/v1", "kind": %q, "metadata": {"namespace": %q, "name": %q, "labels": {"team": "web"}}, "spec": %s}`,
		kind, namespace, name, spec)
}

// fuzzRepo is a served repository and what it looked like at the start.
type fuzzRepo struct {
	dir     string
	src     *guardedSource
	handler http.Handler
	initial plumbing.Hash
	files   map[string][]byte
	refs    map[string]string
}

func newFuzzRepo(f *testing.F) *fuzzRepo {
	dir := filepath.Join(f.TempDir(), "repo.git")
	files := map[string][]byte{
		"default/a.json":       fuzzItem("Item", "default", "a", `{"n": 1}`),
		"default/b.json":       fuzzItem("Item", "default", "b", `{"n": 2}`),
		"default/w.json":       fuzzItem("Widget", "default", "w", `{"enabled": true}`),
		"other/c.json":         fuzzItem("Item", "other", "c", `{}`),
		"notes/default/n.yaml": []byte("apiVersion: fuzz.cup.dev/v1\nkind: Note\nmetadata: {namespace: default, name: n}\nspec: {text: hello}\n"),
		"etc/passwd":           []byte("root:x:0:0\n"),
		"README.md":            []byte("# fuzz\n"),
		".cup/controller.yaml": []byte("kind: Controller\n"),
	}
	commit, err := gitrepo.Init(dir, "main", files, "init")
	if err != nil {
		f.Fatal(err)
	}
	src, err := local.Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = src.Close() })
	ctrl, err := template.New(template.Spec{ListTemplate: "{{ .Namespace }}/*.json", ResourceTemplate: "{{ .Namespace }}/{{ .Name }}.json"})
	if err != nil {
		f.Fatal(err)
	}
	yamlCtrl, err := template.New(template.Spec{ListTemplate: "notes/{{ .Namespace }}/*.yaml", ResourceTemplate: "notes/{{ .Namespace }}/{{ .Name }}.yaml"})
	if err != nil {
		f.Fatal(err)
	}
	g := &guardedSource{Source: src}
	s, err := server.New(g, []*server.Type{
		{Type: controller.Type{Group: "fuzz.cup.dev", Version: "v1", Kind: "Item", Plural: "items"}, Singular: "item", Controller: ctrl},
		{Type: controller.Type{Group: "fuzz.cup.dev", Version: "v1", Kind: "Widget", Plural: "widgets"}, Singular: "widget", Controller: ctrl,
			Schema: json.RawMessage(`{"type": "object", "properties": {"enabled": {"type": "boolean"}}}`), SchemaTarget: "spec",
			Validate: validateWidget},
		{Type: controller.Type{Group: "fuzz.cup.dev", Version: "v1", Kind: "Note", Plural: "notes"}, Singular: "note", Controller: yamlCtrl},
	}, server.WithLogger(slog.New(slog.DiscardHandler)), server.WithMaxRequestBytes(64<<10))
	if err != nil {
		f.Fatal(err)
	}
	r := &fuzzRepo{dir: dir, src: g, handler: s.Handler(), initial: plumbing.NewHash(commit), files: files}
	r.refs = readRefs(f, dir)
	return r
}

// validateWidget stands in for a JSON Schema: spec.enabled, when given,
// is a boolean.
func validateWidget(doc any) []server.FieldViolation {
	m, _ := doc.(map[string]any)
	spec, _ := m["spec"].(map[string]any)
	if v, ok := spec["enabled"]; ok {
		if _, ok := v.(bool); !ok {
			return []server.FieldViolation{{Field: "spec.enabled", Description: "expected boolean"}}
		}
	}
	return nil
}

// FuzzREST sends one fuzzed HTTP request (method, request target, extra
// header lines, body) to the server's handler, which serves a small Git
// repository through the template controller. Whatever the request: the
// handler does not panic; it never answers a 5xx status but 503; every
// error from the REST routes under /apis is a JSON object with a code and a
// message; no path the controller or server hands the repository is outside
// the tree; and the repository is unchanged unless the request succeeded,
// in which case exactly one resource file changed, at the path its own
// namespace and name give.
func FuzzREST(f *testing.F) {
	const items = "/apis/fuzz.cup.dev/v1/namespaces/default/items"
	const widgets = "/apis/fuzz.cup.dev/v1/namespaces/default/widgets"
	for _, s := range []struct{ method, target, header, body string }{
		{"GET", "/apis", "", ""},
		{"GET", items, "", ""},
		{"GET", items + "?labelSelector=team+in+(web,ops)&limit=1", "", ""},
		{"GET", items + "/a", "", ""},
		{"GET", items + "/a?revision=main", "", ""},
		{"GET", items + "/..%2F..%2Fetc%2Fpasswd", "", ""},
		{"GET", items + "/%2E%2E", "", ""},
		{"GET", "/apis/fuzz.cup.dev/v1/namespaces/..%2Fetc/items/passwd", "", ""},
		{"GET", "/apis/fuzz.cup.dev/v1/namespaces/.git/items/config", "", ""},
		{"GET", items + "/a%00b", "", ""},
		{"GET", items + "?continue=eyJjIjoiIn0", "", ""},
		{"PUT", items + "/new", "", `{"spec": {"n": 3}}`},
		{"PUT", items + "/a", "If-Match: \"0123\"", `{"metadata": {"labels": {"team": "ops"}}, "spec": {"n": 1}}`},
		{"PUT", items + "/..%2F..%2Fetc%2Fpasswd", "", `{"spec": {}}`},
		{"PUT", items + "/a%2Fb", "", `{"spec": {}}`},
		{"PUT", items + "/x?dryRun=true", "", `{"spec": {"n": 1e400}}`},
		{"PUT", items + "/x", "", `{"metadata": {"name": "y"}}`},
		{"PUT", items + "/x?idempotencyKey=k1", "", `{"spec": null}`},
		{"PUT", widgets + "/w", "", `{"spec": {"enabled": "yes"}}`},
		{"PUT", widgets + "/w", "", `{"spec": {"enabled": false}}`},
		{"PATCH", items + "/a", "Content-Type: application/merge-patch+json", `{"spec": {"n": 12345678901234567890}}`},
		{"PATCH", items + "/a?dryRun=true", "Content-Type: application/json-patch+json", `[{"op": "copy", "from": "/spec", "path": "/spec/c"}]`},
		{"PATCH", items + "/a", "Content-Type: application/json-patch+json", `[{"op": "replace", "path": "/metadata/name", "value": "../../etc"}]`},
		{"PATCH", items + "/..%2F..%2Fetc%2Fpasswd", "Content-Type: application/merge-patch+json", `{}`},
		{"PATCH", items + "/a", "Content-Type: application/strategic-merge-patch+json", `{}`},
		{"DELETE", items + "/b", "", ""},
		{"DELETE", items + "/b?changeSet=cup/nope", "", ""},
		{"DELETE", items + "/..", "", ""},
		{"DELETE", "/apis/fuzz.cup.dev/v1/namespaces/etc/items/passwd", "", ""},
		{"POST", "/cup.v1alpha1.ResourceService/Put", "Content-Type: application/json",
			`{"group": "fuzz.cup.dev", "version": "v1", "plural": "items", "namespace": "default", "name": "../x", "resource": {}}`},
		{"GET", "/apis/cup.dev/v1alpha1/proposals", "", ""},
		{"GET", "/healthz", "", ""},
		{"GET", items + "?watch=true&labelSelector=team%3Dops", "", ""},
		{"GET", items + "?watch=1&resourceVersion=0123456789abcdef.2&allowWatchBookmarks=true", "", ""},
		{"GET", "/apis/fuzz.cup.dev/v1/items?watch=true&sendInitialEvents=false", "", ""},
		{"GET", items + "/a/history?limit=2&since=main", "", ""},
	} {
		f.Add(s.method, s.target, s.header, s.body)
	}
	repo := newFuzzRepo(f)
	f.Fuzz(func(t *testing.T, method, target, header, body string) {
		raw := method + " " + target + " HTTP/1.1\r\nHost: cup.test\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n"
		if header != "" {
			raw += header + "\r\n"
		}
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw + "\r\n" + body)))
		if err != nil {
			return // the HTTP server would answer 400 before the handler runs
		}
		defer repo.reset(t)
		req.RemoteAddr = "192.0.2.1:1234"
		timeout := 30 * time.Second
		if strings.Contains(req.URL.RawQuery, "watch") || strings.HasSuffix(req.URL.Path, "/Watch") {
			timeout = 100 * time.Millisecond // a watch lasts until its client leaves
		}
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		rec := httptest.NewRecorder()
		repo.handler.ServeHTTP(rec, req.WithContext(ctx))
		res := rec.Result()
		status := res.StatusCode
		what := fmt.Sprintf("%s %q: %d %.300s", method, target, status, rec.Body.Bytes())

		if status >= 500 && status != http.StatusServiceUnavailable {
			t.Fatalf("%s: a server error", what)
		}
		if p := req.URL.Path; status >= 400 && (p == "/apis" || strings.HasPrefix(p, "/apis/")) {
			var e struct{ Code, Message string }
			if res.Header.Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code == "" || e.Message == "" {
				t.Fatalf("%s: want a JSON error with code and message (Content-Type %q)", what, res.Header.Get("Content-Type"))
			}
		}
		if bad := repo.src.takeBad(); len(bad) > 0 {
			t.Fatalf("%s: used paths outside the tree: %q", what, bad)
		}
		repo.check(t, what, status)
	})
}

// check fails unless the repository is as it was or, after a successful
// request, differs by one resource file at the path its namespace and name
// give.
func (r *fuzzRepo) check(t *testing.T, what string, status int) {
	if refs := readRefs(t, r.dir); !maps.Equal(refs, r.refs) {
		head := refs["refs/heads/main"]
		delete(refs, "refs/heads/main")
		want := maps.Clone(r.refs)
		delete(want, "refs/heads/main")
		if !maps.Equal(refs, want) {
			t.Fatalf("%s: references changed from %v to %v", what, r.refs, refs)
		}
		if status >= 300 {
			t.Fatalf("%s: failed, but the branch moved to %s", what, head)
		}
		files, err := gitrepo.Files(r.dir, "main")
		if err != nil {
			t.Fatal(err)
		}
		var changed []string
		for p := range maps.Keys(files) {
			if string(files[p]) != string(r.files[p]) {
				changed = append(changed, p)
			}
		}
		for p := range maps.Keys(r.files) {
			if _, ok := files[p]; !ok {
				changed = append(changed, p)
			}
		}
		if len(changed) != 1 {
			t.Fatalf("%s: changed %q, want one file", what, changed)
		}
		p := changed[0]
		content, ok := files[p]
		if !ok {
			content = r.files[p]
		}
		if strings.HasSuffix(p, ".yaml") {
			if content, err = yaml.YAMLToJSON(content); err != nil {
				t.Fatalf("%s: changed %s, which is not YAML: %v", what, p, err)
			}
		}
		res, err := controller.ParseResource(content)
		if err != nil || (p != res.Metadata.Namespace+"/"+res.Metadata.Name+".json" && p != "notes/"+res.Metadata.Namespace+"/"+res.Metadata.Name+".yaml") {
			t.Fatalf("%s: changed %s, which holds %+v (%v)", what, p, res, err)
		}
	}
}

// reset moves the branch back to the initial commit, so that each input
// starts from the same tree, also after a failure.
func (r *fuzzRepo) reset(t *testing.T) {
	head, ok := readRefs(t, r.dir)["refs/heads/main"]
	if !ok || head == r.initial.String() {
		return
	}
	if err := gitfs.NewRefs(r.dir, r.dir).Update(context.Background(), "refs/heads/main", plumbing.NewHash(head), r.initial, nil); err != nil {
		t.Fatal(err)
	}
}

// readRefs returns every reference of the bare repository at dir, loose or
// packed, with the id it holds.
func readRefs(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(filepath.Join(dir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = strings.TrimSpace(string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "packed-refs")); err == nil {
		for line := range strings.Lines(string(b)) {
			if id, name, ok := strings.Cut(strings.TrimSpace(line), " "); ok && !strings.HasPrefix(id, "#") {
				if _, loose := out[name]; !loose {
					out[name] = id
				}
			}
		}
	}
	return out
}

// guardedSource records every path the server or a controller hands one of
// its file systems, snapshots and writers alike, that is not a valid path
// inside the tree, before the file system gets to refuse it.
type guardedSource struct {
	source.Source
	mu  sync.Mutex
	bad []string
}

func (g *guardedSource) see(op, name string) {
	if fs.ValidPath(name) && strings.IndexByte(name, 0) < 0 && !slices.ContainsFunc(strings.Split(name, "/"), func(s string) bool {
		return strings.EqualFold(s, ".git")
	}) && (op == "open" || op == "readdir" || op == "stat" || name != ".") {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bad = append(g.bad, op+" "+strconv.Quote(name))
}

func (g *guardedSource) takeBad() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	bad := g.bad
	g.bad = nil
	return bad
}

// Commit, ChangedPaths and ContentID forward the source's History
// ability, which watches and history need.
func (g *guardedSource) Commit(ctx context.Context, id string) (*source.Commit, error) {
	return g.Source.(source.History).Commit(ctx, id)
}

func (g *guardedSource) ChangedPaths(ctx context.Context, from, to string) ([]string, error) {
	return g.Source.(source.History).ChangedPaths(ctx, from, to)
}

func (g *guardedSource) ContentID(ctx context.Context, commit, path string) (string, error) {
	return g.Source.(source.History).ContentID(ctx, commit, path)
}

func (g *guardedSource) View(ctx context.Context, rev string) (*source.Snapshot, error) {
	snap, err := g.Source.View(ctx, rev)
	if err != nil {
		return nil, err
	}
	c := *snap
	c.FS = g.guard(snap.FS)
	return &c, nil
}

func (g *guardedSource) Update(ctx context.Context, req *source.UpdateRequest) (*source.UpdateResult, error) {
	c := *req
	if apply := req.Apply; apply != nil {
		c.Apply = func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			b := *base
			b.FS = g.guard(base.FS)
			return apply(ctx, &b, &guardedWriter{guardedFS{w, g}, w})
		}
	}
	return g.Source.Update(ctx, &c)
}

func (g *guardedSource) guard(fsys fs.FS) fs.FS {
	if ids, ok := fsys.(controller.ContentIDFS); ok {
		return guardedIDFS{guardedFS{fsys, g}, ids}
	}
	return guardedFS{fsys, g}
}

type guardedFS struct {
	fsys fs.FS
	g    *guardedSource
}

func (f guardedFS) Open(name string) (fs.File, error) {
	f.g.see("open", name)
	return f.fsys.Open(name)
}

func (f guardedFS) ReadFile(name string) ([]byte, error) {
	f.g.see("read", name)
	return fs.ReadFile(f.fsys, name)
}

func (f guardedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	f.g.see("readdir", name)
	return fs.ReadDir(f.fsys, name)
}

func (f guardedFS) Stat(name string) (fs.FileInfo, error) {
	f.g.see("stat", name)
	return fs.Stat(f.fsys, name)
}

type guardedIDFS struct {
	guardedFS
	ids controller.ContentIDFS
}

func (f guardedIDFS) ContentID(name string) (string, error) {
	f.g.see("contentid", name)
	return f.ids.ContentID(name)
}

type guardedWriter struct {
	guardedFS
	w source.Writer
}

func (w *guardedWriter) WriteFile(name string, data []byte, perm fs.FileMode) error {
	w.g.see("write", name)
	return w.w.WriteFile(name, data, perm)
}

func (w *guardedWriter) Remove(name string) error {
	w.g.see("remove", name)
	return w.w.Remove(name)
}

// FuzzPutBody sends a fuzzed body in a PUT of the REST form, of a type
// stored as JSON or of one stored as YAML. Whatever the body: the handler does not panic; a refused body gets a JSON error with
// a code and a message (never a 5xx but 503) and leaves the repository as
// it was; and a resource the server accepts reads back with a GET as the PUT
// answered it, and sending what the GET returned as the next PUT changes
// nothing (204): decoding and encoding are stable for anything accepted.
func FuzzPutBody(f *testing.F) {
	for _, s := range []string{
		`{"spec": {"n": 3}}`,
		`{"spec": {"text": "line\nbreak\u0085\u2028: - [x] # no comment", "yes": "yes", "on": true, "null": "~"}}`,
		`{"apiVersion": "fuzz.cup.dev/v1", "kind": "Item", "metadata": {"namespace": "default", "name": "x", "labels": {"team": "web", "example.com/tier": "a.b_c-d"}, "annotations": {"note": "<&> é \u2028"}}, "spec": {"enabled": true, "rollout": 1.50, "list": [1, 2e3, -0, null, "s"], "deep": {"a": {"b": {}}}}}`,
		`{}`,
		`{"spec": null}`,
		`{"spec": {"big": 9007199254740993, "tiny": 5e-324, "huge": 1.7976931348623157e308}}`,
		`{"spec": {"s": "\ud800"}}`,
		`{"metadata": {"resourceVersion": "00"}, "spec": {}}`,
		`{"metadata": {"labels": {"-bad": "x"}}}`,
		`{"status": {}}`,
		`{"spec": []}`,
		`{"spec": {"a": 1, "a": 2}}`,
		"{\"spec\": {\"k\": \"\xff\"}}",
		`[]`,
		``,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	repo := newFuzzRepo(f)
	do := func(t *testing.T, method, item, body string) (int, []byte) {
		t.Helper()
		req := httptest.NewRequestWithContext(t.Context(), method, item, strings.NewReader(body))
		rec := httptest.NewRecorder()
		repo.handler.ServeHTTP(rec, req)
		if s := rec.Code; s >= 500 && s != http.StatusServiceUnavailable {
			t.Fatalf("%s %q: a server error: %d %s", method, body, s, rec.Body.Bytes())
		}
		if rec.Code >= 400 {
			var e struct{ Code, Message string }
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code == "" || e.Message == "" {
				t.Fatalf("%s %q: %d %s: want a JSON error with code and message", method, body, rec.Code, rec.Body.Bytes())
			}
		}
		return rec.Code, rec.Body.Bytes()
	}
	f.Fuzz(func(t *testing.T, body string, asYAML bool) {
		defer repo.reset(t)
		item := "/apis/fuzz.cup.dev/v1/namespaces/default/items/x"
		if asYAML {
			item = "/apis/fuzz.cup.dev/v1/namespaces/default/notes/x"
		}
		status, out := do(t, "PUT", item, body)
		if bad := repo.src.takeBad(); len(bad) > 0 {
			t.Fatalf("PUT %q used paths outside the tree: %q", body, bad)
		}
		if status != http.StatusAccepted {
			repo.check(t, fmt.Sprintf("PUT %q: %d %s", body, status, out), status)
			return
		}
		var put struct{ Resource json.RawMessage }
		if err := json.Unmarshal(out, &put); err != nil {
			t.Fatalf("PUT %q answered %s: %v", body, out, err)
		}
		getStatus, got := do(t, "GET", item, "")
		if getStatus != http.StatusOK || !sameJSON(t, got, put.Resource) {
			t.Fatalf("PUT %q answered the resource %s, GET answers %d %s", body, put.Resource, getStatus, got)
		}
		if again, out := do(t, "PUT", item, string(got)); again != http.StatusNoContent {
			t.Fatalf("PUT of what GET returned (%s) = %d %s; want 204, after PUT %q", got, again, out, body)
		}
		repo.check(t, fmt.Sprintf("PUT %q", body), status)
	})
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
