package cuelayers_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/cueeval"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/runtime"
	"github.com/cup-dev/cup/runtime/cuelayers"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestMain(m *testing.M) {
	cueeval.Worker()
	os.Exit(m.Run())
}

var (
	appType    = controller.Type{Group: "test.cup.dev", Version: "v1", Kind: "App", Plural: "apps"}
	layerType  = controller.Type{Group: "test.cup.dev", Version: "v1", Kind: "Layer", Plural: "layers"}
	configType = controller.Type{Group: "test.cup.dev", Version: "v1", Kind: "Config", Plural: "configs"}
	renderType = controller.Type{Group: "test.cup.dev", Version: "v1", Kind: "Render", Plural: "renders"}
)

// types serves apps (JSON), layers (YAML), configs and renders (JSON),
// one file per resource at <plural>/<namespace>/<name>.<ext>.
const types = `apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: apps.test.cup.dev}
spec: {group: test.cup.dev, names: {kind: App, singular: app, plural: apps}, versions: {v1: {schemaTarget: spec, schema: {type: object}}}}
---
apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: layers.test.cup.dev}
spec: {group: test.cup.dev, names: {kind: Layer, singular: layer, plural: layers}, versions: {v1: {schemaTarget: spec, schema: {type: object}}}}
---
apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: configs.test.cup.dev}
spec: {group: test.cup.dev, names: {kind: Config, singular: config, plural: configs}, versions: {v1: {schemaTarget: spec, schema: {type: object}}}}
---
apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: renders.test.cup.dev}
spec: {group: test.cup.dev, names: {kind: Render, singular: render, plural: renders}, versions: {v1: {schemaTarget: spec, schema: {type: object}}}}
---
apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: apps}
spec: {type: template, spec: {list_template: "apps/{{ .Namespace }}/*.json", resource_template: "apps/{{ .Namespace }}/{{ .Name }}.json"}}
---
apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: layers}
spec: {type: template, spec: {list_template: "layers/{{ .Namespace }}/*.yaml", resource_template: "layers/{{ .Namespace }}/{{ .Name }}.yaml"}}
---
apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: configs}
spec: {type: template, spec: {list_template: "configs/{{ .Namespace }}/*.json", resource_template: "configs/{{ .Namespace }}/{{ .Name }}.json"}}
---
apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: renders}
spec: {type: template, spec: {list_template: "renders/{{ .Namespace }}/*.json", resource_template: "renders/{{ .Namespace }}/{{ .Name }}.json"}}
---
apiVersion: cup.dev/v1alpha1
kind: APIBinding
metadata: {name: apps}
spec: {controller: apps, resources: [test.cup.dev/v1/apps]}
---
apiVersion: cup.dev/v1alpha1
kind: APIBinding
metadata: {name: layers}
spec: {controller: layers, resources: [test.cup.dev/v1/layers]}
---
apiVersion: cup.dev/v1alpha1
kind: APIBinding
metadata: {name: configs}
spec: {controller: configs, resources: [test.cup.dev/v1/configs]}
---
apiVersion: cup.dev/v1alpha1
kind: APIBinding
metadata: {name: renders}
spec: {controller: renders, resources: [test.cup.dev/v1/renders]}
`

// The layers of app default/web: an organisation-wide base (namespace
// org), the environment's (default), and the app's own override, which
// names it.
var files = map[string][]byte{
	".cup/types.yaml": []byte(types),
	"apps/default/web.json": []byte(`{"apiVersion": "test.cup.dev/v1", "kind": "App", "metadata": {"namespace": "default", "name": "web"},
 "spec": {"layerSelector": {"matchLabels": {"layer": "shared"}}}}`),
	"layers/org/base.yaml": []byte(`apiVersion: test.cup.dev/v1
kind: Layer
metadata:
  namespace: org
  name: base
  labels: {layer: shared}
spec:
  cue: |
    image: *"registry.example/web:1.0.0" | string
    replicas: *2 | int
    env: LOG_LEVEL: *"info" | string
`),
	"layers/default/env.yaml": []byte(`apiVersion: test.cup.dev/v1
kind: Layer
metadata:
  namespace: default
  name: env
  labels: {layer: shared}
spec:
  values:
    env:
      REGION: eu-west-1
`),
	"layers/default/web.yaml": []byte(`apiVersion: test.cup.dev/v1
kind: Layer
metadata:
  namespace: default
  name: web
spec:
  target: web
  values:
    replicas: 3
`),
}

