package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/cup-dev/cup/internal/document"
)

// maxDepth bounds the nesting of a schema Convert walks: deeper schemas
// fail rather than exhaust the stack.
const maxDepth = 256

// Components are an OpenAPI document's components.schemas, by name.
type Components map[string]any

// Claim returns name, or when the components hold it already name with
// the first free suffix "-2", "-3", ...; the caller defines it.
func (c Components) Claim(name string) string {
	if _, taken := c[name]; !taken {
		c[name] = nil // reserved until defined
		return name
	}
	for i := 2; ; i++ {
		n := name + "-" + strconv.Itoa(i)
		if _, taken := c[n]; !taken {
			c[n] = nil
			return n
		}
	}
}

// Ref is a reference to the component name.
func Ref(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

// Convert translates a JSON Schema (draft 2020-12 unless its $schema names
// draft 2019-09, 7, 6 or 4) into OpenAPI 3.0's schema dialect. The result
// is the root schema, which the caller defines as the component rootName
// (already claimed); subschemas that $ref points at become components
// named rootName + "." + a name from their location ("#/$defs/flag" is
// rootName.flag), claimed in c, and every $ref is rewritten to them.
// Numbers are kept exactly as written.
//
// The translation keeps every keyword OpenAPI 3.0 knows and translates
// those it has in another form: const becomes an enum of one value;
// "type": [T, "null"] becomes type T with nullable; several types become
// an anyOf of them; a numeric exclusiveMinimum/exclusiveMaximum becomes
// minimum/maximum with the boolean form; examples becomes example (the
// first); boolean subschemas become {} and {"not": {}}; $ref with sibling
// keywords (2019-09 and later) becomes allOf [$ref] beside them; an array
// type without items gets items {}; prefixItems and tuple items become
// items that are anyOf the positions' schemas; patternProperties folds
// into additionalProperties (anyOf of the patterns' schemas) when that is
// not absent. It drops what 3.0 cannot say: $schema, $id, $anchor,
// $comment, $defs/definitions (moved to components), and the assertions
// if/then/else, dependentRequired, dependentSchemas, dependencies,
// propertyNames, contains, min/maxContains, unevaluatedProperties,
// unevaluatedItems, $dynamicRef, $recursiveRef, content* and any other
// keyword it does not know (those starting "x-" are kept).
//
// Dropping an assertion loosens a schema, never tightens it: the result
// accepts every document the JSON Schema accepts (the server still
// validates with the JSON Schema). Where loosening a subschema would
// tighten its parent, the parent is loosened too: a "not" of a loosened
// schema is dropped, and a oneOf with a loosened branch becomes anyOf.
func Convert(schema []byte, rootName string, c Components) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	var root any
	if err := d.Decode(&root); err != nil {
		return nil, fmt.Errorf("openapi: schema: %w", err)
	}
	cv := &converter{root: root, rootName: rootName, c: c, names: map[string]string{"": rootName}, state: map[string]int{"": converting}}
	if m, ok := root.(map[string]any); ok {
		s, _ := m["$schema"].(string)
		cv.refAlone = strings.Contains(s, "draft-04") || strings.Contains(s, "draft-06") || strings.Contains(s, "draft-07")
	}
	out, _, err := cv.schema(root, 0)
	if err != nil {
		return nil, err
	}
	return asObject(out), nil
}

type converter struct {
	root     any
	rootName string
	c        Components
	// refAlone: drafts before 2019-09 ignore a $ref's siblings.
	refAlone bool
	names    map[string]string // JSON Pointer → component name
	state    map[string]int    // JSON Pointer → converting or converted
	lossy    map[string]bool   // components whose conversion loosened them
}

// The states of a component's conversion.
const (
	converting = 1 + iota
	converted
)

