package server

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/sync/singleflight"

	"github.com/cup-dev/cup/internal/lru"
)

// OpenAPI v3 documents, in kube-apiserver's shape:
//
//	GET /openapi/v3                              {"paths": {"apis/<group>/<version>": {"serverRelativeURL": "/openapi/v3/apis/<group>/<version>?hash=<HASH>"}}}
//	GET /openapi/v3/apis/{group}/{version}       an OpenAPI 3.0 document for the types of group/version
//	GET /openapi/v3/apis/{group}/{version}?hash= the same, cacheable for a year
//
// HASH is the SHA-512 of the document, in upper-case hex, as Kubernetes
// computes it; it is also the document's ETag. The hashed URL answers
// with Cache-Control: public, immutable, max-age=31536000 (private under
// an authorization policy, where documents differ between callers), and
// with a 301 to the current hash when given another, as Kubernetes
// does; the discovery document and the unhashed URL answer with
// Cache-Control: no-cache, to be revalidated with If-None-Match.
//
// Each document describes the REST routes of the types of its
// group/version that the caller may see (as discovery shows them), with
// the query parameters the routes take, read from the routes themselves
// (restRoute), so the documents cannot drift from what is served.
const (
	openapiPath   = "/openapi/v3"
	openapiGVPath = openapiPath + "/apis/{group}/{version}"

	// openapiCacheBytes bounds the memory the built documents take.
	openapiCacheBytes = 16 << 20
	// openapiMaxAge is how long a hashed document may be cached: a year,
	// as Kubernetes's Expires says.
	openapiMaxAge = 365 * 24 * time.Hour
)

// openapiDoc is one built document.
type openapiDoc struct {
	json []byte
	hash string // upper-case hex SHA-512 of json
}

// openapiDocs builds and memoises the documents. A document depends only
// on the types it describes (their definitions, which do not change in a
// Server's life, and the routes): the key names them.
type openapiDocs struct {
	s      *Server
	ops    []restOperation // as the mux serves them
	cache  *lru.Cache[*openapiDoc]
	flight singleflight.Group
}

// routeOpenAPI serves the OpenAPI documents, describing the REST routes
// that mux serves (routeREST first).
func (s *Server) routeOpenAPI(mux *http.ServeMux) {
	o := &openapiDocs{s: s, ops: probeOperations(mux), cache: lru.New[*openapiDoc](openapiCacheBytes)}
	mux.Handle("GET "+openapiPath, s.rest(o.restDiscovery))
	mux.Handle("GET "+openapiGVPath, s.rest(o.restDocument, "hash"))
	mux.Handle("/openapi/", s.restCall(s.restOpenAPINoRoute))
}

func (s *Server) restOpenAPINoRoute(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, connect.NewError(connect.CodeNotFound, fmt.Errorf(
		"no OpenAPI document at %s %s: GET %s lists them, at GET %s", r.Method, r.URL.Path, openapiPath, openapiGVPath)))
}

// restOpenAPIDiscovery answers the group/versions the caller may see, each
// with the URL of its document at its current hash.
func (o *openapiDocs) restDiscovery(w http.ResponseWriter, r *http.Request) {
	s := o.s
	type gvURL struct {
		ServerRelativeURL string `json:"serverRelativeURL"`
	}
	out := struct {
		Paths map[string]gvURL `json:"paths"`
	}{Paths: map[string]gvURL{}}
	for _, gv := range s.visibleGroupVersions(r.Context()) {
		d, err := o.document(r.Context(), gv[0], gv[1])
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out.Paths["apis/"+gv[0]+"/"+gv[1]] = gvURL{openapiURL(gv[0], gv[1], d.hash)}
	}
	b, err := json.Marshal(out)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sum := sha512.Sum512(b)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Etag", `"`+strings.ToUpper(hex.EncodeToString(sum[:]))+`"`)
	h.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
}

// openapiURL is the URL of the document of group/version at hash.
func openapiURL(group, version, hash string) string {
	return (&url.URL{Path: openapiPath + "/apis/" + group + "/" + version, RawQuery: url.Values{"hash": {hash}}.Encode()}).String()
}

