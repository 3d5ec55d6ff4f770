// Tests of writing: what an update changes, and how it reports and refuses.

package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/source"
)

func testUpdateCreateModifyDelete(t *testing.T, f *fixture) {
	res := update(t, f, &source.UpdateRequest{
		Revision: "main",
		Message:  "change config\n",
		Apply: writes(map[string]string{
			"config/cache.yaml": "name: cache\n",
			appPath:             "name: app\nreplicas: 3\n",
			dbPath:              "",
			introPath:           intro, // the same content: no change
		}),
	})
	want := []source.FileChange{
		{Path: appPath, Op: source.OpUpdate, Diff: "--- a/config/app.yaml\n+++ b/config/app.yaml\n@@ -1,2 +1,2 @@\n name: app\n-replicas: 2\n+replicas: 3\n"},
		{Path: "config/cache.yaml", Op: source.OpCreate, Diff: "--- a/config/cache.yaml\n+++ b/config/cache.yaml\n@@ -0,0 +1 @@\n+name: cache\n"},
		{Path: dbPath, Op: source.OpDelete, Diff: "--- a/config/db.yaml\n+++ b/config/db.yaml\n@@ -1 +0,0 @@\n-name: db\n"},
	}
	if res.Unchanged || res.Branch != "main" || res.Base != f.c2 || res.Commit == "" || res.Commit == f.c2 {
		t.Fatalf("result = %+v, want a new commit on main over %s", res, f.c2)
	}
	if !slices.Equal(res.Changes, want) {
		t.Fatalf("changes:\n got %+v\nwant %+v", res.Changes, want)
	}
	if head := f.head(t, "main"); head != res.Commit {
		t.Fatalf("main = %s, want %s", head, res.Commit)
	}
	log, err := f.repo.Log("main")
	must(t, err)
	if len(log) != 3 || log[0].ID != res.Commit || !slices.Equal(log[0].Parents, []string{f.c2}) || log[0].Message != "change config\n" {
		t.Fatalf("history: %+v", log)
	}
	files, err := f.repo.Files("main")
	must(t, err)
	wantFiles := map[string]string{
		readmePath: readme, appPath: "name: app\nreplicas: 3\n", "config/cache.yaml": "name: cache\n",
		introPath: intro, "NEW.md": newMD,
	}
	if len(files) != len(wantFiles) {
		t.Fatalf("files at head: %v", slices.Sorted(maps.Keys(files)))
	}
	for p, d := range wantFiles {
		if string(files[p]) != d {
			t.Errorf("%s = %q, want %q", p, files[p], d)
		}
	}
	snap, err := f.src.View(t.Context(), "")
	must(t, err)
	if snap.Commit != res.Commit {
		t.Fatalf("View after update = %s, want %s", snap.Commit, res.Commit)
	}
	if got := readFile(t, snap.FS, appPath); got != "name: app\nreplicas: 3\n" {
		t.Fatalf("View after update reads %q", got)
	}
}

func testUpdateDropsEmptyDirectories(t *testing.T, f *fixture) {
	res := update(t, f, &source.UpdateRequest{Message: "rm docs", Apply: writes(map[string]string{introPath: ""})})
	snap, err := f.src.View(t.Context(), res.Commit)
	must(t, err)
	if _, err := fs.Stat(snap.FS, "docs"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat(docs) err = %v after removing its only file, want ErrNotExist", err)
	}
	if err := fstest.TestFS(snap.FS, readmePath, appPath, dbPath, "NEW.md"); err != nil {
		t.Fatal(err)
	}
}

func testUpdateOtherBranch(t *testing.T, f *fixture) {
	for _, rev := range []string{"dev", "refs/heads/dev"} {
		before := f.head(t, "dev")
		res := update(t, f, &source.UpdateRequest{Revision: rev, Message: "on dev", Apply: writes(map[string]string{"dev.txt": rev})})
		if res.Branch != "dev" || res.Base != before || f.head(t, "dev") != res.Commit {
			t.Fatalf("Update(%q) = %+v; dev at %s", rev, res, f.head(t, "dev"))
		}
	}
	if head := f.head(t, "main"); head != f.c2 {
		t.Fatalf("main moved to %s by updates of dev", head)
	}
}

func testUpdateAuthor(t *testing.T, f *fixture) {
	res := update(t, f, &source.UpdateRequest{
		Message: "by alice",
		Author:  &source.Signature{Name: "Alice", Email: "alice@example.com"},
		Apply:   writes(map[string]string{"alice.txt": "a"}),
	})
	log, err := f.repo.Log(res.Commit)
	must(t, err)
	if a := log[0].Author; a.Name != "Alice" || a.Email != "alice@example.com" {
		t.Fatalf("author = %+v, want Alice <alice@example.com>", a)
	}
}

