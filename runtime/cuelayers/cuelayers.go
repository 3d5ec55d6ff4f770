// Package cuelayers is the reconciler runtime's cue transform: layered
// configuration. Each primary's layers (inputs holding plain values in
// spec.values or CUE source in spec.cue) are unified with CUE, checked
// against an optional schema, and written as a new output named after its
// content (copy-on-write): the primary's reference field is switched to
// it in the same commit, earlier outputs are marked orphaned, and an
// orphaned output nothing references is deleted (garbage collection, a
// commit of its own) once a grace period has passed.
package cuelayers

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/cueeval"
	"github.com/cup-dev/cup/internal/document"
	"github.com/cup-dev/cup/internal/lru"
	"github.com/cup-dev/cup/runtime"
)

// ConditionInvalidConfiguration is the condition of a primary whose
// layers do not unify, are not concrete, or exceed the evaluation's
// bounds. The outputs already written stay in use.
const ConditionInvalidConfiguration = "InvalidConfiguration"

// Config is the transform's configuration (a Reconciler's transform.cue).
type Config struct {
	// Layers is the type of the inputs that are layers; the zero Type
	// takes every input.
	Layers controller.Type
	// Schema is CUE source the unified configuration must satisfy, and
	// SchemaPath the name its positions are reported under.
	Schema, SchemaPath string
	// Output is the type written (one of the reconciler's outputs), with
	// its kind.
	Output controller.Type
	// Format places the result in the output's spec.data: "json" (the
	// value itself, the default) or "yaml" (a string of YAML).
	Format string
	// Reference is the path of the primary's field that names its current
	// output, e.g. "spec.config"; empty updates no field.
	Reference string
	// GCAfter is how long an orphaned output that nothing references is
	// kept (default 10 minutes).
	GCAfter time.Duration
	// Timeout and MaxMemory bound one evaluation (cueeval's defaults when
	// zero).
	Timeout   time.Duration
	MaxMemory int64
}

// Store is what the transform reads besides its request: the files the
// layers are in (for positions) and commit times (for the grace period).
// The server's ReconcileStore has both.
type Store interface {
	ResourceFile(ctx context.Context, commit string, t controller.Type, namespace, name string) (string, []byte, error)
	CommitTime(ctx context.Context, commit string) (time.Time, error)
}

// Transform is the cue transform; it implements runtime.Transform.
type Transform struct {
	c     Config
	store Store
	now   func() time.Time
	cache *lru.Cache[cached]
}

// New returns the transform of c over store.
func New(c Config, store Store) (*Transform, error) {
	switch c.Format {
	case "":
		c.Format = "json"
	case "json", "yaml":
	default:
		return nil, fmt.Errorf("format %q is not json or yaml", c.Format)
	}
	if c.Output.Kind == "" {
		return nil, errors.New("the output type is required")
	}
	if c.Reference != "" && !strings.HasPrefix(c.Reference, "spec.") {
		return nil, fmt.Errorf("reference %q: a field of the primary's spec, such as spec.config", c.Reference)
	}
	if c.GCAfter <= 0 {
		c.GCAfter = 10 * time.Minute
	}
	return &Transform{c: c, store: store, now: time.Now, cache: lru.New[cached](resultCacheBytes)}, nil
}

// SetClock sets the clock the grace period is measured with (for tests).
func (t *Transform) SetClock(now func() time.Time) { t.now = now }

