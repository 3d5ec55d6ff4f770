package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cup-dev/cup/controller"
	cwasm "github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/internal/document"
	"github.com/cup-dev/cup/runtime"
)

// The exit codes of the protocol that mean something of their own; any
// other but 0 is a failure.
const (
	exitOK      = 0
	exitInvalid = 3
)

// verb is the first argument of every run, and the verb label of the
// runs' metrics and spans.
const verb = "reconcile"

// Transform runs a reconciler's WASM module for every reconcile, as the
// package documentation describes. It is safe for concurrent use: each
// reconcile runs in its own module instance.
type Transform struct {
	name string
	c    *cwasm.Controller
}

var _ runtime.Transform = (*Transform)(nil)

// New compiles module, the bytes of the file spec.Path names, into a
// Transform called name, which is argv[0] of every run and names the
// module in errors. It runs on rt, with the WASM controllers' modules:
// the same compilation cache, memory budget, metrics (verb "reconcile")
// and spans. Zero limits in spec take their defaults. New returns an error
// when the bytes are not WebAssembly, the module is not a WASI command,
// or its memory does not fit spec's limit or rt's budget (see
// [cwasm.New]). Close the Transform when done with it.
func New(ctx context.Context, rt *cwasm.Runtime, name string, module []byte, spec *cwasm.Spec) (*Transform, error) {
	c, err := cwasm.New(ctx, rt, name, module, spec)
	if err != nil {
		return nil, fmt.Errorf("wasm transform %q: %w", name, err)
	}
	return &Transform{name: name, c: c}, nil
}

// Close releases the compiled module. Reconciles must not be running or
// made afterwards.
func (t *Transform) Close(ctx context.Context) error {
	return t.c.Close(ctx)
}

// Reconcile runs `reconcile <req.Reconciler>` with the JSON of req on
// stdin and reads the response, as the package documentation describes.
// A request without a primary or a reconciler's name gives an error
// wrapping [controller.ErrInvalid].
func (t *Transform) Reconcile(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
	switch {
	case req == nil || req.Primary == nil:
		return nil, fmt.Errorf("wasm transform %q: %w: a reconcile needs a request with a primary", t.name, controller.ErrInvalid)
	case req.Reconciler == "" || strings.ContainsRune(req.Reconciler, 0):
		return nil, fmt.Errorf("wasm transform %q: %w: the reconciler's name must be non-empty and free of NUL bytes, got %q", t.name, controller.ErrInvalid, req.Reconciler)
	}
	// Empty lists as [], not null, for modules in any language.
	r := *req
	if r.Inputs == nil {
		r.Inputs = []*controller.Resource{}
	}
	if r.Outputs == nil {
		r.Outputs = []*controller.Resource{}
	}
	stdin, err := encode(&r)
	if err != nil {
		return nil, fmt.Errorf("wasm transform %q: encoding the request: %w", t.name, err)
	}
	res, err := t.c.Exec(ctx, &cwasm.ExecRequest{Verb: verb, Args: []string{req.Reconciler}, Stdin: stdin})
	if err != nil {
		return nil, err // it names the module and the run
	}
	op := fmt.Sprintf("module %q: %s %s", t.name, verb, req.Reconciler)
	said := res.Message
	if said == "" {
		said = "the module said nothing"
	}
	switch res.ExitCode {
	case exitOK:
		resp, err := decodeResponse(res.Stdout)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: invalid response on stdout: %s", op, controller.ErrFailed, bounded(err.Error()))
		}
		return resp, nil
	case exitInvalid:
		return nil, fmt.Errorf("%s: %w: %s", op, runtime.ErrInvalidInput, said)
	default:
		return nil, fmt.Errorf("%s: %w: exit code %d: %s", op, controller.ErrFailed, res.ExitCode, said)
	}
}

// encode writes v as JSON, leaving <, > and & as they are, so that specs
// reach the module as they are in the tree.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// response is the JSON form of a runtime.Response as the module writes
// it: outputs, raw until read as resources, must be there.
type response struct {
	Outputs      *[]json.RawMessage `json:"outputs"`
	Conditions   []condition        `json:"conditions"`
	RequeueAfter runtime.Duration   `json:"requeueAfter"`
}

// condition is the part of a runtime.Condition a module may set.
type condition struct {
	Type    string         `json:"type"`
	Status  runtime.Status `json:"status"`
	Reason  string         `json:"reason"`
	Message string         `json:"message"`
}

// ownConditions are the condition types the runtime sets, which a module
// may not.
var ownConditions = []string{
	runtime.ConditionReady, runtime.ConditionConverged, runtime.ConditionInvalidInput,
	runtime.ConditionTransformFailed, runtime.ConditionConflict, runtime.ConditionPaused,
}

// decodeResponse reads a module's response strictly.
func decodeResponse(out []byte) (*runtime.Response, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return nil, errors.New(`the module exited 0 and wrote nothing: a reconcile must write its response, {"outputs": [...]}`)
	}
	if err := document.CheckDepth(out, document.MaxDepth); err != nil {
		return nil, err
	}
	if err := controller.CheckUTF8(out); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var w response
	if err := dec.Decode(&w); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the response")
	}
	if w.Outputs == nil {
		return nil, errors.New(`no "outputs" array: write "outputs": [] for none`)
	}
	resp := &runtime.Response{Outputs: make([]*controller.Resource, 0, len(*w.Outputs)), RequeueAfter: w.RequeueAfter}
	type key struct{ apiVersion, kind, namespace, name string }
	seen := make(map[key]bool, len(*w.Outputs))
	for i, raw := range *w.Outputs {
		r, err := controller.ParseResource(raw)
		if err != nil {
			return nil, fmt.Errorf("outputs[%d]: %w", i, err)
		}
		switch {
		case r.APIVersion == "" || r.Kind == "":
			return nil, fmt.Errorf("outputs[%d]: no apiVersion or kind", i)
		case r.Metadata.Name == "":
			return nil, fmt.Errorf("outputs[%d]: a %s %s without a name", i, r.APIVersion, r.Kind)
		}
		k := key{r.APIVersion, r.Kind, r.Metadata.Namespace, r.Metadata.Name}
		if seen[k] {
			return nil, fmt.Errorf("outputs[%d]: %s %s %q of namespace %q is there twice", i, r.APIVersion, r.Kind, r.Metadata.Name, r.Metadata.Namespace)
		}
		seen[k] = true
		r.Metadata.ResourceVersion = "" // the runtime's to set
		resp.Outputs = append(resp.Outputs, r)
	}
	types := make(map[string]bool, len(w.Conditions))
	for i, c := range w.Conditions {
		switch {
		case c.Type == "":
			return nil, fmt.Errorf("conditions[%d]: no type", i)
		case slices.Contains(ownConditions, c.Type):
			return nil, fmt.Errorf("conditions[%d]: %s is a condition the runtime sets", i, c.Type)
		case types[c.Type]:
			return nil, fmt.Errorf("conditions[%d]: %s is there twice", i, c.Type)
		case c.Status != runtime.True && c.Status != runtime.False && c.Status != runtime.Unknown:
			return nil, fmt.Errorf("conditions[%d]: status %q of %s is not True, False or Unknown", i, c.Status, c.Type)
		}
		types[c.Type] = true
		resp.Conditions = append(resp.Conditions, runtime.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
	}
	return resp, nil
}

// maxMessage bounds the description of an invalid response.
const maxMessage = 1024

// bounded cuts s to about maxMessage bytes.
func bounded(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:cut], len(s)-cut)
}
