package cueeval

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
	cuejson "cuelang.org/go/encoding/json"
)

// Bounds of a response.
const (
	// maxProblems is the most problems a response lists.
	maxProblems = 100
	// maxMessage bounds the length of a problem's message.
	maxMessage = 2 << 10
)

// schemaRef is the Ref of the schema's positions.
const schemaRef = "schema"

// origin is what a file name given to CUE stands for.
type origin struct {
	// ref, file and field are those of the positions in it (field only
	// when they are relative to it).
	ref, file, field string
	// rank orders positions: the layers in order, then the schema.
	rank int
}

// evaluator evaluates one request; it lives in a worker.
type evaluator struct {
	req     *request
	ctx     *cue.Context
	origins map[string]*origin
	// limit is the message of a bound exceeded while compiling.
	limit string
}

// evaluate answers req: the canonical result, the problems, or the bound
// exceeded.
func evaluate(req *request) *response {
	e := &evaluator{req: req, ctx: cuecontext.New(), origins: map[string]*origin{}}
	layers := slices.Clone(req.Layers)
	slices.SortFunc(layers, func(a, b Layer) int {
		return cmp.Or(strings.Compare(a.Ref, b.Ref), strings.Compare(a.Path, b.Path), strings.Compare(a.Field, b.Field),
			strings.Compare(a.CUE, b.CUE), bytes.Compare(a.Values, b.Values), bytes.Compare(a.File, b.File))
	})

	// Compile every layer and the schema first: a problem in one of them
	// would make the unification report spurious ones.
	var errs cueerrors.Error
	values := make([]cue.Value, 0, len(layers)+1)
	for i, l := range layers {
		v, err := e.layer(i, l)
		if e.limit != "" {
			return &response{Limit: e.limit}
		}
		if err != nil {
			errs = cueerrors.Append(errs, err)
			continue
		}
		values = append(values, v)
	}
	if strings.TrimSpace(req.Schema) != "" {
		v, err := e.schema(len(layers))
		if e.limit != "" {
			return &response{Limit: e.limit}
		}
		if err != nil {
			errs = cueerrors.Append(errs, err)
		} else {
			values = append(values, v)
		}
	}
	if errs != nil {
		return e.problems(errs, cue.Value{})
	}

	v := e.ctx.CompileString("{}")
	if len(values) > 0 {
		v = values[0]
		for _, w := range values[1:] {
			v = v.Unify(w)
		}
	}
	if err := v.Validate(cue.Concrete(true)); err != nil {
		return e.problems(err, v)
	}
	raw, err := v.MarshalJSON()
	if err != nil {
		return e.problems(err, v)
	}
	out, err := canonicalJSON(raw)
	if err != nil {
		return &response{Failure: fmt.Sprintf("re-encoding the result: %v", err)}
	}
	if len(out) > req.MaxResultBytes {
		return &response{Limit: fmt.Sprintf("the unified configuration takes %d bytes of JSON, more than %d", len(out), req.MaxResultBytes)}
	}
	return &response{JSON: out}
}

// fileName returns a name for CUE's positions that no other source of the
// request has, registering o under it.
func (e *evaluator) fileName(base string, o *origin) string {
	name := base
	for i := 2; e.origins[name] != nil; i++ {
		name = fmt.Sprintf("%s#%d", base, i)
	}
	e.origins[name] = o
	return name
}

// layer compiles l, the rank-th layer.
func (e *evaluator) layer(rank int, l Layer) (cue.Value, cueerrors.Error) {
	field := l.Field
	if field == "" {
		field = "spec.cue"
		if l.Values != nil {
			field = "spec.values"
		}
	}
	o := &origin{ref: l.Ref, file: l.Path, field: field, rank: rank}
	name := e.fileName(cmp.Or(l.Path, l.Ref), o)
	if l.Values != nil {
		return e.values(name, o, l)
	}

	src := l.CUE
	if l.File != nil && flowDepth(l.File) <= maxFileNesting {
		if p, ok := placeString(l.File, field, l.CUE); ok {
			src, o.field = p.pad(l.CUE), ""
		}
	}
	if !e.shallow([]byte(src), l.Ref) {
		return cue.Value{}, nil
	}
	f, err := parser.ParseFile(name, src)
	if err != nil {
		return cue.Value{}, cueerrors.Promote(err, "parsing "+l.Ref)
	}
	if !e.nested(f, l.Ref) {
		return cue.Value{}, nil
	}
	v := e.ctx.BuildFile(f)
	if err := v.Err(); err != nil {
		return cue.Value{}, cueerrors.Promote(err, "compiling "+l.Ref)
	}
	return v, nil
}

