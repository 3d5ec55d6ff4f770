package config

import (
	"bytes"
	"encoding/json"
	"fmt"
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
				Kind string `json:"kind"`
				Path string `json:"path"`
				Key  string `json:"key"`
			} `json:"map"`
		} `json:"watches"`
		Outputs []struct {
			Resource  string `json:"resource"`
			Ownership string `json:"ownership"`
		} `json:"outputs"`
		Transform struct {
			WASM json.RawMessage `json:"wasm"`
			CUE  json.RawMessage `json:"cue"`
		} `json:"transform"`
		Write struct {
			Mode               string `json:"mode"`
			BatchWindow        string `json:"batchWindow"`
			MaxWritesPerMinute int    `json:"maxWritesPerMinute"`
		} `json:"write"`
	} `json:"spec"`
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
		rw := ReconcilerWatch{Type: ref(field+".resource", w.Resource), Mapper: w.Map.Kind, Path: w.Map.Path, Key: w.Map.Key}
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
	wasm, cue := bytes.TrimSpace(s.Transform.WASM), bytes.TrimSpace(s.Transform.CUE)
	switch {
	case len(cue) > 0 && !bytes.Equal(cue, []byte("null")):
		msgs = append(msgs, "spec.transform.cue is not supported yet: use wasm")
	case len(wasm) == 0 || bytes.Equal(wasm, []byte("null")):
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
	}
}