// Reconcile unifies the primary's layers and answers the outputs: the
// current one, and the earlier ones still kept.
func (t *Transform) Reconcile(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
	layers, err := t.layers(req)
	if err != nil {
		return nil, err
	}
	result, err := t.eval(ctx, req.Revision, layers)
	var ce *cueeval.Error
	switch {
	case errors.As(err, &ce):
		reason := "Conflict"
		if !strings.Contains(ce.Error(), "conflicting values") {
			reason = "Incomplete"
		}
		return nil, &runtime.InvalidError{Type: ConditionInvalidConfiguration, Reason: reason, Message: ce.Error()}
	case errors.Is(err, cueeval.ErrLimit):
		return nil, &runtime.InvalidError{Type: ConditionInvalidConfiguration, Reason: "LimitExceeded", Message: err.Error()}
	case err != nil:
		return nil, err
	}
	spec, err := t.spec(result)
	if err != nil {
		return nil, err
	}
	name := OutputName(req.Primary.Metadata.Name, spec)
	current := &controller.Resource{
		APIVersion: t.c.Output.APIVersion(), Kind: t.c.Output.Kind,
		Metadata: controller.Metadata{Namespace: req.Primary.Metadata.Namespace, Name: name,
			Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: spec,
	}
	resp := &runtime.Response{Outputs: []*controller.Resource{current}}
	fresh := true
	for _, o := range req.Outputs {
		if t.isOutput(o) && o.Metadata.Name == name {
			fresh = false
			current.Metadata.Labels = o.Metadata.Labels // kept as they were
		}
	}
	referenced := ""
	if t.c.Reference != "" {
		referenced, _ = runtime.ValueAt(req.Primary, t.c.Reference).(string)
	}
	// Switch the reference when there is a new output, or when it names
	// none of the primary's outputs; a reference set back to an earlier
	// output (a rollback) is left as it is.
	ours := map[string]bool{name: true}
	for _, o := range req.Outputs {
		if t.isOutput(o) {
			ours[o.Metadata.Name] = true
		}
	}
	if t.c.Reference != "" && referenced != name && (fresh || !ours[referenced]) {
		ps, err := setString(req.Primary.Spec, strings.TrimPrefix(t.c.Reference, "spec."), name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", runtime.ErrInvalidInput, t.c.Reference, err)
		}
		resp.PrimarySpec = ps
		referenced = name
	}
	// Earlier outputs: marked orphaned, kept while referenced or within
	// the grace period, then collected: on the served branch, and only in
	// a reconcile that changes nothing else, so that a collection is a
	// commit of its own.
	var earlier []*controller.Resource
	changing := fresh || resp.PrimarySpec != nil || req.ChangeSet != ""
	for _, o := range req.Outputs {
		if !t.isOutput(o) || o.Metadata.Name == name {
			continue
		}
		o = o.Clone()
		if _, marked := o.Metadata.Annotations[runtime.AnnotationOrphaned]; !marked {
			if o.Metadata.Annotations == nil {
				o.Metadata.Annotations = map[string]string{}
			}
			o.Metadata.Annotations[runtime.AnnotationOrphaned] = req.Revision
			changing = true
		}
		earlier = append(earlier, o)
	}
	now := t.now()
	var wait time.Duration
	for _, o := range earlier {
		at := o.Metadata.Annotations[runtime.AnnotationOrphaned]
		if changing || at == req.Revision || o.Metadata.Name == referenced {
			resp.Outputs = append(resp.Outputs, o)
			continue
		}
		when, err := t.store.CommitTime(ctx, at)
		if err != nil {
			when = time.Time{} // a commit no longer known: the grace is over
		}
		if left := when.Add(t.c.GCAfter).Sub(now); left > 0 {
			resp.Outputs = append(resp.Outputs, o)
			if wait == 0 || left < wait {
				wait = left
			}
		}
		// Otherwise left out: the runtime deletes it.
	}
	if wait > 0 {
		resp.RequeueAfter = runtime.Duration(wait + time.Second)
	}
	return resp, nil
}

// isOutput reports whether o is of the output type.
func (t *Transform) isOutput(o *controller.Resource) bool {
	return o.APIVersion == t.c.Output.APIVersion() && o.Kind == t.c.Output.Kind
}

// layer is a layer input, as cueeval takes it, and where it is read from.
type layer struct {
	cueeval.Layer
	typ             controller.Type
	namespace, name string
	// version is the resource's resourceVersion: with its content, it
	// identifies the file its positions are read from.
	version string
}

// layers turns the request's layer inputs into cueeval's, without their
// files (read only when an evaluation is needed).
func (t *Transform) layers(req *runtime.Request) ([]layer, error) {
	var out []layer
	for _, in := range req.Inputs {
		if t.c.Layers.Kind != "" && (in.APIVersion != t.c.Layers.APIVersion() || in.Kind != t.c.Layers.Kind) {
			continue
		}
		var spec struct {
			CUE    *string         `json:"cue"`
			Values json.RawMessage `json:"values"`
		}
		if err := json.Unmarshal(in.Spec, &spec); err != nil {
			return nil, fmt.Errorf("%w: %s %s/%s: spec: %v", runtime.ErrInvalidInput, in.Kind, in.Metadata.Namespace, in.Metadata.Name, err)
		}
		l := cueeval.Layer{Ref: fmt.Sprintf("%s %s/%s", in.Kind, in.Metadata.Namespace, in.Metadata.Name)}
		switch {
		case spec.CUE != nil && spec.Values != nil:
			return nil, fmt.Errorf("%w: %s: spec.cue and spec.values are both set; a layer holds one", runtime.ErrInvalidInput, l.Ref)
		case spec.CUE != nil:
			l.Field, l.CUE = "spec.cue", *spec.CUE
		case spec.Values != nil:
			l.Field, l.Values = "spec.values", spec.Values
		default:
			continue // a layer without content contributes nothing
		}
		typ := t.c.Layers
		if typ.Kind == "" {
			typ = typeOf(in)
		}
		out = append(out, layer{Layer: l, typ: typ, namespace: in.Metadata.Namespace, name: in.Metadata.Name, version: in.Metadata.ResourceVersion})
	}
	slices.SortFunc(out, func(a, b layer) int { return strings.Compare(a.Ref, b.Ref) })
	return out, nil
}

// files reads each layer's file at revision, for positions in it; a layer
// whose file cannot be read gets positions relative to its field.
func (t *Transform) files(ctx context.Context, revision string, layers []layer) []cueeval.Layer {
	out := make([]cueeval.Layer, len(layers))
	for i, l := range layers {
		out[i] = l.Layer
		if p, data, err := t.store.ResourceFile(ctx, revision, l.typ, l.namespace, l.name); err == nil {
			out[i].Path, out[i].File = p, data
		} else {
			out[i].Path = l.namespace + "/" + l.name
		}
	}
	return out
}

// typeOf is the group and version of a resource, for ResourceFile when
// every input is a layer. The plural is not known; stores look types up
// by group, version and plural, so such layers get no file positions.
func typeOf(r *controller.Resource) controller.Type {
	g, v, _ := strings.Cut(r.APIVersion, "/")
	return controller.Type{Group: g, Version: v, Kind: r.Kind}
}

// eval unifies layers (sorted), through the cache of results by content:
// the layers' fields and resource versions, and the schema.
func (t *Transform) eval(ctx context.Context, revision string, layers []layer) ([]byte, error) {
	h := sha256.New()
	var n [8]byte
	write := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	for _, l := range layers {
		for _, s := range []string{l.Ref, l.version, l.Field, l.CUE, string(l.Values)} {
			write(s)
		}
	}
	write(t.c.Schema)
	write(t.c.SchemaPath)
	key := string(h.Sum(nil))
	if r, ok := t.cache.Get(key); ok {
		return r.json, r.err
	}
	res, err := cueeval.Eval(ctx, t.files(ctx, revision, layers), cueeval.Options{Schema: t.c.Schema, SchemaPath: t.c.SchemaPath,
		Timeout: t.c.Timeout, MaxMemory: t.c.MaxMemory})
	var ce *cueeval.Error
	switch {
	case err == nil:
		t.cache.Add(key, cached{json: res.JSON}, int64(len(res.JSON)))
		return res.JSON, nil
	case errors.As(err, &ce), errors.Is(err, cueeval.ErrLimit):
		// The same layers fail the same way: remembered too.
		t.cache.Add(key, cached{err: err}, int64(len(err.Error())))
	}
	return nil, err
}

// spec is the output's spec: {"data": result} (json) or {"data": "<YAML>"}.
func (t *Transform) spec(result []byte) (json.RawMessage, error) {
	data := json.RawMessage(result)
	if t.c.Format == "yaml" {
		y, err := document.JSONToYAML(result)
		if err != nil {
			return nil, err
		}
		if data, err = json.Marshal(string(y)); err != nil {
			return nil, err
		}
	}
	return json.Marshal(map[string]json.RawMessage{"data": data})
}

// maxPrefix bounds the part of an output's name taken from its primary's,
// so that with "-" and 10 hex digits it is a DNS label (63 characters).
const maxPrefix = 63 - 11

// OutputName is the name of the output holding spec for primary:
// <primary>-<the first 10 hex digits of spec's SHA-256>. The same content
// gets the same name, on any replica.
func OutputName(primary string, spec []byte) string {
	sum := sha256.Sum256(spec)
	if len(primary) > maxPrefix {
		primary = strings.TrimRight(primary[:maxPrefix], "-.")
	}
	return primary + "-" + hex.EncodeToString(sum[:])[:10]
}

// setString sets the string at a dotted path in a JSON object, making the
// objects on the way; numbers keep their digits.
func setString(doc json.RawMessage, path, value string) (json.RawMessage, error) {
	var root map[string]any
	if len(doc) > 0 && string(doc) != "null" {
		d := json.NewDecoder(strings.NewReader(string(doc)))
		d.UseNumber()
		if err := d.Decode(&root); err != nil {
			return nil, err
		}
	}
	if root == nil {
		root = map[string]any{}
	}
	fields := strings.Split(path, ".")
	m := root
	for _, f := range fields[:len(fields)-1] {
		next, ok := m[f].(map[string]any)
		if !ok {
			if m[f] != nil {
				return nil, fmt.Errorf("%s is not an object", f)
			}
			next = map[string]any{}
			m[f] = next
		}
		m = next
	}
	m[fields[len(fields)-1]] = value
	return json.Marshal(root)
}

// resultCacheBytes bounds the results a transform keeps.
const resultCacheBytes = 16 << 20

// cached is a result, or the user's error, of an evaluation.
type cached struct {
	json []byte
	err  error
}
