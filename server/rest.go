package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/document"
)

// The REST form:
//
//	GET    /apis                                                  every definition
//	GET    /apis/{group}/{version}/namespaces/{namespace}/{plural}         list
//	POST   /apis/{group}/{version}/namespaces/{namespace}/{plural}         create
//	GET    /apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}  get
//	PUT    /apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}  put
//	PATCH  /apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}  patch (see patch.go)
//	DELETE /apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}  delete
//	GET    /apis/cup.dev/v1alpha1/proposals                                proposals (see proposals.go)
//	GET    /apis/cup.dev/v1alpha1/proposals/{id}                           one proposal
//	GET    /apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}/status  status (see status.go)
//	GET    /apis/{group}/{version}/{plural}                                list every namespace (see rest_watch.go)
//	GET    /apis/cup.dev/v1alpha1/dependencygraph                          the reconcilers' graph
//	GET    /apis/cup.dev/v1alpha1/namespaces                               namespaces and counts (see namespaces.go)
//	POST   /apis/cup.dev/v1alpha1/accessreviews                            what the caller may do (see access.go)
//
// Errors answer the HTTP status Connect maps the code to, with a JSON body
// {"code": "...", "message": "..."}.
const (
	collectionPath = "/apis/{group}/{version}/namespaces/{namespace}/{plural}"
	itemPath       = collectionPath + "/{name}"

	// headerCommit carries the commit a read came from.
	headerCommit = "Cup-Commit"
	// headerIdempotencyKey carries a write's idempotency key (as the
	// idempotencyKey query parameter may).
	headerIdempotencyKey = "Idempotency-Key"
	// headerReplayed marks the answer to a write that repeated an earlier
	// one with the same idempotency key.
	headerReplayed = "Idempotent-Replayed"
)

var marshalJSON = protojson.MarshalOptions{}

func (s *Server) routeREST(mux *http.ServeMux) {
	write := []string{"revision", "message", "dryRun", "idempotencyKey", "resourceVersion", "changeSet"}
	mux.Handle("GET /apis", s.rest(s.restDefinitions))
	mux.Handle("GET /apis/{$}", s.rest(s.restDefinitions))
	s.routeWatch(mux, s.restList, []string{"revision", "labelSelector", "fieldSelector", "continue", "limit", "problems"})
	mux.Handle("GET "+itemPath, s.rest(s.restGet, "revision"))
	mux.Handle("PUT "+itemPath, s.rest(s.restPut, write...))
	mux.Handle("POST "+collectionPath, s.rest(s.restCreate, "revision", "message", "dryRun", "idempotencyKey", "changeSet"))
	mux.Handle("PATCH "+itemPath, s.rest(s.restPatch, write...))
	mux.Handle("DELETE "+itemPath, s.rest(s.restDelete, write...))
	mux.Handle("GET "+proposalsPath, s.rest(s.restListProposals, "state", "group", "plural", "namespace", "name"))
	mux.Handle("GET "+proposalPath, s.rest(s.restGetProposal))
	mux.Handle("GET "+statusPath, s.rest(s.restStatus, "revision"))
	mux.Handle("GET "+renderPath, s.rest(s.restRender, "revision"))
	mux.Handle("GET "+graphPath, s.rest(s.restGraph))
	mux.Handle("GET "+namespacesPath, s.rest(s.restListNamespaces, "group", "version", "plural", "revision"))
	mux.Handle("POST "+accessReviewsPath, s.rest(s.restCheckAccess))
	// Not the list of a type "accessreviews" across namespaces: 405.
	mux.Handle("GET "+accessReviewsPath, s.restCall(s.restNoRoute))
	// Everything else under /apis answers in the REST form's JSON too,
	// rather than with the mux's plain-text 404 or 405.
	mux.Handle("/apis", s.restCall(s.restNoRoute))
	mux.Handle("/apis/", s.restCall(s.restNoRoute))
}

// queryAllowed refuses a query holding parameters other than allowed, or
// one of them more than once, naming the parameter.
func queryAllowed(r *http.Request, allowed []string) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return fieldError("query", "%v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		switch {
		case !slices.Contains(allowed, name):
			if len(allowed) == 0 {
				return fieldError(truncate(name, 64), "unknown query parameter: %s takes none", r.Pattern)
			}
			return fieldError(truncate(name, 64), "unknown query parameter: %s takes %s", r.Pattern, strings.Join(allowed, ", "))
		case len(q[name]) > 1:
			return fieldError(name, "given %d times: give it once", len(q[name]))
		}
	}
	return nil
}

