package server_test

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/cup-dev/cup/internal/servertest"
)

// openapiDiscovery is GET /openapi/v3's answer.
type openapiDiscovery struct {
	Paths map[string]struct {
		ServerRelativeURL string `json:"serverRelativeURL"`
	} `json:"paths"`
}

func discoverOpenAPI(t *testing.T, f *fixture, header ...string) openapiDiscovery {
	t.Helper()
	r := f.do(t, "GET", "/openapi/v3", "", header...)
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi/v3 = %d %s", r.status, r.body)
	}
	var d openapiDiscovery
	if err := json.Unmarshal(r.body, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// loadOpenAPI fetches the document at url and validates it with
// kin-openapi.
func loadOpenAPI(t *testing.T, f *fixture, url string, header ...string) *openapi3.T {
	t.Helper()
	r := f.do(t, "GET", url, "", header...)
	if r.status != 200 {
		t.Fatalf("GET %s = %d %s", url, r.status, r.body)
	}
	doc, err := openapi3.NewLoader().LoadFromData(r.body)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	if err := doc.Validate(t.Context()); err != nil {
		t.Fatalf("%s is not a valid OpenAPI document: %v", url, err)
	}
	return doc
}

var hashedURL = regexp.MustCompile(`^/openapi/v3/apis/([a-z0-9.-]+)/([a-z0-9]+)\?hash=([0-9A-F]{128})$`)

func TestOpenAPIDiscoveryAndCaching(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	d := discoverOpenAPI(t, f)
	want := []string{"apis/apps.cup.dev/v1alpha1", "apis/config.cup.dev/v1alpha1", "apis/flags.cup.dev/v1alpha1"}
	var got []string
	for p := range d.Paths {
		got = append(got, p)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("paths = %v, want %v", got, want)
	}
	var index struct{ Links []struct{ Rel, Href string } }
	if err := json.Unmarshal(f.do(t, "GET", "/", "", "Accept", "application/json").body, &index); err != nil ||
		!slices.Contains(index.Links, struct{ Rel, Href string }{"openapi", "/openapi/v3"}) {
		t.Errorf("the index does not link /openapi/v3: %+v %v", index, err)
	}
	r := f.do(t, "GET", "/openapi/v3", "")
	etag := r.header.Get("Etag")
	if r.header.Get("Cache-Control") != "no-cache" || len(etag) != 130 {
		t.Errorf("discovery: Cache-Control %q, ETag %q", r.header.Get("Cache-Control"), etag)
	}
	if again := f.do(t, "GET", "/openapi/v3", "", "If-None-Match", etag); again.status != 304 {
		t.Errorf("discovery with its ETag = %d, want 304", again.status)
	}

	for p, u := range d.Paths {
		m := hashedURL.FindStringSubmatch(u.ServerRelativeURL)
		if m == nil || "apis/"+m[1]+"/"+m[2] != p {
			t.Fatalf("%s: serverRelativeURL %q", p, u.ServerRelativeURL)
		}
		hash := m[3]
		hashed := f.do(t, "GET", u.ServerRelativeURL, "")
		sum := sha512.Sum512(hashed.body)
		if hashed.status != 200 || strings.ToUpper(hex.EncodeToString(sum[:])) != hash {
			t.Fatalf("%s = %d, hash of the body %X, want %s", u.ServerRelativeURL, hashed.status, sum, hash)
		}
		if cc := hashed.header.Get("Cache-Control"); cc != "public, immutable, max-age=31536000" || hashed.header.Get("Expires") == "" {
			t.Errorf("hashed: Cache-Control %q, Expires %q", cc, hashed.header.Get("Expires"))
		}
		if hashed.header.Get("Etag") != `"`+hash+`"` {
			t.Errorf("hashed: ETag %q", hashed.header.Get("Etag"))
		}
		plain := f.do(t, "GET", "/openapi/v3/"+p, "")
		if plain.status != 200 || string(plain.body) != string(hashed.body) || plain.header.Get("Cache-Control") != "no-cache" ||
			plain.header.Get("Etag") != `"`+hash+`"` {
			t.Errorf("unhashed = %d, Cache-Control %q, ETag %q", plain.status, plain.header.Get("Cache-Control"), plain.header.Get("Etag"))
		}
		if r := f.do(t, "GET", "/openapi/v3/"+p, "", "If-None-Match", `"`+hash+`"`); r.status != 304 || len(r.body) != 0 {
			t.Errorf("unhashed with its ETag = %d", r.status)
		}
		if r := f.do(t, "GET", "/openapi/v3/"+p, "", "If-None-Match", `"0123"`); r.status != 200 {
			t.Errorf("unhashed with another ETag = %d", r.status)
		}
		// Another hash: a redirect to the current one, as Kubernetes answers.
		stale := getNoRedirect(t, f.url+"/openapi/v3/"+p+"?hash=0123")
		if stale.StatusCode != 301 || stale.Header.Get("Location") != u.ServerRelativeURL || stale.Header.Get("Etag") != "" || stale.Header.Get("Cache-Control") != "" {
			t.Errorf("stale hash = %d, Location %q", stale.StatusCode, stale.Header.Get("Location"))
		}
	}
}

func TestOpenAPIRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, c := range []struct {
		path   string
		status int
		code   string
		msg    string
	}{
		{"/openapi/v3/apis/nope.example.com/v1", 404, "not_found", "no OpenAPI document for apis/nope.example.com/v1"},
		{"/openapi/v3/apis/flags.cup.dev/v9", 404, "not_found", "GET /openapi/v3 lists the documents"},
		{"/openapi/v3/api/v1", 404, "not_found", "GET /openapi/v3 lists them"},
		{"/openapi/v2", 404, "not_found", "no OpenAPI document at GET /openapi/v2"},
		{"/openapi/v3?hash=1", 400, "invalid_argument", "hash: unknown query parameter: GET /openapi/v3 takes none"},
		{"/openapi/v3/apis/flags.cup.dev/v1alpha1?hsah=1", 400, "invalid_argument", "hsah: unknown query parameter: GET /openapi/v3/apis/{group}/{version} takes hash"},
		{"/openapi/v3/apis/flags.cup.dev/v1alpha1?hash=1&hash=2", 400, "invalid_argument", "hash: given 2 times"},
	} {
		r := f.do(t, "GET", c.path, "")
		m := r.json(t)
		if r.status != c.status || m["code"] != c.code || !strings.Contains(m["message"].(string), c.msg) {
			t.Errorf("GET %s = %d %s, want %d %s …%s…", c.path, r.status, r.body, c.status, c.code, c.msg)
		}
	}
	if r := f.do(t, "POST", "/openapi/v3", ""); r.status == 200 {
		t.Errorf("POST /openapi/v3 = %d", r.status)
	}
}

