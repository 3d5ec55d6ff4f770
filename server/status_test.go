package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/memsource"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/runtime"
	"github.com/cup-dev/cup/server"
	"github.com/cup-dev/cup/source"
)

var (
	flagType       = controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags"}
	bundleType     = servertest.BundleType
	flagBundleType = servertest.FlagBundleType
	serviceType    = controller.Type{Group: "apps.cup.dev", Version: "v1alpha1", Kind: "Service", Plural: "services"}
)

const (
	bundlePath     = "/apis/flags.cup.dev/v1alpha1/namespaces/default/bundles/web"
	flagBundlePath = "/apis/flags.cup.dev/v1alpha1/namespaces/default/flagbundles/web"
	graphPath      = "/apis/cup.dev/v1alpha1/dependencygraph"
)

// bundles is the reconciler flag-bundles: a FlagBundle per Bundle,
// holding the specs of the flags its selector maps, by name.
func bundles() *runtime.Reconciler {
	return &runtime.Reconciler{
		Name:    "flag-bundles",
		For:     bundleType,
		Watches: []runtime.Watch{{Type: flagType, Mapper: runtime.Mapper{Kind: runtime.MapSelector, Path: "spec.selector"}}},
		Outputs: []runtime.Output{{Type: flagBundleType, Exclusive: true}},
		Transform: runtime.TransformFunc(func(_ context.Context, req *runtime.Request) (*runtime.Response, error) {
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
		}),
		Write: runtime.Write{Mode: runtime.WriteDirect},
	}
}

// audit is a reconciler of flags that writes nothing: it gives the graph
// a second reconciler, a nameAligned mapper and a shared output.
func audit() *runtime.Reconciler {
	return &runtime.Reconciler{
		Name:      "audit",
		For:       flagType,
		Watches:   []runtime.Watch{{Type: serviceType, Mapper: runtime.Mapper{Kind: runtime.MapNameAligned}}},
		Outputs:   []runtime.Output{{Type: serviceType}},
		Transform: runtime.TransformFunc(func(context.Context, *runtime.Request) (*runtime.Response, error) { return &runtime.Response{}, nil }),
		Write:     runtime.Write{Mode: runtime.WriteDirect},
	}
}

// reconciled serves the demo with the bundle types and runs a real
// runtime of rs over it (reading the head every poll, and when a write
// pokes it) until the test ends.
func reconciled(t *testing.T, poll time.Duration, rs []*runtime.Reconciler, opts ...servertest.Option) (*servertest.Server, *runtime.Runtime) {
	t.Helper()
	srv := servertest.Start(t, append([]servertest.Option{servertest.WithBundles()}, opts...)...)
	return srv, servertest.Reconcile(t, srv, rs, runtime.Options{Poll: poll})
}

