package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cup-dev/cup/sdk/go/reconciler"
)

func resource(kind, namespace, name, spec string) *reconciler.Resource {
	r := &reconciler.Resource{APIVersion: apiVersion, Kind: kind, Metadata: reconciler.Metadata{Namespace: namespace, Name: name}}
	if spec != "" {
		r.Spec = json.RawMessage(spec)
	}
	return r
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	bundle := resource(kindBundle, "default", "web", `{"selector":{"matchLabels":{"team":"web"}}}`)
	tests := []struct {
		name    string
		primary *reconciler.Resource
		inputs  []*reconciler.Resource
		spec    string // of the one FlagBundle
		invalid string // part of the message of an ErrInvalidInput
		failed  string // part of the message of another error
	}{
		{
			name:    "flags and segments",
			primary: bundle,
			inputs: []*reconciler.Resource{
				resource(kindFlag, "default", "new-checkout", `{"enabled":true,"rollout":0.1,"seed":12345678901234567890}`),
				resource(kindFlag, "default", "dark-mode", `{"description":"<Dark> & light","enabled":false}`),
				resource(kindSegment, "default", "internal", `{"rules":[{"attribute":"email_domain","values":["example.com"]}]}`),
			},
			spec: `{"flags":{"dark-mode":{"description":"<Dark> & light","enabled":false},"new-checkout":{"enabled":true,"rollout":0.1,"seed":12345678901234567890}},` +
				`"segments":{"internal":{"rules":[{"attribute":"email_domain","values":["example.com"]}]}}}`,
		},
		{
			name:    "nothing selected",
			primary: resource(kindBundle, "default", "empty", ""),
			spec:    `{"flags":{},"segments":{}}`,
		},
		{
			name:    "no spec",
			primary: bundle,
			inputs:  []*reconciler.Resource{resource(kindFlag, "default", "bare", ""), resource(kindSegment, "default", "null", "null")},
			spec:    `{"flags":{"bare":{}},"segments":{"null":{}}}`,
		},
		{
			name:    "another kind",
			primary: bundle,
			inputs:  []*reconciler.Resource{resource("Service", "default", "api", `{}`)},
			invalid: `input flags.cup.dev/v1alpha1 Service "api": a Bundle gathers only Flags and Segments`,
		},
		{
			name:    "another group",
			primary: bundle,
			inputs:  []*reconciler.Resource{{APIVersion: "other.dev/v1", Kind: kindFlag, Metadata: reconciler.Metadata{Name: "x"}}},
			invalid: `input other.dev/v1 Flag "x"`,
		},
		{
			name:    "two flags of a name",
			primary: bundle,
			inputs:  []*reconciler.Resource{resource(kindFlag, "default", "x", `{}`), resource(kindFlag, "staging", "x", `{}`)},
			invalid: `two Flags named "x" among the inputs (the second in namespace "staging")`,
		},
		{
			name:    "not a bundle",
			primary: resource(kindFlag, "default", "x", ""),
			failed:  "the primary is a flags.cup.dev/v1alpha1 Flag: this module reconciles flags.cup.dev/v1alpha1 Bundle",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, err := reconcile(context.Background(), &reconciler.Request{Reconciler: "bundles", Primary: tt.primary, Inputs: tt.inputs})
			switch {
			case tt.invalid != "":
				if !errors.Is(err, reconciler.ErrInvalidInput) || !strings.Contains(err.Error(), tt.invalid) {
					t.Fatalf("reconcile = %v, want invalid input saying %q", err, tt.invalid)
				}
				return
			case tt.failed != "":
				if err == nil || errors.Is(err, reconciler.ErrInvalidInput) || !strings.Contains(err.Error(), tt.failed) {
					t.Fatalf("reconcile = %v, want a failure saying %q", err, tt.failed)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if len(resp.Outputs) != 1 {
				t.Fatalf("%d outputs, want 1", len(resp.Outputs))
			}
			out := resp.Outputs[0]
			if out.APIVersion != apiVersion || out.Kind != kindFlagBundle || out.Metadata.Namespace != tt.primary.Metadata.Namespace ||
				out.Metadata.Name != tt.primary.Metadata.Name || out.Metadata.Labels != nil || out.Metadata.Annotations != nil {
				t.Errorf("output %s %s %s/%s %v %v, want the FlagBundle of the primary", out.APIVersion, out.Kind,
					out.Metadata.Namespace, out.Metadata.Name, out.Metadata.Labels, out.Metadata.Annotations)
			}
			if string(out.Spec) != tt.spec {
				t.Errorf("spec\n%s\nwant\n%s", out.Spec, tt.spec)
			}
			if len(resp.Conditions) != 0 || resp.RequeueAfter != 0 {
				t.Errorf("conditions %v, requeueAfter %s; want none", resp.Conditions, resp.RequeueAfter)
			}
		})
	}
}

// TestRun runs the module's handler as Main does, with the protocol's
// JSON and exit codes.
func TestRun(t *testing.T) {
	t.Parallel()
	stdin := `{"reconciler":"bundles","revision":"abc","primary":{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Bundle","metadata":{"namespace":"default","name":"web"}},` +
		`"inputs":[{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","metadata":{"namespace":"default","name":"f"},"spec":{"rollout":0.1}}],"outputs":[]}`
	var stdout, stderr strings.Builder
	code := reconciler.Run(t.Context(), reconciler.HandlerFunc(reconcile), &reconciler.Invocation{
		Args: []string{"reconcile", "bundles"}, Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr,
	})
	want := `{"outputs":[{"apiVersion":"flags.cup.dev/v1alpha1","kind":"FlagBundle","metadata":{"namespace":"default","name":"web"},"spec":{"flags":{"f":{"rollout":0.1}},"segments":{}}}]}` + "\n"
	if code != 0 || stdout.String() != want || stderr.String() != "" {
		t.Errorf("Run = %d\nstdout %s\nstderr %s\nwant 0\nstdout %s", code, stdout.String(), stderr.String(), want)
	}
}
