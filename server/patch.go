package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"unicode/utf8"

	"connectrpc.com/connect"
	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/document"
)

// A patch reads the current resource, turns it into its JSON file form
// ({"apiVersion", "kind", "metadata", "spec"}, numbers as stored), applies
// a JSON merge patch (RFC 7396) or a JSON patch (RFC 6902) to it with
// github.com/evanphx/json-patch/v5 (which Kubernetes uses, and which keeps
// numbers as written), and puts the result through the write path a put
// takes: the same schema, authorization (verb put: the policy format has no
// patch), precondition, change set, idempotency and dry-run rules.
//
// The read, the patch and the write happen inside the update's Apply, on
// the base the source writes on top of: the precondition is checked
// against the resource the patch applies to, and when a concurrent write
// moves the branch the source runs Apply again on the newer base, so the
// patch applies to what that write left rather than overwriting it.

// maxPatchOperations bounds the operations of a JSON patch: each may cost
// as much as the resource is large (a test of the whole resource), so
// their number, not only the patch's size, bounds what a patch costs.
// Kubernetes allows 10,000; kubectl label and annotate send one.
const maxPatchOperations = 1000

// patchOp is a checked patch, ready to apply to each base the write
// meets.
type patchOp struct {
	// field names the patch in errors: "patch", or "body" on the REST form.
	field string
	typ   cupv1alpha1.PatchType
	text  []byte // compact
	json  jsonpatch.Patch
	apply func(cur *entry) (*controller.Resource, error)
}

// fingerprint is what identifies the patch for idempotency keys: its type
// and its compacted text.
func (p *patchOp) fingerprint() []byte {
	return slices.Concat([]byte(p.typ.String()), []byte{'\n'}, p.text)
}

// patch applies the patch text of type typ to the resource at names: it
// returns the write's result and the resource as stored. field names the
// patch in errors.
func (s *Server) patch(ctx context.Context, at ref, field string, typ cupv1alpha1.PatchType, text []byte, o writeOptions) (*cupv1alpha1.WriteResult, *entry, error) {
	t, err := s.typeFor(ctx, at, auth.VerbPut)
	if err != nil {
		return nil, nil, err
	}
	p, err := s.checkPatch(field, typ, text)
	if err != nil {
		return nil, nil, err
	}
	p.apply = func(cur *entry) (*controller.Resource, error) { return s.applyPatch(t, at, p, cur) }
	w := newWriteTarget(ctx, t, at, o, "Patch")
	w.patch = p
	result, err := s.write(ctx, w)
	if err != nil {
		return nil, nil, err
	}
	if w.stored != nil {
		stored, err := newEntry(w.stored.Clone())
		return result, stored, err
	}
	// A replay of an earlier patch with the same idempotency key ran no
	// Apply: answer with the resource as that patch's commit holds it.
	snap, err := s.src.View(ctx, cmp.Or(result.Commit, result.Branch))
	if err != nil {
		return nil, nil, err
	}
	stored, err := s.getEntry(ctx, t, snap, at.namespace, at.name)
	if err != nil {
		return nil, nil, err
	}
	return result, stored, nil
}

