package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/controller"
	cwasm "github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/runtime"
)

// sentinels are the errors a reconcile's error may wrap, for checking that
// it wraps exactly the expected ones.
var sentinels = []error{
	runtime.ErrInvalidInput, controller.ErrFailed, controller.ErrLimit, controller.ErrInvalid,
	context.DeadlineExceeded, context.Canceled,
}

func checkSentinels(t *testing.T, err error, want ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one wrapping %v", want)
	}
	for _, s := range sentinels {
		wanted := false
		for _, w := range want {
			wanted = wanted || w == s
		}
		if got := errors.Is(err, s); got != wanted {
			t.Errorf("errors.Is(%q, %v) = %t, want %t", err, s, got, wanted)
		}
	}
}

// parse reads a resource as the runtime reads files, or fails the test.
func parse(t testing.TB, data string) *controller.Resource {
	t.Helper()
	r, err := controller.ParseResource([]byte(data))
	if err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return r
}

// marshal writes r as one line of JSON, for comparing resources exactly.
func marshal(t testing.TB, r *controller.Resource) string {
	t.Helper()
	b, err := r.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const (
	bundleWeb    = `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Bundle","metadata":{"namespace":"default","name":"web","resourceVersion":"r1"},"spec":{"selector":{"matchLabels":{"team":"web"}}}}`
	flagDark     = `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","metadata":{"namespace":"default","name":"dark-mode","labels":{"team":"web"},"resourceVersion":"r2"},"spec":{"description":"Dark <colour> & scheme","enabled":false,"rollout":0.1}}`
	flagCheckout = `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","metadata":{"namespace":"default","name":"new-checkout","labels":{"team":"web"}},"spec":{"enabled":true,"rollout":50,"seed":12345678901234567890,"tiny":1e-400}}`
	segmentBeta  = `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Segment","metadata":{"namespace":"default","name":"beta-testers","labels":{"team":"web"}},"spec":{"rules":[{"attribute":"plan","values":["pro","team"]}]}}`
	serviceAPI   = `{"apiVersion":"apps.cup.dev/v1alpha1","kind":"Service","metadata":{"namespace":"default","name":"api"},"spec":{"port":8080}}`
)

func TestFlagBundle(t *testing.T) {
	t.Parallel()
	tr := newTransform(t, "flagbundle", nil)
	req := &runtime.Request{
		Reconciler: "flag-bundles",
		Revision:   "0123456789abcdef0123456789abcdef01234567",
		Primary:    parse(t, bundleWeb),
		Inputs:     []*controller.Resource{parse(t, flagDark), parse(t, flagCheckout), parse(t, segmentBeta)},
		Outputs: []*controller.Resource{parse(t, `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"FlagBundle","metadata":{"namespace":"default","name":"web",`+
			`"annotations":{"cup.dev/owner":"flag-bundles/default/web"}},"spec":{"flags":{},"segments":{}}}`)},
	}
	resp, err := tr.Reconcile(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Outputs) != 1 {
		t.Fatalf("%d outputs, want 1", len(resp.Outputs))
	}
	want := parse(t, `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"FlagBundle","metadata":{"namespace":"default","name":"web"},"spec":`+
		`{"flags":{"dark-mode":{"description":"Dark <colour> & scheme","enabled":false,"rollout":0.1},`+
		`"new-checkout":{"enabled":true,"rollout":50,"seed":12345678901234567890,"tiny":1e-400}},`+
		`"segments":{"beta-testers":{"rules":[{"attribute":"plan","values":["pro","team"]}]}}}}`)
	if got, want := marshal(t, resp.Outputs[0]), marshal(t, want); got != want {
		t.Errorf("output\n%s\nwant\n%s", got, want)
	}
	if len(resp.Conditions) != 0 || resp.RequeueAfter != 0 {
		t.Errorf("conditions %v, requeueAfter %v; want none", resp.Conditions, resp.RequeueAfter)
	}
	// The request is the module's only input: the same request, the same
	// response.
	again, err := tr.Reconcile(t.Context(), req)
	if err != nil || marshal(t, again.Outputs[0]) != marshal(t, resp.Outputs[0]) {
		t.Errorf("a second reconcile gave %v, %v", again, err)
	}
}

func TestFlagBundleInvalidInput(t *testing.T) {
	t.Parallel()
	tr := newTransform(t, "flagbundle", nil)
	_, err := tr.Reconcile(t.Context(), &runtime.Request{
		Reconciler: "flag-bundles",
		Primary:    parse(t, bundleWeb),
		Inputs:     []*controller.Resource{parse(t, serviceAPI), parse(t, flagDark)},
	})
	checkSentinels(t, err, runtime.ErrInvalidInput)
	want := `module "flagbundle": reconcile flag-bundles: invalid input: input apps.cup.dev/v1alpha1 Service "api": a Bundle gathers only Flags and Segments of flags.cup.dev/v1alpha1`
	if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
}

func TestNotAReconciler(t *testing.T) {
	t.Parallel()
	tr := newTransform(t, "flagfile", nil)
	_, err := tr.Reconcile(t.Context(), &runtime.Request{Reconciler: "flag-bundles", Primary: parse(t, bundleWeb)})
	checkSentinels(t, err, controller.ErrFailed)
	if want := `module "flagfile": reconcile flag-bundles: controller failed: exit code 1: unknown verb "reconcile"`; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error\n%s\nwant it to start\n%s", err, want)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	// The memory and output limits are small, and the timeout long enough
	// for the module to reach them on a loaded machine, but for loop's.
	spec := cwasm.Spec{Path: "misbehave.wasm", Timeout: time.Minute, MemoryLimitPages: 128, MaxOutputBytes: 1 << 20}
	tests := []struct {
		mode    string
		timeout time.Duration
		want    []error
		says    string
	}{
		{"loop", time.Second, []error{controller.ErrLimit, context.DeadlineExceeded}, `module "misbehave": reconcile loop: stopped after the 1s timeout`},
		{"alloc", spec.Timeout, []error{controller.ErrLimit}, "ran out of its 8 MiB of memory; its controller's memoryLimitPages (now 128 pages of 64 KiB) raises it"},
		{"flood", spec.Timeout, []error{controller.ErrLimit}, "wrote more than 1048576 bytes to stdout (maxOutputBytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			s := spec
			s.Timeout = tt.timeout
			tr := newTransform(t, "misbehave", &s)
			start := time.Now()
			_, err := tr.Reconcile(t.Context(), &runtime.Request{Reconciler: tt.mode, Primary: parse(t, bundleWeb)})
			if took := time.Since(start); took > tt.timeout+10*time.Second {
				t.Errorf("stopped after %s, want about %s at most", took, tt.timeout)
			}
			checkSentinels(t, err, tt.want...)
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q", err, tt.says)
			}
		})
	}

	t.Run("caller's deadline", func(t *testing.T) {
		t.Parallel()
		tr := newTransform(t, "misbehave", nil)
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err := tr.Reconcile(ctx, &runtime.Request{Reconciler: "loop", Primary: parse(t, bundleWeb)})
		checkSentinels(t, err, context.DeadlineExceeded)
	})
}

