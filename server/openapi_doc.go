package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/openapi"
)

// The components every document holds besides its types'.
const (
	componentMeta       = "cup.v1alpha1.ObjectMeta"
	componentError      = "cup.v1alpha1.Error"
	componentStatus     = "cup.v1alpha1.ResourceStatus"
	componentWatchEvent = "cup.v1alpha1.WatchEvent"
	componentJSONPatch  = "cup.v1alpha1.JSONPatchOperation"
)

// Patterns of names, as the API's rules check them.
const (
	dnsLabel     = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	dnsSubdomain = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)

// queryParams describe the query parameters of the REST form, by name.
// A parameter a route takes that is not here is listed as a string
// without a description (a test fails on it).
var queryParams = map[string]struct {
	schema      map[string]any
	description string
}{
	"revision":            {str(), "Reads: the branch, tag or commit to read. Writes: the branch to write to. Default: the served branch."},
	"labelSelector":       {str(), "Only resources whose labels match this Kubernetes label selector, e.g. `team=growth,tier!=web`."},
	"fieldSelector":       {str(), "Only resources whose fields match this Kubernetes field selector on metadata.name and metadata.namespace, e.g. `metadata.name=a`."},
	"continue":            {str(), "The continue token of the previous page."},
	"limit":               {map[string]any{"type": "integer", "format": "int32", "minimum": 0}, "The most items a page holds; 0 for the server's default."},
	"problems":            {boolean(), "List the files that are not resources instead of warning about them."},
	"watch":               {boolean(), "Watch: answer with one cup.v1alpha1.WatchEvent JSON object per line as changes happen, instead of a list. A watch takes resourceVersion, labelSelector, allowWatchBookmarks and sendInitialEvents (and fieldSelector where served)."},
	"resourceVersion":     {str(), "Watches: the commit to watch from (410 Gone when it is not in the branch's history). Writes: write only if the stored resource has this resourceVersion (also as If-Match)."},
	"allowWatchBookmarks": {boolean(), "Watches: send BOOKMARK events, with the commit reached."},
	"sendInitialEvents":   {boolean(), "Watches: first send an ADDED event for each resource at the start, then a BOOKMARK."},
	"message":             {str(), "The commit message; by default one naming the resource."},
	"dryRun":              {boolean(), "Compute what the write would change without writing anything."},
	"idempotencyKey":      {str(), "Repeat a write safely: a write with the key of an earlier one answers as that one did (also as the Idempotency-Key header)."},
	"changeSet":           {str(), "Add the write to this change set (one proposal for many writes)."},
	"until":               {str(), "History: start at this commit (default: the branch's head)."},
	"since":               {str(), "History: stop at this commit."},
	"hash":                {str(), "The document's hash, as GET /openapi/v3 gives it."},
}

func str() map[string]any     { return map[string]any{"type": "string"} }
func boolean() map[string]any { return map[string]any{"type": "boolean"} }

// buildOpenAPI is the OpenAPI 3.0 document, as JSON, of types (all of
// group/version) served by ops.
func buildOpenAPI(group, version string, types []*Type, ops []restOperation) ([]byte, error) {
	c := openapi.Components{}
	shared(c)
	paths := map[string]any{}
	opIDs := map[string]bool{}
	for _, t := range types {
		resource, list, err := typeComponents(t, c)
		if err != nil {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("the schema of %s/%s %s: %w", t.Group, t.Version, t.Plural, err))
		}
		for _, op := range ops {
			p := strings.NewReplacer("{group}", t.Group, "{version}", t.Version, "{plural}", t.Plural).Replace(op.path)
			item, _ := paths[p].(map[string]any)
			if item == nil {
				item = map[string]any{}
				paths[p] = item
			}
			item[strings.ToLower(op.method)] = operation(t, op, resource, list, c, opIDs)
		}
	}
	doc := map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":       "cup " + group + "/" + version,
			"version":     version,
			"description": "The REST form of cup's API for the resource types of " + group + "/" + version + ", built from their definitions' JSON Schemas. The server validates with the JSON Schemas themselves; where OpenAPI 3.0 cannot say what they say, these schemas are looser, never stricter.",
		},
		"paths":      paths,
		"components": map[string]any{"schemas": map[string]any(c)},
	}
	return json.Marshal(doc)
}