// checkPatch checks what a patch can be checked for before any resource is
// read: JSON within the depth limit, an object for a merge patch, an array
// of known operations with known members for a JSON patch.
func (s *Server) checkPatch(field string, typ cupv1alpha1.PatchType, text []byte) (*patchOp, error) {
	p := &patchOp{field: field, typ: typ}
	if !utf8.Valid(text) {
		return nil, fieldError(p.field, "holds bytes that are not UTF-8")
	}
	var b bytes.Buffer
	b.Grow(len(text))
	if err := json.Compact(&b, text); err != nil {
		return nil, fieldError(p.field, "not JSON: %v", err)
	}
	// The patch is a value of its own: a merge patch's object is the
	// resource, depth 1.
	if document.CheckDepth(b.Bytes(), s.cfg.maxDepth) != nil {
		return nil, s.depthError(field)
	}
	p.text = b.Bytes()
	switch typ {
	case cupv1alpha1.PatchType_PATCH_TYPE_MERGE:
		if p.text[0] != '{' {
			return nil, fieldError(p.field, "a merge patch (RFC 7396) is a JSON object holding the fields to change, e.g. {\"spec\":{\"enabled\":true}}")
		}
	case cupv1alpha1.PatchType_PATCH_TYPE_JSON:
		if p.text[0] != '[' {
			return nil, fieldError(p.field, "a JSON patch (RFC 6902) is an array of operations, e.g. [{\"op\":\"replace\",\"path\":\"/spec/enabled\",\"value\":true}]")
		}
		var ops []map[string]json.RawMessage
		if err := json.Unmarshal(p.text, &ops); err != nil {
			return nil, fieldError(p.field, "a JSON patch is an array of operations, each an object: %v", err)
		}
		if len(ops) > maxPatchOperations {
			return nil, fieldError(p.field, "%d operations, more than the limit of %d: split the patch", len(ops), maxPatchOperations)
		}
		for i, op := range ops {
			for k := range op {
				if k != "op" && k != "path" && k != "from" && k != "value" {
					return nil, fieldError(fmt.Sprintf("%s[%d].%s", p.field, i, truncate(k, 64)), "unknown member: an operation has op, path, from and value")
				}
			}
			var name string
			if err := json.Unmarshal(op["op"], &name); err != nil || op["op"] == nil {
				return nil, fieldError(fmt.Sprintf("%s[%d].op", p.field, i), "missing or not a string: want add, remove, replace, move, copy or test")
			}
			switch name {
			case "add", "remove", "replace", "move", "copy", "test":
			default:
				return nil, fieldError(fmt.Sprintf("%s[%d].op", p.field, i), "%q is not an operation: want add, remove, replace, move, copy or test", truncate(name, 64))
			}
		}
		jp, err := jsonpatch.DecodePatch(p.text)
		if err != nil {
			return nil, fieldError(p.field, "%v", err)
		}
		p.json = jp
	default:
		return nil, fieldError("type", "want PATCH_TYPE_MERGE or PATCH_TYPE_JSON")
	}
	return p, nil
}

// immutable are the fields of a resource's JSON form a patch must leave as
// they are: they say where the resource is and what it is.
var immutable = [...]struct {
	field string
	of    func(*controller.Resource) string
}{
	{"apiVersion", func(r *controller.Resource) string { return r.APIVersion }},
	{"kind", func(r *controller.Resource) string { return r.Kind }},
	{"metadata.namespace", func(r *controller.Resource) string { return r.Metadata.Namespace }},
	{"metadata.name", func(r *controller.Resource) string { return r.Metadata.Name }},
}

// applyPatch applies p to cur and checks the result as a put's resource is
// checked; it returns the resource to write.
func (s *Server) applyPatch(t *Type, at ref, p *patchOp, cur *entry) (*controller.Resource, error) {
	// The file form is the REST form without its resourceVersion.
	was, err := decodeResource(cur.json)
	if err != nil {
		return nil, fmt.Errorf("decoding the stored resource: %w", err)
	}
	rv := was.resource.Metadata.ResourceVersion
	was.resource.Metadata.ResourceVersion = ""
	doc, err := json.Marshal(&was.resource)
	if err != nil {
		return nil, fmt.Errorf("encoding the stored resource: %w", err)
	}
	var out []byte
	switch p.typ {
	case cupv1alpha1.PatchType_PATCH_TYPE_MERGE:
		out, err = jsonpatch.MergePatch(doc, p.text)
	default:
		opts := jsonpatch.NewApplyOptions()
		// Copies could double the resource with each operation.
		opts.AccumulatedCopySizeLimit = s.cfg.maxResource
		opts.EscapeHTML = false
		out, err = applyJSONPatch(doc, p.json, opts, s.cfg.maxResource)
	}
	if err != nil {
		return nil, fieldError(p.field, "does not apply to %s %q (resource_version %s): %v", t.Singular, at.name, rv, err)
	}
	if document.CheckDepth(out, s.cfg.maxDepth) != nil {
		return nil, fieldError(p.field, "the patched resource nests objects and arrays more than %d deep, counting the resource as 1 (cupd --max-json-depth)", s.cfg.maxDepth)
	}
	in, err := decodeResource(out)
	if err != nil {
		return nil, fieldError(p.field, "the patched resource is not a resource: %v", err)
	}
	for _, f := range immutable {
		if old, got := f.of(&was.resource), f.of(&in.resource); old != got {
			return nil, fieldError(f.field, "a patch cannot change it (from %q to %q): it says what and where the resource is; put a new resource and delete this one instead", old, got)
		}
	}
	// The labels and annotations follow the rules a put's follow (the
	// proto's), named as the resource's fields.
	md := &in.resource.Metadata
	if err := s.validate(&cupv1alpha1.Resource{ApiVersion: in.resource.APIVersion, Kind: in.resource.Kind, Metadata: &cupv1alpha1.ObjectMeta{
		Namespace: md.Namespace, Name: md.Name, Labels: md.Labels, Annotations: md.Annotations,
	}}); err != nil {
		return nil, err
	}
	// A resourceVersion the patch sets is a precondition, as in Kubernetes.
	if pre := in.resource.Metadata.ResourceVersion; pre != "" {
		if pre != rv {
			return nil, &sentinelError{errPreconditionFailed, fmt.Sprintf(
				"precondition failed: %s %q has resource_version %q, not the metadata.resourceVersion %q the patch sets: read it again and retry",
				t.Singular, at.name, rv, pre)}
		}
		in.resource.Metadata.ResourceVersion = ""
	}
	in.field, in.specField, in.patched = p.field, "spec", true
	return s.checkResource(t, at, in)
}

