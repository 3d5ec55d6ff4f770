package runtime_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/runtime"
)

// The runtime's abilities that layered configuration (package cuelayers)
// builds on: inputs from a fixed namespace, a transform that updates its
// primary, conditions of the transform's own type, and garbage collection
// committed on its own.

// TestSelectorFromAFixedNamespace: a selector watch with a namespace reads
// that namespace's inputs for the primaries of every namespace, and a
// change there wakes them all; inputs elsewhere that match are not read.
func TestSelectorFromAFixedNamespace(t *testing.T) {
	t.Parallel()
	fs := map[string][]byte{}
	add := func(typ controller.Type, ns, name, md, spec string) {
		p, b := file(typ, ns, name, md, spec)
		fs[p] = b
	}
	add(widgetType, "a", "w", "", `{"selector": {"matchLabels": {"scope": "org"}}}`)
	add(widgetType, "b", "w", "", `{"selector": {"matchLabels": {"scope": "org"}}}`)
	add(partType, "org", "base", `{"labels": {"scope": "org"}}`, `{"v": 1}`)
	add(partType, "a", "local", `{"labels": {"scope": "org"}}`, `{"v": 2}`) // not the org namespace
	h := start(t, config{files: fs}, reconciler("summary", pure(summarize),
		runtime.Watch{Type: partType, Mapper: runtime.Mapper{Kind: runtime.MapSelector, Path: "spec.selector"}, Namespace: "org"}))
	h.idle()
	for _, ns := range []string{"a", "b"} {
		if got := inputNames(t, h.get(gadgetType, ns, "w")); !slices.Equal(got, []string{"Part/base"}) {
			t.Fatalf("widget %s/w read %v; want the org namespace's part alone", ns, got)
		}
	}
	h.put(partType, "org", "base", `{"labels": {"scope": "org"}}`, `{"v": 3}`)
	h.idle()
	for _, ns := range []string{"a", "b"} {
		in, _ := specOf(t, h.get(gadgetType, ns, "w"))["inputs"].(map[string]any)
		if b, _ := json.Marshal(in["Part/base"]); string(b) != `{"v":3}` {
			t.Errorf("widget %s/w after the org part changed: %s", ns, b)
		}
	}
}

// TestTransformUpdatesItsPrimary: a reconciler that declares
// UpdatesPrimary writes the primary's spec the transform answers, in the
// commit of its outputs, and then converges; one that does not is refused
// with TransformFailed and writes nothing.
func TestTransformUpdatesItsPrimary(t *testing.T) {
	t.Parallel()
	pointing := func(req *runtime.Request) (*runtime.Response, error) {
		resp, err := summarize(req)
		if err != nil {
			return nil, err
		}
		var spec map[string]any
		_ = json.Unmarshal(req.Primary.Spec, &spec)
		spec["current"] = req.Primary.Metadata.Name
		resp.PrimarySpec, _ = json.Marshal(spec)
		return resp, nil
	}
	r := reconciler("pointer", pure(pointing))
	r.UpdatesPrimary = true
	h := start(t, config{files: widgetFile("w", `{"n": 1}`)}, r)
	h.idle()
	commits := h.commits()
	w := h.get(widgetType, "default", "w")
	if got := specOf(t, w)["current"]; got != "w" {
		t.Fatalf("the primary's spec.current is %v; want w", got)
	}
	// The first commit puts both; the next one the output, which holds
	// the primary's new spec.
	log, _ := h.srv.Repo.Log("main")
	if first := log[len(log)-2].Message; !strings.Contains(first, "put test.cup.dev/v1/widgets default/w") || !strings.Contains(first, "put test.cup.dev/v1/gadgets default/w") {
		t.Fatalf("the primary and its output are not one commit:\n%s", first)
	}
	h.rt.Resync()
	h.idle()
	if n := h.commits(); n != commits {
		t.Fatalf("a converged primary made %d more commits", n-commits)
	}
	if g := runtime.Graph([]*runtime.Reconciler{r}); !slices.Contains(g, runtime.Edge{Reconciler: "pointer", Type: widgetType, Kind: runtime.EdgeOutputShared}) {
		t.Errorf("the graph %+v does not show that pointer writes widgets", g)
	}

	undeclared := start(t, config{files: widgetFile("w", `{"n": 1}`)}, reconciler("pointer", pure(pointing)))
	undeclared.idle()
	if n := undeclared.commits(); n != 1 {
		t.Fatalf("an undeclared primary update wrote %d commits", n-1)
	}
	conds, err := undeclared.rt.Status(t.Context(), "", widgetType, "default", "w")
	if err != nil {
		t.Fatal(err)
	}
	if c := find(conds, runtime.ConditionTransformFailed); c == nil || !strings.Contains(c.Message, "updatesPrimary") {
		t.Fatalf("conditions %+v: want TransformFailed naming updatesPrimary", conds)
	}
}

