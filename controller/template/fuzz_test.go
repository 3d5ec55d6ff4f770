package template_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/controllertest"
	"github.com/cup-dev/cup/controller/template"
)

// FuzzPaths renders fuzzed namespaces and names (and fuzzed templates)
// through Get, Put, Delete and List on an in-memory tree. Whatever the input:
// no call panics; every path the controller hands the file system is a
// valid relative path; a namespace or name carrying a separator, control
// character, glob character or invalid UTF-8 is refused with ErrInvalid;
// a Put writes exactly one file, at a clean path inside the tree and
// outside .git, the same path and bytes every time, where Get reads it
// back and Delete removes it; and a failed call changes nothing.
func FuzzPaths(f *testing.F) {
	const (
		defaultList = template.DefaultListTemplate
		defaultRes  = template.DefaultResourceTemplate
		bareList    = `{{ .Namespace }}/*`
		bareRes     = `{{ .Namespace }}/{{ .Name }}`
		replaceRes  = `{{ .Namespace }}/{{ replace .Name "-" "/" }}.json`
		shardList   = `items/{{ .Namespace }}/*/*.json`
		shardRes    = `items/{{ .Namespace }}/{{ shard .Name }}/{{ .Name }}.json`
	)
	for _, s := range []struct{ list, res, namespace, name string }{
		{defaultList, defaultRes, "default", "new-checkout"},
		{"", "", "default", "x"},
		{defaultList, defaultRes, "default", "../../etc/passwd"},
		{defaultList, defaultRes, "..", "x"},
		{defaultList, defaultRes, "/", "x"},
		{defaultList, defaultRes, "default", "/etc/passwd"},
		{defaultList, defaultRes, "default", "a\x00b"},
		{defaultList, defaultRes, "default", "a\\b"},
		{defaultList, defaultRes, "default", strings.Repeat("n", 300)},
		{defaultList, defaultRes, "default", "\xff\xfe"},
		{defaultList, defaultRes, "défaut", "名前-ü"},
		{defaultList, defaultRes, ".git", "config"},
		{bareList, bareRes, "default", ".."},
		{bareList, bareRes, "default", "."},
		{bareList, bareRes, "etc", "passwd"},
		{bareList, bareRes, ".git", "config"},
		{bareList, bareRes, "default", ".GIT"},
		{bareList, bareRes, "default", "x*"},
		{`{{ .Namespace }}/*.json`, replaceRes, "default", "..-..-etc-passwd"},
		{`{{ .Namespace }}/*.json`, replaceRes, "default", "a--b"},
		{shardList, shardRes, "default", "sharded"},
		{`{{ .Namespace }}/*.yaml`, `{{ .Namespace }}/{{ .Name }}.yaml`, "default", "yes"},
		{`{{ lower .Namespace }}/*.json`, `{{ lower .Namespace }}/{{ printf "%s.json" .Name }}`, "Default", "printf"},
		{`{{ .Namespace }}/*`, `{{ .Namespace }}/{{ if eq .Name "x" }}..{{ else }}{{ .Name }}{{ end }}`, "default", "x"},
	} {
		f.Add(s.list, s.res, s.namespace, s.name)
	}
	typ := controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags"}
	seed := map[string][]byte{
		"etc/passwd":         []byte("root:x:0:0"),
		".git/config":        []byte("[core]"),
		"default/other.json": fmt.Appendf(nil, flagJSON, "other"),
	}
	f.Fuzz(func(t *testing.T, list, res, namespace, name string) {
		// The templates come from trusted configuration; keep them to a
		// size a configuration file would hold.
		if len(list) > 256 || len(res) > 256 || len(namespace) > 1024 || len(name) > 1024 {
			t.Skip()
		}
		c, err := template.New(template.Spec{ListTemplate: list, ResourceTemplate: res})
		if err != nil {
			return
		}
		ctx := t.Context()
		mem := newRecordingFS(t, seed)

		_, getErr := c.Get(ctx, &controller.GetRequest{FS: mem, Type: typ, Namespace: namespace, Name: name})
		mem.check(t, "Get")
		if !maps.EqualFunc(mem.Files(), seed, bytes.Equal) {
			t.Fatal("Get changed the tree")
		}

		r := newFlag(namespace, name, `{"enabled": true}`)
		before := mem.Files()
		putErr := c.Put(ctx, &controller.PutRequest{FS: mem, Type: typ, Resource: r})
		mem.check(t, "Put")
		after := mem.Files()
		hostile := hostileValue(namespace) || hostileValue(name)
		if hostile {
			for op, err := range map[string]error{"Get": getErr, "Put": putErr} {
				if !errors.Is(err, controller.ErrInvalid) {
					t.Fatalf("%s of namespace %q, name %q = %v; want an error wrapping ErrInvalid", op, namespace, name, err)
				}
			}
		}
		if putErr != nil {
			if !maps.EqualFunc(before, after, bytes.Equal) {
				t.Fatalf("Put failed (%v) but changed the tree: %v", putErr, changed(before, after))
			}
			return
		}
		written := changed(before, after)
		if len(written) != 1 {
			t.Fatalf("Put of %q/%q changed %q; want exactly one file", namespace, name, written)
		}
		p := written[0]
		if err := checkTreePath(p); err != nil {
			t.Fatalf("Put of %q/%q wrote %q: %v", namespace, name, p, err)
		}

		// Deterministic: the same request writes the same bytes to the same path.
		again := newRecordingFS(t, seed)
		if err := c.Put(ctx, &controller.PutRequest{FS: again, Type: typ, Resource: newFlag(namespace, name, `{"enabled": true}`)}); err != nil {
			t.Fatalf("second Put of %q/%q = %v; the first succeeded", namespace, name, err)
		}
		if !maps.EqualFunc(again.Files(), after, bytes.Equal) {
			t.Fatalf("Put of %q/%q is not deterministic: %q vs %q", namespace, name, changed(before, again.Files()), written)
		}

		got, err := c.Get(ctx, &controller.GetRequest{FS: mem, Type: typ, Namespace: namespace, Name: name})
		mem.check(t, "Get after Put")
		if err != nil {
			t.Fatalf("Get of %q/%q after Put to %q = %v", namespace, name, p, err)
		}
		if got.Metadata.Namespace != namespace || got.Metadata.Name != name || !sameSpec(got, r) {
			t.Fatalf("Get of %q/%q after Put = %+v", namespace, name, got)
		}

		if _, err := c.List(ctx, &controller.ListRequest{FS: mem, Type: typ, Namespace: namespace}); err != nil &&
			!errors.Is(err, controller.ErrInvalid) && !errors.Is(err, controller.ErrMalformed) {
			t.Fatalf("List of %q = %v", namespace, err)
		}
		mem.check(t, "List")

		if err := c.Delete(ctx, &controller.DeleteRequest{FS: mem, Type: typ, Namespace: namespace, Name: name}); err != nil {
			t.Fatalf("Delete of %q/%q after Put to %q = %v", namespace, name, p, err)
		}
		mem.check(t, "Delete")
		if removed := changed(after, mem.Files()); !slices.Equal(removed, written) {
			t.Fatalf("Delete of %q/%q changed %q; want only %q", namespace, name, removed, p)
		}
	})
}

