package cueeval_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/cueeval"
)

// benchLayers returns three layers of about 2 KB each, with their files:
// an org base in CUE, an environment and a service in plain data.
func benchLayers(b *testing.B) []cueeval.Layer {
	var base, env, svc strings.Builder
	base.WriteString("apiVersion: cup.dev/v1alpha1\nkind: ConfigLayer\nmetadata: {name: base, namespace: default}\nspec:\n  cue: |\n")
	base.WriteString("    replicas: *1 | int & >=1 & <=50\n    env: [=~\"^[A-Z0-9_]+$\"]: string\n    features: [string]: bool\n")
	for i := range 40 {
		fmt.Fprintf(&base, "    limits: l%02d: *%d | int & >=0\n", i, i*10)
	}
	env.WriteString("apiVersion: cup.dev/v1alpha1\nkind: ConfigLayer\nmetadata: {name: env, namespace: default}\nspec:\n  values:\n    replicas: 3\n    env:\n")
	for i := range 60 {
		fmt.Fprintf(&env, "      ENV_VAR_%02d: value-%02d-production\n", i, i)
	}
	svc.WriteString("apiVersion: cup.dev/v1alpha1\nkind: ConfigLayer\nmetadata: {name: web, namespace: default}\nspec:\n  values:\n    image: {name: web, tag: \"2.4.1\"}\n    features:\n")
	for i := range 50 {
		fmt.Fprintf(&svc, "      feature%02d: %v\n", i, i%2 == 0)
	}
	svc.WriteString("    limits:\n")
	for i := range 20 {
		fmt.Fprintf(&svc, "      l%02d: %d\n", i, i*10+5)
	}
	ls := []cueeval.Layer{
		parseLayer(b, "configlayers/default/base.yaml", []byte(base.String())),
		parseLayer(b, "configlayers/default/env.yaml", []byte(env.String())),
		parseLayer(b, "configlayers/default/web.yaml", []byte(svc.String())),
	}
	return ls
}

// BenchmarkEval measures one evaluation of three layers of about 2 KB, the
// worker's start included.
func BenchmarkEval(b *testing.B) {
	ls := benchLayers(b)
	for _, l := range ls {
		b.Logf("%s: %d bytes of file", l.Ref, len(l.File))
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := cueeval.Eval(b.Context(), ls, cueeval.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalTiny measures one evaluation of a tiny layer: mostly the
// worker's start.
func BenchmarkEvalTiny(b *testing.B) {
	ls := []cueeval.Layer{{Ref: "a", CUE: "a: 1"}}
	for b.Loop() {
		if _, err := cueeval.Eval(b.Context(), ls, cueeval.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalInProcess measures the evaluation of BenchmarkEval without
// a worker: CUE's share of it.
func BenchmarkEvalInProcess(b *testing.B) {
	ls := benchLayers(b)
	start := time.Now()
	cueeval.EvalInProcess(ls, cueeval.Options{})
	b.Logf("the first evaluation in the process took %v", time.Since(start))
	for b.Loop() {
		if _, problems, failure := cueeval.EvalInProcess(ls, cueeval.Options{}); problems != nil || failure != "" {
			b.Fatal(problems, failure)
		}
	}
}