func testUpdateUnchanged(t *testing.T, f *fixture) {
	tests := []struct {
		name   string
		dryRun bool
		apply  source.ApplyFunc
	}{
		{name: "no writes", apply: writes(nil)},
		{name: "no writes, dry run", dryRun: true, apply: writes(nil)},
		{name: "same content", apply: writes(map[string]string{appPath: appV2, readmePath: readme})},
		{name: "write then remove", apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			if err := w.WriteFile("tmp/new.txt", []byte("x"), 0o644); err != nil {
				return err
			}
			return w.Remove("tmp/new.txt")
		}},
		{name: "remove then write back", apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			if err := w.Remove(readmePath); err != nil {
				return err
			}
			return w.WriteFile(readmePath, []byte(readme), 0o644)
		}},
		{name: "modify then restore", apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			if err := w.WriteFile(appPath, []byte("other"), 0o644); err != nil {
				return err
			}
			return w.WriteFile(appPath, []byte(appV2), 0o644)
		}},
	}
	for _, tt := range tests {
		res := update(t, f, &source.UpdateRequest{Message: tt.name, DryRun: tt.dryRun, Apply: tt.apply})
		if !res.Unchanged || res.Commit != "" || len(res.Changes) != 0 || res.Base != f.c2 || res.Branch != "main" {
			t.Errorf("%s: result = %+v, want unchanged over %s", tt.name, res, f.c2)
		}
	}
	if head := f.head(t, "main"); head != f.c2 {
		t.Fatalf("main moved to %s by updates that changed nothing", head)
	}
}

func testUpdateDryRun(t *testing.T, f *fixture) {
	res := update(t, f, &source.UpdateRequest{
		DryRun:  true,
		Message: "dry",
		Apply:   writes(map[string]string{readmePath: "# demo\nmore\n", "added.txt": "added\n"}),
	})
	want := []source.FileChange{
		{Path: readmePath, Op: source.OpUpdate, Diff: "--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # demo\n+more\n"},
		{Path: "added.txt", Op: source.OpCreate, Diff: "--- a/added.txt\n+++ b/added.txt\n@@ -0,0 +1 @@\n+added\n"},
	}
	if res.Unchanged || res.Commit != "" || res.Base != f.c2 || res.Branch != "main" || !slices.Equal(res.Changes, want) {
		t.Fatalf("dry run result = %+v\nwant changes %+v", res, want)
	}
	if head := f.head(t, "main"); head != f.c2 {
		t.Fatalf("main moved to %s by a dry run", head)
	}
	snap, err := f.src.View(t.Context(), "main")
	must(t, err)
	if _, err := fs.Stat(snap.FS, "added.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("dry run wrote added.txt: %v", err)
	}
}

func testUpdateNotWritable(t *testing.T, f *fixture) {
	tests := []struct {
		rev  string
		want error
	}{
		{"v1", source.ErrNotWritable},
		{"refs/tags/v1", source.ErrNotWritable},
		{"v1-annotated", source.ErrNotWritable},
		{f.c2, source.ErrNotWritable},
		{"main~1", source.ErrNotWritable},
		{"nope", source.ErrRevisionNotFound},
		{"refs/heads/nope", source.ErrRevisionNotFound},
		{"main..dev", source.ErrInvalidRevision},
		{"-x", source.ErrInvalidRevision},
	}
	for _, tt := range tests {
		called := false
		_, err := f.src.Update(t.Context(), &source.UpdateRequest{
			Revision: tt.rev,
			Message:  "nope",
			Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
				called = true
				return w.WriteFile("x", []byte("x"), 0o644)
			},
		})
		if !errors.Is(err, tt.want) {
			t.Errorf("Update(%q) err = %v, want %v", tt.rev, err, tt.want)
		}
		if called {
			t.Errorf("Update(%q) called Apply", tt.rev)
		}
	}
	for branch, want := range map[string]string{"main": f.c2, "dev": f.dev} {
		if head := f.head(t, branch); head != want {
			t.Errorf("%s moved to %s", branch, head)
		}
	}
}

// applyError is an error type Apply returns, to check errors.As.
type applyError struct{ code int }

func (e *applyError) Error() string { return fmt.Sprintf("apply failed with %d", e.code) }