// asObject is a schema as an object: OpenAPI 3.0 has no boolean schemas.
func asObject(s any) map[string]any {
	if m, ok := s.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// resolve finds the value at the JSON Pointer ptr.
func (cv *converter) resolve(ptr string) (any, bool) {
	return document.Pointer(cv.root, ptr)
}

// anchor finds the JSON Pointer of the subschema with $anchor name (or,
// before 2019-09, $id "#name").
func (cv *converter) anchor(name string) (string, bool) {
	var find func(v any, ptr string, depth int) (string, bool)
	find = func(v any, ptr string, depth int) (string, bool) {
		if depth > maxDepth {
			return "", false
		}
		switch x := v.(type) {
		case map[string]any:
			if a, _ := x["$anchor"].(string); a == name {
				return ptr, true
			}
			if id, _ := x["$id"].(string); id == "#"+name {
				return ptr, true
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				tok := strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
				if p, ok := find(x[k], ptr+"/"+tok, depth+1); ok {
					return p, true
				}
			}
		case []any:
			for i, e := range x {
				if p, ok := find(e, ptr+"/"+strconv.Itoa(i), depth+1); ok {
					return p, true
				}
			}
		}
		return "", false
	}
	return find(cv.root, "", 0)
}

// ref rewrites a $ref to its component, converting the subschema it
// points at on first sight. ok is false for a reference that cannot be
// followed (outside the schema).
func (cv *converter) ref(ref string, depth int) (name string, lossy, ok bool, err error) {
	frag, found := strings.CutPrefix(ref, "#")
	if !found {
		return "", false, false, nil
	}
	frag, err = url.PathUnescape(frag)
	if err != nil {
		return "", false, false, nil
	}
	ptr := frag
	if frag != "" && !strings.HasPrefix(frag, "/") {
		if ptr, ok = cv.anchor(frag); !ok {
			return "", false, false, nil
		}
	}
	target, found := cv.resolve(ptr)
	if !found {
		return "", false, false, nil
	}
	switch cv.state[ptr] {
	case converting:
		// A cycle: the component may turn out loosened; assume it is.
		return cv.names[ptr], true, true, nil
	case converted:
		return cv.names[ptr], cv.lossy[ptr], true, nil
	}
	name = cv.c.Claim(cv.rootName + "." + componentSuffix(ptr))
	cv.names[ptr], cv.state[ptr] = name, converting
	out, lossy, err := cv.schema(target, depth+1)
	if err != nil {
		return "", false, false, err
	}
	cv.c[name], cv.state[ptr] = asObject(out), converted
	if lossy {
		if cv.lossy == nil {
			cv.lossy = map[string]bool{}
		}
		cv.lossy[ptr] = true
	}
	return name, lossy, true, nil
}

// componentSuffix names the subschema at ptr: a $defs or definitions
// entry by its name, anything else by its path, in the characters
// component names allow.
func componentSuffix(ptr string) string {
	toks := strings.Split(ptr[1:], "/")
	if len(toks) == 2 && (toks[0] == "$defs" || toks[0] == "definitions") {
		toks = toks[1:]
	}
	for i, t := range toks {
		t = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		toks[i] = strings.Map(func(r rune) rune {
			if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return r
			}
			return '_'
		}, strings.TrimPrefix(t, "$"))
	}
	return strings.Join(toks, ".")
}

// dropped are the keywords left out without loosening anything: they
// identify, document or hold subschemas (which become components).
var dropped = map[string]bool{
	"$schema": true, "$id": true, "$anchor": true, "$dynamicAnchor": true, "$recursiveAnchor": true,
	"$comment": true, "$vocabulary": true, "$defs": true, "definitions": true,
}

// kept are the keywords OpenAPI 3.0 takes as JSON Schema has them.
var kept = map[string]bool{
	"title": true, "description": true, "default": true, "readOnly": true, "writeOnly": true,
	"deprecated": true, "format": true, "pattern": true, "multipleOf": true, "maxLength": true,
	"minLength": true, "maxItems": true, "minItems": true, "uniqueItems": true,
	"maxProperties": true, "minProperties": true, "example": true,
}

