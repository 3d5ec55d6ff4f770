package template_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/template"
)

func TestCacheBounded(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 10 {
		files[fmt.Sprintf("default/flags.cup.dev-v1alpha1-Flag-f%d.json", i)] = fmt.Sprintf(flagJSON, fmt.Sprintf("f%d", i))
	}
	tests := []struct {
		name    string
		opts    []template.Option
		wantMax int
	}{
		{"default", nil, 10},
		{"bounded", []template.Option{template.WithCacheSize(4)}, 4},
		{"odd bound", []template.Option{template.WithCacheSize(3)}, 4},
		{"disabled", []template.Option{template.WithCacheSize(0)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newController(t, template.Spec{}, tt.opts...)
			mem := newMemFS(t, files)
			for range 3 {
				list, err := c.List(t.Context(), &controller.ListRequest{FS: mem, Type: flagType, Namespace: "default"})
				if err != nil || len(list) != 10 {
					t.Fatalf("List = %d resources, %v; want 10", len(list), err)
				}
				if n := template.CacheLen(c); n > tt.wantMax || (tt.wantMax == 10 && n != 10) {
					t.Fatalf("cache holds %d entries, want at most %d", n, tt.wantMax)
				}
			}
		})
	}
}

// TestCacheSharedAcrossCommits checks that content decoded for one tree
// serves another holding the same bytes at other paths.
func TestCacheSharedAcrossCommits(t *testing.T) {
	t.Parallel()
	c := newController(t, template.Spec{ListTemplate: `{{ .Namespace }}/*.json`, ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.json`})
	one := newMemFS(t, map[string]string{"default/x.json": fmt.Sprintf(flagJSON, "x"), "default/y.json": fmt.Sprintf(flagJSON, "y")})
	two := newMemFS(t, map[string]string{"default/x.json": fmt.Sprintf(flagJSON, "x"), "default/y2.json": fmt.Sprintf(flagJSON, "y2")})
	if _, err := c.List(t.Context(), &controller.ListRequest{FS: one, Type: flagType, Namespace: "default"}); err != nil {
		t.Fatal(err)
	}
	if n := template.CacheLen(c); n != 2 {
		t.Fatalf("cache holds %d entries after the first tree, want 2", n)
	}
	// y2.json of the second tree holds new content; x.json is decoded once.
	list, err := c.List(t.Context(), &controller.ListRequest{FS: two, Type: flagType, Namespace: "default"})
	if err != nil || len(list) != 2 || list[1].Metadata.Name != "y2" {
		t.Fatalf("List of the second tree = %v, %v", list, err)
	}
	if n := template.CacheLen(c); n != 3 {
		t.Errorf("cache holds %d entries after the second tree, want 3 (one new content)", n)
	}
}

// TestLargeListConcurrent lists a namespace big enough for List to decode
// and copy on several goroutines, from several goroutines at once, with a
// cold, warm and no cache: all must agree.
func TestLargeListConcurrent(t *testing.T) {
	t.Parallel()
	const n = 3000
	fsys := benchTree(t, n)
	fsys["default/flags.cup.dev-v1alpha1-Segment-s.json"] = &fstest.MapFile{Data: fmt.Appendf(nil, segmentJSON, "s")}
	list := func(c *template.Controller, sel controller.Selector) []*controller.Resource {
		t.Helper()
		rs, err := c.List(t.Context(), &controller.ListRequest{FS: fsys, Type: flagType, Namespace: "default", Selector: sel})
		if err != nil {
			t.Errorf("List: %v", err)
		}
		return rs
	}
	want := list(newController(t, template.Spec{}, template.WithCacheSize(0)), nil)
	if len(want) != n {
		t.Fatalf("List = %d resources, want %d", len(want), n)
	}
	for i := 1; i < n; i++ {
		if want[i-1].Metadata.Name >= want[i].Metadata.Name {
			t.Fatalf("List not sorted at %d: %s, %s", i, want[i-1].Metadata.Name, want[i].Metadata.Name)
		}
	}
	c := newController(t, template.Spec{}, template.WithCacheSize(2*n))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			var sel controller.Selector
			if g%2 == 1 {
				sel = selector{"team": "team-3"}
			}
			got := list(c, sel)
			if sel == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("goroutine %d: List differs from a List without cache", g)
			}
			for _, r := range got {
				if sel != nil && r.Metadata.Labels["team"] != "team-3" {
					t.Errorf("goroutine %d: selector not applied to %s", g, r.Metadata.Name)
				}
				r.Metadata.Labels["team"] = "mutated" // results belong to the caller
				r.Spec[0] = 'X'
			}
		})
	}
	wg.Wait()
	if got := list(c, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("warm List differs from a List without cache")
	}
}