// TestRequest: the module gets `reconcile <reconciler>`, the request as
// JSON, no environment and an empty read-only tree.
func TestRequest(t *testing.T) {
	t.Parallel()
	tr := newTransform(t, "misbehave", nil)
	req := &runtime.Request{Reconciler: "echo", Revision: "abc", Primary: parse(t, bundleWeb), Inputs: []*controller.Resource{parse(t, flagCheckout)}}
	resp, err := tr.Reconcile(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	out := resp.Outputs[0]
	wantSpec := `{"reconciler":"echo","revision":"abc","primary":` + bundleWeb + `,"inputs":[` + flagCheckout + `],"outputs":[]}`
	if string(out.Spec) != wantSpec {
		t.Errorf("the module read\n%s\nwant\n%s", out.Spec, wantSpec)
	}
	a := out.Metadata.Annotations
	if a["args"] != "misbehave reconcile echo" || a["env"] != "" || a["root"] != "[] <nil>" || !strings.Contains(strings.ToLower(a["write"]), "read-only file system") {
		t.Errorf("the module saw %q", a)
	}
}

func TestResponses(t *testing.T) {
	t.Parallel()
	tr := newTransform(t, "misbehave", nil)
	const prefix = `module "misbehave": reconcile `
	tests := []struct {
		mode string
		want error  // the sentinel, or nil for success
		says string // the error's message after prefix and the mode
	}{
		{"nothing", nil, ""},
		{"nullspec", nil, ""},
		{"full", nil, ""},
		{"invalidtext", runtime.ErrInvalidInput, ": invalid input: spec.flags is missing"},
		{"invalidjson", runtime.ErrInvalidInput, `: invalid input: flag "x" has no rollout`},
		{"invalidsilent", runtime.ErrInvalidInput, ": invalid input: the module said nothing"},
		{"fail", controller.ErrFailed, ": controller failed: exit code 1: something broke"},
		{"failjson", controller.ErrFailed, ": controller failed: exit code 1: the store is locked"},
		{"exit2", controller.ErrFailed, ": controller failed: exit code 2: the module said nothing"},
		{"panic", controller.ErrFailed, ": controller failed: exit code 2: panic: boom: the reconciler panicked"},
		{"empty", controller.ErrFailed, `: controller failed: invalid response on stdout: the module exited 0 and wrote nothing: a reconcile must write its response, {"outputs": [...]}`},
		{"unknownfield", controller.ErrFailed, `: controller failed: invalid response on stdout: json: unknown field "status"`},
		{"nooutputs", controller.ErrFailed, `: controller failed: invalid response on stdout: no "outputs" array: write "outputs": [] for none`},
		{"nulloutputs", controller.ErrFailed, `: controller failed: invalid response on stdout: no "outputs" array`},
		{"trailing", controller.ErrFailed, ": controller failed: invalid response on stdout: unexpected data after the response"},
		{"notjson", controller.ErrFailed, ": controller failed: invalid response on stdout: unexpected EOF"},
		{"deep", controller.ErrFailed, ": controller failed: invalid response on stdout: "},
		{"notutf8", controller.ErrFailed, ": controller failed: invalid response on stdout: not UTF-8: byte 0xff"},
		{"arrayspec", controller.ErrFailed, ": controller failed: invalid response on stdout: outputs[0]: decoding resource: spec must be a JSON object"},
		{"unknownmeta", controller.ErrFailed, `: controller failed: invalid response on stdout: outputs[0]: decoding resource: json: unknown field "uid"`},
		{"noname", controller.ErrFailed, ": controller failed: invalid response on stdout: outputs[0]: a x.dev/v1 X without a name"},
		{"nokind", controller.ErrFailed, ": controller failed: invalid response on stdout: outputs[0]: no apiVersion or kind"},
		{"twice", controller.ErrFailed, `: controller failed: invalid response on stdout: outputs[1]: x.dev/v1 X "x" of namespace "a" is there twice`},
		{"badstatus", controller.ErrFailed, `: controller failed: invalid response on stdout: conditions[0]: status "Yes" of Published is not True, False or Unknown`},
		{"notype", controller.ErrFailed, ": controller failed: invalid response on stdout: conditions[0]: no type"},
		{"owncondition", controller.ErrFailed, ": controller failed: invalid response on stdout: conditions[0]: Ready is a condition the runtime sets"},
		{"twocondition", controller.ErrFailed, ": controller failed: invalid response on stdout: conditions[1]: A is there twice"},
		{"conditiontime", controller.ErrFailed, `: controller failed: invalid response on stdout: json: unknown field "lastTransitionTime"`},
		{"badrequeue", controller.ErrFailed, `: controller failed: invalid response on stdout: time: invalid duration "soon"`},
		{"negrequeue", controller.ErrFailed, ": controller failed: invalid response on stdout: a duration may not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			resp, err := tr.Reconcile(t.Context(), &runtime.Request{Reconciler: tt.mode, Primary: parse(t, bundleWeb)})
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if resp.Outputs == nil {
					t.Error("Outputs is nil, want a list")
				}
				return
			}
			checkSentinels(t, err, tt.want)
			if want := prefix + tt.mode + tt.says; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error\n%s\nwant it to start\n%s", err, want)
			}
			if strings.Contains(err.Error(), "goroutine ") {
				t.Errorf("error %q holds a goroutine dump", err)
			}
		})
	}
}

