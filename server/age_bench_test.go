package server_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/cup-dev/cup/internal/benchrepo"
)

// thousandItems is a repository of 1,000 of benchrepo's items, then 100
// commits each changing one of the first 100: what cup get's AGE column
// reads for a list of 1,000 (a History call per row, page size 1).
var thousandItems = sync.OnceValues(func() (string, error) {
	return benchHistory("cup-age-bench-", 1000, 100, func(i int) int { return i })
})

// BenchmarkAges1000 measures what cup get asks for the AGE of 1,000
// rows: the list, then the latest history entry of each resource, 8
// calls at a time (as cup does), on a new server (cold: every commit read
// for the first time) and on one that answered it before (warm). For
// comparison, list is the list alone, and list+changes the list with
// with_changes, which finds the 1,000 last changes in one walk.
func BenchmarkAges1000(b *testing.B) {
	dir, err := thousandItems()
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, withAges, withChanges bool) func() {
		a := openBench(b, dir)
		b.Cleanup(func() { _ = a.Close() })
		h := a.Handler()
		return func() {
			if withChanges {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest("POST", "/cup.v1alpha1.ResourceService/List", strings.NewReader(
					`{"group":"bench.cup.dev","version":"v1","plural":"items","namespace":"default","withChanges":true}`))
				req.Header.Set("Content-Type", "application/json")
				h.ServeHTTP(rec, req)
				if rec.Code != 200 || strings.Count(rec.Body.String(), `"time":`) != 1000 {
					b.Fatalf("list with changes: %d %.300s", rec.Code, rec.Body)
				}
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/apis/bench.cup.dev/v1/namespaces/default/items", nil))
			if rec.Code != 200 || strings.Count(rec.Body.String(), `"kind":"Item"`) != 1000 {
				b.Fatalf("list: %d %.300s", rec.Code, rec.Body)
			}
			if !withAges {
				return
			}
			var g errgroup.Group
			g.SetLimit(8)
			for i := range 1000 {
				g.Go(func() error {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest("GET", "/apis/bench.cup.dev/v1/namespaces/default/items/"+benchrepo.Name(i)+"/history?limit=1", nil))
					if rec.Code != 200 || strings.Count(rec.Body.String(), `"subject":`) != 1 {
						return fmt.Errorf("history of %s: %d %.300s", benchrepo.Name(i), rec.Code, rec.Body)
					}
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name                  string
		withAges, withChanges bool
	}{{"list", false, false}, {"list+ages", true, false}, {"list+changes", false, true}} {
		b.Run(tc.name+"/cold", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				get := run(b, tc.withAges, tc.withChanges)
				b.StartTimer()
				get()
			}
		})
		b.Run(tc.name+"/warm", func(b *testing.B) {
			get := run(b, tc.withAges, tc.withChanges)
			get()
			for b.Loop() {
				get()
			}
		})
	}
}
