package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"google.golang.org/protobuf/encoding/protojson"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// The REST form of watches and history (and of lists across namespaces,
// on the same path as their watches):
//
//	GET /apis/{group}/{version}/namespaces/{namespace}/{plural}?watch=true  watch a namespace
//	GET /apis/{group}/{version}/{plural}?watch=true                         watch every namespace
//	GET /apis/{group}/{version}/{plural}                                    list every namespace
//	GET /apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}/history
//
// A watch answers 200 at once, then one JSON object per line as events
// happen, in Kubernetes' shape: {"type": "ADDED", "object": {...}}, plus
// the commit and the revision to resume from. A BOOKMARK's object holds
// only metadata.resourceVersion, the commit. A revision not in the
// branch's history is 410 Gone, as Kubernetes answers an expired
// resourceVersion. A watch that ends in error after it started (one that
// fell behind) ends with a line {"type": "ERROR", "object": {"kind":
// "Status", ...}}, whose metadata.resourceVersion is where to resume.
const (
	allNamespacesPath = "/apis/{group}/{version}/{plural}"
	historyPath       = itemPath + "/history"
)

// watchParams are the query parameters of a watch.
var watchParams = []string{"watch", "resourceVersion", "labelSelector", "fieldSelector", "allowWatchBookmarks", "sendInitialEvents"}

// watchNames maps the fields of WatchRequest to the watch's parameters.
var watchNames = map[string]string{
	"revision":            "resourceVersion",
	"label_selector":      "labelSelector",
	"field_selector":      "fieldSelector",
	"allow_bookmarks":     "allowWatchBookmarks",
	"send_initial_events": "sendInitialEvents",
}

// watchPattern and watchAllPattern are the procedure label's keys for a
// watch of one namespace and of every namespace: their routes are the
// lists', with watch=true.
const (
	watchPattern    = "GET " + collectionPath + "?watch"
	watchAllPattern = "GET " + allNamespacesPath + "?watch"
)

// routeWatch routes the lists of one namespace and of every namespace,
// which are watches with watch=true, and history.
func (s *Server) routeWatch(mux *http.ServeMux, list http.HandlerFunc, listParams []string) {
	lists, watches := s.rest(list, listParams...), s.rest(s.restWatch, watchParams...)
	for path, watch := range map[string]string{collectionPath: watchPattern, allNamespacesPath: watchAllPattern} {
		mux.Handle("GET "+path, listOrWatch{list: lists, watch: watches, pattern: watch})
	}
	mux.Handle("GET "+historyPath, s.rest(s.restHistory, "until", "since", "limit", "continue"))
}

// listOrWatch serves a list, or with watch=true a watch, whose calls
// carry the procedure label of pattern.
type listOrWatch struct {
	list, watch restRoute
	pattern     string
}

func (lw listOrWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isWatch(r) {
		r.Pattern = lw.pattern
		lw.watch.ServeHTTP(w, r)
		return
	}
	lw.list.ServeHTTP(w, r)
}

func (s *Server) restWatch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := &cupv1alpha1.WatchRequest{
		Group: r.PathValue("group"), Version: r.PathValue("version"), Plural: r.PathValue("plural"),
		Namespace: r.PathValue("namespace"), Revision: q.Get("resourceVersion"), LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector"),
	}
	var err error
	if req.AllowBookmarks, err = boolParam(q.Get("allowWatchBookmarks"), "allowWatchBookmarks"); err != nil {
		s.writeError(w, r, err)
		return
	}
	if v := q.Get("sendInitialEvents"); v != "" {
		b, err := boolParam(v, "sendInitialEvents")
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		req.SendInitialEvents = &b
	}
	if err := s.validateAs(req, watchNames); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	started := false
	rc := http.NewResponseController(w)
	start := func() {
		if started {
			return
		}
		started = true
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["X-Content-Type-Options"] = []string{"nosniff"}
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
	}
	apiVersion, kind := req.Group+"/"+req.Version, ""
	if t, err := s.lookup(req.Group, req.Version, req.Plural); err == nil {
		kind = t.Kind
	}
	var line bytes.Buffer
	qry := watchQuery{labelSelector: req.LabelSelector, fieldSelector: req.FieldSelector, revision: req.Revision, sendInitial: req.SendInitialEvents,
		bookmarks: req.AllowBookmarks, ready: start}
	err = s.watch(ctx, restRef(r), qry, func(ev *watchEvent) error {
		start()
		line.Reset()
		line.WriteString(`{"type":"`)
		line.WriteString(eventTypeName(ev.typ))
		line.WriteString(`","object":`)
		if ev.entry != nil {
			line.Write(ev.entry.json)
		} else {
			b, _ := json.Marshal(bookmarkObject(apiVersion, kind, ev))
			line.Write(b)
		}
		line.WriteString(`,"commit":"`)
		line.WriteString(ev.commit)
		line.WriteString(`","resumeRevision":"`)
		line.WriteString(ev.resume)
		line.WriteString("\"}\n")
		watchSend(ctx)
		if _, err := w.Write(line.Bytes()); err != nil {
			return err
		}
		return rc.Flush()
	})
	if err == nil || ctx.Err() != nil {
		return
	}
	if !started {
		if errors.Is(err, errRevisionGone) {
			if c := callFrom(ctx); c != nil {
				c.err = err
			}
			writeErrorJSONStatus(w, toConnect(err), http.StatusGone)
			return
		}
		s.writeError(w, r, err)
		return
	}
	// The answer is under way: the error is its last line.
	if c := callFrom(ctx); c != nil {
		c.err = err
	}
	ce := toConnect(err)
	st := map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": ce.Message(),
		"reason": ce.Code().String(), "code": httpStatus(ce.Code())}
	var re *resumeError
	if errors.As(err, &re) {
		st["metadata"] = map[string]string{"resourceVersion": re.revision}
	}
	b, _ := json.Marshal(map[string]any{"type": "ERROR", "object": st})
	watchSend(ctx)
	_, _ = w.Write(append(b, '\n'))
	_ = rc.Flush()
}

// bookmarkObject is the object of a BOOKMARK line, as Kubernetes sends it.
func bookmarkObject(apiVersion, kind string, ev *watchEvent) any {
	meta := map[string]any{"resourceVersion": ev.commit}
	if ev.initialEnd {
		meta["annotations"] = map[string]string{"k8s.io/initial-events-end": "true"}
	}
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
}

func (s *Server) restHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := &cupv1alpha1.HistoryRequest{
		Group: r.PathValue("group"), Version: r.PathValue("version"), Plural: r.PathValue("plural"),
		Namespace: r.PathValue("namespace"), Name: r.PathValue("name"),
		Until: q.Get("until"), Since: q.Get("since"), PageToken: q.Get("continue"),
	}
	var err error
	if req.PageSize, err = limitParam(q.Get("limit")); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.validateAs(req, restNames); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.history(r.Context(), restRef(r), historyQuery{until: req.Until, since: req.Since, pageToken: req.PageToken, pageSize: int(req.PageSize)})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := protojson.MarshalOptions{EmitUnpopulated: false}.Marshal(&cupv1alpha1.HistoryResponse{Entries: p.entries, NextPageToken: p.next, Commit: p.commit})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(headerCommit, p.commit)
	_, _ = w.Write(b)
}
