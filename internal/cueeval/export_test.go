package cueeval

// EvalInProcess evaluates as Eval does, but in the calling process and
// without bounds: for benchmarks that tell CUE's cost from the worker's.
func EvalInProcess(layers []Layer, o Options) (json []byte, problems []Problem, failure string) {
	o = o.withDefaults()
	r := evaluate(&request{
		Layers: layers, Schema: o.Schema, SchemaPath: o.SchemaPath,
		MaxResultBytes: o.MaxResultBytes, MaxNesting: o.MaxNesting,
	})
	return r.JSON, r.Problems, r.Limit + r.Failure
}