// within polls cond until it holds, for at most d.
func within(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, got := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s after %s", what, got, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func condition(cs []*cupv1alpha1.Condition, typ string) *cupv1alpha1.Condition {
	for _, c := range cs {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

func statusReq(plural, name, revision string) *cupv1alpha1.GetStatusRequest {
	return &cupv1alpha1.GetStatusRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: plural, Namespace: "default", Name: name, Revision: revision}
}

// converged waits until the bundle web is Ready, and returns the head.
func converged(t *testing.T, srv *servertest.Server) string {
	t.Helper()
	rs := srv.Clients(servertest.Protocols[0]).Resources
	within(t, 10*time.Second, "Ready True", func() (bool, string) {
		res, err := rs.GetStatus(t.Context(), connect.NewRequest(statusReq("bundles", "web", "")))
		if err != nil {
			return false, err.Error()
		}
		c := condition(res.Msg.GetConditions(), runtime.ConditionReady)
		return c != nil && c.GetStatus() == "True" && res.Msg.GetCommit() == srv.Head(t), fmt.Sprint(res.Msg.GetConditions())
	})
	return srv.Head(t)
}

// TestGetStatus: the conditions of a reconciler's primary, derived at the
// commit read, over every protocol: Ready False while the output is to
// be written (at the first commit), True once it is; NotFound for a
// resource that is not there; none for a type no reconciler has.
func TestGetStatus(t *testing.T) {
	t.Parallel()
	srv, _ := reconciled(t, 10*time.Millisecond, []*runtime.Reconciler{bundles()})
	head := converged(t, srv)
	for _, p := range servertest.Protocols {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			rs := srv.Clients(p).Resources
			res, err := rs.GetStatus(t.Context(), connect.NewRequest(statusReq("bundles", "web", "")))
			if err != nil {
				t.Fatal(err)
			}
			if res.Msg.GetCommit() != head {
				t.Errorf("commit %s, want the head %s", res.Msg.GetCommit(), head)
			}
			for _, typ := range []string{runtime.ConditionReady, runtime.ConditionConverged} {
				c := condition(res.Msg.GetConditions(), typ)
				if c == nil || c.GetStatus() != "True" || c.GetReason() != "Converged" || c.GetReconciler() != "flag-bundles" || c.GetObservedRevision() != head {
					t.Fatalf("%s: %v, want True, Converged, of flag-bundles at %s", typ, c, head)
				}
				if _, err := time.Parse(time.RFC3339, c.GetLastTransitionTime()); err != nil {
					t.Errorf("lastTransitionTime %q: %v", c.GetLastTransitionTime(), err)
				}
			}

			// At the first commit the output was yet to be written.
			res, err = rs.GetStatus(t.Context(), connect.NewRequest(statusReq("bundles", "web", srv.Initial)))
			if err != nil {
				t.Fatal(err)
			}
			if c := condition(res.Msg.GetConditions(), runtime.ConditionReady); c == nil || c.GetStatus() != "False" || c.GetReason() != "Pending" || c.GetObservedRevision() != srv.Initial {
				t.Errorf("Ready at the first commit: %v, want False, Pending, at %s", c, srv.Initial)
			}

			_, err = rs.GetStatus(t.Context(), connect.NewRequest(statusReq("bundles", "nothing", "")))
			if connect.CodeOf(err) != connect.CodeNotFound {
				t.Errorf("a missing bundle: %v, want not_found", err)
			}
			res, err = rs.GetStatus(t.Context(), connect.NewRequest(statusReq("flags", "dark-mode", "")))
			if err != nil || len(res.Msg.GetConditions()) != 0 || res.Msg.GetCommit() != head {
				t.Errorf("a flag, which no reconciler has: %v %v, want no conditions at %s", res, err, head)
			}
			_, err = rs.GetStatus(t.Context(), connect.NewRequest(statusReq("flags", "Bad_Name", "")))
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Errorf("a bad name: %v, want invalid_argument", err)
			}
		})
	}
}

