package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/controllertest"
	"github.com/cup-dev/cup/controller/wasm"
)

// sentinels are the contract's errors, for checking that an error wraps
// exactly the expected one (or none).
var sentinels = []error{controller.ErrNotFound, controller.ErrInvalid, controller.ErrMalformed, controller.ErrFailed, controller.ErrLimit, context.DeadlineExceeded, context.Canceled}

func checkSentinel(t *testing.T, err, want error) {
	t.Helper()
	for _, s := range sentinels {
		if got := errors.Is(err, s); got != (s == want) {
			t.Errorf("errors.Is(%v, %v) = %t, want %t", err, s, got, !got)
		}
	}
}

// checkNoTrace fails t if err carries a stack trace of the Go runtime or
// of wazero.
func checkNoTrace(t testing.TB, err error) {
	t.Helper()
	for _, trace := range []string{"goroutine ", "runtime stack:", "wasm stack trace:", "\n\t", ".go:"} {
		if strings.Contains(err.Error(), trace) {
			t.Errorf("error %q carries a stack trace (%q)", err, trace)
		}
	}
}

func TestGetFaults(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	// A small output bound, so that flood passes it well within the timeout
	// on a loaded machine.
	c := newController(t, nil, "faults", &wasm.Spec{Path: "faults.wasm", Timeout: timeout, MaxOutputBytes: 1 << 20})
	tree := newMemFS(t, nil).Snapshot()
	tests := []struct {
		name string
		want error    // the sentinel the error wraps, nil for none
		says []string // parts of the message
	}{
		{"loop", context.DeadlineExceeded, []string{`module "faults": get flags.cup.dev/v1alpha1 Flag default/loop`, "stopped after the 2s timeout"}},
		{"alloc", controller.ErrLimit, []string{"ran out of its 16 MiB of memory; its controller's memoryLimitPages (now 256 pages of 64 KiB) raises it", "out of memory"}},
		{"panic", controller.ErrFailed, []string{"exit code 2", "panic: boom: the module panicked"}},
		{"garbage", controller.ErrFailed, []string{`module "faults" wrote invalid JSON for get default/garbage`}},
		{"missing", controller.ErrNotFound, []string{"no flag named missing here"}},
		{"fail", controller.ErrFailed, []string{"exit code 1: something broke\nin two lines"}},
		{"exit3", controller.ErrFailed, []string{"exit code 3"}},
		{"silent", controller.ErrFailed, []string{`module "faults": get flags.cup.dev/v1alpha1 Flag default/silent`, "exited 0 and wrote nothing on stdout"}},
		{"origmissing", controller.ErrNotFound, []string{"flag default/origmissing: not found"}},
		{"jsonmessage", controller.ErrFailed, []string{"exit code 1: the flag store is locked by another writer"}},
		{"invalid", controller.ErrInvalid, []string{"invalid request: spec.rollout must be between 0 and 100"}},
		{"flood", controller.ErrLimit, []string{"more than 1048576 bytes to stdout (maxOutputBytes)"}},
		{"wrongkind", controller.ErrFailed, []string{`the module wrote a flags.cup.dev/v1alpha1 Other named "wrongkind"`}},
		{"wrongname", controller.ErrFailed, []string{`the module wrote the resource named "someone-else"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			r, err := c.Get(t.Context(), &controller.GetRequest{FS: tree, Type: flagType, Namespace: "default", Name: tt.name})
			if err == nil {
				t.Fatalf("Get = %+v, want an error", r)
			}
			took := time.Since(start)
			t.Logf("after %s: %v", took.Round(time.Millisecond), err)
			if took > timeout+5*time.Second {
				t.Errorf("the call took %s, with a timeout of %s", took, timeout)
			}
			checkSentinel(t, err, tt.want)
			checkNoTrace(t, err)
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			// The controller still works.
			if _, err := c.Get(t.Context(), &controller.GetRequest{FS: tree, Type: flagType, Namespace: "default", Name: "ok"}); err != nil {
				t.Errorf("Get after the fault: %v", err)
			}
		})
	}
}

func TestTimeoutStopsTheModule(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "faults", &wasm.Spec{Path: "faults.wasm", Timeout: time.Hour})
	tree := newMemFS(t, nil).Snapshot()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Get(ctx, &controller.GetRequest{FS: tree, Type: flagType, Namespace: "default", Name: "loop"})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the caller's deadline of 300ms stopped the module after %s", took)
	}
	checkSentinel(t, err, context.DeadlineExceeded)
	if !strings.Contains(fmt.Sprint(err), "stopped by the caller") {
		t.Errorf("error %q does not say the caller stopped it", err)
	}

	ctx, cancel = context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = c.Get(ctx, &controller.GetRequest{FS: tree, Type: flagType, Namespace: "default", Name: "loop"})
	checkSentinel(t, err, context.Canceled)

	_, err = c.Get(ctx, &controller.GetRequest{FS: tree, Type: flagType, Namespace: "default", Name: "ok"})
	checkSentinel(t, err, context.Canceled)
}

func TestStderrIsBounded(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "faults", nil)
	_, err := c.Get(t.Context(), &controller.GetRequest{FS: newMemFS(t, nil), Type: flagType, Namespace: "default", Name: "chatty"})
	if err == nil {
		t.Fatal("Get succeeded")
	}
	msg := err.Error()
	if len(msg) > 1300 || !strings.Contains(msg, "é… (") || !strings.Contains(msg, "more bytes)") {
		t.Errorf("error of %d bytes = %q, want stderr cut to about 1 KiB, at a character boundary", len(msg), msg)
	}
}

// trapModule is a WASI command whose _start executes unreachable.
var trapModule = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: () -> ()
	0x03, 0x02, 0x01, 0x00, // functions: one of type 0
	0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00, // export "_start"
	0x0a, 0x05, 0x01, 0x03, 0x00, 0x00, 0x0b, // code: unreachable
}

func TestTrap(t *testing.T) {
	t.Parallel()
	c, err := wasm.New(t.Context(), newRuntime(t), "trap", trapModule, &wasm.Spec{Path: "trap.wasm"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(t.Context(), &controller.GetRequest{FS: newMemFS(t, nil), Type: flagType, Namespace: "default", Name: "x"})
	checkSentinel(t, err, controller.ErrFailed)
	if !strings.Contains(fmt.Sprint(err), "wasm error: unreachable") {
		t.Errorf("Get = %v, want the trap", err)
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	rt := shared
	// noStart is trapModule with its export renamed.
	noStart := slices.Clone(trapModule)
	copy(noStart[22:28], "_stop_")
	// importsEnv imports env.f.
	importsEnv := []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
		0x02, 0x09, 0x01, 0x03, 'e', 'n', 'v', 0x01, 'f', 0x00, 0x00, // import env.f
		0x03, 0x02, 0x01, 0x00,
		0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x01,
		0x0a, 0x05, 0x01, 0x03, 0x00, 0x00, 0x0b,
	}
	for _, tc := range []struct {
		name, module string
		spec         *wasm.Spec
		says         string
	}{
		{"not wasm", "text", &wasm.Spec{Path: "x.wasm"}, `wasm controller "not wasm": compiling module x.wasm`},
		{"no start", string(noStart), &wasm.Spec{Path: "x.wasm"}, "exports no _start function"},
		{"imports", string(importsEnv), &wasm.Spec{Path: "x.wasm"}, "imports env.f"},
		{"too little memory", string(modules["empty"]), &wasm.Spec{Path: "x.wasm", MemoryLimitPages: 2}, "pages of memory to start, more than memoryLimitPages 2"},
		{"limit too high", string(modules["empty"]), &wasm.Spec{Path: "x.wasm", MemoryLimitPages: 65536}, "memoryLimitPages 65536 is more than 65535"},
		{"negative timeout", string(modules["empty"]), &wasm.Spec{Path: "x.wasm", Timeout: -1}, "timeout -1ns is negative"},
		{"no spec", string(modules["empty"]), nil, "no spec"},
		{"", string(modules["empty"]), &wasm.Spec{Path: "x.wasm"}, "name must be non-empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := wasm.New(t.Context(), rt, tc.name, []byte(tc.module), tc.spec)
			if err == nil {
				c.Close(t.Context())
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.name)) {
				t.Errorf("New = %v, want an error naming the controller and saying %q", err, tc.says)
			}
		})
	}
	if _, err := wasm.New(t.Context(), nil, "x", modules["empty"], &wasm.Spec{}); err == nil {
		t.Error("New without a runtime succeeded")
	}
	closed, err := wasm.NewRuntime()
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := wasm.New(t.Context(), closed, "x", modules["empty"], &wasm.Spec{}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("New on a closed runtime = %v, want an error saying it is closed", err)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "faults", nil)
	tree := newMemFS(t, nil).Snapshot()
	tests := []struct {
		namespace string
		sel       controller.Selector
		want      []string // names, or the error's sentinel and message
		err       error
	}{
		{namespace: "array", want: []string{"a", "b"}},
		{namespace: "array", sel: mustParse(t, "env=prod"), want: []string{"b"}},
		{namespace: "stream", want: []string{"a", "b", "c"}},
		{namespace: "empty", want: []string{}},
		{namespace: "missing", want: []string{}},
		{namespace: "invalid", err: controller.ErrInvalid, want: []string{"no such namespace pattern"}},
		{namespace: "dup", err: controller.ErrFailed, want: []string{`the module wrote "same" twice`}},
		{namespace: "foreign", err: controller.ErrFailed, want: []string{`the module wrote "x" of namespace "elsewhere"`}},
		{namespace: "badspec", err: controller.ErrFailed, want: []string{"wrote invalid JSON for list badspec: controller failed: item 0: decoding resource: spec must be a JSON object"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v", tt.namespace, tt.sel), func(t *testing.T) {
			t.Parallel()
			list, err := c.List(t.Context(), &controller.ListRequest{FS: tree, Type: flagType, Namespace: tt.namespace, Selector: tt.sel})
			if tt.err != nil {
				checkSentinel(t, err, tt.err)
				if err == nil || !strings.Contains(err.Error(), tt.want[0]) {
					t.Errorf("List = %v, want an error saying %q", err, tt.want[0])
				}
				return
			}
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if got := names(list); !slices.Equal(got, tt.want) {
				t.Errorf("List = %v, want %v", got, tt.want)
			}
			for _, r := range list {
				if r.Metadata.Namespace != tt.namespace {
					t.Errorf("%s has namespace %q, want %q", r.Metadata.Name, r.Metadata.Namespace, tt.namespace)
				}
			}
		})
	}
}

func names(rs []*controller.Resource) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Metadata.Name)
	}
	return out
}

type parsed struct{ labels.Selector }

func (p parsed) Matches(l map[string]string) bool { return p.Selector.Matches(labels.Set(l)) }

func mustParse(t testing.TB, s string) controller.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return parsed{sel}
}

type selectorFunc func(map[string]string) bool

func (f selectorFunc) Matches(l map[string]string) bool { return f(l) }

func TestListSelectorArguments(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "faults", nil)
	tree := newMemFS(t, nil).Snapshot()
	for _, tc := range []struct {
		sel  controller.Selector
		want []string
	}{
		{nil, nil},
		{mustParse(t, ""), nil},
		{mustParse(t, "team=x,env==prod"), []string{"env=prod", "team=x"}},
		{mustParse(t, "env in (prod)"), []string{"env=prod"}},
		{mustParse(t, "!team"), nil},                                      // not an equality: no arguments
		{selectorFunc(func(map[string]string) bool { return true }), nil}, // cannot tell its terms
	} {
		t.Run(fmt.Sprint(tc.sel), func(t *testing.T) {
			t.Parallel()
			list, err := c.List(t.Context(), &controller.ListRequest{FS: tree, Type: flagType, Namespace: "args", Selector: tc.sel})
			if err != nil || len(list) != 1 {
				t.Fatalf("List = %v, %v; want the resource echoing the arguments", names(list), err)
			}
			var spec struct{ Args []string }
			if err := json.Unmarshal(list[0].Spec, &spec); err != nil {
				t.Fatal(err)
			}
			want := append([]string{"list", "Flag", "args"}, tc.want...)
			if !slices.Equal(spec.Args, want) {
				t.Errorf("arguments = %q, want %q", spec.Args, want)
			}
		})
	}
}

func TestSandbox(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "faults", nil)
	tree := newMemFS(t, nil).Snapshot()
	get := func() map[string]any {
		t.Helper()
		r, err := c.Get(t.Context(), &controller.GetRequest{FS: tree, Type: flagType, Namespace: "default", Name: "env"})
		if err != nil {
			t.Fatal(err)
		}
		var spec map[string]any
		if err := json.Unmarshal(r.Spec, &spec); err != nil {
			t.Fatal(err)
		}
		return spec
	}
	first := get()
	t.Logf("the module saw %v", first)
	if second := get(); fmt.Sprint(first) != fmt.Sprint(second) {
		t.Errorf("two calls saw different worlds:\n%v\n%v", first, second)
	}
	wantEnv := []any{
		"CUP_API_VERSION=flags.cup.dev/v1alpha1", "CUP_GROUP=flags.cup.dev", "CUP_KIND=Flag", "CUP_PLURAL=flags", "CUP_VERSION=v1alpha1",
	}
	env, _ := first["env"].([]any)
	slices.SortFunc(env, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	if !slices.Equal(env, wantEnv) {
		t.Errorf("environment = %q, want only %q", env, wantEnv)
	}
	if args := fmt.Sprint(first["args"]); args != "[faults get Flag default env]" {
		t.Errorf("args = %s, want [faults get Flag default env]", args)
	}
	if first["wd"] != "/" {
		t.Errorf("working directory = %v, want /", first["wd"])
	}
	if d, err := time.ParseDuration(fmt.Sprint(first["slept"])); err != nil || d > time.Minute+time.Hour {
		t.Errorf("slept %v, want about an hour of fake time", first["slept"])
	}
}

func TestEscapeOnGet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, data := range map[string]string{"canary": "outside", "tree/present.json": "inside"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshotDir(t, dir)
	c := newController(t, nil, "faults", nil)
	_, err := c.Get(t.Context(), &controller.GetRequest{FS: os.DirFS(filepath.Join(dir, "tree")), Type: flagType, Namespace: "default", Name: "escape"})
	if err == nil {
		t.Fatal("Get succeeded")
	}
	t.Log(err)
	msg := err.Error()
	if strings.Contains(msg, "ESCAPED") {
		t.Errorf("the module escaped: %v", err)
	}
	for _, want := range []string{
		"openat ../canary: Operation not permitted",
		"create ../../canary: Operation not permitted",
		"openat /canary: Operation not permitted",
		"create a/../../canary: Operation not permitted",
		"mkdir .git: mkdir /.git: Read-only file system",
		"write /present.json: open /present.json: Read-only file system",
		"write /new.json: open /new.json: Read-only file system",
		"remove /present.json: remove /present.json: Read-only file system",
		"mkdir /newdir: mkdir /newdir: Read-only file system",
		"rename /present.json: rename /present.json /renamed.json: Read-only file system",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q", want)
		}
	}
	if after := snapshotDir(t, dir); !maps.Equal(before, after) {
		t.Errorf("files changed:\nbefore %q\n after %q", before, after)
	}
}

func TestEscapeOnPut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "canary"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "tree"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := newController(t, nil, "faults", nil)
	err := c.Put(t.Context(), &controller.PutRequest{FS: openDirFS(t, filepath.Join(dir, "tree")), Type: flagType, Resource: newFlag("default", "escape", "")})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"canary": "outside", "tree/inside.txt": "inside"}
	if got := snapshotDir(t, dir); !maps.Equal(got, want) {
		t.Errorf("files = %q, want %q", got, want)
	}
}

func TestFailedPutWritesNothing(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "faults", nil)
	fsys := &recorder{MemFS: newMemFS(t, map[string]string{"keep.txt": "keep"})}
	before := fsys.Files()
	err := c.Put(t.Context(), &controller.PutRequest{FS: fsys, Type: flagType, Resource: newFlag("default", "failput", "")})
	checkSentinel(t, err, controller.ErrFailed)
	if !strings.Contains(fmt.Sprint(err), "exit code 1: gave up after writing") {
		t.Errorf("Put = %v, want the module's failure", err)
	}
	if ch := fsys.Changes(); len(ch) > 0 {
		t.Errorf("a failed Put changed the tree: %q", ch)
	}
	if !maps.EqualFunc(before, fsys.Files(), slices.Equal) {
		t.Errorf("a failed Put changed the tree")
	}
	// Nor does a Put stopped by a limit, or a Delete that fails.
	err = c.Put(t.Context(), &controller.PutRequest{FS: fsys, Type: flagType, Resource: newFlag("default", "alloc", "")})
	checkSentinel(t, err, controller.ErrLimit)
	err = c.Delete(t.Context(), &controller.DeleteRequest{FS: fsys, Type: flagType, Namespace: "default", Name: "failput"})
	checkSentinel(t, err, controller.ErrFailed)
	err = c.Delete(t.Context(), &controller.DeleteRequest{FS: fsys, Type: flagType, Namespace: "default", Name: "missing"})
	checkSentinel(t, err, controller.ErrNotFound)
	if ch := fsys.Changes(); len(ch) > 0 {
		t.Errorf("failed calls changed the tree: %q", ch)
	}
}

func TestOverlay(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "faults", nil)
	fsys := &recorder{MemFS: newMemFS(t, map[string]string{
		"keep.txt":     "keep",
		"trunc.txt":    "0123456789",
		"gone.txt":     "bye",
		"old/name.txt": "moved",
		"log.txt":      "a\n",
		"dir/only.txt": "x",
		"swap":         "a file, then a directory",
	})}
	if err := c.Put(t.Context(), &controller.PutRequest{FS: fsys, Type: flagType, Resource: newFlag("default", "fsops", "")}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a/b/c.txt":      "c",
		"dir/only.txt":   "x",
		"keep.txt":       "keep",
		"log.txt":        "a\nb\n",
		"new/name.txt":   "moved",
		"renamed/sub/x":  "x",
		"swap/inner.txt": "inner",
		"trunc.txt":      "012",
	}
	got := map[string]string{}
	for k, v := range fsys.Files() {
		got[k] = string(v)
	}
	if !maps.Equal(got, want) {
		t.Errorf("tree = %q, want %q", got, want)
	}
	wantChanges := []string{
		"remove gone.txt", "remove old/name.txt", "remove swap",
		"write a/b/c.txt", "write log.txt", "write new/name.txt", "write renamed/sub/x", "write swap/inner.txt", "write trunc.txt",
	}
	if ch := fsys.Changes(); !slices.Equal(ch, wantChanges) {
		t.Errorf("changes = %q, want %q (nothing for what ends as it was)", ch, wantChanges)
	}
}

// TestDotGit: a module cannot make a file or directory named .git in any
// case, even inside a directory of the tree: the overlay refuses it where the
// module makes it, as the WriteFS would when the call ends.
func TestDotGit(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "faults", nil)
	mem, err := controllertest.NewMemFS(map[string][]byte{".GIT/keep": []byte("kept")})
	if err != nil {
		t.Fatal(err)
	}
	fsys := &recorder{MemFS: mem}
	if err := c.Put(t.Context(), &controller.PutRequest{FS: fsys, Type: flagType, Resource: newFlag("default", "dotgit", "")}); err != nil {
		t.Fatal(err)
	}
	if ch, want := fsys.Changes(), []string{"write ok.txt"}; !slices.Equal(ch, want) {
		t.Errorf("changes = %q, want %q", ch, want)
	}
}

func TestConcurrentCallsAreIsolated(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "conform", nil)
	const n = 32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("flag-%02d", i)
			spec := fmt.Sprintf(`{"i": %d}`, i)
			if i%2 == 0 {
				want := newFlag("default", name, spec)
				data, err := want.MarshalFile()
				if err != nil {
					t.Error(err)
					return
				}
				tree := newMemFS(t, map[string]string{flagFile("default", name): string(data)}).Snapshot()
				got, err := c.Get(t.Context(), &controller.GetRequest{FS: tree, Type: flagType, Namespace: "default", Name: name})
				if err != nil || got.Metadata.Name != name || !jsonEqual(got.Spec, want.Spec) {
					t.Errorf("Get %s = %+v, %v", name, got, err)
				}
				return
			}
			fsys := newMemFS(t, nil)
			if err := c.Put(t.Context(), &controller.PutRequest{FS: fsys, Type: flagType, Resource: newFlag("default", name, spec)}); err != nil {
				t.Errorf("Put %s: %v", name, err)
				return
			}
			if files := slices.Collect(maps.Keys(fsys.Files())); !slices.Equal(files, []string{flagFile("default", name)}) {
				t.Errorf("Put %s wrote %q", name, files)
			}
		})
	}
	wg.Wait()
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

func TestRequestChecks(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "conform", nil)
	fsys := newMemFS(t, nil)
	other := flagType
	other.Kind = "Segment"
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"put of another type", func() error {
			return c.Put(t.Context(), &controller.PutRequest{FS: fsys, Type: other, Resource: newFlag("default", "x", "")})
		}},
		{"put without a name", func() error {
			return c.Put(t.Context(), &controller.PutRequest{FS: fsys, Type: flagType, Resource: newFlag("default", "", "")})
		}},
		{"put with a spec that is no object", func() error {
			return c.Put(t.Context(), &controller.PutRequest{FS: fsys, Type: flagType, Resource: newFlag("default", "x", "[1]")})
		}},
		{"get without a namespace", func() error {
			_, err := c.Get(t.Context(), &controller.GetRequest{FS: fsys, Type: flagType, Name: "x"})
			return err
		}},
		{"get of a name with NUL", func() error {
			_, err := c.Get(t.Context(), &controller.GetRequest{FS: fsys, Type: flagType, Namespace: "default", Name: "a\x00b"})
			return err
		}},
		{"list without a file system", func() error {
			_, err := c.List(t.Context(), &controller.ListRequest{Type: flagType, Namespace: "default"})
			return err
		}},
		{"delete without a kind", func() error {
			return c.Delete(t.Context(), &controller.DeleteRequest{FS: fsys, Type: controller.Type{Version: "v1"}, Namespace: "default", Name: "x"})
		}},
		{"a name the module refuses", func() error {
			_, err := c.Get(t.Context(), &controller.GetRequest{FS: fsys, Type: flagType, Namespace: "default", Name: "a/b"})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkSentinel(t, tc.call(), controller.ErrInvalid)
		})
	}
	if ch := fsys.Files(); len(ch) > 0 {
		t.Errorf("rejected calls wrote %q", slices.Collect(maps.Keys(ch)))
	}
}

// TestWrittenFilesLimit is not parallel: it changes the bound for the
// whole package.
func TestWrittenFilesLimit(t *testing.T) {
	defer wasm.SetMaxWrittenBytes(4 << 20)()
	c := newController(t, nil, "faults", nil)
	fsys := &recorder{MemFS: newMemFS(t, nil)}
	err := c.Put(t.Context(), &controller.PutRequest{FS: fsys, Type: flagType, Resource: newFlag("default", "bigfile", "")})
	checkSentinel(t, err, controller.ErrLimit)
	if !strings.Contains(fmt.Sprint(err), "more than 4 MiB: stopped writing: write /big.bin: I/O error") {
		t.Errorf("Put = %v, want the limit and the module's words", err)
	}
	if ch := fsys.Changes(); len(ch) > 0 {
		t.Errorf("Put stopped by a limit changed the tree: %q", ch)
	}
}