// truncate shortens s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// restNoRoute answers what no route of the REST form serves: 405 with the
// methods the path allows when it names a collection, an item or a
// proposal, and 404 otherwise, in the REST form's JSON either way.
func (s *Server) restNoRoute(w http.ResponseWriter, r *http.Request) {
	if allow := allowedMethods(r.URL.Path); allow != "" {
		if c := callFrom(r.Context()); c != nil {
			c.err = connect.NewError(connect.CodeUnimplemented, errMethodNotAllowed)
		}
		w.Header().Set("Allow", allow)
		writeErrorJSONStatus(w, connect.NewError(connect.CodeUnimplemented, fmt.Errorf("%s is not served on %s: use %s", r.Method, r.URL.Path, allow)),
			http.StatusMethodNotAllowed)
		return
	}
	s.writeError(w, r, connect.NewError(connect.CodeNotFound, fmt.Errorf(
		"the REST form has no %s %s: it serves GET /apis, GET and POST %s, GET %s, GET, PUT, PATCH and DELETE %s, GET %s, %s and %s, GET %s, %s, %s and %s, and POST %s",
		r.Method, r.URL.Path, collectionPath, allNamespacesPath, itemPath, statusPath, renderPath, historyPath,
		proposalsPath, proposalPath, graphPath, namespacesPath, accessReviewsPath)))
}

// allowedMethods are the methods the REST form serves on path, when one of
// its routes has path's shape; empty otherwise.
func allowedMethods(path string) string {
	switch {
	case path == accessReviewsPath:
		return "POST"
	case path == "/apis" || path == "/apis/" || path == proposalsPath || path == graphPath || path == namespacesPath ||
		strings.HasPrefix(path, proposalsPath+"/") && !strings.Contains(path[len(proposalsPath)+1:], "/"):
		return "GET"
	}
	rest, ok := strings.CutPrefix(path, "/apis/")
	if !ok {
		return ""
	}
	parts := strings.Split(rest, "/")
	for _, p := range parts {
		if p == "" {
			return ""
		}
	}
	switch {
	case len(parts) == 3:
		return "GET"
	case len(parts) == 5 && parts[2] == "namespaces":
		return "GET, POST"
	case len(parts) == 6 && parts[2] == "namespaces":
		return "GET, PUT, PATCH, DELETE"
	case len(parts) == 7 && parts[2] == "namespaces" && (parts[6] == "status" || parts[6] == "history"):
		return "GET"
	}
	return ""
}

func (s *Server) restDefinitions(w http.ResponseWriter, r *http.Request) {
	s.writeMessage(w, r, http.StatusOK, &cupv1alpha1.ListDefinitionsResponse{Definitions: s.visibleDefinitions(r.Context())})
}