// TestGetStatusREST: the /status subresource answers {"conditions":
// [...]} and the commit in Cup-Commit, at any revision; 404 for a
// missing resource; an empty list for a type no reconciler has.
func TestGetStatusREST(t *testing.T) {
	t.Parallel()
	srv, _ := reconciled(t, 10*time.Millisecond, []*runtime.Reconciler{bundles()})
	head := converged(t, srv)
	conditions := func(r servertest.Response) []map[string]any {
		t.Helper()
		var body struct {
			Conditions []map[string]any `json:"conditions"`
		}
		dec := json.NewDecoder(strings.NewReader(r.Body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil || body.Conditions == nil {
			t.Fatalf("%s: %v, want {\"conditions\": [...]}", r.Body, err)
		}
		return body.Conditions
	}
	r := srv.Do(t, "GET", bundlePath+"/status", "")
	if r.Status != http.StatusOK || r.Header.Get("Cup-Commit") != head || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET status: %d %v %s", r.Status, r.Header, r.Body)
	}
	ready := conditions(r)[0]
	if ready["type"] != "Ready" || ready["status"] != "True" || ready["reason"] != "Converged" || ready["reconciler"] != "flag-bundles" ||
		ready["observedRevision"] != head || ready["lastTransitionTime"] == nil || ready["message"] == nil {
		t.Errorf("first condition %v, want Ready True in Kubernetes' shape", ready)
	}

	r = srv.Do(t, "GET", bundlePath+"/status?revision="+srv.Initial, "")
	if r.Status != http.StatusOK || r.Header.Get("Cup-Commit") != srv.Initial {
		t.Fatalf("GET status at the first commit: %d %s", r.Status, r.Body)
	}
	if c := conditions(r)[0]; c["type"] != "Ready" || c["status"] != "False" {
		t.Errorf("at the first commit %v, want Ready False", c)
	}

	r = srv.Do(t, "GET", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/dark-mode/status", "")
	if r.Status != http.StatusOK || len(conditions(r)) != 0 {
		t.Errorf("a flag's status: %d %s, want no conditions", r.Status, r.Body)
	}
	for _, path := range []string{
		"/apis/flags.cup.dev/v1alpha1/namespaces/default/bundles/nothing/status",
		"/apis/flags.cup.dev/v1alpha1/namespaces/default/nothings/web/status",
	} {
		if r := srv.Do(t, "GET", path, ""); r.Status != http.StatusNotFound || !strings.Contains(r.Body, `"not_found"`) {
			t.Errorf("GET %s = %d %s, want a JSON 404", path, r.Status, r.Body)
		}
	}
	if r := srv.Do(t, "GET", bundlePath+"/status?until=main", ""); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "until") {
		t.Errorf("an unknown parameter: %d %s, want 400 naming it", r.Status, r.Body)
	}
}

// TestGetCarriesStatus: a Get of a reconciler's primary carries its
// status (GetResponse.status; at the top level of the REST form's
// object), and a Get of any other type none.
func TestGetCarriesStatus(t *testing.T) {
	t.Parallel()
	srv, _ := reconciled(t, 10*time.Millisecond, []*runtime.Reconciler{bundles()})
	head := converged(t, srv)
	for _, p := range servertest.Protocols {
		rs := srv.Clients(p).Resources
		res, err := rs.Get(t.Context(), connect.NewRequest(&cupv1alpha1.GetRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "bundles", Namespace: "default", Name: "web"}))
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if c := condition(res.Msg.GetStatus().GetConditions(), runtime.ConditionReady); c == nil || c.GetStatus() != "True" || c.GetObservedRevision() != head {
			t.Errorf("%s: status %v, want Ready True at %s", p.Name, res.Msg.GetStatus(), head)
		}
		res, err = rs.Get(t.Context(), connect.NewRequest(getReq("dark-mode", "")))
		if err != nil || res.Msg.GetStatus() != nil {
			t.Errorf("%s: a flag's Get: %v %v, want no status", p.Name, res, err)
		}
	}

	r := srv.Do(t, "GET", bundlePath, "")
	var obj map[string]any
	if err := json.Unmarshal([]byte(r.Body), &obj); err != nil || r.Status != http.StatusOK {
		t.Fatalf("GET: %d %s: %v", r.Status, r.Body, err)
	}
	st, _ := obj["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	if len(conds) == 0 || conds[0].(map[string]any)["type"] != "Ready" || conds[0].(map[string]any)["status"] != "True" {
		t.Fatalf("status %v, want {\"conditions\": [Ready True, ...]}", obj["status"])
	}
	md := obj["metadata"].(map[string]any)
	if r.Header.Get("ETag") != `"`+md["resourceVersion"].(string)+`"` || obj["spec"] == nil || obj["kind"] != "Bundle" {
		t.Errorf("the resource around its status changed: ETag %s, %v", r.Header.Get("ETag"), obj)
	}
	if r := srv.Do(t, "GET", flagsPath+"/dark-mode", ""); strings.Contains(r.Body, `"status"`) {
		t.Errorf("a flag's GET has a status: %s", r.Body)
	}
}

// TestPutWithStatusIsRefused: status is never written. A REST PUT of what
// a GET answered, status and all, is refused as any unknown field is,
// and writes nothing; without the status it is the write it always was.
// Connect's JSON refuses it in the resource, as any field Resource lacks.
func TestPutWithStatusIsRefused(t *testing.T) {
	t.Parallel()
	srv, _ := reconciled(t, 10*time.Millisecond, []*runtime.Reconciler{bundles()})
	head := converged(t, srv)
	got := srv.Do(t, "GET", bundlePath, "")
	r := srv.Do(t, "PUT", bundlePath, got.Body)
	if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, `"invalid_argument"`) || !strings.Contains(r.Body, `unknown field \"status\"`) {
		t.Fatalf("PUT with a status: %d %s, want 400 naming the unknown field", r.Status, r.Body)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(got.Body), &obj); err != nil {
		t.Fatal(err)
	}
	delete(obj, "status")
	b, _ := json.Marshal(obj)
	if r := srv.Do(t, "PUT", bundlePath, string(b)); r.Status != http.StatusNoContent {
		t.Fatalf("PUT without the status: %d %s, want 204 (unchanged)", r.Status, r.Body)
	}
	body := `{"group":"flags.cup.dev","version":"v1alpha1","plural":"bundles","namespace":"default","name":"web",` +
		`"resource":{"spec":{},"status":{"conditions":[]}},"dryRun":true}`
	r = srv.Do(t, "POST", "/cup.v1alpha1.ResourceService/Put", body, "Content-Type", "application/json")
	if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "status") {
		t.Fatalf("Connect Put with a status: %d %s, want 400 naming it", r.Status, r.Body)
	}
	if h := srv.Head(t); h != head {
		t.Fatalf("a refused put moved the head from %s to %s", head, h)
	}
}

