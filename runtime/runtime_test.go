package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	flagType       = controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags"}
	bundleType     = servertest.BundleType
	flagBundleType = servertest.FlagBundleType
)

// compile is a Go transform: one FlagBundle named after the Bundle,
// holding the names and specs of the Flags its selector maps.
func compile(calls *atomic.Int64) runtime.TransformFunc {
	return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
		calls.Add(1)
		flags := map[string]json.RawMessage{}
		for _, in := range req.Inputs {
			flags[in.Metadata.Name] = in.Spec
		}
		spec, err := json.Marshal(map[string]any{"flags": flags})
		if err != nil {
			return nil, err
		}
		return &runtime.Response{Outputs: []*controller.Resource{{
			APIVersion: "flags.cup.dev/v1alpha1", Kind: "FlagBundle",
			Metadata: controller.Metadata{Name: req.Primary.Metadata.Name}, Spec: spec,
		}}}, nil
	}
}

func bundleReconciler(tr runtime.Transform) *runtime.Reconciler {
	return &runtime.Reconciler{
		Name:      "flag-bundles",
		For:       bundleType,
		Watches:   []runtime.Watch{{Type: flagType, Mapper: runtime.Mapper{Kind: runtime.MapSelector, Path: "spec.selector"}}},
		Outputs:   []runtime.Output{{Type: flagBundleType, Exclusive: true}},
		Transform: tr,
		Write:     runtime.Write{Mode: runtime.WriteDirect},
	}
}

// startDemo serves the demo with servertest's bundle types in place of
// its own (servertest.WithBundles) and runs rs over the server until the
// test ends.
func startDemo(t *testing.T, rs ...*runtime.Reconciler) (*servertest.Server, *runtime.Runtime) {
	t.Helper()
	srv := servertest.Start(t, servertest.WithBundles())
	return srv, servertest.Reconcile(t, srv, rs, runtime.Options{Poll: 10 * time.Millisecond})
}

func getJSON(t *testing.T, srv *servertest.Server, path string) (int, map[string]any) {
	r := srv.Do(t, "GET", path, "")
	var m map[string]any
	_ = json.Unmarshal([]byte(r.Body), &m)
	return r.Status, m
}

