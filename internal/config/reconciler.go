package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cup-dev/cup/controller"
)

// KindReconciler is the kind of a reconciler's configuration.
const KindReconciler = "Reconciler"

// Reconciler is a Reconciler resource: derived configuration that keeps
// itself in sync (package runtime runs it).
type Reconciler struct {
	// Name is metadata.name.
	Name string
	// For is the primary type (spec.for, "<group>/<version>/<plural>").
	For controller.Type
	// Watches are the input types and their mappers (spec.watches).
	Watches []ReconcilerWatch
	// Outputs are the types it may write (spec.outputs).
	Outputs []ReconcilerOutput
	// WASM is the transform's module settings (spec.transform.wasm), as
	// a WASM controller's spec: {"path": ..., limits}. The path is
	// relative to the file declaring the reconciler.
	WASM json.RawMessage
	// CUE is the transform's settings when it is spec.transform.cue
	// (layered configuration); nil for a WASM transform.
	CUE *ReconcilerCUE
	// Mode is spec.write.mode: "direct", "proposal", or empty for as
	// cupd writes (direct, or proposal when cupd writes change sets).
	Mode string
	// BatchWindow is spec.write.batchWindow.
	BatchWindow time.Duration
	// MaxWritesPerMinute is spec.write.maxWritesPerMinute (0: the default).
	MaxWritesPerMinute int
	// Location is where the reconciler was loaded from.
	Location Location
}

// ReconcilerWatch is a watched input type.
type ReconcilerWatch struct {
	Type controller.Type
	// Mapper is map.kind: nameAligned, owner, selector, reference or
	// referencedBy; Path and Key its settings.
	Mapper, Path, Key string
	// Namespace is map.namespace: a selector's inputs read from this
	// namespace for the primaries of every namespace.
	Namespace string
}

// ReconcilerCUE is spec.transform.cue: layers unified with CUE.
type ReconcilerCUE struct {
	// Layers is layers: the input type whose resources are layers
	// (<group>/<version>/<plural>); zero: every input.
	Layers controller.Type
	// SchemaPath is schema.path, relative to the file declaring the
	// reconciler; SchemaInline is schema.inline, CUE source.
	SchemaPath, SchemaInline string
	// Output is output.resource, Format output.format (json or yaml) and
	// Reference output.reference (the primary's field naming its current
	// output, e.g. spec.config).
	Output            controller.Type
	Format, Reference string
	// GCAfter is gc.after: how long an orphaned output nothing references
	// is kept.
	GCAfter time.Duration
	// Timeout and MaxMemoryBytes bound one evaluation (zero: defaults).
	Timeout        time.Duration
	MaxMemoryBytes int64
}

// ReconcilerOutput is an output type.
type ReconcilerOutput struct {
	Type      controller.Type
	Exclusive bool
}

type reconcilerDoc struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   metadataDoc `json:"metadata"`
	Spec       struct {
		For     string `json:"for"`
		Watches []struct {
			Resource string `json:"resource"`
			Map      struct {
				Kind      string `json:"kind"`
				Path      string `json:"path"`
				Key       string `json:"key"`
				Namespace string `json:"namespace"`
			} `json:"map"`
		} `json:"watches"`
		Outputs []struct {
			Resource  string `json:"resource"`
			Ownership string `json:"ownership"`
		} `json:"outputs"`
		Transform struct {
			WASM json.RawMessage `json:"wasm"`
			CUE  *cueDoc         `json:"cue"`
		} `json:"transform"`
		Write struct {
			Mode               string `json:"mode"`
			BatchWindow        string `json:"batchWindow"`
			MaxWritesPerMinute int    `json:"maxWritesPerMinute"`
		} `json:"write"`
	} `json:"spec"`
}

// cueDoc is spec.transform.cue.
type cueDoc struct {
	Layers string `json:"layers"`
	Schema struct {
		Path   string `json:"path"`
		Inline string `json:"inline"`
	} `json:"schema"`
	Output struct {
		Resource  string `json:"resource"`
		Format    string `json:"format"`
		Reference string `json:"reference"`
	} `json:"output"`
	GC struct {
		After string `json:"after"`
	} `json:"gc"`
	Timeout        string `json:"timeout"`
	MaxMemoryBytes int64  `json:"maxMemoryBytes"`
}

var mapperKinds = []string{"nameAligned", "owner", "selector", "reference", "referencedBy"}