// schema converts one schema, reporting whether it was loosened.
func (cv *converter) schema(v any, depth int) (any, bool, error) {
	if depth > maxDepth {
		return nil, false, fmt.Errorf("openapi: schema nested deeper than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case bool:
		if x {
			return map[string]any{}, false, nil
		}
		return map[string]any{"not": map[string]any{}}, false, nil
	case map[string]any:
		return cv.object(x, depth)
	}
	return nil, false, fmt.Errorf("openapi: a schema is an object or a boolean, not %s", jsonKind(v))
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

func (cv *converter) object(in map[string]any, depth int) (any, bool, error) {
	out := map[string]any{}
	lossy := false
	sub := func(v any) (any, error) {
		s, l, err := cv.schema(v, depth+1)
		lossy = lossy || l
		return s, err
	}
	subs := func(v any) ([]any, []bool, error) {
		list, ok := v.([]any)
		if !ok {
			return nil, nil, fmt.Errorf("openapi: expected an array of schemas, not %s", jsonKind(v))
		}
		out, ls := make([]any, len(list)), make([]bool, len(list))
		for i, e := range list {
			s, l, err := cv.schema(e, depth+1)
			if err != nil {
				return nil, nil, err
			}
			out[i], ls[i] = s, l
		}
		return out, ls, nil
	}
	nullable := false
	for _, k := range slices.Sorted(maps.Keys(in)) {
		v := in[k]
		switch {
		case kept[k]:
			out[k] = v
		case dropped[k]:
		case strings.HasPrefix(k, "x-"):
			out[k] = v
		case k == "type", k == "minimum", k == "maximum", k == "exclusiveMinimum", k == "exclusiveMaximum",
			k == "$ref", k == "items", k == "prefixItems", k == "additionalItems",
			k == "additionalProperties", k == "patternProperties":
			// Below: they depend on each other.
		case k == "enum":
			list, _ := v.([]any)
			if len(list) == 0 {
				out["not"] = map[string]any{} // nothing is valid
				continue
			}
			out["enum"] = list
			nullable = nullable || slices.Contains(list, nil)
		case k == "const":
			out["enum"] = []any{v}
			nullable = nullable || v == nil
		case k == "required":
			if list, _ := v.([]any); len(list) > 0 {
				out[k] = list
			}
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, false, fmt.Errorf("openapi: properties is %s", jsonKind(v))
			}
			p := make(map[string]any, len(props))
			for _, name := range slices.Sorted(maps.Keys(props)) {
				var err error
				if p[name], err = sub(props[name]); err != nil {
					return nil, false, err
				}
			}
			out["properties"] = p
		case k == "allOf", k == "anyOf", k == "oneOf":
			list, ls, err := subs(v)
			if err != nil {
				return nil, false, err
			}
			loosened := slices.Contains(ls, true)
			lossy = lossy || loosened
			if k == "oneOf" && loosened {
				// A loosened branch may now overlap another, which
				// oneOf would refuse.
				k = "anyOf"
			}
			addAll(out, k, list...)
		case k == "not":
			s, l, err := cv.schema(v, depth+1)
			if err != nil {
				return nil, false, err
			}
			if l {
				lossy = true // not of a looser schema is stricter: drop it
				continue
			}
			out["not"] = s
		case k == "examples":
			if list, _ := v.([]any); len(list) > 0 {
				if _, has := in["example"]; !has {
					out["example"] = list[0]
				}
			}
		default:
			// if/then/else, dependentRequired, propertyNames, contains,
			// unevaluated*, $dynamicRef, content*, and anything unknown.
			lossy = true
		}
	}
	if err := cv.numbers(in, out); err != nil {
		return nil, false, err
	}
	if err := cv.arrays(in, out, sub, subs, &lossy); err != nil {
		return nil, false, err
	}
	if err := cv.additional(in, out, sub, &lossy); err != nil {
		return nil, false, err
	}
	cv.types(in, out, nullable)
	if r, ok := in["$ref"]; ok {
		s, _ := r.(string)
		name, l, ok, err := cv.ref(s, depth)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			// Not a reference Convert can follow: anything goes.
			lossy = true
		} else {
			lossy = lossy || l
			if cv.refAlone || len(out) == 0 {
				return Ref(name), lossy, nil
			}
			addAll(out, "allOf", Ref(name))
		}
	}
	return out, lossy, nil
}

// addAll appends schemas to out's list k.
func addAll(out map[string]any, k string, schemas ...any) {
	prev, _ := out[k].([]any)
	out[k] = append(prev, schemas...)
}

// numbers translates the bounds: 2020-12's numeric exclusive bounds
// become 3.0's minimum/maximum with a boolean, the stricter bound winning
// where both are given.
func (cv *converter) numbers(in, out map[string]any) error {
	for _, b := range [...]struct {
		incl, excl string
		lower      bool
	}{{"minimum", "exclusiveMinimum", true}, {"maximum", "exclusiveMaximum", false}} {
		incl, hasIncl := in[b.incl]
		excl, hasExcl := in[b.excl]
		if hasIncl {
			if _, ok := incl.(json.Number); !ok {
				return fmt.Errorf("openapi: %s is %s, not a number", b.incl, jsonKind(incl))
			}
			out[b.incl] = incl
		}
		if !hasExcl {
			continue
		}
		switch e := excl.(type) {
		case bool: // draft 4
			if e && hasIncl {
				out[b.excl] = true
			}
		case json.Number:
			if hasIncl {
				c, err := compare(e, incl.(json.Number))
				if err != nil {
					return err
				}
				// The inclusive bound is stricter: keep it alone.
				if b.lower && c < 0 || !b.lower && c > 0 {
					continue
				}
			}
			out[b.incl] = e
			out[b.excl] = true
		default:
			return fmt.Errorf("openapi: %s is %s, not a number", b.excl, jsonKind(excl))
		}
	}
	return nil
}

// compare compares two JSON numbers exactly.
func compare(a, b json.Number) (int, error) {
	x, ok := new(big.Rat).SetString(string(a))
	y, ok2 := new(big.Rat).SetString(string(b))
	if !ok || !ok2 {
		return 0, errors.New("openapi: a bound is not a number")
	}
	return x.Cmp(y), nil
}