// TestInvalidErrorIsItsOwnCondition: a transform's InvalidError is a
// condition of its type and reason, Ready False, and nothing is written.
func TestInvalidErrorIsItsOwnCondition(t *testing.T) {
	t.Parallel()
	h := start(t, config{files: widgetFile("w", `{"n": 1}`)}, reconciler("strict", func(context.Context, *runtime.Request) (*runtime.Response, error) {
		return nil, &runtime.InvalidError{Type: "InvalidConfiguration", Reason: "Conflict", Message: "replicas: conflicting values 3 and 2"}
	}))
	h.idle()
	conds, err := h.rt.Status(t.Context(), "", widgetType, "default", "w")
	if err != nil {
		t.Fatal(err)
	}
	if c := find(conds, "InvalidConfiguration"); c == nil || c.Status != runtime.True || c.Reason != "Conflict" || c.Message != "replicas: conflicting values 3 and 2" {
		t.Fatalf("conditions %+v: want InvalidConfiguration True, Conflict", conds)
	}
	if c := find(conds, runtime.ConditionReady); c == nil || c.Status != runtime.False || c.Reason != "Conflict" {
		t.Fatalf("conditions %+v: want Ready False, Conflict", conds)
	}
	if n := h.commits(); n != 1 {
		t.Fatalf("an invalid configuration wrote %d commits", n-1)
	}
}

// TestCollectionIsACommitOfItsOwn: outputs a transform stops answering
// that are marked orphaned are deleted in a commit that only collects,
// whose message says why, even inside one batch with other changes.
func TestCollectionIsACommitOfItsOwn(t *testing.T) {
	t.Parallel()
	gadget := func(name, orphaned string) *controller.Resource {
		r := &controller.Resource{APIVersion: gadgetType.APIVersion(), Kind: gadgetType.Kind,
			Metadata: controller.Metadata{Name: name, Annotations: map[string]string{}}, Spec: json.RawMessage(`{}`)}
		if orphaned != "" {
			r.Metadata.Annotations[runtime.AnnotationOrphaned] = orphaned
		}
		return r
	}
	// Generation 1 answers w-1 and w-0 (orphaned); generation 2 answers
	// w-1 alone: w-0 is collected.
	tr := func(_ context.Context, req *runtime.Request) (*runtime.Response, error) {
		var spec struct{ Gen int }
		_ = json.Unmarshal(req.Primary.Spec, &spec)
		if spec.Gen == 1 {
			return &runtime.Response{Outputs: []*controller.Resource{gadget("w-1", ""), gadget("w-0", "c0ffee")}}, nil
		}
		return &runtime.Response{Outputs: []*controller.Resource{gadget("w-1", "")}}, nil
	}
	h := start(t, config{files: widgetFile("w", `{"gen": 1}`)}, reconciler("cow", tr))
	h.idle()
	if h.get(gadgetType, "default", "w-0") == nil {
		t.Fatal("the orphaned output was not written")
	}
	h.put(widgetType, "default", "w", "", `{"gen": 2}`)
	h.idle()
	if h.get(gadgetType, "default", "w-0") != nil {
		t.Fatal("the orphaned output was not collected")
	}
	log, _ := h.srv.Repo.Log("main")
	msg := log[0].Message
	if !strings.HasPrefix(msg, "Collect cow: 1 orphaned output(s) no longer referenced") ||
		!strings.Contains(msg, "delete test.cup.dev/v1/gadgets default/w-0 (orphaned at ") || strings.Contains(msg, "put ") {
		t.Fatalf("the collecting commit:\n%s", msg)
	}
}
