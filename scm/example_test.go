package scm_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/cup-dev/cup/scm"
)

func ExampleNewHTTPClient() {
	// A host that echoes the credentials it receives.
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Header.Get("Authorization"))
	}))
	defer host.Close()

	c := scm.NewHTTPClient(scm.HTTPOptions{
		Token:     scm.StaticToken("example-token"),
		Transport: host.Client().Transport,
	})
	res, err := c.Get(host.URL + "/user")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, string(b))
	// Output: 200 Bearer example-token
}
