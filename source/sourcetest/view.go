// Tests of reading: views at revisions, fs.FS conformance, errors and
// snapshots.

package sourcetest

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/source"
)

func testViewRevisions(t *testing.T, f *fixture) {
	tests := []struct {
		rev      string
		commit   string
		app      string
		hasNewMD bool
	}{
		{rev: "", commit: f.c2, app: appV2, hasNewMD: true},
		{rev: "main", commit: f.c2, app: appV2, hasNewMD: true},
		{rev: "refs/heads/main", commit: f.c2, app: appV2, hasNewMD: true},
		{rev: "dev", commit: f.dev, app: appV1},
		{rev: "v1", commit: f.c1, app: appV1},
		{rev: "refs/tags/v1", commit: f.c1, app: appV1},
		{rev: "v1-annotated", commit: f.c1, app: appV1},
		{rev: f.c1, commit: f.c1, app: appV1},
		{rev: f.c2, commit: f.c2, app: appV2, hasNewMD: true},
	}
	for _, tt := range tests {
		snap, err := f.src.View(t.Context(), tt.rev)
		if err != nil {
			t.Errorf("View(%q): %v", tt.rev, err)
			continue
		}
		if snap.Revision != tt.rev || snap.Commit != tt.commit {
			t.Errorf("View(%q) = revision %q commit %s, want %q %s", tt.rev, snap.Revision, snap.Commit, tt.rev, tt.commit)
		}
		if got := readFile(t, snap.FS, appPath); got != tt.app {
			t.Errorf("View(%q): %s = %q, want %q", tt.rev, appPath, got, tt.app)
		}
		if _, err := fs.Stat(snap.FS, "NEW.md"); (err == nil) != tt.hasNewMD {
			t.Errorf("View(%q): Stat(NEW.md) err = %v, want the file present: %v", tt.rev, err, tt.hasNewMD)
		}
	}
}

func testViewPassesTestFS(t *testing.T, f *fixture) {
	for _, rev := range []string{"main", "v1", "dev"} {
		snap, err := f.src.View(t.Context(), rev)
		must(t, err)
		want := []string{readmePath, appPath, dbPath, introPath}
		if rev == "main" {
			want = append(want, "NEW.md")
		}
		if err := fstest.TestFS(snap.FS, want...); err != nil {
			t.Errorf("View(%q): %v", rev, err)
		}
		for _, iface := range []struct {
			name string
			ok   bool
		}{
			{"fs.ReadFileFS", implements[fs.ReadFileFS](snap.FS)},
			{"fs.ReadDirFS", implements[fs.ReadDirFS](snap.FS)},
			{"fs.StatFS", implements[fs.StatFS](snap.FS)},
		} {
			if !iface.ok {
				t.Errorf("snapshot FS does not implement %s", iface.name)
			}
		}
	}
}

func implements[T any](v any) bool {
	_, ok := v.(T)
	return ok
}

func testViewNotFound(t *testing.T, f *fixture) {
	for _, rev := range []string{
		"nope", "refs/heads/nope", "refs/tags/nope", "feature/nope",
		strings.Repeat("0123456789", 4),
	} {
		if _, err := f.src.View(t.Context(), rev); !errors.Is(err, source.ErrRevisionNotFound) {
			t.Errorf("View(%q) err = %v, want ErrRevisionNotFound", rev, err)
		}
	}
}

func testViewInvalid(t *testing.T, f *fixture) {
	for _, rev := range []string{
		"main..dev", "-rf", "main\x00", "main\nx", "ma\tin", "ma in", "main@{1}",
		"../../etc/passwd", "/abs", "a//b", strings.Repeat("a", 5000),
	} {
		if _, err := f.src.View(t.Context(), rev); !errors.Is(err, source.ErrInvalidRevision) {
			t.Errorf("View(%q) err = %v, want ErrInvalidRevision", rev, err)
		}
	}
}

func testViewSeesExternalCommit(t *testing.T, f *fixture) {
	// Read first, so that whatever the source caches is warm.
	snap, err := f.src.View(t.Context(), "")
	must(t, err)
	if snap.Commit != f.c2 {
		t.Fatalf("View = %s, want %s", snap.Commit, f.c2)
	}
	c3 := f.external(t, "main", map[string]string{"external.txt": "ext\n"})
	f.sync(t)
	for _, rev := range []string{"", "main"} {
		snap, err := f.src.View(t.Context(), rev)
		must(t, err)
		if snap.Commit != c3 {
			t.Fatalf("View(%q) after an external commit = %s, want %s", rev, snap.Commit, c3)
		}
		if got := readFile(t, snap.FS, "external.txt"); got != "ext\n" {
			t.Fatalf("external.txt = %q", got)
		}
	}
}

func testSnapshotsAreImmutable(t *testing.T, f *fixture) {
	before, err := f.src.View(t.Context(), "main")
	must(t, err)
	update(t, f, &source.UpdateRequest{Message: "change", Apply: writes(map[string]string{appPath: "changed\n", readmePath: ""})})
	if got := readFile(t, before.FS, appPath); got != appV2 {
		t.Fatalf("old snapshot reads %q after an update, want %q", got, appV2)
	}
	if got := readFile(t, before.FS, readmePath); got != readme {
		t.Fatalf("old snapshot reads %q after an update, want %q", got, readme)
	}
}
