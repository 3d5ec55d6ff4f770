package reconciler_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/cup-dev/cup/sdk/go/reconciler"
)

// count answers one output, a Count of the inputs, named after the primary.
func count(_ context.Context, req *reconciler.Request) (*reconciler.Response, error) {
	for _, in := range req.Inputs {
		if in.Kind != "Widget" {
			return nil, reconciler.Invalid("%s %q is not a Widget", in.Kind, in.Metadata.Name)
		}
	}
	return &reconciler.Response{Outputs: []*reconciler.Resource{{
		APIVersion: "example.com/v1",
		Kind:       "Count",
		Metadata:   reconciler.Metadata{Namespace: req.Primary.Metadata.Namespace, Name: req.Primary.Metadata.Name},
		Spec:       fmt.Appendf(nil, `{"widgets":%d}`, len(req.Inputs)),
	}}}, nil
}

// A module's main function is reconciler.Main(reconciler.HandlerFunc(count));
// Run is Main without the process.
func Example() {
	run := func(stdin string) {
		code := reconciler.Run(context.Background(), reconciler.HandlerFunc(count), &reconciler.Invocation{
			Args:   []string{"reconcile", "counts"},
			Stdin:  strings.NewReader(stdin),
			Stdout: os.Stdout,
			Stderr: os.Stdout,
		})
		fmt.Println("exit", code)
	}
	primary := `{"apiVersion":"example.com/v1","kind":"Box","metadata":{"namespace":"default","name":"box"}}`
	run(`{"reconciler":"counts","primary":` + primary + `,"inputs":[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"gear"}}]}`)
	run(`{"reconciler":"counts","primary":` + primary + `,"inputs":[{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"phone"}}]}`)
	// Output:
	// {"outputs":[{"apiVersion":"example.com/v1","kind":"Count","metadata":{"namespace":"default","name":"box"},"spec":{"widgets":1}}]}
	// exit 0
	// {"code":"invalid_input","message":"Gadget \"phone\" is not a Widget"}
	// exit 3
}