// TestWritesPokeTheReconcilers: the runtime reads the head an hour apart,
// yet the output of a PUT's input follows within a second: the write
// pokes it.
func TestWritesPokeTheReconcilers(t *testing.T) {
	t.Parallel()
	srv, _ := reconciled(t, time.Hour, []*runtime.Reconciler{bundles()})
	flags := func() (bool, string) {
		r := srv.Do(t, "GET", flagBundlePath, "")
		var obj struct {
			Spec struct {
				Flags map[string]any `json:"flags"`
			} `json:"spec"`
		}
		if r.Status != http.StatusOK || json.Unmarshal([]byte(r.Body), &obj) != nil {
			return false, fmt.Sprint(r.Status)
		}
		names := make([]string, 0, len(obj.Spec.Flags))
		for n := range obj.Spec.Flags {
			names = append(names, n)
		}
		slices.Sort(names)
		return slices.Contains(names, "search-v2"), strings.Join(names, ",")
	}
	// The runtime reads the head once as it starts, and writes the bundle.
	within(t, 10*time.Second, "the first bundle", func() (bool, string) { _, got := flags(); return got == "dark-mode", got })
	put := srv.Do(t, "PUT", flagsPath+"/search-v2", `{"metadata": {"labels": {"team": "web"}}, "spec": {"enabled": true}}`)
	if put.Status != http.StatusAccepted {
		t.Fatalf("PUT: %d %s", put.Status, put.Body)
	}
	within(t, time.Second, "the flag labelled into the bundle", flags)
}