func testUpdateApplyError(t *testing.T, f *fixture) {
	sentinel := errors.New("controller says no")
	for _, applyErr := range []error{sentinel, &applyError{code: 42}, fmt.Errorf("wrapped: %w", fs.ErrPermission)} {
		_, err := f.src.Update(t.Context(), &source.UpdateRequest{
			Message: "fails",
			Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
				if err := w.WriteFile("partial.txt", []byte("half"), 0o644); err != nil {
					return err
				}
				return applyErr
			},
		})
		if err != applyErr {
			t.Errorf("Update err = %v (%T), want Apply's error %v unchanged", err, err, applyErr)
		}
	}
	if head := f.head(t, "main"); head != f.c2 {
		t.Fatalf("main moved to %s by failed updates", head)
	}
}

func testUpdateHostilePaths(t *testing.T, f *fixture) {
	hostile := []string{
		"", ".", "/abs", "/etc/passwd", "../x", "../../outside", "a/../b", "a/./b", "a//b", "dir/",
		"x\x00y", `a\b`, ".git/config", ".git/hooks/pre-commit", "config/app.yaml/x", "config",
	}
	var mu sync.Mutex
	var failures []string
	res := update(t, f, &source.UpdateRequest{
		Message: "hostile",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range hostile {
				if err := w.WriteFile(p, []byte("evil"), 0o644); !errors.Is(err, source.ErrInvalidPath) {
					failures = append(failures, fmt.Sprintf("WriteFile(%q) err = %v, want ErrInvalidPath", p, err))
				}
				if err := w.Remove(p); !errors.Is(err, source.ErrInvalidPath) && !errors.Is(err, fs.ErrNotExist) {
					failures = append(failures, fmt.Sprintf("Remove(%q) err = %v, want ErrInvalidPath or ErrNotExist", p, err))
				}
			}
			if err := w.Remove("missing.txt"); !errors.Is(err, fs.ErrNotExist) {
				failures = append(failures, fmt.Sprintf("Remove(missing.txt) err = %v, want ErrNotExist", err))
			}
			return nil
		},
	})
	for _, msg := range failures {
		t.Error(msg)
	}
	if !res.Unchanged {
		t.Fatalf("rejected writes changed the tree: %+v", res)
	}
	// An Apply that passes the error on aborts the update.
	_, err := f.src.Update(t.Context(), &source.UpdateRequest{
		Message: "hostile",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			return w.WriteFile("../escape", []byte("evil"), 0o644)
		},
	})
	if !errors.Is(err, source.ErrInvalidPath) {
		t.Fatalf("Update err = %v, want ErrInvalidPath", err)
	}
	if head := f.head(t, "main"); head != f.c2 {
		t.Fatalf("main moved to %s", head)
	}
}

func testUpdateWriterSeesWrites(t *testing.T, f *fixture) {
	update(t, f, &source.UpdateRequest{
		Message: "reads",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			for _, err := range []error{
				w.WriteFile("config/new.yaml", []byte("new: true\n"), 0o644),
				w.WriteFile(appPath, []byte("rewritten\n"), 0o644),
				w.Remove(dbPath),
				w.Remove(introPath),
			} {
				if err != nil {
					return err
				}
			}
			if got, err := readString(w, appPath); got != "rewritten\n" {
				t.Errorf("read after write = %q, %v", got, err)
			}
			if got, err := readString(base.FS, appPath); got != appV2 {
				t.Errorf("base reads %q, %v after a write, want %q", got, err, appV2)
			}
			entries, err := fs.ReadDir(w, "config")
			if err != nil {
				return err
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if got := strings.Join(names, " "); got != "app.yaml new.yaml" {
				t.Errorf("ReadDir(config) = %q, want %q", got, "app.yaml new.yaml")
			}
			if _, err := fs.Stat(w, "docs"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Stat(docs) err = %v after removing its only file, want ErrNotExist", err)
			}
			if err := fstest.TestFS(w, readmePath, appPath, "config/new.yaml", "NEW.md"); err != nil {
				t.Error(err)
			}
			return nil
		},
	})
}

func testUpdateCanceled(t *testing.T, f *fixture) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := f.src.Update(ctx, &source.UpdateRequest{Message: "canceled", Apply: writes(map[string]string{"x": "x"})})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Update err = %v, want context.Canceled", err)
	}
	// Canceled while applying.
	ctx, cancel = context.WithCancel(t.Context())
	_, err = f.src.Update(ctx, &source.UpdateRequest{
		Message: "canceled",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			cancel()
			return w.WriteFile("x", []byte("x"), 0o644)
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Update err = %v, want context.Canceled", err)
	}
	if head := f.head(t, "main"); head != f.c2 {
		t.Fatalf("main moved to %s by canceled updates", head)
	}
}
