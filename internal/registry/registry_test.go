package registry_test

import (
	"testing"

	"github.com/cup-dev/cup/internal/registry"
)

func TestRegistry(t *testing.T) {
	t.Parallel()
	var r registry.Registry[int]
	if got := r.List("or"); got != "none" {
		t.Errorf("empty List = %q, want none", got)
	}
	r.Register("b", 2)
	if got := r.List("or"); got != "b" {
		t.Errorf("List = %q, want b", got)
	}
	r.Register("c", 3)
	r.Register("a", 1)
	if f, ok := r.Lookup("c"); !ok || f != 3 {
		t.Errorf("Lookup(c) = %v, %v, want 3, true", f, ok)
	}
	if _, ok := r.Lookup("d"); ok || r.Has("d") {
		t.Error("Lookup(d) found a kind nobody registered")
	}
	if got, want := r.List("or"), "a, b or c"; got != want {
		t.Errorf(`List("or") = %q, want %q`, got, want)
	}
	if got, want := r.List(""), "a, b, c"; got != want {
		t.Errorf(`List("") = %q, want %q`, got, want)
	}
	for _, name := range []string{"a", ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			r.Register(name, 0)
		}()
	}
}