// arrays translates items, prefixItems and additionalItems.
func (cv *converter) arrays(in, out map[string]any, sub func(any) (any, error), subs func(any) ([]any, []bool, error), lossy *bool) error {
	items, hasItems := in["items"]
	var tuple []any
	rest, hasRest := any(nil), false
	switch {
	case in["prefixItems"] != nil:
		list, _, err := subs(in["prefixItems"])
		if err != nil {
			return err
		}
		tuple, rest, hasRest = list, items, hasItems
	case hasItems:
		if _, isList := items.([]any); isList { // draft 2019-09 and before
			list, _, err := subs(items)
			if err != nil {
				return err
			}
			tuple = list
			rest, hasRest = in["additionalItems"]
		} else {
			s, err := sub(items)
			if err != nil {
				return err
			}
			out["items"] = s
			return nil
		}
	default:
		return nil
	}
	// Positions cannot be told apart in 3.0: each item may be any of the
	// positions' schemas (or the rest's).
	*lossy = true
	anyOf := tuple
	switch r := rest.(type) {
	case bool:
		if !r {
			if mx, ok := out["maxItems"].(json.Number); !ok || compareInt(mx, len(tuple)) > 0 {
				out["maxItems"] = json.Number(strconv.Itoa(len(tuple)))
			}
		} else {
			anyOf = nil // anything
		}
	case nil:
		if !hasRest {
			anyOf = nil
		}
	default:
		s, err := sub(r)
		if err != nil {
			return err
		}
		anyOf = append(slices.Clone(anyOf), s)
	}
	if len(anyOf) == 0 {
		out["items"] = map[string]any{}
	} else {
		out["items"] = map[string]any{"anyOf": anyOf}
	}
	return nil
}

func compareInt(n json.Number, i int) int {
	c, err := compare(n, json.Number(strconv.Itoa(i)))
	if err != nil {
		return 1
	}
	return c
}

// additional translates additionalProperties, folding patternProperties
// into it: 3.0 has no patterns for names.
func (cv *converter) additional(in, out map[string]any, sub func(any) (any, error), lossy *bool) error {
	ap, hasAP := in["additionalProperties"]
	pp, _ := in["patternProperties"].(map[string]any)
	if len(pp) == 0 {
		switch x := ap.(type) {
		case nil:
		case bool:
			out["additionalProperties"] = x
		default:
			s, err := sub(x)
			if err != nil {
				return err
			}
			out["additionalProperties"] = s
		}
		return nil
	}
	if !hasAP || ap == true {
		*lossy = true // the patterns' schemas are dropped
		return nil
	}
	// Names that match no pattern must match additionalProperties; 3.0
	// can only say that every name not in properties matches one of them.
	*lossy = true
	var anyOf []any
	for _, k := range slices.Sorted(maps.Keys(pp)) {
		s, err := sub(pp[k])
		if err != nil {
			return err
		}
		anyOf = append(anyOf, s)
	}
	if ap != false {
		s, err := sub(ap)
		if err != nil {
			return err
		}
		anyOf = append(anyOf, s)
	}
	out["additionalProperties"] = map[string]any{"anyOf": anyOf}
	return nil
}

// types translates type: one type stays, "null" becomes nullable, and
// several types become anyOf.
func (cv *converter) types(in, out map[string]any, enumNull bool) {
	var types []string
	switch t := in["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				types = append(types, s)
			}
		}
	case nil:
		if enumNull {
			out["nullable"] = true
		}
		return
	}
	null := slices.Contains(types, "null")
	types = slices.DeleteFunc(types, func(s string) bool { return s == "null" })
	switch len(types) {
	case 0:
		if null {
			out["nullable"] = true
			out["enum"] = []any{nil}
		}
	case 1:
		out["type"] = types[0]
		if null {
			out["nullable"] = true
		}
		if types[0] == "array" && out["items"] == nil {
			out["items"] = map[string]any{}
		}
	default:
		branches := make([]any, len(types))
		for i, t := range types {
			b := map[string]any{"type": t}
			if t == "array" {
				b["items"] = map[string]any{}
			}
			if null && i == 0 {
				b["nullable"] = true
			}
			branches[i] = b
		}
		if prev, ok := out["anyOf"]; ok {
			// anyOf is taken: both must hold.
			delete(out, "anyOf")
			addAll(out, "allOf", map[string]any{"anyOf": prev}, map[string]any{"anyOf": branches})
		} else {
			out["anyOf"] = branches
		}
	}
}