func (s *Server) restGet(w http.ResponseWriter, r *http.Request) {
	req := &cupv1alpha1.GetRequest{
		Group: r.PathValue("group"), Version: r.PathValue("version"), Plural: r.PathValue("plural"),
		Namespace: r.PathValue("namespace"), Name: r.PathValue("name"),
		Revision: r.URL.Query().Get("revision"),
	}
	if err := s.validateAs(req, restNames); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, commit, err := s.get(r.Context(), restRef(r), req.Revision)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body := e.json
	// A type that is a reconciler's primary has its status beside its
	// spec, as Kubernetes places it; never written back (a PUT refuses
	// it).
	if st := s.statusOnGet(r.Context(), restRef(r), commit); st != nil {
		if body, err = withStatus(e.json, st); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Etag"] = []string{e.etag()}
	h[headerCommit] = []string{commit}
	_, _ = w.Write(body)
}

func (s *Server) restList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := &cupv1alpha1.ListRequest{
		Group: r.PathValue("group"), Version: r.PathValue("version"), Plural: r.PathValue("plural"),
		Namespace: r.PathValue("namespace"), Revision: q.Get("revision"),
		LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector"), PageToken: q.Get("continue"),
	}
	var err error
	if req.PageSize, err = limitParam(q.Get("limit")); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Problems, err = boolParam(q.Get("problems"), "problems"); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.validateAs(req, restNames); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.list(r.Context(), restRef(r), listQuery{
		revision: req.Revision, labelSelector: req.LabelSelector, fieldSelector: req.FieldSelector, pageToken: req.PageToken,
		pageSize: int(req.PageSize), problems: req.Problems,
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h[headerCommit] = []string{p.commit}
	if !req.Problems && len(p.warnings) > 0 {
		h["Warning"] = warningHeaders(p.warnings, p.more)
	}
	// Stream the pre-encoded items: a listing of 10,000 resources is several
	// MiB that need not be copied into one buffer first.
	bw := bufio.NewWriterSize(w, 32<<10)
	_, _ = bw.WriteString(`{"items":[`)
	for i, e := range p.items {
		if i > 0 {
			_ = bw.WriteByte(',')
		}
		_, _ = bw.Write(e.json)
	}
	_, _ = bw.WriteString(`],"revision":"` + p.commit + `"`)
	if p.next != "" {
		_, _ = bw.WriteString(`,"continue":"` + p.next + `"`) // base64url: nothing to escape
	}
	if len(p.warnings) > 0 {
		type warning struct {
			Path   string `json:"path,omitempty"`
			Reason string `json:"reason"`
		}
		ws := make([]warning, len(p.warnings))
		for i, w := range p.warnings {
			ws[i] = warning{w.path, w.reason}
		}
		b, _ := json.Marshal(ws) // strings only: cannot fail
		_, _ = bw.WriteString(`,"warnings":`)
		_, _ = bw.Write(b)
	}
	if p.more > 0 {
		_, _ = bw.WriteString(`,"moreWarnings":` + strconv.Itoa(p.more))
	}
	_, _ = bw.WriteString("}")
	_ = bw.Flush()
}

func (s *Server) restPut(w http.ResponseWriter, r *http.Request) {
	s.restWrite(w, r, false)
}

// restCreate creates the resource in the body, named by its
// metadata.name, in the collection of the path, as Kubernetes' POST does:
// 409 AlreadyExists when it exists.
func (s *Server) restCreate(w http.ResponseWriter, r *http.Request) {
	s.restWrite(w, r, true)
}

// restWrite puts the resource in the body: at the path's name, or with
// create at the collection of the path, under the body's metadata.name.
func (s *Server) restWrite(w http.ResponseWriter, r *http.Request, create bool) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := document.CheckDepth(body, s.cfg.maxDepth); err != nil {
		s.writeError(w, r, s.depthError("body"))
		return
	}
	// The body decodes straight into the resource; its spec stays the
	// JSON the caller sent: exact numbers, and a fraction of the memory.
	in, err := decodeResource(body)
	if err != nil {
		s.writeError(w, r, fieldError("body", "not a resource in JSON: %v", err))
		return
	}
	p, err := writeParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The proto's rules check the names, metadata and options; the spec
	// is the type's schema's to check.
	md := &in.resource.Metadata
	at := restRef(r)
	names := p.names
	if create {
		if md.Name == "" {
			s.writeError(w, r, fieldError("metadata.name", "must be set: a POST to a collection creates the resource the body names"))
			return
		}
		at.name = md.Name
		names = maps.Clone(names)
		names["name"] = "metadata.name"
	}
	req := &cupv1alpha1.PutRequest{
		Group: at.group, Version: at.version, Plural: at.plural,
		Namespace: at.namespace, Name: at.name, Create: create,
		Resource: &cupv1alpha1.Resource{
			ApiVersion: in.resource.APIVersion, Kind: in.resource.Kind,
			Metadata: &cupv1alpha1.ObjectMeta{
				Namespace: md.Namespace, Name: md.Name, Labels: md.Labels, Annotations: md.Annotations,
				ResourceVersion: md.ResourceVersion,
			},
		},
		Revision: p.revision, Message: p.message, DryRun: p.dryRun, ResourceVersion: p.precondition,
		ChangeSet: p.changeSet, IdempotencyKey: p.idempotencyKey,
	}
	if err := s.validateAs(req, names); err != nil {
		s.writeError(w, r, err)
		return
	}
	o := p.options()
	o.create = create
	result, stored, err := s.put(r.Context(), at, in, o)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeStored(w, r, result, stored)
}

// writeStored answers a write that stored a resource (a PUT or a PATCH) as
// writeResult does, with PutResponse's form as the body: the resource as
// stored, which is JSON already, beside the result. Its ETag is the stored
// resource's, as a GET would answer it next; a dry run, which stored
// nothing, has none.
func (s *Server) writeStored(w http.ResponseWriter, r *http.Request, result *cupv1alpha1.WriteResult, stored *entry) {
	if result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_DRY_RUN {
		w.Header()["Etag"] = []string{stored.etag()}
	}
	s.writeResultJSON(w, r, result, func() ([]byte, error) {
		b, err := marshalJSON.Marshal(result)
		if err != nil {
			return nil, err
		}
		return slices.Concat([]byte(`{"result":`), b, []byte(`,"resource":`), stored.json, []byte(`}`)), nil
	})
}

func (s *Server) restDelete(w http.ResponseWriter, r *http.Request) {
	p, err := writeParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req := &cupv1alpha1.DeleteRequest{
		Group: r.PathValue("group"), Version: r.PathValue("version"), Plural: r.PathValue("plural"),
		Namespace: r.PathValue("namespace"), Name: r.PathValue("name"),
		Revision: p.revision, Message: p.message, DryRun: p.dryRun, ResourceVersion: p.precondition,
		ChangeSet: p.changeSet, IdempotencyKey: p.idempotencyKey,
	}
	if err := s.validateAs(req, p.names); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.del(r.Context(), restRef(r), p.options())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeResult(w, r, res, &cupv1alpha1.DeleteResponse{Result: res})
}

// writeResult answers a write: 204 when it changed nothing, 200 with the
// result for a dry run, 202 with the result when something was written. A
// replayed write answers as the first did, with Idempotent-Replayed: true.
func (s *Server) writeResult(w http.ResponseWriter, r *http.Request, res *cupv1alpha1.WriteResult, body proto.Message) {
	s.writeResultJSON(w, r, res, func() ([]byte, error) { return marshalJSON.Marshal(body) })
}

// writeResultJSON is writeResult with a body that body encodes.
func (s *Server) writeResultJSON(w http.ResponseWriter, r *http.Request, res *cupv1alpha1.WriteResult, body func() ([]byte, error)) {
	if res.Commit != "" {
		w.Header().Set(headerCommit, res.Commit)
	}
	if res.Replayed {
		w.Header().Set(headerReplayed, "true")
	}
	switch res.Outcome {
	case cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED:
		w.WriteHeader(http.StatusNoContent)
	case cupv1alpha1.WriteOutcome_WRITE_OUTCOME_DRY_RUN:
		s.writeJSON(w, r, http.StatusOK, body)
	default:
		s.writeJSON(w, r, http.StatusAccepted, body)
	}
}

// readBody reads a request body of at most the configured size.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.maxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, connect.NewError(connect.CodeResourceExhausted,
			fmt.Errorf("request body exceeds the limit of %d bytes (cupd --max-request-bytes)", tooLarge.Limit))
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, connect.NewError(connect.CodeDeadlineExceeded, fmt.Errorf(
			"the request body did not arrive within the server's limit of %s (cupd --request-timeout)", s.cfg.requestTimeout))
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return nil, ce
	}
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("reading request body: %w", err))
	}
	return b, nil
}

