package controllertest_test

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/cup-dev/cup/sdk/go/controller/controllertest"
)

func TestMapDir(t *testing.T) {
	t.Parallel()
	controllertest.TestDir(t, controllertest.MapDir{})
}

func TestMapDirConflicts(t *testing.T) {
	t.Parallel()
	d := controllertest.MapDir{}
	if err := d.WriteFile("a/b.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "a/b.txt/c"} {
		if err := d.WriteFile(name, nil); !errors.Is(err, fs.ErrExist) {
			t.Errorf("WriteFile(%q) = %v, want fs.ErrExist", name, err)
		}
	}
	if err := d.Remove("a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove(a) of a directory = %v, want fs.ErrNotExist", err)
	}
	if len(d) != 1 {
		t.Errorf("MapDir has %d files after failed writes, want 1", len(d))
	}
}
