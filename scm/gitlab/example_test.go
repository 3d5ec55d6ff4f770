package gitlab_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/gitlab"
)

// A provider for a project on a self-hosted GitLab served under /gitlab/.
// The HTTP client authenticates every call with the access token and waits
// out rate limits; the adapter adds nothing of its own.
func ExampleNew() {
	p, err := gitlab.New(gitlab.Config{
		BaseURL:    "https://example.com/gitlab/",
		Project:    "platform/config",
		HTTPClient: scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken("glpat-...")}),
	})
	if err != nil {
		log.Fatal(err)
	}
	open, err := p.List(context.Background(), &scm.ListRequest{State: scm.StateOpen, HeadPrefix: "cup/"})
	if err != nil {
		log.Fatal(err)
	}
	for _, mr := range open {
		fmt.Printf("!%s %s (%s)\n", mr.ID, mr.Title, mr.URL)
	}
}