// writeParameters are the query parameters and headers of PUT and DELETE.
// The request they become is validated like a Connect request.
type writeParameters struct {
	revision, message, precondition string
	changeSet, idempotencyKey       string
	dryRun                          bool
	// names maps the request's fields to the query parameters and headers
	// they came in, for errors.
	names map[string]string
}

// restNames maps the fields of requests to the query parameters of the
// REST form, for errors: they name what the caller wrote.
var restNames = map[string]string{
	"resource_version": "resourceVersion",
	"dry_run":          "dryRun",
	"change_set":       "changeSet",
	"idempotency_key":  "idempotencyKey",
	"label_selector":   "labelSelector",
	"field_selector":   "fieldSelector",
	"page_size":        "limit",
	"page_token":       "continue",
	"next_page_token":  "each page's continue",
}

// options are the parameters in the core's terms.
func (p *writeParameters) options() writeOptions {
	return writeOptions{
		revision: p.revision, message: p.message, precondition: p.precondition,
		changeSet: p.changeSet, idempotencyKey: p.idempotencyKey, dryRun: p.dryRun,
	}
}

// restRef is what the path of a REST request names.
// limitParam parses a page size given as the limit parameter; "" is 0.
func limitParam(l string) (int32, error) {
	if l == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(l, 10, 32)
	if err != nil {
		return 0, fieldError("limit", "%q is not a whole number", l)
	}
	return int32(n), nil
}