// TestGetDependencyGraph: the reconcilers' edges over every protocol and
// the REST form, sorted by reconciler, kind and type; with a policy, only
// those of the types the caller may see.
func TestGetDependencyGraph(t *testing.T) {
	t.Parallel()
	srv, _ := reconciled(t, 10*time.Millisecond, []*runtime.Reconciler{bundles(), audit()})
	want := []string{
		"audit EDGE_KIND_PRIMARY flags.cup.dev/v1alpha1/Flag/flags ",
		"audit EDGE_KIND_MAPPED apps.cup.dev/v1alpha1/Service/services nameAligned",
		"audit EDGE_KIND_OUTPUT_SHARED apps.cup.dev/v1alpha1/Service/services ",
		"flag-bundles EDGE_KIND_PRIMARY flags.cup.dev/v1alpha1/Bundle/bundles ",
		"flag-bundles EDGE_KIND_MAPPED flags.cup.dev/v1alpha1/Flag/flags selector",
		"flag-bundles EDGE_KIND_OUTPUT_EXCLUSIVE flags.cup.dev/v1alpha1/FlagBundle/flagbundles ",
	}
	edges := func(es []*cupv1alpha1.DependencyEdge) []string {
		var out []string
		for _, e := range es {
			out = append(out, fmt.Sprintf("%s %s %s/%s/%s/%s %s", e.GetReconciler(), e.GetEdgeKind(), e.GetGroup(), e.GetVersion(), e.GetKind(), e.GetPlural(), e.GetMapper()))
		}
		return out
	}
	for _, p := range servertest.Protocols {
		res, err := srv.Clients(p).Discovery.GetDependencyGraph(t.Context(), connect.NewRequest(&cupv1alpha1.GetDependencyGraphRequest{}))
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if got := edges(res.Msg.GetEdges()); !slices.Equal(got, want) {
			t.Errorf("%s: edges\n%s\nwant\n%s", p.Name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	r := srv.Do(t, "GET", graphPath, "")
	var res cupv1alpha1.GetDependencyGraphResponse
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", graphPath, r.Status, r.Body)
	}
	if err := protojson.Unmarshal([]byte(r.Body), &res); err != nil {
		t.Fatal(err)
	}
	if got := edges(res.GetEdges()); !slices.Equal(got, want) {
		t.Errorf("REST edges\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r := srv.Do(t, "GET", graphPath+"?x=1", ""); r.Status != http.StatusBadRequest {
		t.Errorf("GET %s?x=1 = %d, want 400", graphPath, r.Status)
	}
	// Without reconcilers, an empty graph.
	plain := servertest.Start(t)
	if r := plain.Do(t, "GET", graphPath, ""); r.Status != http.StatusOK || r.Body != "{}" {
		t.Errorf("GET %s without reconcilers = %d %s, want {}", graphPath, r.Status, r.Body)
	}
}

// TestGetDependencyGraphShowsVisibleTypes: with a policy, the graph shows
// the edges of the types the caller may see, as discovery shows types.
func TestGetDependencyGraphShowsVisibleTypes(t *testing.T) {
	t.Parallel()
	srv, _ := reconciled(t, 10*time.Millisecond, []*runtime.Reconciler{bundles(), audit()},
		servertest.WithServerOptions(server.WithAuthorization(userAuthn{}, flagsOnly{})))
	for _, tc := range []struct {
		user string
		want []string
	}{
		{"flagger", []string{"audit EDGE_KIND_PRIMARY flags", "flag-bundles EDGE_KIND_MAPPED flags"}},
		{"admin", []string{
			"audit EDGE_KIND_PRIMARY flags", "audit EDGE_KIND_MAPPED services", "audit EDGE_KIND_OUTPUT_SHARED services",
			"flag-bundles EDGE_KIND_PRIMARY bundles", "flag-bundles EDGE_KIND_MAPPED flags", "flag-bundles EDGE_KIND_OUTPUT_EXCLUSIVE flagbundles",
		}},
		{"nobody", nil},
	} {
		req := connect.NewRequest(&cupv1alpha1.GetDependencyGraphRequest{})
		req.Header().Set("Authorization", "Bearer "+tc.user)
		res, err := srv.Clients(servertest.Protocols[0]).Discovery.GetDependencyGraph(t.Context(), req)
		if err != nil {
			t.Fatalf("%s: %v", tc.user, err)
		}
		var got []string
		for _, e := range res.Msg.GetEdges() {
			got = append(got, e.GetReconciler()+" "+e.GetEdgeKind().String()+" "+e.GetPlural())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s sees %q, want %q", tc.user, got, tc.want)
		}
	}
	if r := srv.Do(t, "GET", graphPath, ""); r.Status != http.StatusUnauthorized {
		t.Errorf("GET %s without credentials = %d, want 401", graphPath, r.Status)
	}
}

// userAuthn takes the bearer token for the user's name.
type userAuthn struct{}

func (userAuthn) Authenticate(r *http.Request) (*auth.Identity, error) {
	user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || user == "" {
		return nil, auth.Unauthenticatedf("no credentials")
	}
	return &auth.Identity{User: user, Method: auth.MethodToken}, nil
}

// flagsOnly lets admin do everything, flagger anything with flags, and
// nobody nothing.
type flagsOnly struct{}

func (p flagsOnly) Allowed(id *auth.Identity, a auth.Attributes) bool {
	return p.Visible(id, a.Group, a.Plural)
}

func (flagsOnly) Visible(id *auth.Identity, group, plural string) bool {
	return id.User == "admin" || id.User == "flagger" && group == "flags.cup.dev" && plural == "flags"
}

// failing is a runtime whose Status fails with err: flags are its
// primary.
type failing struct{ err error }

func (f failing) Status(context.Context, string, controller.Type, string, string) ([]runtime.Condition, error) {
	return nil, f.err
}

func (failing) Graph() []runtime.Edge {
	return []runtime.Edge{{Reconciler: "broken", Type: flagType, Kind: runtime.EdgePrimary}}
}

func (failing) Poke()                                {}
func (failing) PokeChangeSet(string, string, string) {}

func (f failing) Render(context.Context, string, controller.Type, string, string) ([]runtime.Rendering, error) {
	return nil, f.err
}

// TestStatusCallsGoThroughTheChain: status and graph calls are counted
// under their RPC, over Connect and the REST form, carry a request id,
// and a runtime's error maps as any other (a source out of reach is
// Unavailable, anything unknown Internal with a fixed message); a Get
// answers without the status it could not derive.
func TestStatusCallsGoThroughTheChain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		err    error
		code   connect.Code
		status int
	}{
		{"unavailable", fmt.Errorf("reading flags: %w", source.ErrUnavailable), connect.CodeUnavailable, http.StatusServiceUnavailable},
		{"internal", errors.New("boom"), connect.CodeInternal, http.StatusInternalServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			srv := servertest.Start(t, servertest.WithServerOptions(server.WithMetrics(reg)))
			srv.Server.SetReconcilers(failing{tc.err})
			rs := srv.Clients(servertest.Protocols[0]).Resources
			_, err := rs.GetStatus(t.Context(), connect.NewRequest(statusReq("flags", "dark-mode", "")))
			if connect.CodeOf(err) != tc.code || tc.code == connect.CodeInternal && strings.Contains(err.Error(), "boom") {
				t.Errorf("GetStatus: %v, want %v", err, tc.code)
			}
			r := srv.Do(t, "GET", flagsPath+"/dark-mode/status", "")
			if r.Status != tc.status || r.Header.Get("X-Request-Id") == "" || !strings.Contains(r.Body, `"`+tc.code.String()+`"`) {
				t.Errorf("GET status: %d %v %s, want %d with a request id", r.Status, r.Header, r.Body, tc.status)
			}
			res, err := rs.Get(t.Context(), connect.NewRequest(getReq("dark-mode", "")))
			if err != nil || res.Msg.GetStatus() != nil {
				t.Errorf("Get: %v %v, want the flag without a status", res, err)
			}
			if r := srv.Do(t, "GET", flagsPath+"/dark-mode", ""); r.Status != http.StatusOK || strings.Contains(r.Body, `"status"`) {
				t.Errorf("REST GET: %d %s, want the flag without a status", r.Status, r.Body)
			}
			if r := srv.Do(t, "GET", graphPath, ""); r.Status != http.StatusOK || !strings.Contains(r.Body, `"broken"`) {
				t.Errorf("GET graph: %d %s", r.Status, r.Body)
			}
			for _, c := range []struct{ procedure, form, code string }{
				{"/cup.v1alpha1.ResourceService/GetStatus", "connect", tc.code.String()},
				{"/cup.v1alpha1.ResourceService/GetStatus", "rest", tc.code.String()},
				{"/cup.v1alpha1.DiscoveryService/GetDependencyGraph", "rest", "ok"},
			} {
				labels := map[string]string{"procedure": c.procedure, "form": c.form, "code": c.code}
				if got := series(t, reg, "cup_server_handled_total", labels); got != 1 {
					t.Errorf("cup_server_handled_total%v = %v, want 1", labels, got)
				}
			}
		})
	}
}

