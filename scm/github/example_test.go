package github_test

import (
	"fmt"
	"log"
	"os"

	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/github"
)

// A provider for a repository on GitHub Enterprise Server. The HTTP client
// adds the token and waits out rate limits; New makes no call.
func ExampleNew() {
	p, err := github.New(github.Config{
		BaseURL: "https://github.example.com/api/v3/",
		Owner:   "acme",
		Repo:    "config",
		HTTPClient: scm.NewHTTPClient(scm.HTTPOptions{
			Token: scm.StaticToken(os.Getenv("GITHUB_TOKEN")),
		}),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Name())
	// Output: github
}