// hostileValue reports whether v must never reach a path: the controller
// refuses it whatever the template does with it.
func hostileValue(v string) bool {
	if v == "" || !utf8.ValidString(v) {
		return true
	}
	return strings.ContainsFunc(v, func(r rune) bool {
		return r < 0x20 || r == 0x7f || strings.ContainsRune(`/\*?[]`, r)
	})
}

// checkTreePath says what is wrong with a path written into a tree.
func checkTreePath(p string) error {
	switch {
	case !fs.ValidPath(p) || p == ".":
		return errors.New("not a valid relative path")
	case path.Clean(p) != p:
		return errors.New("not clean")
	case strings.HasPrefix(p, "/"):
		return errors.New("absolute")
	case strings.IndexByte(p, 0) >= 0:
		return errors.New("NUL byte")
	}
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "..":
			return errors.New(`".." element`)
		case strings.EqualFold(seg, ".git"):
			return errors.New("inside .git")
		case len(seg) > 255:
			return errors.New("element longer than 255 bytes")
		}
	}
	return nil
}

func sameSpec(a, b *controller.Resource) bool {
	return string(bytes.Join(bytes.Fields(a.Spec), nil)) == string(bytes.Join(bytes.Fields(b.Spec), nil))
}

// changed returns the paths whose content differs between two trees, sorted.
func changed(before, after map[string][]byte) []string {
	var out []string
	for p, b := range before {
		if a, ok := after[p]; !ok || !bytes.Equal(a, b) {
			out = append(out, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// recordingFS is a MemFS that remembers every path it is asked about that is
// not a valid relative path, whether or not the call would fail anyway.
type recordingFS struct {
	*controllertest.MemFS
	bad []string
}

func newRecordingFS(t *testing.T, files map[string][]byte) *recordingFS {
	t.Helper()
	m, err := controllertest.NewMemFS(files)
	if err != nil {
		t.Fatal(err)
	}
	return &recordingFS{MemFS: m}
}

func (r *recordingFS) see(op, name string, file bool) {
	if !fs.ValidPath(name) || strings.IndexByte(name, 0) >= 0 || (file && name == ".") {
		r.bad = append(r.bad, fmt.Sprintf("%s %q", op, name))
	}
}

func (r *recordingFS) check(t *testing.T, call string) {
	t.Helper()
	if len(r.bad) > 0 {
		t.Fatalf("%s used paths outside the tree: %q", call, r.bad)
	}
}

func (r *recordingFS) Open(name string) (fs.File, error) {
	r.see("open", name, false)
	return r.MemFS.Open(name)
}

func (r *recordingFS) ReadFile(name string) ([]byte, error) {
	r.see("read", name, true)
	return r.MemFS.ReadFile(name)
}

func (r *recordingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	r.see("readdir", name, false)
	return r.MemFS.ReadDir(name)
}

func (r *recordingFS) Stat(name string) (fs.FileInfo, error) {
	r.see("stat", name, false)
	return r.MemFS.Stat(name)
}

func (r *recordingFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	r.see("write", name, true)
	if err := checkTreePath(name); err != nil {
		r.bad = append(r.bad, fmt.Sprintf("write %q: %v", name, err))
	}
	return r.MemFS.WriteFile(name, data, perm)
}

func (r *recordingFS) Remove(name string) error {
	r.see("remove", name, true)
	if err := checkTreePath(name); err != nil {
		r.bad = append(r.bad, fmt.Sprintf("remove %q: %v", name, err))
	}
	return r.MemFS.Remove(name)
}

// FuzzFiles reads a fuzzed file as a resource, in JSON or YAML. Whatever the
// bytes: Get does not panic, and refuses what it cannot read with an error
// wrapping ErrMalformed; List agrees with Get; and a resource Get accepts
// can be put back as it was read: Put succeeds and keeps the file's bytes,
// and Get then reads the same resource again.
func FuzzFiles(f *testing.F) {
	for _, s := range []struct {
		data   string
		asYAML bool
	}{
		{fmt.Sprintf(flagJSON, "x"), false},
		{`{"apiVersion": "flags.cup.dev/v1alpha1", "kind": "Flag", "metadata": {"namespace": "default", "name": "x", "labels": {"a": "b"}, "resourceVersion": "1"}, "spec": {"n": 1.0, "big": 123456789012345678901234567890, "s": "\u00e9"}}`, false},
		{`{"apiVersion": "flags.cup.dev/v1alpha1", "kind": "Flag", "metadata": {"name": "y"}}`, false},
		{`{"apiVersion": "flags.cup.dev/v1alpha1", "kind": "Flag", "metadata": {"namespace": "other", "name": "x"}}`, false},
		{"apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata:\n  name: x\n  labels: {on: yes}\nspec:\n  enabled: yes\n  n: 0x1F\n  when: 2024-01-01\n", true},
		{"apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: x}\nspec: {a: &a [1, 2], b: *a, big: 9007199254740993}\n", true},
		{"---\napiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: x}\n---\nkind: Other\n", true},
		{"apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: x}\n...\n", true},
		{"a: [", true},
		{"", false},
	} {
		f.Add([]byte(s.data), s.asYAML)
	}
	typ := controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags"}
	jsonC := newController(f, template.Spec{ListTemplate: `{{ .Namespace }}/*.json`, ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.json`})
	yamlC := newController(f, template.Spec{ListTemplate: `{{ .Namespace }}/*.yaml`, ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.yaml`})
	f.Fuzz(func(t *testing.T, data []byte, asYAML bool) {
		c, p := jsonC, "default/x.json"
		if asYAML {
			c, p = yamlC, "default/x.yaml"
		}
		ctx := t.Context()
		mem := newRecordingFS(t, map[string][]byte{p: data})
		got, err := c.Get(ctx, &controller.GetRequest{FS: mem, Type: typ, Namespace: "default", Name: "x"})
		list, listErr := c.List(ctx, &controller.ListRequest{FS: mem, Type: typ, Namespace: "default"})
		mem.check(t, "Get and List")
		if err != nil {
			if !errors.Is(err, controller.ErrMalformed) {
				t.Fatalf("Get of %q = %v; want an error wrapping ErrMalformed", data, err)
			}
			return
		}
		if listErr != nil || len(list) != 1 || !equalMeta(list[0], got) || !sameSpec(list[0], got) {
			t.Fatalf("Get of %q = %+v, but List = %+v, %v", data, got, list, listErr)
		}
		if err := c.Put(ctx, &controller.PutRequest{FS: mem, Type: typ, Resource: got.Clone()}); err != nil {
			t.Fatalf("Put of what Get read from %q (%+v) = %v", data, got, err)
		}
		mem.check(t, "Put")
		if after := mem.Files(); len(after) != 1 || !bytes.Equal(after[p], data) {
			t.Fatalf("Put of what Get read changed %q to %q", data, after)
		}
		again, err := c.Get(ctx, &controller.GetRequest{FS: mem, Type: typ, Namespace: "default", Name: "x"})
		if err != nil || !equalMeta(again, got) || !sameSpec(again, got) {
			t.Fatalf("Get after Put = %+v, %v; want %+v", again, err, got)
		}
	})
}