// watches reads an app's layers: the organisation's and its namespace's
// by the app's selector, and those that name it.
var watches = []runtime.Watch{
	{Type: layerType, Mapper: runtime.Mapper{Kind: runtime.MapSelector, Path: "spec.layerSelector"}, Namespace: "org"},
	{Type: layerType, Mapper: runtime.Mapper{Kind: runtime.MapSelector, Path: "spec.layerSelector"}},
	{Type: layerType, Mapper: runtime.Mapper{Kind: runtime.MapReference, Path: "spec.target"}},
}

// clock is a settable clock for the grace period.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// setup serves files and runs two reconcilers sharing the layers: config
// (JSON into configs, switching the app's spec.config) and render (YAML
// into renders, no reference).
func setup(t *testing.T) (*servertest.Server, *runtime.Runtime, *clock) {
	t.Helper()
	srv := servertest.Start(t, servertest.WithoutDemo(), servertest.WithFiles(files))
	store := srv.Server.ReconcileStore().(cuelayers.Store)
	clk := &clock{now: time.Now()}
	config, err := cuelayers.New(cuelayers.Config{Layers: layerType, Output: configType, Reference: "spec.config", GCAfter: time.Hour,
		Schema: "image: string\nreplicas: int & >=1\nenv: [string]: string\n", SchemaPath: ".cup/schema.cue"}, store)
	if err != nil {
		t.Fatal(err)
	}
	config.SetClock(clk.Now)
	render, err := cuelayers.New(cuelayers.Config{Layers: layerType, Output: renderType, Format: "yaml"}, store)
	if err != nil {
		t.Fatal(err)
	}
	rs := []*runtime.Reconciler{{
		Name: "config", For: appType, Watches: watches, Outputs: []runtime.Output{{Type: configType, Exclusive: true}},
		Transform: config, UpdatesPrimary: true, Write: runtime.Write{Mode: runtime.WriteDirect},
	}, {
		Name: "render", For: appType, Watches: watches, Outputs: []runtime.Output{{Type: renderType, Exclusive: true}},
		Transform: render, Write: runtime.Write{Mode: runtime.WriteDirect},
	}}
	rt := servertest.Reconcile(t, srv, rs, runtime.Options{Poll: 10 * time.Millisecond, Resync: -1})
	if err := rt.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	return srv, rt, clk
}

func get(t *testing.T, srv *servertest.Server, typ controller.Type, ns, name string) (int, map[string]any) {
	t.Helper()
	r := srv.Do(t, "GET", "/apis/"+typ.Group+"/"+typ.Version+"/namespaces/"+ns+"/"+typ.Plural+"/"+name, "")
	var m map[string]any
	_ = json.Unmarshal([]byte(r.Body), &m)
	return r.Status, m
}

// current returns the name web's spec.config holds.
func current(t *testing.T, srv *servertest.Server) string {
	t.Helper()
	_, app := get(t, srv, appType, "default", "web")
	spec, _ := app["spec"].(map[string]any)
	s, _ := spec["config"].(string)
	return s
}

