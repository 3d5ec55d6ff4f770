package main

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/app"
)

// BenchmarkApply1000 runs cup apply -f of a file of 1,000 flags against a
// cupd on a local copy of the demo repository: in one commit (atomic),
// and with --atomic=false, one commit per resource. Each round changes
// every flag, so that every round writes 1,000 resources.
//
//	go test ./cmd/cup -run '^$' -bench Apply1000 -benchtime 3x
func BenchmarkApply1000(b *testing.B) {
	for _, atomic := range []bool{true, false} {
		b.Run(fmt.Sprintf("atomic=%t", atomic), func(b *testing.B) {
			a, err := app.Open(b.Context(), app.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), WASMRuntime: testWASM})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = a.Close() })
			url := serve(b, a.Handler())
			file := filepath.Join(b.TempDir(), "flags.yaml")
			var total int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				var doc strings.Builder
				for j := range 1000 {
					fmt.Fprintf(&doc, "---\napiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: bench-%04d, labels: {team: bench}}\nspec: {enabled: true, rollout: %d, description: round %d}\n", j, j%101, i)
				}
				writeFile(b, filepath.Dir(file), filepath.Base(file), doc.String())
				b.StartTimer()
				var out, errOut strings.Builder
				if code := run(b.Context(), []string{"--server", url, "apply", "-f", file, fmt.Sprintf("--atomic=%t", atomic)}, strings.NewReader(""), &out, &errOut); code != 0 {
					b.Fatalf("exit %d: %s", code, errOut.String())
				}
				total += strings.Count(out.String(), "committed ")
			}
			b.ReportMetric(float64(total)/float64(b.N), "commits/op")
		})
	}
}
