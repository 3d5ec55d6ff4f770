package app

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTrivial checks that withTrivial answers its procedure over Connect
// with an empty message and passes every other request to the API.
func TestTrivial(t *testing.T) {
	t.Parallel()
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "api") })
	srv := httptest.NewServer(withTrivial(api))
	defer srv.Close()
	for _, tc := range []struct {
		method, path, ctype, body string
		status                    int
		want                      string
	}{
		{"POST", TrivialProcedure, "application/json", "{}", 200, "{}"},
		{"POST", TrivialProcedure, "application/json", "{", 400, "invalid_argument"},
		{"GET", "/apis", "", "", 200, "api"},
		{"POST", "/cup.v1alpha1.ResourceService/Get", "application/json", "{}", 200, "api"},
	} {
		req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s %q: %d %s, want %d with %q", tc.method, tc.path, tc.body, res.StatusCode, b, tc.status, tc.want)
		}
	}
}
