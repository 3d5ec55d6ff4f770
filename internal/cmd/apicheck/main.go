// Command apicheck lists the exported identifiers of the module's public
// packages whose signatures (parameters, results, exported fields and
// methods) name a type of an internal package: a library user could not
// name what such an API takes or returns. It exits 1 when it finds any.
//
//	go run ./internal/cmd/apicheck
package main

import (
	"encoding/json"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
)

// pkg is what apicheck reads of go list's output.
type pkg struct {
	ImportPath string
	Export     string // the export data file
	DepOnly    bool
}

func main() {
	out, err := exec.Command("go", "list", "-e", "-export", "-deps", "-json", "./...").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicheck: go list:", err)
		os.Exit(2)
	}
	exports := map[string]string{}
	var targets []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "apicheck:", err)
			os.Exit(2)
		}
		exports[p.ImportPath] = p.Export
		// The module's public packages, but for commands, whose exported
		// names nobody imports.
		if !p.DepOnly && strings.HasPrefix(p.ImportPath, "github.com/cup-dev/cup/") && !isInternal(p.ImportPath) && !strings.Contains(p.ImportPath, "/cmd/") {
			targets = append(targets, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	bad := 0
	for _, p := range targets {
		tp, err := imp.Import(p.ImportPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apicheck:", p.ImportPath, err)
			os.Exit(2)
		}
		scope := tp.Scope()
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			if !obj.Exported() {
				continue
			}
			check := func(what string, t types.Type) {
				for _, q := range internalIn(t, map[types.Type]bool{}) {
					fmt.Printf("%s.%s names %s\n", p.ImportPath, what, q)
					bad++
				}
			}
			switch o := obj.(type) {
			case *types.TypeName:
				if named, ok := o.Type().(*types.Named); ok {
					if st, ok := named.Underlying().(*types.Struct); ok {
						for i := 0; i < st.NumFields(); i++ {
							f := st.Field(i)
							if f.Exported() {
								check(name+"."+f.Name(), f.Type())
							}
						}
					} else if it, ok := named.Underlying().(*types.Interface); ok {
						for i := 0; i < it.NumMethods(); i++ {
							m := it.Method(i)
							check(name+"."+m.Name(), m.Type())
						}
					} else {
						check(name, named.Underlying())
					}
					for i := 0; i < named.NumMethods(); i++ {
						m := named.Method(i)
						if m.Exported() {
							check(name+"."+m.Name(), m.Type())
						}
					}
				} else {
					check(name, o.Type())
				}
			default:
				check(name, obj.Type())
			}
		}
	}
	if bad > 0 {
		fmt.Printf("%d exported identifiers name internal types\n", bad)
		os.Exit(1)
	}
}

func isInternal(path string) bool {
	return strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")
}

// internalIn returns the internal packages' types t mentions, shallowly
// through composite types (not through named public types).
func internalIn(t types.Type, seen map[types.Type]bool) []string {
	if seen[t] {
		return nil
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Named:
		var out []string
		if pk := t.Obj().Pkg(); pk != nil && isInternal(pk.Path()) {
			out = append(out, pk.Path()+"."+t.Obj().Name())
		}
		if args := t.TypeArgs(); args != nil {
			for i := 0; i < args.Len(); i++ {
				out = append(out, internalIn(args.At(i), seen)...)
			}
		}
		return out
	case *types.Alias:
		var out []string
		if pk := t.Obj().Pkg(); pk != nil && isInternal(pk.Path()) {
			out = append(out, pk.Path()+"."+t.Obj().Name())
		}
		return append(out, internalIn(types.Unalias(t), seen)...)
	case *types.Pointer:
		return internalIn(t.Elem(), seen)
	case *types.Slice:
		return internalIn(t.Elem(), seen)
	case *types.Array:
		return internalIn(t.Elem(), seen)
	case *types.Map:
		return append(internalIn(t.Key(), seen), internalIn(t.Elem(), seen)...)
	case *types.Chan:
		return internalIn(t.Elem(), seen)
	case *types.Signature:
		var out []string
		for i := 0; i < t.Params().Len(); i++ {
			out = append(out, internalIn(t.Params().At(i).Type(), seen)...)
		}
		for i := 0; i < t.Results().Len(); i++ {
			out = append(out, internalIn(t.Results().At(i).Type(), seen)...)
		}
		return out
	case *types.Struct:
		var out []string
		for i := 0; i < t.NumFields(); i++ {
			if t.Field(i).Exported() || t.Field(i).Embedded() {
				out = append(out, internalIn(t.Field(i).Type(), seen)...)
			}
		}
		return out
	case *types.Interface:
		var out []string
		for i := 0; i < t.NumMethods(); i++ {
			out = append(out, internalIn(t.Method(i).Type(), seen)...)
		}
		return out
	}
	return nil
}
