package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing/fstest"

	"github.com/cup-dev/cup/web"
)

// A Handler answers a route of the app with index.html, which the app
// reads the route from. cupd serves web.NewHandler(web.Dist()), the build
// embedded in it.
func ExampleNewHandler() {
	build := fstest.MapFS{"index.html": {Data: []byte(`<!doctype html><div id="app"></div>`)}}
	mux := http.NewServeMux()
	mux.Handle(web.Path, web.NewHandler(build))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags", nil))
	fmt.Println(rec.Code, rec.Header().Get("Cache-Control"))
	fmt.Println(rec.Body)
	// Output:
	// 200 no-cache
	// <!doctype html><div id="app"></div>
}
