package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/cup-dev/cup/controller"
)

// A Transform computes what a reconciler's outputs should be from its
// inputs. It must be deterministic: the same request gives the same
// response, on any replica; conditions are derived from it per commit and
// never committed.
//
// Implementations: the WASM transform (a module's reconcile verb), Go
// code of a library user (TransformFunc), and CUE (its seam: a transform
// is all it needs to be).
type Transform interface {
	Reconcile(ctx context.Context, req *Request) (*Response, error)
}

// TransformFunc adapts a function to a Transform.
type TransformFunc func(ctx context.Context, req *Request) (*Response, error)

// Reconcile calls f.
func (f TransformFunc) Reconcile(ctx context.Context, req *Request) (*Response, error) {
	return f(ctx, req)
}

// Request is what a transform reads, as JSON on a WASM module's stdin:
//
//	{"reconciler": "...", "revision": "<commit>", "primary": {...},
//	 "inputs": [{...}, ...], "outputs": [{...}, ...]}
type Request struct {
	// Reconciler is the name of the Reconciler configuration.
	Reconciler string `json:"reconciler"`
	// Revision is the commit the inputs were read at.
	Revision string `json:"revision"`
	// ChangeSet is the change set the reconcile runs in (see
	// Runtime.PokeChangeSet); empty on the served branch. A transform
	// that collects garbage does so on the served branch only.
	ChangeSet string `json:"changeSet,omitempty"`
	// Primary is the resource reconciled.
	Primary *controller.Resource `json:"primary"`
	// Inputs are the secondary resources the mappers relate to the
	// primary, sorted by apiVersion, kind, namespace and name.
	Inputs []*controller.Resource `json:"inputs"`
	// Outputs are the outputs the reconciler wrote for the primary before
	// (those whose cup.dev/owner annotation names the pair), sorted the
	// same way. A transform may ignore them.
	Outputs []*controller.Resource `json:"outputs"`
}

// Response is what a transform answers, as JSON on a WASM module's stdout:
//
//	{"outputs": [{...}, ...], "conditions": [{"type": "...", ...}],
//	 "requeueAfter": "30s"}
type Response struct {
	// Outputs are every output the primary should have: the runtime
	// writes those that differ from the tree and deletes the primary's
	// earlier outputs that are not among them. Each must be of a type the
	// reconciler declares in its outputs.
	Outputs []*controller.Resource `json:"outputs"`
	// Conditions the transform reports besides the runtime's own (Ready,
	// Converged, InvalidInput, TransformFailed, Conflict).
	Conditions []Condition `json:"conditions,omitempty"`
	// RequeueAfter asks for another reconcile of the primary after a
	// while, with no error (a Go duration, e.g. "30s"). Zero asks for none.
	RequeueAfter Duration `json:"requeueAfter,omitempty"`
	// PrimarySpec, when set, is the primary's spec as the transform wants
	// it (a reference to its current output, say), written in the same
	// commit as the outputs. Only a reconciler with UpdatesPrimary may
	// set it.
	PrimarySpec json.RawMessage `json:"primarySpec,omitempty"`
}

// Condition is one status condition of a (reconciler, primary) pair, in
// Kubernetes' shape.
type Condition struct {
	// Reconciler names the reconciler the condition is of; the runtime
	// sets it.
	Reconciler string `json:"reconciler,omitempty"`
	Type       string `json:"type"`
	Status     Status `json:"status"`
	Reason     string `json:"reason,omitempty"`
	Message    string `json:"message,omitempty"`
	// ObservedRevision is the commit the condition was derived at.
	ObservedRevision string `json:"observedRevision,omitempty"`
	// LastTransitionTime is when the condition last changed; see
	// [Runtime.Status] for how it is derived.
	LastTransitionTime time.Time `json:"lastTransitionTime,omitzero"`
}

// Status is a condition's status.
type Status string

// Condition statuses.
const (
	True    Status = "True"
	False   Status = "False"
	Unknown Status = "Unknown"
)

// The condition types the runtime sets.
const (
	ConditionReady           = "Ready"
	ConditionConverged       = "Converged"
	ConditionInvalidInput    = "InvalidInput"
	ConditionTransformFailed = "TransformFailed"
	ConditionConflict        = "Conflict"
	ConditionPaused          = "Paused"
)

// ErrInvalidInput is wrapped by a transform's error when its inputs are
// wrong (a field it needs is missing), as opposed to the transform
// failing: the runtime reports InvalidInput and does not retry until an
// input changes.
var ErrInvalidInput = errors.New("invalid input")

// InvalidError is an ErrInvalidInput reported as a condition of the
// transform's own type, e.g. InvalidConfiguration with reason Conflict;
// nothing is written, so the outputs already written stay in use.
type InvalidError struct {
	Type, Reason, Message string
}

func (e *InvalidError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrInvalidInput) hold.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalidInput }

// Duration is a time.Duration that reads and writes as a Go duration
// string in JSON ("1m30s").
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Duration(d).String() + `"`), nil
}

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return errors.New(`a duration is a string such as "30s"`)
	}
	v, err := time.ParseDuration(string(b[1 : len(b)-1]))
	if err != nil {
		return err
	}
	if v < 0 {
		return errors.New("a duration may not be negative")
	}
	*d = Duration(v)
	return nil
}