func newReconciler(doc *reconcilerDoc, loc Location) (*Reconciler, []string) {
	var msgs []string
	if msg := checkName(doc.Metadata.Name); msg != "" {
		msgs = append(msgs, msg)
	}
	s := doc.Spec
	r := &Reconciler{Name: doc.Metadata.Name, Location: loc, Mode: s.Write.Mode, MaxWritesPerMinute: s.Write.MaxWritesPerMinute}
	ref := func(field, v string) controller.Type {
		if v == "" {
			msgs = append(msgs, field+" is required, as <group>/<version>/<plural>")
			return controller.Type{}
		}
		t, err := parseResourceRef(v)
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("%s: %v", field, err))
			return controller.Type{}
		}
		return t
	}
	r.For = ref("spec.for", s.For)
	for i, w := range s.Watches {
		field := fmt.Sprintf("spec.watches[%d]", i)
		rw := ReconcilerWatch{Type: ref(field+".resource", w.Resource), Mapper: w.Map.Kind, Path: w.Map.Path, Key: w.Map.Key, Namespace: w.Map.Namespace}
		if w.Map.Namespace != "" {
			if w.Map.Kind != "selector" {
				msgs = append(msgs, fmt.Sprintf("%s.map.namespace: only a selector mapper reads inputs from a fixed namespace", field))
			} else if msg := checkName(w.Map.Namespace); msg != "" {
				msgs = append(msgs, fmt.Sprintf("%s.map.namespace: %s", field, msg))
			}
		}
		switch w.Map.Kind {
		case "":
			msgs = append(msgs, fmt.Sprintf("%s.map.kind is required (%s)", field, join(mapperKinds)))
		case "nameAligned", "owner":
			if w.Map.Path != "" {
				msgs = append(msgs, fmt.Sprintf("%s.map.path: a %s mapper takes no path", field, w.Map.Kind))
			}
		case "selector", "reference", "referencedBy":
			if w.Map.Path == "" {
				msgs = append(msgs, fmt.Sprintf("%s.map.path is required for a %s mapper, e.g. spec.selector", field, w.Map.Kind))
			}
		default:
			msgs = append(msgs, fmt.Sprintf("%s.map.kind %q is not one of %s", field, w.Map.Kind, join(mapperKinds)))
		}
		if w.Map.Key != "" && w.Map.Kind != "owner" {
			msgs = append(msgs, fmt.Sprintf("%s.map.key: only an owner mapper takes a key", field))
		}
		r.Watches = append(r.Watches, rw)
	}
	if len(s.Outputs) == 0 {
		msgs = append(msgs, "spec.outputs must list at least one type the reconciler writes")
	}
	for i, o := range s.Outputs {
		field := fmt.Sprintf("spec.outputs[%d]", i)
		out := ReconcilerOutput{Type: ref(field+".resource", o.Resource)}
		switch o.Ownership {
		case "", "exclusive":
			out.Exclusive = true
		case "shared":
		default:
			msgs = append(msgs, fmt.Sprintf("%s.ownership %q is not exclusive or shared", field, o.Ownership))
		}
		r.Outputs = append(r.Outputs, out)
	}
	wasm := bytes.TrimSpace(s.Transform.WASM)
	hasWASM := len(wasm) > 0 && !bytes.Equal(wasm, []byte("null"))
	switch {
	case s.Transform.CUE != nil && hasWASM:
		msgs = append(msgs, "spec.transform: give wasm or cue, not both")
	case s.Transform.CUE != nil:
		r.CUE = newReconcilerCUE(s.Transform.CUE, ref, &msgs)
	case !hasWASM:
		msgs = append(msgs, `spec.transform.wasm is required: {"path": "<module>.wasm"}, relative to this file`)
	case wasm[0] != '{':
		msgs = append(msgs, "spec.transform.wasm: expected an object")
	default:
		r.WASM = wasm
	}
	switch r.Mode {
	case "", "direct", "proposal":
	default:
		msgs = append(msgs, fmt.Sprintf("spec.write.mode %q is not direct or proposal", r.Mode))
	}
	if s.Write.BatchWindow != "" {
		d, err := time.ParseDuration(s.Write.BatchWindow)
		if err != nil || d < 0 || d > time.Hour {
			msgs = append(msgs, fmt.Sprintf("spec.write.batchWindow %q is not a duration between 0s and 1h", s.Write.BatchWindow))
		}
		r.BatchWindow = d
	}
	if r.MaxWritesPerMinute < 0 {
		msgs = append(msgs, "spec.write.maxWritesPerMinute may not be negative")
	}
	return r, msgs
}

