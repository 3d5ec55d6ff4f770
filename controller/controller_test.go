package controller_test

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/cup-dev/cup/controller"
)

func TestCheckWritePath(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		path string
		want string // the reason; "" for a path a WriteFS takes
	}{
		{"a.yaml", ""},
		{"flags/default/new-checkout.yaml", ""},
		{".gitignore", ""},
		{"a/.github/x", ""},
		{"a/git/.git.d", ""},
		{"名前/ü.json", ""},
		{".", "names the root directory"},
		{"", "not a relative slash-separated path without empty, . or .. elements"},
		{"/etc/passwd", "not a relative slash-separated path without empty, . or .. elements"},
		{"a/../b", "not a relative slash-separated path without empty, . or .. elements"},
		{"./a", "not a relative slash-separated path without empty, . or .. elements"},
		{"a//b", "not a relative slash-separated path without empty, . or .. elements"},
		{"a/", "not a relative slash-separated path without empty, . or .. elements"},
		{"a\x00b", "contains a NUL byte"},
		{`a\b`, "contains a backslash"},
		{`..\x`, "contains a backslash"},
		{".git", "has a .git element"},
		{".git/config", "has a .git element"},
		{"a/.git/x", "has a .git element"},
		{".GIT/x", "has a .git element"},
		{"sub/.Git", "has a .git element"},
	} {
		err := controller.CheckWritePath(tt.path)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckWritePath(%q) = %v, want nil", tt.path, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want || !errors.Is(err, fs.ErrInvalid)):
			t.Errorf("CheckWritePath(%q) = %v, want %q wrapping fs.ErrInvalid", tt.path, err, tt.want)
		}
	}
}
