package local_test

import (
	"context"
	"fmt"
	"io/fs"
	"log"
	"os"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/local"
)

func Example() {
	dir := exampleRepo()
	defer os.RemoveAll(dir)

	src, err := local.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()

	res, err := src.Update(ctx, &source.UpdateRequest{
		Message: "Scale app to 3 replicas\n",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			return w.WriteFile("config/app.yaml", []byte("replicas: 3\n"), 0o644)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range res.Changes {
		fmt.Printf("%s %s\n%s", c.Op, c.Path, c.Diff)
	}

	snap, err := src.View(ctx, "") // the default branch
	if err != nil {
		log.Fatal(err)
	}
	data, err := fs.ReadFile(snap.FS, "config/app.yaml")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s is at the new commit: %t\n%s", res.Branch, snap.Commit == res.Commit, data)
	// Output:
	// update config/app.yaml
	// --- a/config/app.yaml
	// +++ b/config/app.yaml
	// @@ -1 +1 @@
	// -replicas: 1
	// +replicas: 3
	// main is at the new commit: true
	// replicas: 3
}

// In branch mode every update proposes its change on a branch of its own;
// an idempotency key makes the update safe to repeat.
func Example_changeSet() {
	dir := exampleRepo()
	defer os.RemoveAll(dir)

	src, err := local.Open(dir, local.WithWriteMode(source.ModeBranch))
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()

	req := &source.UpdateRequest{
		Message:        "Scale app to 3 replicas\n",
		IdempotencyKey: "order-42",
		Fingerprint:    "scale-app-3",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			return w.WriteFile("config/app.yaml", []byte("replicas: 3\n"), 0o644)
		},
	}
	for range 2 {
		res, err := src.Update(ctx, req)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("branch %s, replayed: %t\n", res.Branch, res.Replayed)
	}

	// Later changes go on top of the change set.
	res, err := src.Update(ctx, &source.UpdateRequest{
		ChangeSet: "cup/3bf8b157c4238eef",
		Message:   "Document the scaling\n",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			return w.WriteFile("CHANGELOG.md", []byte("app: 3 replicas\n"), 0o644)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	main, err := src.View(ctx, "main")
	if err != nil {
		log.Fatal(err)
	}
	data, err := fs.ReadFile(main.FS, "config/app.yaml")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("branch %s, %d change; main still has %s", res.Branch, len(res.Changes), data)
	// Output:
	// branch cup/3bf8b157c4238eef, replayed: false
	// branch cup/3bf8b157c4238eef, replayed: true
	// branch cup/3bf8b157c4238eef, 1 change; main still has replicas: 1
}

// exampleRepo makes a repository whose branch main holds config/app.yaml.
func exampleRepo() string {
	dir, err := os.MkdirTemp("", "local-example")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := gitrepo.Init(dir, "main", map[string][]byte{"config/app.yaml": []byte("replicas: 1\n")}, "initial\n"); err != nil {
		log.Fatal(err)
	}
	return dir
}
