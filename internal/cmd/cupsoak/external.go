package main

import (
	"context"
	"fmt"
	"time"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source"
)

// runExternal commits straight into the remote's bare repository at dir
// every interval until stop is closed, as another user of the remote
// would: cupd's pushes then lose races, and it must apply its writes again
// on the new head. Each commit adds its own file outside the served
// resources and records its own idempotency key, so the checks can account
// for it; it returns them as writes whose Op is "external".
func runExternal(ctx context.Context, dir string, every time.Duration, stop <-chan struct{}) []*write {
	var writes []*write
	tick := time.NewTicker(every)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-stop:
			return writes
		case <-ctx.Done():
			return writes
		case <-tick.C:
		}
		path := fmt.Sprintf("external/ext-%06d.txt", n)
		w := &write{Key: fmt.Sprintf("soak-ext-%06d", n), Writer: -1, Seq: n, Op: "external", Name: path, Path: path, Via: "git",
			Content: fmt.Appendf(nil, "external change %d at %s\n", n, time.Now().Format(time.RFC3339Nano))}
		msg := fmt.Sprintf("External change %d\n\n%s: %s\n", n, source.TrailerIdempotencyKey, w.Key)
		t0 := time.Now()
		id, err := gitrepo.Commit(dir, branch, map[string][]byte{path: w.Content}, msg)
		a := attempt{Outcome: "committed", Class: accepted, Commit: id, Latency: time.Since(t0)}
		if err != nil {
			// The branch moved under it: the commit is left unreferenced.
			a = attempt{Outcome: "branch moved", Class: refused, Err: err.Error(), Latency: time.Since(t0)}
		}
		w.Attempts = append(w.Attempts, a)
		writes = append(writes, w)
	}
}
