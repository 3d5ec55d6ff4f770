package cueeval_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cup-dev/cup/internal/cueeval"
)

func ExampleEval() {
	// In a program, main calls cueeval.Worker() first; here TestMain does.
	layers := []cueeval.Layer{{
		Ref:    "ConfigLayer default/web",
		Path:   "configlayers/default/web.yaml",
		Values: []byte(`{"replicas": 3, "image": "web:2.4.1"}`),
	}, {
		Ref:  "ConfigLayer default/base",
		Path: "configlayers/default/base.yaml",
		CUE:  `replicas: *1 | int, pullPolicy: *"IfNotPresent" | "Always"`,
	}}
	res, err := cueeval.Eval(context.Background(), layers, cueeval.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.JSON))
	// Output:
	// {"image":"web:2.4.1","pullPolicy":"IfNotPresent","replicas":3}
}

func ExampleError() {
	layers := []cueeval.Layer{{
		Ref:    "ConfigLayer default/env",
		Path:   "configlayers/default/env.yaml",
		File:   []byte("kind: ConfigLayer\nspec:\n  values:\n    replicas: 3\n"),
		Values: []byte(`{"replicas":3}`),
	}, {
		Ref:    "ConfigLayer default/web",
		Path:   "configlayers/default/web.yaml",
		File:   []byte("kind: ConfigLayer\nspec:\n  values: {replicas: 2}\n"),
		Values: []byte(`{"replicas":2}`),
	}}
	_, err := cueeval.Eval(context.Background(), layers, cueeval.Options{})
	var ce *cueeval.Error
	if errors.As(err, &ce) {
		for _, p := range ce.Problems {
			fmt.Println(p.Path)
			for _, pos := range p.Positions {
				fmt.Printf("  %s line %d column %d\n", pos.File, pos.Line, pos.Column)
			}
		}
		fmt.Println(err)
	}
	// Output:
	// replicas
	//   configlayers/default/env.yaml line 4 column 15
	//   configlayers/default/web.yaml line 3 column 22
	// replicas: conflicting values 2 and 3 (ConfigLayer default/env at configlayers/default/env.yaml:4:15, ConfigLayer default/web at configlayers/default/web.yaml:3:22)
}
