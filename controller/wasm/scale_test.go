package wasm_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/wasm"
)

// flagfilePath is where the example controller, flagfile, keeps the Flags
// of namespace default.
const flagfilePath = "flags.flags.cup.dev/default.yaml"

// flagfileYAML returns the file flagfile keeps n Flags of a namespace in:
// a mapping of entries of about 600 bytes each, with comments, labels,
// annotations and a nested spec (600 KB for 1,000 entries).
func flagfileYAML(n int) string {
	var b strings.Builder
	b.WriteString("# Flags of the namespace.\n\n")
	for i := range n {
		fmt.Fprintf(&b, `# Flag %[1]d, owned by team %[2]d.
flag-%05[1]d:
  labels:
    team: team-%[2]d
    tier: "%[3]d"
  annotations:
    owner: platform@example.com
    description: Feature flag %[1]d, rolled out to a share of the users of each plan.
  spec:
    enabled: %[4]t
    description: Feature flag %[1]d.
    variants:
      - key: "on"
        weight: %[5]d
      - key: "off"
        weight: %[6]d
    segments: [beta, internal]
    rules:
      - attribute: plan
        values: [pro, team, enterprise]
      - attribute: country
        values: ["NO", "SE", "DK", "FI"]
    rollout: {percentage: 25, seed: %[1]d} # sticky by user

`, i, i%7, i%3, i%2 == 0, i%100, 100-i%100)
	}
	return b.String()
}

// TestFlagfileAtScale runs the example controller on a file of 10,000
// Flags (6 MB) under the default limits: each call holds one copy of the
// file and parses only the entries it needs.
func TestFlagfileAtScale(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("calls on a 6 MB file take seconds each")
	}
	const n = 10000
	c := newController(t, nil, "flagfile", nil)
	tree := newMemFS(t, map[string]string{flagfilePath: flagfileYAML(n)})
	get := func(name string) (*controller.Resource, error) {
		return c.Get(t.Context(), &controller.GetRequest{FS: tree.Snapshot(), Type: flagType, Namespace: "default", Name: name})
	}

	r, err := get("flag-09421")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if r.Metadata.Labels["team"] != "team-6" || !strings.Contains(string(r.Spec), `"seed":9421`) {
		t.Errorf("get = %+v, spec %s", r.Metadata, r.Spec)
	}
	_, err = get("flag-10000")
	checkSentinel(t, err, controller.ErrNotFound)

	// An edit rewrites the entry's lines and leaves the rest of the file.
	put := newFlag("default", "flag-00042", `{"enabled":true}`)
	put.Metadata.Labels = map[string]string{"team": "growth"}
	if err := c.Put(t.Context(), &controller.PutRequest{FS: tree, Type: flagType, Resource: put}); err != nil {
		t.Fatalf("put: %v", err)
	}
	if r, err := get("flag-00042"); err != nil || r.Metadata.Labels["team"] != "growth" || r.Metadata.Annotations != nil {
		t.Errorf("get after put = %+v, %v", r, err)
	}
	if err := c.Put(t.Context(), &controller.PutRequest{FS: tree, Type: flagType, Resource: newFlag("default", "new-flag", `{"x":1}`)}); err != nil {
		t.Fatalf("put of a new flag: %v", err)
	}
	if err := c.Delete(t.Context(), &controller.DeleteRequest{FS: tree, Type: flagType, Namespace: "default", Name: "flag-05000"}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = get("flag-05000")
	checkSentinel(t, err, controller.ErrNotFound)
	data, err := tree.ReadFile(flagfilePath)
	if err != nil {
		t.Fatal(err)
	}
	want := flagfileYAML(n)
	tail := strings.TrimSuffix(want[strings.Index(want, "# Flag 5001,"):], "\n") + "new-flag:\n  spec:\n    x: 1\n\n"
	if cut := strings.Index(want, "# Flag 5000,"); !strings.HasSuffix(string(data), tail) ||
		!strings.HasPrefix(string(data), want[:strings.Index(want, "# Flag 42,")]) || strings.Contains(string(data), want[cut:cut+200]) {
		t.Errorf("the file after put and delete does not keep the other entries' lines")
	}

	// A malformed entry: the error carries the module's message, no trace.
	bad := strings.Replace(string(data), "flag-07777:\n  labels:", "flag-07777:\n  lables:", 1)
	badTree := newMemFS(t, map[string]string{flagfilePath: bad}).Snapshot()
	_, err = c.Get(t.Context(), &controller.GetRequest{FS: badTree, Type: flagType, Namespace: "default", Name: "flag-07777"})
	checkSentinel(t, err, controller.ErrFailed)
	if err == nil || !strings.Contains(err.Error(), `malformed: entry "flag-07777" has the unknown field "lables"`) {
		t.Errorf("get of a malformed entry: %v", err)
	}
	checkNoTrace(t, err)

	// A list parses every entry: more than the default timeout allows on
	// a slow machine, under the default memory limit.
	slow := newController(t, nil, "flagfile", &wasm.Spec{Path: "flagfile.wasm", Timeout: 10 * time.Minute})
	list, err := slow.List(t.Context(), &controller.ListRequest{FS: tree.Snapshot(), Type: flagType, Namespace: "default"})
	if err != nil || len(list) != n {
		t.Fatalf("list = %d resources, %v; want %d", len(list), err, n)
	}
}