func put(t *testing.T, srv *servertest.Server, typ controller.Type, ns, name, body string) {
	t.Helper()
	r := srv.Do(t, "PUT", "/apis/"+typ.Group+"/"+typ.Version+"/namespaces/"+ns+"/"+typ.Plural+"/"+name, body)
	if r.Status/100 != 2 {
		t.Fatalf("PUT %s %s/%s: %d %s", typ.Kind, ns, name, r.Status, r.Body)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func wait(t *testing.T, rt *runtime.Runtime) {
	t.Helper()
	if err := rt.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestLayersCopyOnWriteAndCollect: the layers unify into a config named
// after its content, the app is switched to it; a changed layer makes a
// new config and orphans the old one; a rollback (the app pointed back at
// the old config) keeps it alive past the grace period; pointed forward
// again, the old config is collected in a commit of its own. A second
// reconciler renders the same layers as YAML.
func TestLayersCopyOnWriteAndCollect(t *testing.T) {
	srv, rt, clk := setup(t)
	first := current(t, srv)
	if !strings.HasPrefix(first, "web-") || len(first) != len("web-")+10 {
		t.Fatalf("the app's config is %q; want web-<10 hex>", first)
	}
	_, cfg := get(t, srv, configType, "default", first)
	data, _ := json.MarshalIndent(cfg["spec"], "", "  ")
	golden(t, "web.golden.json", data)
	renders, err := srv.Server.ReconcileStore().List(t.Context(), srv.Head(t), renderType, nil)
	if err != nil || len(renders) != 1 || !strings.HasPrefix(renders[0].Metadata.Name, "web-") || renders[0].Metadata.Name == first {
		t.Fatalf("renders %v (%v): want one, named after its own content", renders, err)
	}
	var rendered struct{ Data string }
	if err := json.Unmarshal(renders[0].Spec, &rendered); err != nil {
		t.Fatal(err)
	}
	golden(t, "web.golden.yaml", []byte(rendered.Data))

	// A changed environment layer: a new config, the app switched, the
	// old one orphaned but kept.
	put(t, srv, layerType, "default", "env", `{"metadata": {"labels": {"layer": "shared"}}, "spec": {"values": {"env": {"REGION": "us-east-1"}}}}`)
	wait(t, rt)
	second := current(t, srv)
	if second == first || !strings.HasPrefix(second, "web-") {
		t.Fatalf("after the layer changed the app's config is %q (was %q)", second, first)
	}
	status, old := get(t, srv, configType, "default", first)
	if status != 200 || old["metadata"].(map[string]any)["annotations"].(map[string]any)[runtime.AnnotationOrphaned] == nil {
		t.Fatalf("the old config: %d %v; want it kept, annotated %s", status, old, runtime.AnnotationOrphaned)
	}

	// Rolled back by hand: the app names the old config, which outlives
	// the grace period because it is used.
	put(t, srv, appType, "default", "web", `{"spec": {"layerSelector": {"matchLabels": {"layer": "shared"}}, "config": "`+first+`"}}`)
	wait(t, rt)
	if got := current(t, srv); got != first {
		t.Fatalf("the rollback to %s was undone: the app names %s", first, got)
	}
	clk.add(2 * time.Hour)
	rt.Resync()
	wait(t, rt)
	if status, _ := get(t, srv, configType, "default", first); status != 200 {
		t.Fatalf("the config the app uses was collected: %d", status)
	}

	// Forward again: the old config is collected, in a commit of its own.
	head := srv.Head(t)
	put(t, srv, appType, "default", "web", `{"spec": {"layerSelector": {"matchLabels": {"layer": "shared"}}, "config": "`+second+`"}}`)
	wait(t, rt)
	clk.add(2 * time.Hour)
	rt.Resync()
	wait(t, rt)
	if status, _ := get(t, srv, configType, "default", first); status != 404 {
		t.Fatalf("the unused orphaned config %s was not collected: %d", first, status)
	}
	log, err := srv.Repo.Log("main")
	if err != nil {
		t.Fatal(err)
	}
	var collect *string
	for _, c := range log {
		if c.ID == head {
			break
		}
		if strings.HasPrefix(c.Message, "Collect config: 1 orphaned output(s)") {
			collect = &c.Message
		}
	}
	if collect == nil || strings.Count(*collect, "\ndelete ") != 1 || !strings.Contains(*collect, first+" (orphaned at ") {
		t.Fatalf("no commit of its own collected %s: %v", first, log[:3])
	}
	if status, _ := get(t, srv, configType, "default", second); status != 200 {
		t.Fatalf("the current config was collected: %d", status)
	}
}

// TestConflictIsAConditionWithBothPositions: two layers that disagree
// leave the current config in use and report InvalidConfiguration naming
// both files and positions.
func TestConflictIsAConditionWithBothPositions(t *testing.T) {
	srv, rt, _ := setup(t)
	before := current(t, srv)
	put(t, srv, layerType, "default", "env", `{"metadata": {"labels": {"layer": "shared"}}, "spec": {"values": {"replicas": 5}}}`)
	wait(t, rt)
	if got := current(t, srv); got != before {
		t.Fatalf("a conflict switched the app from %s to %s", before, got)
	}
	conds, err := rt.Status(t.Context(), "", appType, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	var msg string
	for _, c := range conds {
		if c.Reconciler == "config" && c.Type == cuelayers.ConditionInvalidConfiguration && c.Status == runtime.True && c.Reason == "Conflict" {
			msg = c.Message
		}
	}
	for _, want := range []string{"replicas: conflicting values", "layers/default/env.yaml:", "layers/default/web.yaml:9:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("InvalidConfiguration %q does not name %q (conditions %+v)", msg, want, conds)
		}
	}
}

// TestTheSameLayersGiveTheSameName: the output's name and bytes depend on
// the layers' content only.
func TestTheSameLayersGiveTheSameName(t *testing.T) {
	a, _, _ := setup(t)
	b, _, _ := setup(t)
	if x, y := current(t, a), current(t, b); x != y {
		t.Fatalf("two servers over the same layers named the config %s and %s", x, y)
	}
}

// TestRenderIsADryRun: Render (REST and Connect) answers the unified
// configuration and the conditions without writing: the current output
// and no changes when converged, and a conflict with its positions.
func TestRenderIsADryRun(t *testing.T) {
	srv, rt, _ := setup(t)
	current := current(t, srv)
	const path = "/apis/test.cup.dev/v1/namespaces/default/apps/web/render"
	r := srv.Do(t, "GET", path, "")
	var res struct {
		Commit     string
		Renderings []struct {
			Reconciler string
			Outputs    []struct {
				Metadata struct{ Name string }
				Spec     map[string]any
			}
			Changes    []map[string]string
			Conditions []map[string]string
		}
	}
	if err := json.Unmarshal([]byte(r.Body), &res); err != nil || r.Status != 200 {
		t.Fatalf("GET render: %d %s (%v)", r.Status, r.Body, err)
	}
	if len(res.Renderings) != 2 || res.Renderings[0].Reconciler != "config" || len(res.Renderings[0].Outputs) != 1 ||
		res.Renderings[0].Outputs[0].Metadata.Name != current || len(res.Renderings[0].Changes) != 0 {
		t.Fatalf("a converged app renders as %s; want its current config %s and no changes", r.Body, current)
	}

	// A conflicting layer, committed by another writer: Render says so,
	// and nothing is written.
	c := srv.Clients(servertest.Protocols[0]).Resources
	conflict, err := srv.Repo.Commit("main", map[string][]byte{"layers/default/env.yaml": []byte(`apiVersion: test.cup.dev/v1
kind: Layer
metadata: {namespace: default, name: env, labels: {layer: shared}}
spec: {values: {replicas: 7}}
`)}, "a conflict\n")
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Render(t.Context(), connect.NewRequest(&cupv1alpha1.RenderRequest{Group: "test.cup.dev", Version: "v1", Plural: "apps",
		Namespace: "default", Name: "web", Revision: "main"}))
	if err != nil {
		t.Fatal(err)
	}
	rd := got.Msg.GetRenderings()[0]
	var msg string
	for _, cd := range rd.GetConditions() {
		if cd.GetType() == cuelayers.ConditionInvalidConfiguration {
			msg = cd.GetMessage()
		}
	}
	if len(rd.GetOutputs()) != 0 || !strings.Contains(msg, "replicas: conflicting values 3 and 7") ||
		!strings.Contains(msg, "layers/default/env.yaml:4:") || !strings.Contains(msg, "layers/default/web.yaml:9:") {
		t.Fatalf("the conflict renders as %v", rd)
	}
	wait(t, rt)
	if h := srv.Head(t); h != conflict {
		t.Fatalf("a conflict was written over: the head moved from %s to %s", conflict, h)
	}
}
