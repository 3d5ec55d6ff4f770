package reconciler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cup-dev/cup/sdk/go/controller"
)

// Resource is an API resource, as controllers exchange them:
//
//	{"apiVersion": "...", "kind": "...", "metadata": {...}, "spec": {...}}
//
// Its spec is raw JSON, so that numbers and key order pass through a
// module unchanged.
type Resource = controller.Resource

// Metadata names and describes a resource.
type Metadata = controller.Metadata

// ErrInvalidInput reports inputs the handler cannot reconcile, such as a
// field it needs that is missing. A handler's error wrapping it makes the
// module exit with code 3: cupd reports InvalidInput and does not retry
// until an input changes.
var ErrInvalidInput = errors.New("invalid input")

// Invalid returns an error wrapping [ErrInvalidInput] whose message is
// fmt.Sprintf(format, args...), without the sentinel's own text. A %w verb
// wraps its argument as in [fmt.Errorf].
func Invalid(format string, args ...any) error {
	return &invalidError{err: fmt.Errorf(format, args...)}
}

type invalidError struct{ err error }

func (e *invalidError) Error() string   { return e.err.Error() }
func (e *invalidError) Unwrap() []error { return []error{ErrInvalidInput, e.err} }

// Request is what a reconcile reads from stdin.
type Request struct {
	// Reconciler is the name of the Reconciler configuration, as in the
	// arguments.
	Reconciler string `json:"reconciler"`
	// Revision is the commit the inputs were read at.
	Revision string `json:"revision"`
	// Primary is the resource reconciled; never nil.
	Primary *Resource `json:"primary"`
	// Inputs are the resources the reconciler's mappers relate to the
	// primary, sorted by apiVersion, kind, namespace and name.
	Inputs []*Resource `json:"inputs"`
	// Outputs are the outputs the reconciler wrote for the primary before,
	// sorted the same way. A handler may ignore them.
	Outputs []*Resource `json:"outputs"`
}

// Response is what a reconcile answers on stdout.
type Response struct {
	// Outputs are every output the primary should have: cupd writes those
	// that differ from the repository and deletes the primary's earlier
	// outputs that are not among them, so none means delete them all. Each
	// needs an apiVersion, a kind, a name and (for namespaced types) a
	// namespace, and must be of a type the reconciler declares.
	Outputs []*Resource
	// Conditions the handler reports besides cupd's own (Ready,
	// Converged, InvalidInput, TransformFailed, Conflict).
	Conditions []Condition
	// RequeueAfter asks for another reconcile of the primary after a
	// while; zero asks for none. It may not be negative.
	RequeueAfter time.Duration
}

// response is the JSON form of a Response.
type response struct {
	Outputs      []*Resource `json:"outputs"`
	Conditions   []Condition `json:"conditions,omitempty"`
	RequeueAfter string      `json:"requeueAfter,omitempty"`
}

// MarshalJSON writes r in the protocol's form: outputs always an array,
// requeueAfter as a Go duration string ("30s") and left out when zero.
func (r Response) MarshalJSON() ([]byte, error) {
	if r.RequeueAfter < 0 {
		return nil, fmt.Errorf("requeueAfter %s is negative", r.RequeueAfter)
	}
	w := response{Outputs: r.Outputs, Conditions: r.Conditions}
	if w.Outputs == nil {
		w.Outputs = []*Resource{}
	}
	if r.RequeueAfter > 0 {
		w.RequeueAfter = r.RequeueAfter.String()
	}
	b, err := encode(w)
	return bytes.TrimSuffix(b, []byte("\n")), err
}

// UnmarshalJSON reads the protocol's form of a response.
func (r *Response) UnmarshalJSON(b []byte) error {
	var w response
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Response{Outputs: w.Outputs, Conditions: w.Conditions}
	if w.RequeueAfter != "" {
		d, err := time.ParseDuration(w.RequeueAfter)
		if err != nil {
			return fmt.Errorf("requeueAfter: %w", err)
		}
		r.RequeueAfter = d
	}
	return nil
}

// Condition is a status condition of a (reconciler, primary) pair, in
// Kubernetes' shape. cupd sets when it was observed and last changed.
type Condition struct {
	// Type names the condition, e.g. "Published"; required.
	Type string `json:"type"`
	// Status is True, False or Unknown.
	Status Status `json:"status"`
	// Reason is a CamelCase word for programs, e.g. "NoFlags".
	Reason string `json:"reason,omitempty"`
	// Message explains the status to people.
	Message string `json:"message,omitempty"`
}

// Status is a condition's status.
type Status string

// Condition statuses.
const (
	True    Status = "True"
	False   Status = "False"
	Unknown Status = "Unknown"
)

// Handler computes what a reconciler's outputs should be from its inputs.
// It must be deterministic: the same request gives the same response. A
// module serves one request per process, so a handler need not be safe
// for concurrent use unless the program runs it concurrently itself.
//
// An error wrapping [ErrInvalidInput] (see [Invalid]) says the inputs are
// invalid; any other error is a failure of the module. A nil Response
// with no error is one without outputs: the primary should have none.
type Handler interface {
	Reconcile(ctx context.Context, req *Request) (*Response, error)
}

// HandlerFunc adapts a function to a [Handler].
type HandlerFunc func(ctx context.Context, req *Request) (*Response, error)

// Reconcile calls f.
func (f HandlerFunc) Reconcile(ctx context.Context, req *Request) (*Response, error) {
	return f(ctx, req)
}
