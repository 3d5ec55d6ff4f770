package template_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/controllertest"
	"github.com/cup-dev/cup/controller/template"
)

// benchTree returns a tree of n Flags of about 500 bytes each in namespace
// default, laid out by the default templates.
func benchTree(tb testing.TB, n int) fstest.MapFS {
	tb.Helper()
	fsys := fstest.MapFS{}
	total := 0
	for i := range n {
		data := benchFile(tb, i, "")
		total += len(data)
		fsys[fmt.Sprintf("default/flags.cup.dev-v1alpha1-Flag-flag-%05d.json", i)] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	if avg := total / n; avg < 450 || avg > 550 {
		tb.Fatalf("files average %d bytes, want about 500", avg)
	}
	return fsys
}

func benchFile(tb testing.TB, i int, extra string) []byte {
	tb.Helper()
	r := newFlag("default", fmt.Sprintf("flag-%05d", i), fmt.Sprintf(`{
		"enabled": %t,
		"description": "Feature flag %d.%s",
		"variants": [{"key": "on", "weight": %d}, {"key": "off", "weight": %d}],
		"segments": ["beta", "internal"]
	}`, i%2 == 0, i, extra, i%100, 100-i%100))
	r.Metadata.Labels = map[string]string{"team": fmt.Sprintf("team-%d", i%7), "tier": fmt.Sprint(i % 3)}
	r.Metadata.Annotations = map[string]string{"owner": "platform"}
	data, err := r.MarshalFile()
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func benchList(b *testing.B, c *template.Controller, fsys fstest.MapFS, want int) {
	list, err := c.List(b.Context(), &controller.ListRequest{FS: fsys, Type: flagType, Namespace: "default"})
	if err != nil || len(list) != want {
		b.Fatalf("List = %d resources, %v; want %d", len(list), err, want)
	}
}

func BenchmarkList(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		fsys := benchTree(b, n)
		b.Run(fmt.Sprintf("files=%d/cold", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				c := newController(b, template.Spec{})
				b.StartTimer()
				benchList(b, c, fsys, n)
			}
		})
		b.Run(fmt.Sprintf("files=%d/warm", n), func(b *testing.B) {
			b.ReportAllocs()
			c := newController(b, template.Spec{})
			benchList(b, c, fsys, n)
			for b.Loop() {
				benchList(b, c, fsys, n)
			}
		})
		// Every iteration lists a new commit in which one file changed.
		b.Run(fmt.Sprintf("files=%d/one-file-changed", n), func(b *testing.B) {
			b.ReportAllocs()
			c := newController(b, template.Spec{})
			benchList(b, c, fsys, n)
			const changed = "default/flags.cup.dev-v1alpha1-Flag-flag-00042.json"
			orig := fsys[changed]
			b.Cleanup(func() { fsys[changed] = orig })
			i := 0
			for b.Loop() {
				i++
				fsys[changed] = &fstest.MapFile{Data: benchFile(b, 42, fmt.Sprintf(" Revision %d.", i)), Mode: 0o644}
				benchList(b, c, fsys, n)
			}
		})
		b.Run(fmt.Sprintf("files=%d/warm-selector", n), func(b *testing.B) {
			b.ReportAllocs()
			c := newController(b, template.Spec{})
			benchList(b, c, fsys, n)
			for b.Loop() {
				list, err := c.List(b.Context(), &controller.ListRequest{FS: fsys, Type: flagType, Namespace: "default", Selector: selector{"team": "team-3"}})
				if err != nil || len(list) == 0 {
					b.Fatalf("List = %d, %v", len(list), err)
				}
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	fsys := benchTree(b, 10000)
	req := &controller.GetRequest{FS: fsys, Type: flagType, Namespace: "default", Name: "flag-04242"}
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		c := newController(b, template.Spec{}, template.WithCacheSize(0))
		for b.Loop() {
			if _, err := c.Get(b.Context(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		b.ReportAllocs()
		c := newController(b, template.Spec{})
		for b.Loop() {
			if _, err := c.Get(b.Context(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkPut(b *testing.B) {
	for _, spec := range []struct {
		name string
		spec template.Spec
	}{{"json", template.Spec{}}, {"yaml", yamlSpec}} {
		b.Run(spec.name, func(b *testing.B) {
			b.ReportAllocs()
			c := newController(b, spec.spec)
			mem, err := controllertest.NewMemFS(nil)
			if err != nil {
				b.Fatal(err)
			}
			r, err := controller.ParseResource(benchFile(b, 1, ""))
			if err != nil {
				b.Fatal(err)
			}
			spec := string(r.Spec)
			i := 0
			for b.Loop() {
				i++ // a change every time
				r.Spec = json.RawMessage(strings.Replace(spec, `"enabled"`, fmt.Sprintf(`"rev":%d,"enabled"`, i), 1))
				if err := c.Put(b.Context(), &controller.PutRequest{FS: mem, Type: flagType, Resource: r}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