func restRef(r *http.Request) ref {
	return ref{r.PathValue("group"), r.PathValue("version"), r.PathValue("plural"), r.PathValue("namespace"), r.PathValue("name")}
}

func writeParams(r *http.Request) (writeParameters, error) {
	q := r.URL.Query()
	p := writeParameters{revision: q.Get("revision"), message: q.Get("message"), changeSet: q.Get("changeSet")}
	var err error
	if p.dryRun, err = boolParam(q.Get("dryRun"), "dryRun"); err != nil {
		return p, err
	}
	// The idempotency key may come in the header other HTTP APIs use.
	if p.idempotencyKey, err = queryOrHeader(r, "idempotencyKey", headerIdempotencyKey, nil); err != nil {
		return p, err
	}
	// A resourceVersion precondition may come in If-Match, as "version" or
	// as the ETag a get returned.
	p.precondition, err = queryOrHeader(r, "resourceVersion", "If-Match", func(h string) string {
		return strings.Trim(strings.TrimPrefix(h, "W/"), `"`)
	})
	// Errors name the header a value came in, when it did.
	p.names = restNames
	ifMatch := q.Get("resourceVersion") == "" && r.Header.Get("If-Match") != ""
	keyHeader := q.Get("idempotencyKey") == "" && r.Header.Get(headerIdempotencyKey) != ""
	if ifMatch || keyHeader {
		p.names = maps.Clone(restNames)
		if ifMatch {
			p.names["resource_version"] = "If-Match"
		}
		if keyHeader {
			p.names["idempotency_key"] = headerIdempotencyKey
		}
	}
	return p, err
}

func boolParam(v, name string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fieldError(name, "%q is not true or false", v)
	}
	return b, nil
}

// queryOrHeader reads a value that may come as the query parameter query or
// the header header (passed through clean when clean is not nil); both may
// be sent if they agree.
func queryOrHeader(r *http.Request, query, header string, clean func(string) string) (string, error) {
	v := r.URL.Query().Get(query)
	if h := strings.TrimSpace(r.Header.Get(header)); h != "" {
		if clean != nil {
			h = clean(h)
		}
		if v != "" && v != h {
			return "", fieldError(header, "%q disagrees with %s %q: send one of them", h, query, v)
		}
		v = h
	}
	return v, nil
}

func (s *Server) writeMessage(w http.ResponseWriter, r *http.Request, status int, m proto.Message) {
	s.writeJSON(w, r, status, func() ([]byte, error) { return marshalJSON.Marshal(m) })
}

// writeJSON answers with status and the JSON that encode returns.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, encode func() ([]byte, error)) {
	b, err := encode()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError answers err in the REST form. The call's chain logs it
// (finish); outside a call, it is logged here.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	err = explainTimeout(r.Context(), err)
	if c := callFrom(r.Context()); c != nil {
		c.err = err
	} else {
		logFailure(r.Context(), s.cfg.logger, r.Method+" "+r.URL.Path, err)
	}
	writeErrorJSON(w, toConnect(err))
}

// writeErrorJSON answers ce in the REST form's JSON, with the status of
// its code.
func writeErrorJSON(w http.ResponseWriter, ce *connect.Error) {
	writeErrorJSONStatus(w, ce, httpStatus(ce.Code()))
}

// writeErrorJSONStatus answers ce in the REST form's JSON with status.
func writeErrorJSONStatus(w http.ResponseWriter, ce *connect.Error, status int) {
	b, _ := json.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{ce.Code().String(), ce.Message()})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// httpStatus is the HTTP status the Connect protocol gives each code.
func httpStatus(c connect.Code) int {
	switch c {
	case connect.CodeCanceled:
		return 499
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodeOutOfRange:
		return http.StatusBadRequest
	case connect.CodeDeadlineExceeded:
		return http.StatusGatewayTimeout
	case connect.CodeNotFound:
		return http.StatusNotFound
	case connect.CodeAlreadyExists, connect.CodeAborted:
		return http.StatusConflict
	case connect.CodePermissionDenied:
		return http.StatusForbidden
	case connect.CodeResourceExhausted:
		return http.StatusTooManyRequests
	case connect.CodeUnimplemented:
		return http.StatusNotImplemented
	case connect.CodeUnavailable:
		return http.StatusServiceUnavailable
	case connect.CodeUnauthenticated:
		return http.StatusUnauthorized
	default:
		return http.StatusInternalServerError
	}
}
