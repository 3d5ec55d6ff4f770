package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/runtime"
)

// newReconciledServer serves the demo with servertest's bundle types in memory
// (internal/servertest) and runs two reconcilers over it until the test
// ends: flag-bundles, which writes a FlagBundle of the flags each Bundle
// selects, and audit, which reads flags and services and writes nothing.
func newReconciledServer(t *testing.T) string {
	t.Helper()
	var (
		flags       = controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags"}
		bundles     = servertest.BundleType
		flagBundles = servertest.FlagBundleType
		services    = controller.Type{Group: "apps.cup.dev", Version: "v1alpha1", Kind: "Service", Plural: "services"}
	)
	rs := []*runtime.Reconciler{{
		Name:    "flag-bundles",
		For:     bundles,
		Watches: []runtime.Watch{{Type: flags, Mapper: runtime.Mapper{Kind: runtime.MapSelector, Path: "spec.selector"}}},
		Outputs: []runtime.Output{{Type: flagBundles, Exclusive: true}},
		Transform: runtime.TransformFunc(func(_ context.Context, req *runtime.Request) (*runtime.Response, error) {
			names := []string{}
			for _, in := range req.Inputs {
				names = append(names, in.Metadata.Name)
			}
			spec, err := json.Marshal(map[string]any{"flags": names})
			if err != nil {
				return nil, err
			}
			return &runtime.Response{Outputs: []*controller.Resource{{
				APIVersion: "flags.cup.dev/v1alpha1", Kind: "FlagBundle",
				Metadata: controller.Metadata{Name: req.Primary.Metadata.Name}, Spec: spec,
			}}}, nil
		}),
		Write: runtime.Write{Mode: runtime.WriteDirect},
	}, {
		Name:      "audit",
		For:       flags,
		Watches:   []runtime.Watch{{Type: services, Mapper: runtime.Mapper{Kind: runtime.MapNameAligned}}},
		Outputs:   []runtime.Output{{Type: services}},
		Transform: runtime.TransformFunc(func(context.Context, *runtime.Request) (*runtime.Response, error) { return &runtime.Response{}, nil }),
		Write:     runtime.Write{Mode: runtime.WriteDirect},
	}}
	srv := servertest.Start(t, servertest.WithBundles())
	servertest.Reconcile(t, srv, rs, runtime.Options{Poll: 10 * time.Millisecond})
	return srv.URL
}

// TestGraph: cup graph prints the reconcilers' edges as a table, as JSON
// and as a Graphviz digraph.
func TestGraph(t *testing.T) {
	t.Parallel()
	url := newReconciledServer(t)
	golden(t, "graph_table.golden", ok(t, url, "graph"))
	golden(t, "graph_json.golden", ok(t, url, "graph", "-o", "json"))
	golden(t, "graph_dot.golden", ok(t, url, "graph", "-o", "dot"))
	fails(t, url, `-o: "yaml" is not one of table, json, dot`, "graph", "-o", "yaml")
	fails(t, url, "unknown command", "graph", "flags")
}

// TestGraphWithoutReconcilers: a server without reconcilers has an empty
// graph, which each format says in its way.
func TestGraphWithoutReconcilers(t *testing.T) {
	t.Parallel()
	url := servertest.Start(t).URL
	if r := cup(t, url, "", "graph"); r.code != 0 || r.stdout != "" || r.stderr != "No reconcilers found.\n" {
		t.Errorf("table: %+v", r)
	}
	if got := ok(t, url, "graph", "-o", "json"); got != "{\n    \"edges\": []\n}\n" {
		t.Errorf("json: %q", got)
	}
	if got := ok(t, url, "graph", "-o", "dot"); got != "digraph reconcilers {\n  rankdir=LR;\n}\n" {
		t.Errorf("dot: %q", got)
	}
}

// TestGetShowsStatus: cup get -o yaml|json of a reconciler's primary
// prints its status after its spec, Ready once the output is written; a
// type no reconciler has, and a list, have none; and what get printed
// applies back unchanged, status and all.
func TestGetShowsStatus(t *testing.T) {
	t.Parallel()
	url := newReconciledServer(t)
	var obj struct {
		Kind   string         `json:"kind"`
		Spec   map[string]any `json:"spec"`
		Status *struct {
			Conditions []map[string]any `json:"conditions"`
		} `json:"status"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := ok(t, url, "get", "bundle", "web", "-o", "json")
		obj.Status = nil
		if err := json.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if obj.Status != nil && len(obj.Status.Conditions) > 0 && obj.Status.Conditions[0]["type"] == "Ready" && obj.Status.Conditions[0]["status"] == "True" {
			c := obj.Status.Conditions[0]
			if c["reconciler"] != "flag-bundles" || c["reason"] != "Converged" || c["observedRevision"] == nil || c["lastTransitionTime"] == nil {
				t.Fatalf("condition %v lacks fields", c)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still no Ready True after 10 s:\n%s", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if obj.Kind != "Bundle" || obj.Spec["selector"] == nil {
		t.Errorf("the resource around the status: %+v", obj)
	}
	y := ok(t, url, "get", "bundles/web", "-o", "yaml")
	if !strings.Contains(y, "\nstatus:\n  conditions:\n  - ") || !strings.Contains(y, "type: Ready") || strings.Index(y, "\nspec:") > strings.Index(y, "\nstatus:") {
		t.Errorf("yaml lacks the status after the spec:\n%s", y)
	}
	if got := ok(t, url, "get", "service", "web", "-o", "yaml"); strings.Contains(got, "status:") || strings.Contains(got, "conditions") {
		t.Errorf("a service, which no reconciler has, has a status:\n%s", got)
	}
	if got := ok(t, url, "get", "bundles", "-o", "yaml"); strings.Contains(got, "conditions") {
		t.Errorf("a list has a status:\n%s", got)
	}
	if r := cup(t, url, y, "apply", "-f", "-"); r.code != 0 || r.stdout != "bundles.flags.cup.dev/web unchanged\n" {
		t.Errorf("apply of what get printed: %+v", r)
	}
}