// newReconcilerCUE checks spec.transform.cue.
func newReconcilerCUE(d *cueDoc, ref func(field, v string) controller.Type, msgs *[]string) *ReconcilerCUE {
	const field = "spec.transform.cue"
	c := &ReconcilerCUE{SchemaPath: d.Schema.Path, SchemaInline: d.Schema.Inline, Format: d.Output.Format,
		Reference: d.Output.Reference, MaxMemoryBytes: d.MaxMemoryBytes}
	if d.Layers != "" {
		c.Layers = ref(field+".layers", d.Layers)
	}
	c.Output = ref(field+".output.resource", d.Output.Resource)
	if d.Schema.Path != "" && d.Schema.Inline != "" {
		*msgs = append(*msgs, field+".schema: give path or inline, not both")
	}
	switch d.Output.Format {
	case "", "json", "yaml":
	default:
		*msgs = append(*msgs, fmt.Sprintf("%s.output.format %q is not json or yaml", field, d.Output.Format))
	}
	if d.Output.Reference != "" && !strings.HasPrefix(d.Output.Reference, "spec.") {
		*msgs = append(*msgs, fmt.Sprintf("%s.output.reference %q: name a field of the primary's spec, such as spec.config", field, d.Output.Reference))
	}
	duration := func(name, v string, max time.Duration) time.Duration {
		if v == "" {
			return 0
		}
		dur, err := time.ParseDuration(v)
		if err != nil || dur <= 0 || dur > max {
			*msgs = append(*msgs, fmt.Sprintf("%s.%s %q is not a duration between 0s and %s", field, name, v, max))
		}
		return dur
	}
	c.GCAfter = duration("gc.after", d.GC.After, 30*24*time.Hour)
	c.Timeout = duration("timeout", d.Timeout, time.Minute)
	if d.MaxMemoryBytes < 0 || d.MaxMemoryBytes > 4<<30 {
		*msgs = append(*msgs, fmt.Sprintf("%s.maxMemoryBytes %d is not between 0 and 4 GiB", field, d.MaxMemoryBytes))
	}
	return c
}

func join(s []string) string {
	out := ""
	for i, v := range s {
		switch {
		case i == 0:
		case i == len(s)-1:
			out += " or "
		default:
			out += ", "
		}
		out += v
	}
	return out
}

// checkReconcilers reports reconcilers defined twice, and types they name
// that no definition serves.
func (s *Set) checkReconcilers(ps *problems) {
	seen := map[string]*Reconciler{}
	for _, r := range byLocation(s.Reconcilers, func(r *Reconciler) Location { return r.Location }) {
		if first, ok := seen[r.Name]; ok {
			ps.add(r.Location, "%s %q: duplicate name, also defined in %s", KindReconciler, r.Name, first.Location)
			continue
		}
		seen[r.Name] = r
		check := func(field string, t controller.Type) {
			if t == (controller.Type{}) {
				return
			}
			d, ok := s.Definition(t.Group, t.Plural)
			if !ok {
				ps.add(r.Location, "%s %q: %s: no %s has group %q and plural %q", KindReconciler, r.Name, field, KindResourceDefinition, t.Group, t.Plural)
				return
			}
			if _, ok := d.Version(t.Version); !ok {
				ps.add(r.Location, "%s %q: %s: %s %q has no version %q", KindReconciler, r.Name, field, KindResourceDefinition, d.Name, t.Version)
			}
		}
		check("spec.for", r.For)
		for i, w := range r.Watches {
			check(fmt.Sprintf("spec.watches[%d].resource", i), w.Type)
		}
		for i, o := range r.Outputs {
			check(fmt.Sprintf("spec.outputs[%d].resource", i), o.Type)
		}
		if c := r.CUE; c != nil {
			check("spec.transform.cue.layers", c.Layers)
			check("spec.transform.cue.output.resource", c.Output)
			declared := false
			for _, o := range r.Outputs {
				declared = declared || o.Type == c.Output
			}
			if c.Output != (controller.Type{}) && !declared {
				ps.add(r.Location, "%s %q: spec.transform.cue.output.resource %s/%s/%s is not among spec.outputs", KindReconciler, r.Name,
					c.Output.Group, c.Output.Version, c.Output.Plural)
			}
		}
	}
}