// TestOpenAPIDocumentsTheRoutes: each type's paths are the REST routes the
// server serves, with exactly the query parameters each takes: a
// parameter the document lists is accepted, and the server's refusal of
// an unknown one names the same set.
func TestOpenAPIDocumentsTheRoutes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	doc := loadOpenAPI(t, f, "/openapi/v3/apis/flags.cup.dev/v1alpha1")
	if doc.OpenAPI != "3.0.3" || doc.Info.Title != "cup flags.cup.dev/v1alpha1" {
		t.Errorf("openapi %q, info %+v", doc.OpenAPI, doc.Info)
	}
	const item = "/apis/flags.cup.dev/v1alpha1/namespaces/{namespace}/flags/{name}"
	paths := doc.Paths.Map()
	for _, p := range []string{item, "/apis/flags.cup.dev/v1alpha1/namespaces/{namespace}/flags", "/apis/flags.cup.dev/v1alpha1/flags",
		item + "/history", item + "/status", "/apis/flags.cup.dev/v1alpha1/namespaces/{namespace}/bundles/{name}"} {
		if paths[p] == nil {
			t.Errorf("no path %s", p)
		}
	}
	if paths["/apis/apps.cup.dev/v1alpha1/namespaces/{namespace}/services"] != nil {
		t.Error("the document of flags.cup.dev/v1alpha1 holds another group's paths")
	}
	if op := paths[item].Get; op == nil || op.OperationID != "readNamespacedFlag" {
		t.Errorf("GET %s: %+v", item, op)
	}
	sample := strings.NewReplacer("{namespace}", "default", "{name}", "new-checkout")
	for p, pi := range paths {
		for method, op := range pi.Operations() {
			var documented []string
			for _, ref := range op.Parameters {
				if ref.Value.In == "query" {
					documented = append(documented, ref.Value.Name)
					if ref.Value.Description == "" {
						t.Errorf("%s %s: parameter %s has no description", method, p, ref.Value.Name)
					}
				}
			}
			if op.Responses.Default() == nil || op.Responses.Default().Value.Content.Get("application/json").Schema.Ref != "#/components/schemas/cup.v1alpha1.Error" {
				t.Errorf("%s %s: no default error response", method, p)
			}
			// The server names what it takes when refusing a parameter.
			r := f.do(t, method, sample.Replace(p)+"?nosuchparameter=1", "")
			msg, _ := r.json(t)["message"].(string)
			_, takes, _ := strings.Cut(msg, " takes ")
			served := strings.Split(takes, ", ")
			if slices.Contains(documented, "watch") {
				// A list takes its parameters, and with watch=true a watch's.
				rw := f.do(t, method, sample.Replace(p)+"?watch=true&nosuchparameter=1", "")
				_, wtakes, _ := strings.Cut(rw.json(t)["message"].(string), " takes ")
				for _, w := range strings.Split(wtakes, ", ") {
					if !slices.Contains(served, w) {
						served = append(served, w)
					}
				}
			}
			slices.Sort(served)
			slices.Sort(documented)
			if r.status != 400 || !slices.Equal(served, documented) {
				t.Errorf("%s %s: documented %v, the server takes %v (%d %s)", method, p, documented, served, r.status, r.body)
			}
		}
	}
}

