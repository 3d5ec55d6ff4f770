package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRender: cup render prints what the reconcilers make of a resource
// (YAML by default, JSON with -o json), writes nothing, and says when no
// reconciler has the type as its primary.
func TestRender(t *testing.T) {
	t.Parallel()
	url := newReconciledServer(t)
	var res struct {
		Commit     string
		Renderings []struct {
			Reconciler string
			Outputs    []struct {
				Kind     string
				Metadata struct{ Name string }
			}
		}
	}
	if err := json.Unmarshal([]byte(ok(t, url, "render", "bundle", "web", "-o", "json")), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Renderings) != 1 || res.Renderings[0].Reconciler != "flag-bundles" || len(res.Renderings[0].Outputs) != 1 ||
		res.Renderings[0].Outputs[0].Kind != "FlagBundle" || res.Renderings[0].Outputs[0].Metadata.Name != "web" {
		t.Fatalf("render bundle web: %+v", res)
	}
	if y := ok(t, url, "render", "bundle/web"); !strings.Contains(y, "reconciler: flag-bundles\n") || !strings.Contains(y, "kind: FlagBundle\n") {
		t.Errorf("render bundle/web as YAML:\n%s", y)
	}
	r := cup(t, url, "", "render", "service", "api")
	if r.code != 0 || !strings.Contains(r.stderr, "No reconciler has services.apps.cup.dev as its primary") {
		t.Errorf("render service api: %+v", r)
	}
	fails(t, url, "not found", "render", "bundle", "nope")
	fails(t, url, `-o: "table" is not one of yaml, json`, "render", "bundle", "web", "-o", "table")
}