// values compiles a layer of plain data. When the layer's file holds data
// of the same shape in the field, the data is placed at the positions of
// the file's, so that positions are in the file.
func (e *evaluator) values(name string, o *origin, l Layer) (cue.Value, cueerrors.Error) {
	if !e.shallow(l.Values, l.Ref) {
		return cue.Value{}, nil
	}
	x, err := cuejson.Extract(name, l.Values)
	if err != nil {
		return cue.Value{}, cueerrors.Promote(err, "reading the values of "+l.Ref)
	}
	if !e.nested(x, l.Ref) {
		return cue.Value{}, nil
	}
	v := e.ctx.BuildExpr(x)
	if err := v.Err(); err != nil {
		return cue.Value{}, cueerrors.Promote(err, "compiling "+l.Ref)
	}
	if l.File == nil || flowDepth(l.File) > maxFileNesting {
		return v, nil
	}
	fx := fileField(name, l.File, o.field)
	if fx == nil || !within(fx, e.req.MaxNesting) {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(l.Values))
	dec.UseNumber()
	var data any
	if err := dec.Decode(&data); err != nil {
		return v, nil
	}
	rx, ok := rebase(fx, data)
	if !ok {
		return v, nil
	}
	fv := e.ctx.BuildExpr(rx)
	if fv.Err() != nil || !sameData(fv, v) {
		return v, nil
	}
	o.field = ""
	return fv, nil
}

// schema compiles the schema, rank being its rank among positions, and
// returns the value to unify with the layers: the schema's only definition
// when it declares one and no regular field or embedding, the whole schema
// otherwise. A schema of several definitions and nothing else is a
// problem, as it would constrain nothing.
func (e *evaluator) schema(rank int) (cue.Value, cueerrors.Error) {
	o := &origin{ref: schemaRef, file: e.req.SchemaPath, rank: rank}
	name := e.fileName(e.req.SchemaPath, o)
	if !e.shallow([]byte(e.req.Schema), schemaRef) {
		return cue.Value{}, nil
	}
	f, err := parser.ParseFile(name, e.req.Schema)
	if err != nil {
		return cue.Value{}, cueerrors.Promote(err, "parsing the schema")
	}
	if !e.nested(f, schemaRef) {
		return cue.Value{}, nil
	}
	v := e.ctx.BuildFile(f)
	if err := v.Err(); err != nil {
		return cue.Value{}, cueerrors.Promote(err, "compiling the schema")
	}
	var defs []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.Field:
			name, _, err := ast.LabelName(d.Label)
			switch {
			case err != nil:
				return v, nil
			case strings.HasPrefix(name, "#"):
				defs = append(defs, name)
			case !strings.HasPrefix(name, "_"):
				return v, nil
			}
		case *ast.EmbedDecl, *ast.Comprehension:
			return v, nil
		}
	}
	switch len(defs) {
	case 0:
		return v, nil
	case 1:
	default:
		return cue.Value{}, cueerrors.Newf(f.Pos(), "the schema declares the definitions %s and no field, so it constrains nothing: embed the one that applies, e.g. `%s`",
			strings.Join(defs, ", "), defs[0])
	}
	def := v.LookupPath(cue.MakePath(cue.Def(defs[0])))
	if err := def.Err(); err != nil {
		return cue.Value{}, cueerrors.Promote(err, "compiling the schema")
	}
	return def, nil
}