// TestResponseIsExact: what a module answers reaches the runtime as it
// wrote it, numbers beyond float64 included; resourceVersion is dropped.
func TestResponseIsExact(t *testing.T) {
	t.Parallel()
	tr := newTransform(t, "misbehave", nil)
	resp, err := tr.Reconcile(t.Context(), &runtime.Request{Reconciler: "full", Primary: parse(t, bundleWeb)})
	if err != nil {
		t.Fatal(err)
	}
	o := resp.Outputs[0]
	got := fmt.Sprintf("%d %s %s %s/%s %s %s", len(resp.Outputs), o.APIVersion, o.Kind, o.Metadata.Namespace, o.Metadata.Name, o.Spec, time.Duration(resp.RequeueAfter))
	want := `1 x.dev/v1 X a/x {"n": 1e400, "s": "<&>"} 1m30s`
	if got != want {
		t.Errorf("response\n%s\nwant\n%s", got, want)
	}
	wantCondition := runtime.Condition{Type: "Published", Status: runtime.False, Reason: "Waiting", Message: "for more flags"}
	if len(resp.Conditions) != 1 || resp.Conditions[0] != wantCondition {
		t.Errorf("conditions %+v, want %+v", resp.Conditions, wantCondition)
	}
	resp, err = tr.Reconcile(t.Context(), &runtime.Request{Reconciler: "nullspec", Primary: parse(t, bundleWeb)})
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Outputs[0]; r.Spec != nil || r.Metadata.ResourceVersion != "" {
		t.Errorf("output spec %q, resourceVersion %q; want none", r.Spec, r.Metadata.ResourceVersion)
	}
}

func TestRequestChecks(t *testing.T) {
	t.Parallel()
	tr := newTransform(t, "misbehave", nil)
	for _, req := range []*runtime.Request{
		nil,
		{Reconciler: "nothing"},
		{Primary: parse(t, bundleWeb)},
		{Reconciler: "a\x00b", Primary: parse(t, bundleWeb)},
	} {
		_, err := tr.Reconcile(t.Context(), req)
		checkSentinels(t, err, controller.ErrInvalid)
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	_, err := wasmNew(t, []byte("not wasm"))
	if err == nil || !strings.HasPrefix(err.Error(), `wasm transform "bad": `) {
		t.Errorf("New = %v, want an error naming the transform", err)
	}
}