// shared defines the components every document holds.
func shared(c openapi.Components) {
	strMap := map[string]any{"type": "object", "additionalProperties": str()}
	c[componentMeta] = map[string]any{
		"type":        "object",
		"description": "The resource's namespace, name, labels and annotations, and its resourceVersion (set by the server on reads).",
		"properties": map[string]any{
			"namespace":       map[string]any{"type": "string", "maxLength": 63, "pattern": dnsLabel},
			"name":            map[string]any{"type": "string", "maxLength": 253, "pattern": dnsSubdomain},
			"labels":          strMap,
			"annotations":     strMap,
			"resourceVersion": map[string]any{"type": "string", "description": "The version of the resource's content: hex, as its ETag holds it."},
		},
	}
	codes := []any{}
	for c := connect.CodeCanceled; c <= connect.CodeUnauthenticated; c++ {
		codes = append(codes, c.String())
	}
	c[componentError] = map[string]any{
		"type":        "object",
		"description": "An error: the Connect code (whose HTTP status the answer has) and what was wrong.",
		"required":    []any{"code", "message"},
		"properties": map[string]any{
			"code":    map[string]any{"type": "string", "enum": codes},
			"message": str(),
		},
	}
	c[componentStatus] = map[string]any{
		"type":        "object",
		"description": "The conditions the reconcilers derived for the resource, at the commit read; never written.",
		"properties": map[string]any{
			"conditions": map[string]any{"type": "array", "items": map[string]any{
				"type":     "object",
				"required": []any{"type", "status"},
				"properties": map[string]any{
					"reconciler": str(), "type": str(), "reason": str(), "message": str(),
					"status":             map[string]any{"type": "string", "enum": []any{"True", "False", "Unknown"}},
					"observedRevision":   str(),
					"lastTransitionTime": map[string]any{"type": "string", "format": "date-time"},
				},
			}},
		},
	}
	c[componentWatchEvent] = map[string]any{
		"type":        "object",
		"description": "One line of a watch.",
		"required":    []any{"type", "object"},
		"properties": map[string]any{
			"type":           map[string]any{"type": "string", "enum": []any{"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"}},
			"object":         map[string]any{"type": "object", "description": "The resource; for a BOOKMARK its metadata.resourceVersion only; for an ERROR a Kubernetes Status."},
			"commit":         str(),
			"resumeRevision": map[string]any{"type": "string", "description": "The resourceVersion to watch from to resume after this event."},
		},
	}
	c[componentJSONPatch] = map[string]any{
		"type":        "object",
		"description": "One operation of a JSON patch (RFC 6902).",
		"required":    []any{"op", "path"},
		"properties": map[string]any{
			"op":    map[string]any{"type": "string", "enum": []any{"add", "remove", "replace", "move", "copy", "test"}},
			"path":  str(),
			"from":  str(),
			"value": map[string]any{},
		},
	}
}

// componentBase is the name of t's resource component, as Kubernetes
// names a custom resource's: the group reversed, the version, the kind
// ("dev.cup.flags.v1alpha1.Flag").
func componentBase(t *Type) string {
	parts := strings.Split(t.Group, ".")
	slices.Reverse(parts)
	return strings.Join(parts, ".") + "." + t.Version + "." + t.Kind
}