// TestOpenAPIValidatesDocumentsAndResources feeds the documents of the demo
// and of schemas OpenAPI 3.0 cannot say as they are to kin-openapi, and
// checks resources the server answers with against their component
// schemas.
func TestOpenAPIValidatesDocumentsAndResources(t *testing.T) {
	t.Parallel()
	files, err := servertest.SchemaFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    *fixture
		// resources are REST paths of resources and the components they
		// are instances of.
		resources map[string]string
	}{
		{"demo", newFixture(t), map[string]string{
			"/apis/flags.cup.dev/v1alpha1/namespaces/production/flags/new-checkout": "dev.cup.flags.v1alpha1.Flag",
			"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags":                 "dev.cup.flags.v1alpha1.FlagList",
			"/apis/apps.cup.dev/v1alpha1/namespaces/default/services/api":           "dev.cup.apps.v1alpha1.Service",
			"/apis/flags.cup.dev/v1alpha1/namespaces/default/bundles":               "dev.cup.flags.v1alpha1.BundleList",
		}},
		{"schemas", newFixture(t, servertest.WithoutDemo(), servertest.WithFiles(files)), map[string]string{
			"/apis/tricky.example.com/v1/namespaces/default/trees/oak":  "com.example.tricky.v1.Tree",
			"/apis/tricky.example.com/v1/namespaces/default/gadgets/g1": "com.example.tricky.v1.Gadget",
			"/apis/tricky.example.com/v1/namespaces/default/widgets/w1": "com.example.tricky.v1.Widget",
			"/apis/tricky.example.com/v1/namespaces/default/widgets":    "com.example.tricky.v1.WidgetList",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			docs := map[string]*openapi3.T{}
			for p, u := range discoverOpenAPI(t, c.f).Paths {
				docs[p] = loadOpenAPI(t, c.f, u.ServerRelativeURL)
			}
			for path, component := range c.resources {
				gv := "apis/" + strings.Join(strings.Split(path, "/")[2:4], "/")
				s := docs[gv].Components.Schemas[component]
				if s == nil {
					t.Fatalf("%s has no component %s", gv, component)
				}
				r := c.f.do(t, "GET", path, "")
				var v any
				if err := json.Unmarshal(r.body, &v); r.status != 200 || err != nil {
					t.Fatalf("GET %s = %d %s", path, r.status, r.body)
				}
				if err := s.Value.VisitJSON(v); err != nil {
					t.Errorf("GET %s does not validate against %s: %v", path, component, err)
				}
			}
			// A write's answer and an error validate against the
			// operation's responses.
			for path, body := range map[string]string{
				"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/x": `{"spec": {"enabled": true}}`,
				"/apis/tricky.example.com/v1/namespaces/default/trees/x":  `{"spec": {"name": "x"}}`,
			} {
				gv := "apis/" + strings.Join(strings.Split(path, "/")[2:4], "/")
				doc := docs[gv]
				if doc == nil {
					continue
				}
				put := doc.Paths.Find(strings.Replace(strings.Replace(path, "/default/", "/{namespace}/", 1), "/x", "/{name}", 1)).Put
				r := c.f.do(t, "PUT", path+"?dryRun=true", body)
				var v any
				if err := json.Unmarshal(r.body, &v); r.status != 200 || err != nil {
					t.Fatalf("dry-run PUT %s = %d %s", path, r.status, r.body)
				}
				if err := put.Responses.Status(200).Value.Content.Get("application/json").Schema.Value.VisitJSON(v); err != nil {
					t.Errorf("dry-run PUT %s: %v\n%s", path, err, r.body)
				}
				bad := c.f.do(t, "PUT", path+"?dryRun=true", `{"spec": 1}`)
				if err := json.Unmarshal(bad.body, &v); bad.status != 400 || err != nil {
					t.Fatalf("bad PUT %s = %d %s", path, bad.status, bad.body)
				}
				if err := put.Responses.Default().Value.Content.Get("application/json").Schema.Value.VisitJSON(v); err != nil {
					t.Errorf("error of PUT %s: %v", path, err)
				}
			}
		})
	}
}

