package gitea_test

import (
	"testing"

	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/gitea"
	"github.com/cup-dev/cup/scm/gitea/giteatest"
	"github.com/cup-dev/cup/scm/scmtest"
)

func TestConformance(t *testing.T) {
	scmtest.Run(t, scmtest.Harness{
		New: func(t *testing.T, token string) (scm.Provider, scmtest.Fake) {
			fake := giteatest.NewFake(t, "acme", "config")
			p, err := gitea.New(gitea.Config{BaseURL: fake.URL(), Owner: "acme", Repo: "config",
				HTTPClient: scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken(token)})})
			if err != nil {
				t.Fatal(err)
			}
			return p, fake
		},
		AuthHeader: func(token string) (string, string) { return "Authorization", "Bearer " + token },
	})
}
