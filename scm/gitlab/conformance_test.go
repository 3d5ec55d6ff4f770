package gitlab_test

import (
	"testing"

	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/gitlab"
	"github.com/cup-dev/cup/scm/gitlab/gitlabtest"
	"github.com/cup-dev/cup/scm/scmtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	scmtest.Run(t, scmtest.Harness{
		New: func(t *testing.T, token string) (scm.Provider, scmtest.Fake) {
			fake := gitlabtest.NewFake(t, "acme/config")
			p, err := gitlab.New(gitlab.Config{
				BaseURL:    fake.URL(),
				Project:    "acme/config",
				HTTPClient: scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken(token)}),
			})
			if err != nil {
				t.Fatal(err)
			}
			return p, fake
		},
		// The transport's Bearer token is the only credential sent:
		// the adapter gives client-go no token of its own.
		AuthHeader: func(token string) (string, string) { return "Authorization", "Bearer " + token },
	})
}
