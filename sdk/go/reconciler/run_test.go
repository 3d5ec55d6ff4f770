package reconciler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/sdk/go/reconciler"
)

const bundleJSON = `{"apiVersion":"example.com/v1","kind":"Bundle","metadata":{"namespace":"default","name":"web","resourceVersion":"abc"},"spec":{"ratio":0.1,"big":12345678901234567890}}`

// request is a request for reconciler "bundles" with the primary bundleJSON.
const request = `{"reconciler":"bundles","revision":"0123abc","primary":` + bundleJSON + `,"inputs":[],"outputs":[],"future":"ignored"}`

// copySpec answers one output, a Copy of the primary with its spec.
func copySpec(_ context.Context, req *reconciler.Request) (*reconciler.Response, error) {
	return &reconciler.Response{Outputs: []*reconciler.Resource{{
		APIVersion: "example.com/v1", Kind: "Copy",
		Metadata: reconciler.Metadata{Namespace: req.Primary.Metadata.Namespace, Name: req.Primary.Metadata.Name},
		Spec:     req.Primary.Spec,
	}}}, nil
}

func respond(resp *reconciler.Response, err error) reconciler.HandlerFunc {
	return func(context.Context, *reconciler.Request) (*reconciler.Response, error) { return resp, err }
}

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		stdin   string
		handler reconciler.Handler
		code    int
		stdout  string
		stderr  string
	}{
		{
			name: "exact", args: []string{"reconcile", "bundles"}, stdin: request, handler: reconciler.HandlerFunc(copySpec),
			stdout: `{"outputs":[{"apiVersion":"example.com/v1","kind":"Copy","metadata":{"namespace":"default","name":"web"},"spec":{"ratio":0.1,"big":12345678901234567890}}]}` + "\n",
		},
		{
			name: "nothing", args: []string{"reconcile", "bundles"}, stdin: request, handler: respond(nil, nil),
			stdout: `{"outputs":[]}` + "\n",
		},
		{
			name: "conditions and requeue", args: []string{"reconcile", "bundles"}, stdin: request,
			handler: respond(&reconciler.Response{
				Conditions:   []reconciler.Condition{{Type: "Published", Status: reconciler.True, Reason: "Done", Message: "a <b> & c"}},
				RequeueAfter: 90 * time.Second,
			}, nil),
			stdout: `{"outputs":[],"conditions":[{"type":"Published","status":"True","reason":"Done","message":"a <b> & c"}],"requeueAfter":"1m30s"}` + "\n",
		},
		{
			name: "invalid input", args: []string{"reconcile", "bundles"}, stdin: request,
			handler: respond(nil, reconciler.Invalid("flag %q has no spec", "dark-mode")),
			code:    3, stderr: `{"code":"invalid_input","message":"flag \"dark-mode\" has no spec"}` + "\n",
		},
		{
			name: "wrapped invalid input", args: []string{"reconcile", "bundles"}, stdin: request,
			handler: respond(nil, fmt.Errorf("reading flags: %w", reconciler.ErrInvalidInput)),
			code:    3, stderr: `{"code":"invalid_input","message":"reading flags: invalid input"}` + "\n",
		},
		{
			name: "failure", args: []string{"reconcile", "bundles"}, stdin: request, handler: respond(nil, errors.New("out of luck")),
			code: 1, stderr: "out of luck\n",
		},
		{
			name: "panic", args: []string{"reconcile", "bundles"}, stdin: request,
			handler: reconciler.HandlerFunc(func(context.Context, *reconciler.Request) (*reconciler.Response, error) { panic("boom") }),
			code:    1, stderr: "panic: boom\n",
		},
		{
			name: "nil output", args: []string{"reconcile", "bundles"}, stdin: request,
			handler: respond(&reconciler.Response{Outputs: []*reconciler.Resource{nil}}, nil),
			code:    1, stderr: "the handler returned a nil output (outputs[0])\n",
		},
		{
			name: "spec not an object", args: []string{"reconcile", "bundles"}, stdin: request,
			handler: respond(&reconciler.Response{Outputs: []*reconciler.Resource{{APIVersion: "v1", Kind: "X", Metadata: reconciler.Metadata{Name: "x"}, Spec: json.RawMessage(`[1]`)}}}, nil),
			code:    1, stderr: "the handler returned v1 X \"x\" whose spec is not a JSON object\n",
		},
		{
			name: "negative requeue", args: []string{"reconcile", "bundles"}, stdin: request,
			handler: respond(&reconciler.Response{RequeueAfter: -time.Second}, nil),
			code:    1, stderr: "the handler returned a negative requeueAfter, -1s\n",
		},
		{
			name: "a controller verb", args: []string{"get", "Flag", "default", "x"}, stdin: request, handler: respond(nil, nil),
			code: 1, stderr: `unknown verb "get": this module is a cup reconciler, not a controller; usage: reconcile <reconciler>, with the request as JSON on stdin` + "\n",
		},
		{
			name: "no verb", stdin: request, handler: respond(nil, nil),
			code: 1, stderr: "missing verb; usage: reconcile <reconciler>, with the request as JSON on stdin\n",
		},
		{
			name: "no name", args: []string{"reconcile"}, stdin: request, handler: respond(nil, nil),
			code: 1, stderr: "reconcile takes 1 argument, the reconciler's name, not 0; usage: reconcile <reconciler>, with the request as JSON on stdin\n",
		},
		{
			name: "another reconciler", args: []string{"reconcile", "other"}, stdin: request, handler: respond(nil, nil),
			code: 1, stderr: `the request on stdin is for reconciler "bundles", the arguments name "other"` + "\n",
		},
		{
			name: "no request", args: []string{"reconcile", "bundles"}, handler: respond(nil, nil),
			code: 1, stderr: "reconcile needs the request as JSON on stdin\n",
		},
		{
			name: "not JSON", args: []string{"reconcile", "bundles"}, stdin: "{", handler: respond(nil, nil),
			code: 1, stderr: "decoding the request on stdin: unexpected EOF\n",
		},
		{
			name: "trailing data", args: []string{"reconcile", "bundles"}, stdin: request + "{}", handler: respond(nil, nil),
			code: 1, stderr: "decoding the request on stdin: unexpected data after the request\n",
		},
		{
			name: "no primary", args: []string{"reconcile", "bundles"}, stdin: `{"reconciler":"bundles"}`, handler: respond(nil, nil),
			code: 1, stderr: "the request on stdin has no primary\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr strings.Builder
			code := reconciler.Run(t.Context(), tt.handler, &reconciler.Invocation{
				Args: tt.args, Stdin: strings.NewReader(tt.stdin), Stdout: &stdout, Stderr: &stderr,
			})
			if code != tt.code || stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("Run = %d\nstdout %q\nstderr %q\nwant %d\nstdout %q\nstderr %q", code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}

// TestRunFillsTheRequest: the handler sees the request as sent, the
// reconciler's name taken from the arguments when the request has none.
func TestRunFillsTheRequest(t *testing.T) {
	t.Parallel()
	var got *reconciler.Request
	h := reconciler.HandlerFunc(func(_ context.Context, req *reconciler.Request) (*reconciler.Response, error) {
		got = req
		return nil, nil
	})
	stdin := `{"revision":"r1","primary":` + bundleJSON + `,"inputs":[` + bundleJSON + `]}`
	if code := reconciler.Run(t.Context(), h, &reconciler.Invocation{Args: []string{"reconcile", "bundles"}, Stdin: strings.NewReader(stdin)}); code != 0 {
		t.Fatalf("Run = %d", code)
	}
	if got.Reconciler != "bundles" || got.Revision != "r1" || got.Primary.Metadata.Name != "web" || len(got.Inputs) != 1 || got.Outputs != nil {
		t.Errorf("request = %+v", got)
	}
	if string(got.Primary.Spec) != `{"ratio":0.1,"big":12345678901234567890}` {
		t.Errorf("primary spec = %s, want the bytes sent", got.Primary.Spec)
	}
}

func TestResponseJSON(t *testing.T) {
	t.Parallel()
	in := `{"outputs":[],"conditions":[{"type":"A","status":"False"}],"requeueAfter":"30s"}`
	var r reconciler.Response
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if r.RequeueAfter != 30*time.Second || len(r.Conditions) != 1 || r.Conditions[0].Status != reconciler.False {
		t.Errorf("Unmarshal = %+v", r)
	}
	out, err := json.Marshal(&r)
	if err != nil || string(out) != in {
		t.Errorf("Marshal = %s, %v; want %s", out, err, in)
	}
	if err := json.Unmarshal([]byte(`{"requeueAfter":"soon"}`), &r); err == nil {
		t.Error("Unmarshal of a bad duration succeeded")
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	cause := errors.New("cause")
	err := reconciler.Invalid("flag %s: %w", "x", cause)
	if !errors.Is(err, reconciler.ErrInvalidInput) || !errors.Is(err, cause) || err.Error() != "flag x: cause" {
		t.Errorf("Invalid = %v", err)
	}
}
