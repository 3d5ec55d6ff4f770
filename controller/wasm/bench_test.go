package wasm_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/controllertest"
	"github.com/cup-dev/cup/controller/wasm"
)

// benchTree returns a tree of n Flags of about 500 bytes each in namespace
// default, laid out as the conform program keeps them.
func benchTree(b *testing.B, n int) *controllertest.MemFS {
	b.Helper()
	files := map[string]string{}
	for i := range n {
		r := newFlag("default", fmt.Sprintf("flag-%05d", i), fmt.Sprintf(`{
			"enabled": %t,
			"description": "Feature flag %d.",
			"variants": [{"key": "on", "weight": %d}, {"key": "off", "weight": %d}],
			"segments": ["beta", "internal"]
		}`, i%2 == 0, i, i%100, 100-i%100))
		r.Metadata.Labels = map[string]string{"team": fmt.Sprintf("team-%d", i%7), "tier": fmt.Sprint(i % 3)}
		r.Metadata.Annotations = map[string]string{"owner": "platform"}
		data, err := r.MarshalFile()
		if err != nil {
			b.Fatal(err)
		}
		files[flagFile("default", r.Metadata.Name)] = string(data)
	}
	return newMemFS(b, files)
}

// measure runs call in b.Loop and reports the median and 99th percentile
// latency besides the mean (ns/op).
func measure(b *testing.B, call func() error) {
	b.Helper()
	b.ReportAllocs()
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns")
}

func BenchmarkGet(b *testing.B) {
	c := newController(b, nil, "conform", nil)
	tree := benchTree(b, 1000).Snapshot()
	req := &controller.GetRequest{FS: tree, Type: flagType, Namespace: "default", Name: "flag-00421"}
	measure(b, func() error {
		_, err := c.Get(b.Context(), req)
		return err
	})
}

func BenchmarkList(b *testing.B) {
	c := newController(b, nil, "conform", nil)
	tree := benchTree(b, 1000).Snapshot()
	for _, bc := range []struct {
		name string
		sel  controller.Selector
		want int
	}{{"all", nil, 1000}, {"selector", mustParse(b, "team=team-3"), 143}} {
		b.Run(bc.name, func(b *testing.B) {
			req := &controller.ListRequest{FS: tree, Type: flagType, Namespace: "default", Selector: bc.sel}
			measure(b, func() error {
				list, err := c.List(b.Context(), req)
				if err == nil && len(list) != bc.want {
					err = fmt.Errorf("List = %d resources, want %d", len(list), bc.want)
				}
				return err
			})
		})
	}
}

func BenchmarkPut(b *testing.B) {
	c := newController(b, nil, "conform", nil)
	tree := benchTree(b, 1000)
	i := 0
	measure(b, func() error {
		i++ // a change every time
		r := newFlag("default", "flag-00421", fmt.Sprintf(`{"rev": %d}`, i))
		return c.Put(b.Context(), &controller.PutRequest{FS: tree, Type: flagType, Resource: r})
	})
}

// BenchmarkFixedCost is the cost of a call to a module that exits at once:
// instantiating it and starting Go's runtime.
func BenchmarkFixedCost(b *testing.B) {
	c := newController(b, nil, "empty", nil)
	tree := newMemFS(b, nil).Snapshot()
	measure(b, func() error {
		_, err := c.List(b.Context(), &controller.ListRequest{FS: tree, Type: flagType, Namespace: "default"})
		return err
	})
}

// BenchmarkCompile is the cost of New, which compiles the module: in a new
// Runtime, from a cache directory a Runtime filled before (a restart), and
// in a Runtime that compiled it already.
func BenchmarkCompile(b *testing.B) {
	module := modules["conform"]
	spec := &wasm.Spec{Path: "conform.wasm"}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			rt, err := wasm.NewRuntime()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := wasm.New(b.Context(), rt, "conform", module, spec); err != nil {
				b.Fatal(err)
			}
			rt.Close(b.Context())
		}
	})
	b.Run("cache-dir", func(b *testing.B) {
		dir := b.TempDir()
		newController(b, newRuntime(b, wasm.WithCacheDir(dir)), "conform", nil) // fills it
		for b.Loop() {
			rt, err := wasm.NewRuntime(wasm.WithCacheDir(dir))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := wasm.New(b.Context(), rt, "conform", module, spec); err != nil {
				b.Fatal(err)
			}
			rt.Close(b.Context())
		}
	})
	b.Run("same-runtime", func(b *testing.B) {
		for b.Loop() {
			c, err := wasm.New(b.Context(), shared, "conform", module, spec)
			if err != nil {
				b.Fatal(err)
			}
			c.Close(b.Context())
		}
	})
}

// exampleTree returns a tree of n Flags kept by the example controller,
// flagfile: all of a namespace's in one YAML file, spread over namespaces
// of perNamespace each (ns-000, ns-001, ...). It writes them through the
// controller itself.
func exampleTree(b *testing.B, c *wasm.Controller, n, perNamespace int) *controllertest.MemFS {
	b.Helper()
	tree := newMemFS(b, nil)
	for i := range n {
		r := newFlag(fmt.Sprintf("ns-%03d", i/perNamespace), fmt.Sprintf("flag-%05d", i), fmt.Sprintf(
			`{"enabled": %t, "description": "Feature flag %d.", "variants": [{"key": "on", "weight": %d}, {"key": "off", "weight": %d}]}`,
			i%2 == 0, i, i%100, 100-i%100))
		r.Metadata.Labels = map[string]string{"team": fmt.Sprintf("team-%d", i%7)}
		if err := c.Put(b.Context(), &controller.PutRequest{FS: tree, Type: flagType, Resource: r}); err != nil {
			b.Fatal(err)
		}
	}
	return tree
}

// BenchmarkExample measures get and list through the example controller
// on a tree of 1,000 Flags, kept in 100 namespaces of 10 and in 10 of 100
// (one YAML file each). A list parses its namespace's file; a get only the
// lines of its entry.
func BenchmarkExample(b *testing.B) {
	c := newController(b, nil, "flagfile", nil)
	for _, per := range []int{10, 100} {
		tree := exampleTree(b, c, 1000, per).Snapshot()
		b.Run(fmt.Sprintf("get/per-namespace=%d", per), func(b *testing.B) {
			req := &controller.GetRequest{FS: tree, Type: flagType, Namespace: "ns-000", Name: fmt.Sprintf("flag-%05d", per/2)}
			measure(b, func() error { _, err := c.Get(b.Context(), req); return err })
		})
		b.Run(fmt.Sprintf("list/per-namespace=%d", per), func(b *testing.B) {
			req := &controller.ListRequest{FS: tree, Type: flagType, Namespace: "ns-000"}
			measure(b, func() error { _, err := c.List(b.Context(), req); return err })
		})
	}
}
