package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/cup-dev/cup/sdk/go/reconciler"
)

// The types the module reads and writes, all of flags.cup.dev/v1alpha1.
const (
	apiVersion     = "flags.cup.dev/v1alpha1"
	kindBundle     = "Bundle"
	kindFlag       = "Flag"
	kindSegment    = "Segment"
	kindFlagBundle = "FlagBundle"
)

// bundleSpec is the spec of a FlagBundle: one evaluation bundle. Specs
// stay raw JSON, so that they pass through unchanged; encoding/json writes
// the maps' keys sorted.
type bundleSpec struct {
	Flags    map[string]json.RawMessage `json:"flags"`
	Segments map[string]json.RawMessage `json:"segments"`
}

// reconcile turns a Bundle and its Flags and Segments into its FlagBundle.
func reconcile(_ context.Context, req *reconciler.Request) (*reconciler.Response, error) {
	p := req.Primary
	if p.APIVersion != apiVersion || p.Kind != kindBundle {
		return nil, fmt.Errorf("the primary is a %s %s: this module reconciles %s %s", p.APIVersion, p.Kind, apiVersion, kindBundle)
	}
	spec := bundleSpec{Flags: map[string]json.RawMessage{}, Segments: map[string]json.RawMessage{}}
	for _, in := range req.Inputs {
		var into map[string]json.RawMessage
		switch {
		case in.APIVersion == apiVersion && in.Kind == kindFlag:
			into = spec.Flags
		case in.APIVersion == apiVersion && in.Kind == kindSegment:
			into = spec.Segments
		default:
			return nil, reconciler.Invalid("input %s %s %q: a Bundle gathers only Flags and Segments of %s",
				in.APIVersion, in.Kind, in.Metadata.Name, apiVersion)
		}
		name := in.Metadata.Name
		if _, dup := into[name]; dup {
			return nil, reconciler.Invalid("two %ss named %q among the inputs (the second in namespace %q)", in.Kind, name, in.Metadata.Namespace)
		}
		s := in.Spec
		if len(s) == 0 || string(s) == "null" {
			s = json.RawMessage(`{}`)
		}
		into[name] = s
	}
	// An Encoder that leaves <, > and & alone, as json.Marshal would not
	// inside the specs.
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(spec); err != nil {
		return nil, fmt.Errorf("encoding the bundle of %s/%s: %w", p.Metadata.Namespace, p.Metadata.Name, err)
	}
	return &reconciler.Response{Outputs: []*reconciler.Resource{{
		APIVersion: apiVersion,
		Kind:       kindFlagBundle,
		Metadata:   reconciler.Metadata{Namespace: p.Metadata.Namespace, Name: p.Metadata.Name},
		Spec:       bytes.TrimSuffix(raw.Bytes(), []byte("\n")),
	}}}, nil
}