// pokes records what the server tells a runtime after writes.
type pokes struct {
	failing
	mu  sync.Mutex
	got []string
}

func (p *pokes) Poke() { p.add("served") }

func (p *pokes) PokeChangeSet(name, base, commit string) {
	p.add(fmt.Sprintf("change set %s %.7s..%.7s", name, base, commit))
}

func (p *pokes) add(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, s)
}

func (p *pokes) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	got := p.got
	p.got = nil
	return got
}

// TestWritesTellTheReconcilersWhere: a commit on the served branch pokes
// the runtime, one in a change set (made for the write, in branch mode,
// or named by it) names the change set with the commit and its parent, and
// one on another branch, an unchanged write and a dry run tell nothing.
func TestWritesTellTheReconcilersWhere(t *testing.T) {
	t.Parallel()
	put := func(t *testing.T, srv *servertest.Server, query string, rollout int) (int, map[string]any) {
		t.Helper()
		r := srv.Do(t, "PUT", flagsPath+"/dark-mode"+query, fmt.Sprintf(`{"spec": {"enabled": true, "rollout": %d}}`, rollout))
		var body struct{ Result map[string]any }
		_ = json.Unmarshal([]byte(r.Body), &body)
		return r.Status, body.Result
	}
	short := func(v any) string { s, _ := v.(string); return s[:min(7, len(s))] }

	t.Run("direct", func(t *testing.T) {
		t.Parallel()
		srv := servertest.Start(t)
		p := &pokes{}
		srv.Server.SetReconcilers(p)
		if err := srv.Repo.Branch("other", "main"); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			query   string
			rollout int
			want    []string
		}{
			{"", 1, []string{"served"}},
			{"?revision=main", 2, []string{"served"}},
			{"?revision=other", 3, nil},
			{"", 2, nil},             // unchanged
			{"?dryRun=true", 4, nil}, // nothing committed
		} {
			if status, res := put(t, srv, tc.query, tc.rollout); status/100 != 2 {
				t.Fatalf("PUT%s: %d %v", tc.query, status, res)
			}
			if got := p.take(); !slices.Equal(got, tc.want) {
				t.Errorf("PUT%s told %q; want %q", tc.query, got, tc.want)
			}
		}
	})

	t.Run("branch", func(t *testing.T) {
		t.Parallel()
		srv := servertest.Start(t, servertest.WithSourceOptions(memsource.WithWriteMode(source.ModeBranch)))
		p := &pokes{}
		srv.Server.SetReconcilers(p)
		_, res := put(t, srv, "", 1)
		cs := res["branch"].(string)
		want := []string{fmt.Sprintf("change set %s %s..%s", cs, short(res["baseCommit"]), short(res["commit"]))}
		if got := p.take(); !slices.Equal(got, want) {
			t.Errorf("a new change set told %q; want %q", got, want)
		}
		_, res = put(t, srv, "?changeSet="+cs, 2)
		want = []string{fmt.Sprintf("change set %s %s..%s", cs, short(res["baseCommit"]), short(res["commit"]))}
		if got := p.take(); !slices.Equal(got, want) {
			t.Errorf("a write into the change set told %q; want %q", got, want)
		}
	})
}

