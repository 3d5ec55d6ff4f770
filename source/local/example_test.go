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
	dir, err := os.MkdirTemp("", "local-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if _, err := gitrepo.Init(dir, "main", map[string][]byte{"config/app.yaml": []byte("replicas: 1\n")}, "initial\n"); err != nil {
		log.Fatal(err)
	}

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
