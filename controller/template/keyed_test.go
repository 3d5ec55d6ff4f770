package template_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"strings"
	"testing"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/template"
)

// idFS gives a MemFS content ids, as a Git snapshot does.
type idFS struct{ fs.FS }

func (f idFS) ContentID(name string) (string, error) {
	b, err := fs.ReadFile(f.FS, name)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return string(sum[:]), nil
}

// decodeAll decodes what ListKeyed found, as a caller would.
func decodeAll(t *testing.T, found []controller.Listed) []*controller.Resource {
	t.Helper()
	var out []*controller.Resource
	for _, f := range found {
		r, err := f.Decode()
		if err != nil {
			t.Fatalf("Decode(%s): %v", f.Origin, err)
		}
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

func TestListKeyedAgreesWithList(t *testing.T) {
	t.Parallel()
	// A list pattern that matches every kind's files, as kinds may share one.
	c := newController(t, template.Spec{ListTemplate: `{{ .Namespace }}/*.json`}, template.WithCacheSize(0))
	mem := newMemFS(t, nil)
	put(t, c, mem, newFlag("default", "b", `{"on": true}`))
	put(t, c, mem, newFlag("default", "a", `{"on": false}`))
	put(t, c, mem, &controller.Resource{APIVersion: segmentType.APIVersion(), Kind: segmentType.Kind,
		Metadata: controller.Metadata{Namespace: "default", Name: "s"}})
	put(t, c, mem, newFlag("staging", "a", `{"on": true}`))
	ctx := t.Context()

	for _, tc := range []struct {
		name     string
		fsys     fs.FS
		wantKeys bool
	}{{"without content ids", mem, false}, {"with content ids", idFS{mem}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			req := &controller.ListRequest{FS: tc.fsys, Type: flagType, Namespace: "default"}
			found, err := c.ListKeyed(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != 3 { // two flags and the segment: ListKeyed does not read files
				t.Fatalf("ListKeyed found %d files, want 3", len(found))
			}
			for _, f := range found {
				if (f.Key != "") != tc.wantKeys || !strings.HasPrefix(f.Origin, "default/") {
					t.Errorf("found %+v", f)
				}
			}
			got := decodeAll(t, found)
			want, err := c.List(ctx, &controller.ListRequest{FS: mem, Type: flagType, Namespace: "default"})
			if err != nil {
				t.Fatal(err)
			}
			// List sorts by name; ListKeyed leaves that to the caller.
			if len(got) == 2 && got[0].Metadata.Name > got[1].Metadata.Name {
				got[0], got[1] = got[1], got[0]
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded %v, List gave %v", got, want)
			}
		})
	}

	// Equal content has equal keys; the key does not depend on the tree.
	a, _ := c.ListKeyed(ctx, &controller.ListRequest{FS: idFS{mem}, Type: flagType, Namespace: "default"})
	mem2 := newMemFS(t, nil)
	put(t, c, mem2, newFlag("default", "a", `{"on": false}`))
	b, _ := c.ListKeyed(ctx, &controller.ListRequest{FS: idFS{mem2}, Type: flagType, Namespace: "default"})
	if len(b) != 1 || a[0].Key != b[0].Key || a[0].Origin != b[0].Origin {
		t.Fatalf("the same file in two trees: %+v and %+v", a[0], b)
	}
}

// entryIDFS is idFS whose directory entries tell their files' ids, but
// for names holding "link", as a Git tree does for symbolic links; it
// counts the calls of ContentID.
type entryIDFS struct {
	idFS
	calls *int
}

func (f entryIDFS) ContentID(name string) (string, error) {
	*f.calls++
	return f.idFS.ContentID(name)
}

func (f entryIDFS) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(f.FS, name)
	for i, e := range entries {
		if !e.IsDir() {
			id, err := f.idFS.ContentID(path.Join(name, e.Name()))
			if err != nil {
				return nil, err
			}
			entries[i] = idEntry{e, id, !strings.Contains(e.Name(), "link")}
		}
	}
	return entries, err
}

type idEntry struct {
	fs.DirEntry
	id string
	ok bool
}

func (e idEntry) ContentID() (string, bool) {
	if !e.ok {
		return "", false
	}
	return e.id, true
}

// linkedFlags is a controller, and a request to list three flags of a
// MemFS through idFS; entryIDFS takes the one named link for a symbolic
// link.
func linkedFlags(t *testing.T) (*template.Controller, fs.FS, *controller.ListRequest) {
	c := newController(t, template.Spec{ListTemplate: `{{ .Namespace }}/*.json`}, template.WithCacheSize(0))
	mem := newMemFS(t, nil)
	put(t, c, mem, newFlag("default", "a", `{"on": false}`))
	put(t, c, mem, newFlag("default", "b", `{"on": true}`))
	put(t, c, mem, newFlag("default", "link", `{"on": true}`))
	return c, mem, &controller.ListRequest{FS: idFS{mem}, Type: flagType, Namespace: "default"}
}

// TestListKeyedTakesIDsFromDirectoryEntries: keys made from the ids the
// directory's entries give are the keys ContentID gives, and ContentID is
// asked only for the entries that do not tell (symbolic links).
func TestListKeyedTakesIDsFromDirectoryEntries(t *testing.T) {
	t.Parallel()
	c, mem, req := linkedFlags(t)
	want, err := c.ListKeyed(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	req.FS = entryIDFS{idFS{mem}, &calls}
	got, err := c.ListKeyed(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(want) != 3 {
		t.Fatalf("found %d and %d files, want 3", len(got), len(want))
	}
	for i := range got {
		if got[i].Key != want[i].Key || got[i].Origin != want[i].Origin {
			t.Errorf("from entries %q %q, from ContentID %q %q", got[i].Origin, got[i].Key, want[i].Origin, want[i].Key)
		}
	}
	if calls != 1 {
		t.Errorf("ContentID was called %d times, want once (the link)", calls)
	}
}

// contentFS is entryIDFS that reads files by content id too
// (controller.ContentReader), counting those reads.
type contentFS struct {
	entryIDFS
	reads *int
}

func (f contentFS) ReadContent(id string) ([]byte, error) {
	*f.reads++
	var found []byte
	err := fs.WalkDir(f.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if got, err := f.idFS.ContentID(p); err == nil && got == id {
			found, err = fs.ReadFile(f.FS, p)
			if err != nil {
				return err
			}
			return fs.SkipAll
		}
		return nil
	})
	if err == nil && found == nil {
		err = fs.ErrNotExist
	}
	return found, err
}

// TestListKeyedReadsByContentID: on a file system that reads by content
// id, the files ListKeyed found (the link too, whose id ContentID gave)
// decode from a read by their id to what they decode to read by path.
func TestListKeyedReadsByContentID(t *testing.T) {
	t.Parallel()
	c, mem, req := linkedFlags(t)
	found, err := c.ListKeyed(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := decodeAll(t, found)
	calls, reads := 0, 0
	req.FS = contentFS{entryIDFS{idFS{mem}, &calls}, &reads}
	if found, err = c.ListKeyed(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := decodeAll(t, found); !reflect.DeepEqual(got, want) {
		t.Errorf("read by content id: %+v, want %+v", got, want)
	}
	if reads != 3 {
		t.Errorf("ReadContent was called %d times, want 3", reads)
	}
}

func TestListKeyedDecodeErrors(t *testing.T) {
	t.Parallel()
	c := newController(t, template.Spec{}, template.WithCacheSize(0))
	mem := newMemFS(t, map[string]string{
		"default/flags.cup.dev-v1alpha1-Flag-broken.json":    `{"apiVersion": `,
		"default/flags.cup.dev-v1alpha1-Flag-elsewhere.json": `{"apiVersion": "flags.cup.dev/v1alpha1", "kind": "Flag", "metadata": {"namespace": "staging", "name": "x"}}`,
	})
	found, err := c.ListKeyed(t.Context(), &controller.ListRequest{FS: mem, Type: flagType, Namespace: "default"})
	if err != nil || len(found) != 2 {
		t.Fatalf("ListKeyed = %d, %v", len(found), err)
	}
	for _, f := range found {
		_, err := f.Decode()
		if !errors.Is(err, controller.ErrMalformed) || !strings.Contains(err.Error(), f.Origin) {
			t.Errorf("Decode(%s) = %v, want ErrMalformed naming the file", f.Origin, err)
		}
	}
	if _, err := c.ListKeyed(t.Context(), &controller.ListRequest{FS: mem, Type: flagType, Namespace: "../x"}); !errors.Is(err, controller.ErrInvalid) {
		t.Errorf("ListKeyed(../x) = %v, want ErrInvalid", err)
	}
}

func TestShardedLayout(t *testing.T) {
	t.Parallel()
	c := newController(t, template.Spec{
		ListTemplate:     `flags/{{ .Namespace }}/*/*.json`,
		ResourceTemplate: `flags/{{ .Namespace }}/{{ shard .Name }}/{{ .Name }}.json`,
	})
	mem := newMemFS(t, nil)
	names := []string{"a", "new-checkout", "dark-mode", "x.y"}
	for _, n := range names {
		put(t, c, mem, newFlag("default", n, `{"on": true}`))
	}
	dirs := map[string]bool{}
	for p := range mem.Files() {
		parts := strings.Split(p, "/")
		if len(parts) != 4 || parts[0] != "flags" || parts[1] != "default" || len(parts[2]) != 2 || strings.Trim(parts[2], "0123456789abcdef") != "" {
			t.Fatalf("file %s is not flags/default/<2 hex digits>/<name>.json", p)
		}
		dirs[parts[2]] = true
	}
	if len(dirs) < 2 {
		t.Errorf("4 names landed in %d shard", len(dirs))
	}
	got, err := c.List(t.Context(), &controller.ListRequest{FS: mem, Type: flagType, Namespace: "default"})
	if err != nil || len(got) != len(names) {
		t.Fatalf("List = %d resources, %v", len(got), err)
	}
	// The bucket of a name never changes: it is where the file was written.
	again := newController(t, template.Spec{
		ListTemplate:     `flags/{{ .Namespace }}/*/*.json`,
		ResourceTemplate: `flags/{{ .Namespace }}/{{ shard .Name }}/{{ .Name }}.json`,
	})
	if _, err := again.Get(t.Context(), &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "new-checkout"}); err != nil {
		t.Fatalf("a second controller cannot find a file the first wrote: %v", err)
	}
}

// TestListKeyedKeyHoldsPath checks that equal content at two paths gets two
// keys: the path decides which resource a file may hold, so a copy of a
// file under another name does not decode to what the original does.
func TestListKeyedKeyHoldsPath(t *testing.T) {
	t.Parallel()
	c := newController(t, template.Spec{ListTemplate: `{{ .Namespace }}/*.json`, ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.json`})
	a := fmt.Sprintf(flagJSON, "a")
	mem := newMemFS(t, map[string]string{"default/a.json": a, "default/b.json": a})
	found, err := c.ListKeyed(t.Context(), &controller.ListRequest{FS: idFS{mem}, Type: flagType, Namespace: "default"})
	if err != nil || len(found) != 2 {
		t.Fatalf("ListKeyed = %v, %v", found, err)
	}
	if found[0].Key == found[1].Key {
		t.Errorf("a.json and b.json share the key %q", found[0].Key)
	}
	if _, err := found[1].Decode(); !errors.Is(err, controller.ErrMalformed) {
		t.Errorf("Decode of b.json holding a = %v, want ErrMalformed", err)
	}
}
