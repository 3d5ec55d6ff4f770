package server_test

import (
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/gittest"
)

// TestRESTEditKeepsHandWrittenYAML writes a flag a person wrote, comments
// and all, through the REST form: the commit changes the lines of the fields
// that changed and nothing else.
func TestRESTEditKeepsHandWrittenYAML(t *testing.T) {
	t.Parallel()
	const (
		path    = "flags/default/dark-mode.yaml"
		written = `# Dark mode, owned by the web team.
apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata:
  name: dark-mode
  namespace: default
  labels:
    team: web # on call: #web-oncall

spec:
  # Off until the contrast review.
  enabled: false
  rollout: 0   # percent
  description: 'Dark colour scheme for the dashboard.'
`
		want = `# Dark mode, owned by the web team.
apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata:
  name: dark-mode
  namespace: default
  labels:
    team: web # on call: #web-oncall
    stage: beta

spec:
  # Off until the contrast review.
  enabled: true
  rollout: 25   # percent
  description: 'Dark colour scheme for the dashboard.'
`
	)
	files := gittest.DemoFiles(t)
	delete(files, "README.md")
	files[path] = []byte(written)
	dir := filepath.Join(t.TempDir(), "repo")
	if _, err := gitrepo.Init(dir, "main", files, "a flag written by hand"); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *app.Options) { o.Repository = dir })

	put := f.do(t, "PUT", flagsPath+"/dark-mode",
		`{"metadata": {"labels": {"team": "web", "stage": "beta"}}, "spec": {"rollout": 25, "enabled": true, "description": "Dark colour scheme for the dashboard."}}`)
	if put.status/100 != 2 {
		t.Fatalf("PUT = %d %s", put.status, put.body)
	}
	repo, err := git.PlainOpen(f.app.Repository())
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(plumbing.NewHash(f.head(t)))
	if err != nil {
		t.Fatal(err)
	}
	file, err := commit.File(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := file.Contents()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("after PUT, %s holds\n%s\nwant\n%s", path, got, want)
	}
}