// nested reports whether brackets nest in n at most as deeply as the
// request allows, recording the limit exceeded otherwise.
func (e *evaluator) nested(n ast.Node, ref string) bool {
	if within(n, e.req.MaxNesting) {
		return true
	}
	e.tooDeep(ref)
	return false
}

// shallow reports whether brackets nest in the source src at most as
// deeply as the request allows, recording the limit exceeded otherwise.
func (e *evaluator) shallow(src []byte, ref string) bool {
	if shallow(src, e.req.MaxNesting) {
		return true
	}
	e.tooDeep(ref)
	return false
}

// tooDeep records that the source of ref nests too deeply.
func (e *evaluator) tooDeep(ref string) {
	e.limit = fmt.Sprintf("the CUE of %s nests more than %d levels deep", ref, e.req.MaxNesting)
}

// sameData reports whether a and b export to the same JSON.
func sameData(a, b cue.Value) bool {
	ja, err := a.MarshalJSON()
	if err != nil {
		return false
	}
	jb, err := b.MarshalJSON()
	if err != nil {
		return false
	}
	ca, err := canonicalJSON(ja)
	if err != nil {
		return false
	}
	cb, err := canonicalJSON(jb)
	return err == nil && bytes.Equal(ca, cb)
}

// canonicalJSON re-encodes a JSON value with sorted object keys, no
// insignificant whitespace and no HTML escaping, keeping numbers' digits.
func canonicalJSON(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value")
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// problems turns CUE's errors into a response's problems, ordered by path,
// then message, without duplicates. A problem CUE gives no position for
// gets the position of its field in v, when v has the field.
func (e *evaluator) problems(err error, v cue.Value) *response {
	var out []Problem
	for _, ce := range cueerrors.Errors(err) {
		p := Problem{Message: cueerrors.String(ce), Path: strings.Join(ce.Path(), ".")}
		if len(p.Message) > maxMessage {
			p.Message = strings.ToValidUTF8(p.Message[:maxMessage], "") + "…"
		}
		var pos []ranked
		for _, tp := range cueerrors.Positions(ce) {
			pos = append(pos, e.position(tp))
		}
		if len(pos) == 0 && len(ce.Path()) > 0 && v.Exists() {
			if path, ok := makePath(ce.Path()); ok {
				if tp := v.LookupPath(path).Pos(); tp.IsValid() && tp.File() != nil {
					pos = append(pos, e.position(tp))
				}
			}
		}
		slices.SortFunc(pos, func(a, b ranked) int {
			return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
		})
		pos = slices.Compact(pos)
		for _, q := range pos {
			p.Positions = append(p.Positions, q.Position)
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Message, b.Message),
			strings.Compare(a.String(), b.String()))
	})
	out = slices.CompactFunc(out, func(a, b Problem) bool {
		return a.Path == b.Path && a.Message == b.Message && slices.Equal(a.Positions, b.Positions)
	})
	if len(out) > maxProblems {
		more := len(out) - maxProblems
		out = append(out[:maxProblems], Problem{Message: fmt.Sprintf("and %d more problems", more)})
	}
	return &response{Problems: out}
}

// ranked is a position with the rank of its origin.
type ranked struct {
	Position
	rank int
}

// position returns the Position of p, with its rank.
func (e *evaluator) position(p token.Pos) ranked {
	pp := p.Position()
	o := e.origins[pp.Filename]
	if o == nil {
		return ranked{Position{File: pp.Filename, Line: pp.Line, Column: pp.Column}, math.MaxInt}
	}
	return ranked{Position{Ref: o.ref, File: o.file, Field: o.field, Line: pp.Line, Column: pp.Column}, o.rank}
}

// makePath returns the cue.Path of an error's path.
func makePath(elems []string) (cue.Path, bool) {
	sels := make([]cue.Selector, 0, len(elems))
	for _, el := range elems {
		if n, err := strconv.Atoi(el); err == nil {
			sels = append(sels, cue.Index(n))
			continue
		}
		p := cue.ParsePath(el)
		if p.Err() != nil {
			return cue.Path{}, false
		}
		sels = append(sels, p.Selectors()...)
	}
	return cue.MakePath(sels...), true
}