func (o *openapiDocs) restDocument(w http.ResponseWriter, r *http.Request) {
	s := o.s
	group, version := r.PathValue("group"), r.PathValue("version")
	d, err := o.document(r.Context(), group, version)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	hash := r.URL.Query().Get("hash")
	if hash != "" && hash != d.hash {
		// As Kubernetes answers a hash that is not the current one.
		http.Redirect(w, r, openapiURL(group, version, d.hash), http.StatusMovedPermanently)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Etag", `"`+d.hash+`"`)
	if hash != "" {
		scope := "public"
		if s.cfg.authz != nil {
			scope = "private"
		}
		h.Set("Cache-Control", fmt.Sprintf("%s, immutable, max-age=%d", scope, int(openapiMaxAge.Seconds())))
		h.Set("Expires", time.Now().Add(openapiMaxAge).UTC().Format(http.TimeFormat))
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(d.json))
}

// visibleGroupVersions are the group/versions of the types the caller may
// see, sorted.
func (s *Server) visibleGroupVersions(ctx context.Context) [][2]string {
	var out [][2]string
	for k := range s.types {
		gv := [2]string{k.Group, k.Version}
		if !slices.Contains(out, gv) && s.visible(ctx, k.Group, k.Plural) {
			out = append(out, gv)
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	return out
}

// openapiDocument is the document of the types of group/version the caller
// may see, built once for each set of types, and NotFound when there are
// none.
func (o *openapiDocs) document(ctx context.Context, group, version string) (*openapiDoc, error) {
	s := o.s
	var types []*Type
	for k, t := range s.types {
		if k.Group == group && k.Version == version && s.visible(ctx, k.Group, k.Plural) {
			types = append(types, t)
		}
	}
	if len(types) == 0 {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf(
			"no OpenAPI document for apis/%s/%s: no type of that group and version is served; GET %s lists the documents",
			truncate(group, 253), truncate(version, 63), openapiPath))
	}
	slices.SortFunc(types, func(a, b *Type) int { return strings.Compare(a.Plural, b.Plural) })
	// The key names each type's definition by its *Type as well: a
	// definition loaded again would be a new one, and build anew.
	key := group + "/" + version
	for _, t := range types {
		key += fmt.Sprintf(" %s@%p", t.Plural, t)
	}
	if d, ok := o.cache.Get(key); ok {
		return d, nil
	}
	v, err, _ := o.flight.Do(key, func() (any, error) {
		b, err := buildOpenAPI(group, version, types, o.ops)
		if err != nil {
			return nil, err
		}
		sum := sha512.Sum512(b)
		d := &openapiDoc{json: b, hash: strings.ToUpper(hex.EncodeToString(sum[:]))}
		o.cache.Add(strings.Clone(key), d, int64(len(b)+len(d.hash)))
		return d, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*openapiDoc), nil
}

// restOperation is an operation of the REST form on a type's resources
// as the mux serves it: method, path (a route pattern's path) and the
// query parameters it takes; a list that watches with watch=true has
// the watch's too.
type restOperation struct {
	method, path string
	params       []string
	watchParams  []string
}

// typePaths are the paths of the REST form that name a type.
var typePaths = []string{collectionPath, allNamespacesPath, itemPath, statusPath, historyPath, renderPath}

// probeOperations finds the operations mux serves on typePaths: for
// each method, the route a request of that shape reaches.
func probeOperations(mux *http.ServeMux) []restOperation {
	sample := strings.NewReplacer("{group}", "probe.invalid", "{version}", "v1", "{namespace}", "probe",
		"{plural}", "probes", "{name}", "probe")
	var ops []restOperation
	for _, path := range typePaths {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			req, err := http.NewRequest(m, "http://probe"+sample.Replace(path), nil)
			if err != nil {
				continue
			}
			h, pattern := mux.Handler(req)
			if pattern != m+" "+path {
				continue
			}
			switch h := h.(type) {
			case restRoute:
				ops = append(ops, restOperation{method: m, path: path, params: h.params})
			case listOrWatch:
				ops = append(ops, restOperation{method: m, path: path, params: h.list.params, watchParams: h.watch.params})
			}
		}
	}
	return ops
}