// typeComponents defines t's resource and list components, returning
// their names.
func typeComponents(t *Type, c openapi.Components) (resource, list string, err error) {
	base := componentBase(t)
	resource = c.Claim(base)
	list = c.Claim(base + "List")
	schema := []byte(t.Schema)
	if len(schema) == 0 {
		schema = []byte("{}")
	}
	gvk := []any{map[string]any{"group": t.Group, "version": t.Version, "kind": t.Kind}}
	statusProp := map[string]any{"allOf": []any{openapi.Ref(componentStatus)}, "readOnly": true}
	if t.SchemaTarget == "resource" {
		root, err := openapi.Convert(schema, resource, c)
		if err != nil {
			return "", "", err
		}
		// The server adds the status of a reconciler's primary on reads.
		if props, ok := root["properties"].(map[string]any); ok && props["status"] == nil {
			props["status"] = statusProp
		}
		root["x-kubernetes-group-version-kind"] = gvk
		c[resource] = root
	} else {
		spec := c.Claim(base + "Spec")
		root, err := openapi.Convert(schema, spec, c)
		if err != nil {
			return "", "", err
		}
		c[spec] = root
		c[resource] = map[string]any{
			"type":        "object",
			"description": "A " + t.Kind + ": its spec is what the definition's schema describes.",
			"properties": map[string]any{
				"apiVersion": map[string]any{"type": "string", "enum": []any{t.Group + "/" + t.Version}, "description": "Always given on reads; optional on writes."},
				"kind":       map[string]any{"type": "string", "enum": []any{t.Kind}, "description": "Always given on reads; optional on writes."},
				"metadata":   openapi.Ref(componentMeta),
				"spec":       openapi.Ref(spec),
				"status":     statusProp,
			},
			"x-kubernetes-group-version-kind": gvk,
		}
	}
	c[list] = map[string]any{
		"type":        "object",
		"description": "A page of " + t.Plural + ".",
		"required":    []any{"items", "revision"},
		"properties": map[string]any{
			"items":    map[string]any{"type": "array", "items": openapi.Ref(resource)},
			"revision": map[string]any{"type": "string", "description": "The commit read."},
			"continue": map[string]any{"type": "string", "description": "The token of the next page, when there is one."},
			"warnings": map[string]any{"type": "array", "description": "Files that are not resources of the type, and why.", "items": map[string]any{
				"type": "object", "required": []any{"reason"},
				"properties": map[string]any{"path": str(), "reason": str()},
			}},
			"moreWarnings": map[string]any{"type": "integer", "description": "How many warnings were left out."},
		},
	}
	return resource, list, nil
}