func (h *resourceService) Patch(ctx context.Context, req *connect.Request[cupv1alpha1.PatchRequest]) (*connect.Response[cupv1alpha1.PatchResponse], error) {
	m := req.Msg
	res, stored, err := h.s.patch(ctx, ref{m.Group, m.Version, m.Plural, m.Namespace, m.Name}, "patch", m.Type, []byte(m.Patch), writeOptions{
		revision: m.Revision, message: m.Message, precondition: m.ResourceVersion,
		changeSet: m.ChangeSet, idempotencyKey: m.IdempotencyKey, dryRun: m.DryRun,
	})
	return storedResponse(h.s, res, stored, err, func(res *cupv1alpha1.WriteResult, r *cupv1alpha1.Resource) *cupv1alpha1.PatchResponse {
		return &cupv1alpha1.PatchResponse{Result: res, Resource: r}
	})
}

// patchTypes are the Content-Types of the patches the REST form serves.
var patchTypes = map[string]cupv1alpha1.PatchType{
	"application/merge-patch+json": cupv1alpha1.PatchType_PATCH_TYPE_MERGE,
	"application/json-patch+json":  cupv1alpha1.PatchType_PATCH_TYPE_JSON,
}

// unservedPatchTypes are patch types Kubernetes serves and cup does not,
// with why.
var unservedPatchTypes = map[string]string{
	"application/strategic-merge-patch+json": "strategic merge patches need Kubernetes' Go types, which cup's resources do not have",
	"application/apply-patch+yaml":           "cup has no server-side apply",
	"application/apply-patch+cbor":           "cup has no server-side apply",
}

// restPatch serves PATCH on a resource: the body is the patch, its
// Content-Type says which kind.
func (s *Server) restPatch(w http.ResponseWriter, r *http.Request) {
	typ, ce := patchType(r.Header.Get("Content-Type"))
	if ce != nil {
		if c := callFrom(r.Context()); c != nil {
			c.err = ce
		}
		writeErrorJSONStatus(w, ce, http.StatusUnsupportedMediaType)
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(body) == 0 {
		s.writeError(w, r, fieldError("body", "empty: send the patch"))
		return
	}
	p, err := writeParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req := &cupv1alpha1.PatchRequest{
		Group: r.PathValue("group"), Version: r.PathValue("version"), Plural: r.PathValue("plural"),
		Namespace: r.PathValue("namespace"), Name: r.PathValue("name"),
		Type: typ, Patch: string(body),
		Revision: p.revision, Message: p.message, DryRun: p.dryRun, ResourceVersion: p.precondition,
		ChangeSet: p.changeSet, IdempotencyKey: p.idempotencyKey,
	}
	names := maps.Clone(p.names)
	names["patch"] = "body"
	if err := s.validateAs(req, names); err != nil {
		s.writeError(w, r, err)
		return
	}
	result, stored, err := s.patch(r.Context(), restRef(r), "body", typ, body, p.options())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeStored(w, r, result, stored)
}

// patchType is the patch type a PATCH's Content-Type names, or an error
// saying which are served.
func patchType(contentType string) (cupv1alpha1.PatchType, *connect.Error) {
	const served = "send Content-Type application/merge-patch+json (RFC 7396) or application/json-patch+json (RFC 6902)"
	if contentType == "" {
		return 0, connect.NewError(connect.CodeUnimplemented, errors.New("a PATCH needs a Content-Type: "+served))
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return 0, connect.NewError(connect.CodeUnimplemented, fmt.Errorf("Content-Type %q is not a media type: %s", truncate(contentType, 64), served))
	}
	if typ, ok := patchTypes[mt]; ok {
		return typ, nil
	}
	if why, ok := unservedPatchTypes[mt]; ok {
		return 0, connect.NewError(connect.CodeUnimplemented, fmt.Errorf("%s is not served (%s): %s", mt, why, served))
	}
	return 0, connect.NewError(connect.CodeUnimplemented, fmt.Errorf("Content-Type %s is not a patch type: %s", truncate(mt, 64), served))
}