// TestOutOfMemoryMessage: a module that runs out of memory gives an error
// that says so in a line, names the limit and how to raise it, and carries
// no stack trace.
func TestOutOfMemoryMessage(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "flagfile", &wasm.Spec{Path: "flagfile.wasm", MemoryLimitPages: 64})
	tree := newMemFS(t, map[string]string{flagfilePath: flagfileYAML(2000)}).Snapshot()
	_, err := c.Get(t.Context(), &controller.GetRequest{FS: tree, Type: flagType, Namespace: "default", Name: "flag-00001"})
	if !errors.Is(err, controller.ErrLimit) || !strings.Contains(err.Error(), "ran out of its 4 MiB of memory; its controller's memoryLimitPages (now 64 pages of 64 KiB) raises it") {
		t.Errorf("get = %v, want a limit error", err)
	}
	if err != nil && strings.Count(err.Error(), "\n") > 0 {
		t.Errorf("error %q has more than one line", err)
	}
	checkNoTrace(t, err)
}

// BenchmarkFlagfile measures get (every call is a first read: each runs a
// new instance of the module), list and put (the module's call alone, each
// writing the file anew) through the example controller on one file of
// 1,000 and of 10,000 Flags.
func BenchmarkFlagfile(b *testing.B) {
	c := newController(b, nil, "flagfile", &wasm.Spec{Path: "flagfile.wasm", Timeout: 10 * time.Minute})
	for _, n := range []int{1000, 10000} {
		tree := newMemFS(b, map[string]string{flagfilePath: flagfileYAML(n)}).Snapshot()
		b.Run(fmt.Sprintf("get/entries=%d", n), func(b *testing.B) {
			req := &controller.GetRequest{FS: tree, Type: flagType, Namespace: "default", Name: fmt.Sprintf("flag-%05d", n/2)}
			measure(b, func() error { _, err := c.Get(b.Context(), req); return err })
		})
		b.Run(fmt.Sprintf("list/entries=%d", n), func(b *testing.B) {
			req := &controller.ListRequest{FS: tree, Type: flagType, Namespace: "default"}
			measure(b, func() error { _, err := c.List(b.Context(), req); return err })
		})
		b.Run(fmt.Sprintf("put/entries=%d", n), func(b *testing.B) {
			dir := newMemFS(b, map[string]string{flagfilePath: flagfileYAML(n)})
			i := 0
			measure(b, func() error {
				i++ // a change every time, to the same tree
				r := newFlag("default", fmt.Sprintf("flag-%05d", n/2), fmt.Sprintf(`{"rev":%d}`, i))
				return c.Put(b.Context(), &controller.PutRequest{FS: dir, Type: flagType, Resource: r})
			})
		})
	}
}