// notFlagBundles lets anyone do anything but read flag bundles.
type notFlagBundles struct{}

func (notFlagBundles) Allowed(_ *auth.Identity, a auth.Attributes) bool {
	return a.Plural != "flagbundles"
}

func (notFlagBundles) Visible(_ *auth.Identity, _, plural string) bool {
	return plural != "flagbundles"
}

// TestRenderHidesWhatTheCallerMayNotRead: a rendering leaves out, and
// counts, the outputs of types the caller may not get; without a policy it
// has them all, and a resource that is not there is NotFound.
func TestRenderHidesWhatTheCallerMayNotRead(t *testing.T) {
	t.Parallel()
	req := func() *connect.Request[cupv1alpha1.RenderRequest] {
		r := connect.NewRequest(&cupv1alpha1.RenderRequest{Group: bundleType.Group, Version: bundleType.Version, Plural: bundleType.Plural,
			Namespace: "default", Name: "web"})
		r.Header().Set("Authorization", "Bearer reader")
		return r
	}
	srv, _ := reconciled(t, 10*time.Millisecond, []*runtime.Reconciler{bundles()},
		servertest.WithServerOptions(server.WithAuthorization(userAuthn{}, notFlagBundles{})))
	res, err := srv.Clients(servertest.Protocols[0]).Resources.Render(t.Context(), req())
	if err != nil {
		t.Fatal(err)
	}
	if rd := res.Msg.GetRenderings(); len(rd) != 1 || len(rd[0].GetOutputs()) != 0 || rd[0].GetHiddenOutputs() != 1 {
		t.Fatalf("a reader of bundles but not flag bundles got %v", res.Msg)
	}

	open, _ := reconciled(t, 10*time.Millisecond, []*runtime.Reconciler{bundles()})
	res, err = open.Clients(servertest.Protocols[0]).Resources.Render(t.Context(), req())
	if err != nil {
		t.Fatal(err)
	}
	if rd := res.Msg.GetRenderings(); len(rd) != 1 || len(rd[0].GetOutputs()) != 1 || rd[0].GetOutputs()[0].GetKind() != "FlagBundle" || rd[0].GetHiddenOutputs() != 0 {
		t.Fatalf("without a policy: %v", res.Msg)
	}
	missing := req()
	missing.Msg.Name = "nope"
	if _, err := open.Clients(servertest.Protocols[0]).Resources.Render(t.Context(), missing); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("render of a missing bundle: %v, want NotFound", err)
	}
	if r := open.Do(t, "GET", bundlePath+"/render", ""); r.Status != 200 || !strings.Contains(r.Body, `"reconciler":"flag-bundles"`) {
		t.Fatalf("GET %s/render = %d %s", bundlePath, r.Status, r.Body)
	}
}