// getNoRedirect sends GET url without following a redirect.
func getNoRedirect(t *testing.T, url string) *http.Response {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	return res
}

// TestOpenAPIUnderAPolicy: a caller sees the documents of the types it may
// see, as discovery shows them, and nothing without credentials.
func TestOpenAPIUnderAPolicy(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	if r := f.do(t, "GET", "/openapi/v3", ""); r.status != 401 || r.json(t)["code"] != "unauthenticated" {
		t.Errorf("without credentials: %d %s", r.status, r.body)
	}
	as := func(user string) []string { return []string{"Authorization", "Bearer " + tokenOf(user)} }
	if d := discoverOpenAPI(t, f, as("eve")...); len(d.Paths) != 0 {
		t.Errorf("eve sees %v", d.Paths)
	}
	bob := discoverOpenAPI(t, f, as("bob")...)
	u, ok := bob.Paths["apis/flags.cup.dev/v1alpha1"]
	if len(bob.Paths) != 1 || !ok {
		t.Fatalf("bob sees %v", bob.Paths)
	}
	carol := discoverOpenAPI(t, f, as("carol")...)
	if len(carol.Paths) < 3 || carol.Paths["apis/flags.cup.dev/v1alpha1"].ServerRelativeURL == u.ServerRelativeURL {
		t.Errorf("carol sees %v: the same flags.cup.dev document as bob's", carol.Paths)
	}
	doc := loadOpenAPI(t, f, u.ServerRelativeURL, as("bob")...)
	for p := range doc.Paths.Map() {
		if !strings.Contains(p, "/flags") {
			t.Errorf("bob's document holds %s", p)
		}
	}
	if r := f.do(t, "GET", u.ServerRelativeURL, "", as("bob")...); r.header.Get("Cache-Control") != "private, immutable, max-age=31536000" {
		t.Errorf("under a policy: Cache-Control %q", r.header.Get("Cache-Control"))
	}
	if r := f.do(t, "GET", "/openapi/v3/apis/apps.cup.dev/v1alpha1", "", as("bob")...); r.status != 404 {
		t.Errorf("bob: a group he may not see = %d %s", r.status, r.body)
	}
	if r := f.do(t, "GET", "/openapi/v3/apis/apps.cup.dev/v1alpha1", "", as("carol")...); r.status != 200 {
		t.Errorf("carol: apps.cup.dev = %d", r.status)
	}
}