// TestBundleFollowsFlags: the runtime writes the output of each primary,
// keeps it in step with the inputs the selector maps (a flag changed, a
// flag labelled into and out of the selection), records its owner and
// bound references, deletes it with its primary, and writes nothing when
// nothing changed.
func TestBundleFollowsFlags(t *testing.T) {
	var calls atomic.Int64
	srv, rt := startDemo(t, bundleReconciler(compile(&calls)))
	const out = "/apis/flags.cup.dev/v1alpha1/namespaces/default/flagbundles/web"
	flags := func() string {
		status, m := getJSON(t, srv, out)
		if status != 200 {
			return fmt.Sprint(status)
		}
		spec, _ := m["spec"].(map[string]any)
		names := []string{}
		for n := range spec["flags"].(map[string]any) {
			names = append(names, n)
		}
		return strings.Join(sorted(names), ",")
	}
	eventually(t, "the first bundle", func() (bool, string) { f := flags(); return f == "dark-mode", f })
	_, m := getJSON(t, srv, out)
	ann := m["metadata"].(map[string]any)["annotations"].(map[string]any)
	if ann[runtime.AnnotationOwner] != "flag-bundles/default/web" || !strings.Contains(ann[runtime.AnnotationBoundReferences].(string), "flags.cup.dev/Flag/default/dark-mode") {
		t.Fatalf("annotations %v: want the owner and the bound references", ann)
	}

	// A flag labelled into the selection joins the bundle.
	put := srv.Do(t, "PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/search-v2",
		`{"metadata": {"labels": {"team": "web"}}, "spec": {"enabled": true}}`)
	if put.Status/100 != 2 {
		t.Fatalf("put: %d %s", put.Status, put.Body)
	}
	eventually(t, "a flag labelled in", func() (bool, string) { f := flags(); return f == "dark-mode,search-v2", f })

	// Labelled out again: the bound reference wakes the bundle, which
	// drops it.
	put = srv.Do(t, "PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/search-v2",
		`{"metadata": {"labels": {"team": "search"}}, "spec": {"enabled": true}}`)
	if put.Status/100 != 2 {
		t.Fatalf("put: %d %s", put.Status, put.Body)
	}
	eventually(t, "a flag labelled out", func() (bool, string) { f := flags(); return f == "dark-mode", f })

	// Converged: Status says so, and a resync writes nothing.
	head := srv.Head(t)
	conds, err := rt.Status(t.Context(), "", bundleType, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if c := find(conds, runtime.ConditionReady); c == nil || c.Status != runtime.True || c.ObservedRevision != head || c.Reconciler != "flag-bundles" {
		t.Fatalf("conditions %+v: want Ready True at %s", conds, head)
	}
	rt.Poke()
	time.Sleep(50 * time.Millisecond)
	if h := srv.Head(t); h != head {
		t.Fatalf("the head moved from %s to %s with nothing changed", head, h)
	}

	// The primary deleted: its output goes with it.
	if r := srv.Do(t, "DELETE", "/apis/flags.cup.dev/v1alpha1/namespaces/default/bundles/web", ""); r.Status/100 != 2 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	eventually(t, "the output of a deleted primary", func() (bool, string) { f := flags(); return f == "404", f })
}

// TestOutputsOwnedElsewhereAreNotTouched: an output name held by a
// resource the reconciler does not own is a Conflict condition, and the
// resource stays as it is.
func TestOutputsOwnedElsewhereAreNotTouched(t *testing.T) {
	var calls atomic.Int64
	srv, rt := startDemo(t, bundleReconciler(compile(&calls)))
	const out = "/apis/flags.cup.dev/v1alpha1/namespaces/default/flagbundles/web"
	eventually(t, "the first bundle", func() (bool, string) { s, _ := getJSON(t, srv, out); return s == 200, fmt.Sprint(s) })
	if r := srv.Do(t, "PUT", out, `{"spec": {"by": "hand"}}`); r.Status/100 != 2 {
		t.Fatalf("put by hand: %d %s", r.Status, r.Body)
	}
	eventually(t, "a Conflict condition", func() (bool, string) {
		conds, err := rt.Status(t.Context(), "", bundleType, "default", "web")
		if err != nil {
			return false, err.Error()
		}
		c := find(conds, runtime.ConditionConflict)
		return c != nil && c.Status == runtime.True && strings.Contains(c.Message, "written by hand"), fmt.Sprintf("%+v", conds)
	})
	if _, m := getJSON(t, srv, out); m["spec"].(map[string]any)["by"] != "hand" {
		t.Fatalf("the hand-written resource was changed: %v", m)
	}
}

// TestTransformFailuresAreConditions: a failing transform is
// TransformFailed, one that blames its inputs InvalidInput, a panic is
// recovered; none writes.
func TestTransformFailuresAreConditions(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   runtime.TransformFunc
		want string
	}{
		{"failing", func(context.Context, *runtime.Request) (*runtime.Response, error) { return nil, errors.New("boom") }, runtime.ConditionTransformFailed},
		{"invalid", func(context.Context, *runtime.Request) (*runtime.Response, error) {
			return nil, fmt.Errorf("%w: spec.selector is required", runtime.ErrInvalidInput)
		}, runtime.ConditionInvalidInput},
		{"panicking", func(context.Context, *runtime.Request) (*runtime.Response, error) { panic("oops") }, runtime.ConditionTransformFailed},
		{"undeclared output", func(_ context.Context, req *runtime.Request) (*runtime.Response, error) {
			return &runtime.Response{Outputs: []*controller.Resource{{APIVersion: "flags.cup.dev/v1alpha1", Kind: "Flag", Metadata: controller.Metadata{Name: "x"}}}}, nil
		}, runtime.ConditionTransformFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, rt := startDemo(t, bundleReconciler(tc.tr))
			head := srv.Head(t)
			conds, err := rt.Status(t.Context(), "", bundleType, "default", "web")
			if err != nil {
				t.Fatal(err)
			}
			if c := find(conds, tc.want); c == nil || c.Status != runtime.True {
				t.Fatalf("conditions %+v: want %s", conds, tc.want)
			}
			if c := find(conds, runtime.ConditionReady); c == nil || c.Status != runtime.False {
				t.Fatalf("conditions %+v: want Ready False", conds)
			}
			time.Sleep(50 * time.Millisecond)
			if h := srv.Head(t); h != head {
				t.Fatalf("a failing transform wrote: the head moved to %s", h)
			}
		})
	}
}

func find(cs []runtime.Condition, typ string) *runtime.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

func sorted(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}