// operation describes op on t's resources.
func operation(t *Type, op restOperation, resource, list string, c openapi.Components, ids map[string]bool) map[string]any {
	var params []any
	for _, n := range []string{"namespace", "name"} {
		if strings.Contains(op.path, "{"+n+"}") {
			pattern, max := dnsLabel, 63
			if n == "name" {
				pattern, max = dnsSubdomain, 253
			}
			params = append(params, map[string]any{"name": n, "in": "path", "required": true,
				"schema": map[string]any{"type": "string", "pattern": pattern, "maxLength": max}})
		}
	}
	query := slices.Clone(op.params)
	for _, p := range op.watchParams {
		if !slices.Contains(query, p) {
			query = append(query, p)
		}
	}
	for _, q := range query {
		d := queryParams[q]
		schema := d.schema
		if schema == nil {
			schema = str()
		}
		p := map[string]any{"name": q, "in": "query", "schema": schema}
		if d.description != "" {
			p["description"] = d.description
		}
		params = append(params, p)
	}
	write := op.method != http.MethodGet
	if write && slices.Contains(op.params, "resourceVersion") {
		params = append(params, map[string]any{"name": "If-Match", "in": "header", "schema": str(),
			"description": "The resourceVersion precondition, as the ETag a get answered."})
	}
	if write && slices.Contains(op.params, "idempotencyKey") {
		params = append(params, map[string]any{"name": headerIdempotencyKey, "in": "header", "schema": str(),
			"description": "The idempotency key, as the idempotencyKey parameter."})
	}
	commitHeader := map[string]any{headerCommit: map[string]any{"description": "The commit read or written.", "schema": str()}}
	jsonBody := func(schema any) map[string]any {
		return map[string]any{"application/json": map[string]any{"schema": schema}}
	}
	ok := func(desc string, schema any) map[string]any {
		return map[string]any{"description": desc, "headers": commitHeader, "content": jsonBody(schema)}
	}
	putResult := map[string]any{"type": "object", "properties": map[string]any{
		"result":   openapi.Message((&cupv1alpha1.WriteResult{}).ProtoReflect().Descriptor(), c),
		"resource": openapi.Ref(resource),
	}}
	writeResponses := func(body any) map[string]any {
		return map[string]any{
			"200": ok("A dry run: what the write would do.", body),
			"202": ok("Written: committed, or proposed.", body),
			"204": map[string]any{"description": "Nothing changed: the resource already was as asked."},
		}
	}
	var verb, summary string
	var body map[string]any
	responses := map[string]any{}
	kind := t.Kind
	switch op.method + " " + op.path {
	case "GET " + collectionPath:
		verb, summary = "listNamespaced", "List or watch the "+t.Plural+" of a namespace."
		responses["200"] = ok("The page; with watch=true, one cup.v1alpha1.WatchEvent per line instead.", openapi.Ref(list))
	case "GET " + allNamespacesPath:
		verb, summary = "list", "List or watch the "+t.Plural+" of every namespace."
		kind += "ForAllNamespaces"
		responses["200"] = ok("The page; with watch=true, one cup.v1alpha1.WatchEvent per line instead.", openapi.Ref(list))
	case "GET " + itemPath:
		verb, summary = "readNamespaced", "Read a "+t.Singular+"."
		r := ok("The resource.", openapi.Ref(resource))
		r["headers"] = map[string]any{headerCommit: commitHeader[headerCommit], "ETag": map[string]any{"description": "The resourceVersion, quoted.", "schema": str()}}
		responses["200"] = r
	case "PUT " + itemPath:
		verb, summary = "replaceNamespaced", "Create or replace a "+t.Singular+": a commit, or a proposal."
		body = jsonBody(openapi.Ref(resource))
		responses = writeResponses(putResult)
	case "POST " + collectionPath:
		verb, summary = "createNamespaced", "Create a "+t.Singular+": a commit, or a proposal."
		body = jsonBody(openapi.Ref(resource))
		responses = writeResponses(putResult)
	case "PATCH " + itemPath:
		verb, summary = "patchNamespaced", "Patch a "+t.Singular+" with a JSON merge patch (RFC 7396) or a JSON patch (RFC 6902), by Content-Type: a commit, or a proposal."
		body = map[string]any{
			"application/merge-patch+json": map[string]any{"schema": map[string]any{"type": "object", "description": "A JSON merge patch of the " + t.Kind + "."}},
			"application/json-patch+json":  map[string]any{"schema": map[string]any{"type": "array", "items": openapi.Ref(componentJSONPatch)}},
		}
		responses = writeResponses(putResult)
	case "DELETE " + itemPath:
		verb, summary = "deleteNamespaced", "Delete a "+t.Singular+": a commit, or a proposal."
		responses = writeResponses(openapi.Message((&cupv1alpha1.DeleteResponse{}).ProtoReflect().Descriptor(), c))
	case "GET " + statusPath:
		verb, summary = "readNamespaced", "Read the status the reconcilers derive for a "+t.Singular+"."
		kind += "Status"
		responses["200"] = ok("The status.", openapi.Ref(componentStatus))
	case "GET " + historyPath:
		verb, summary = "readNamespaced", "The commits that changed a "+t.Singular+", newest first."
		kind += "History"
		responses["200"] = ok("A page of history.", openapi.Message((&cupv1alpha1.HistoryResponse{}).ProtoReflect().Descriptor(), c))
	case "GET " + renderPath:
		verb, summary = "readNamespaced", "What the reconcilers would write for a "+t.Singular+"."
		kind += "Render"
		responses["200"] = ok("The rendering.", openapi.Message((&cupv1alpha1.RenderResponse{}).ProtoReflect().Descriptor(), c))
	default:
		verb, summary = strings.ToLower(op.method), op.method+" "+op.path
		responses["200"] = map[string]any{"description": "Success."}
	}
	responses["default"] = map[string]any{"description": "An error.", "content": jsonBody(openapi.Ref(componentError))}
	id := verb + kind
	for i := 2; ids[id]; i++ {
		id = fmt.Sprintf("%s%s%d", verb, kind, i)
	}
	ids[id] = true
	out := map[string]any{
		"operationId": id,
		"summary":     summary,
		"tags":        []any{t.Plural},
		"responses":   responses,
	}
	if len(params) > 0 {
		out["parameters"] = params
	}
	if body != nil {
		out["requestBody"] = map[string]any{"required": true, "content": body}
	}
	return out
}
