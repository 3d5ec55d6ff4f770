package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/benchrepo"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source"
)

// remoteFixture is a fabricated remote: a repository of four items at
// initial, and the writes a test pretends were answered.
type remoteFixture struct {
	t       *testing.T
	dir     string
	initial string
	seq     int
	writes  []*write
}

func newRemoteFixture(t *testing.T) *remoteFixture {
	t.Helper()
	files := map[string][]byte{"README.md": []byte("items\n")}
	for i := range 4 {
		files[pathOf(benchrepo.Name(i))] = benchrepo.Item(i, "generated")
	}
	dir := filepath.Join(t.TempDir(), "repo.git")
	initial, err := gitrepo.Init(dir, branch, files, "generated\n")
	if err != nil {
		t.Fatal(err)
	}
	return &remoteFixture{t: t, dir: dir, initial: initial}
}

// write records a write of writer 0 with its answers; with no outcome it
// is accepted with a 202.
func (f *remoteFixture) write(op, name string, outcomes ...string) *write {
	f.seq++
	w := &write{Key: fmt.Sprintf("test-w00-%07d", f.seq), Writer: 0, Seq: f.seq, Op: op, Name: name, Via: "rest"}
	if op == "put" {
		w.Labels = map[string]string{labelWriter: "w00", labelSeq: fmt.Sprint(f.seq)}
		w.Spec = map[string]any{"owner": "writer-0@example.com", "replicas": float64(f.seq), "enabled": true, "note": "n"}
	}
	if len(outcomes) == 0 {
		outcomes = []string{"202"}
	}
	for _, o := range outcomes {
		var status int
		fmt.Sscan(o, &status)
		if o == "transport error" {
			status = 0
		}
		w.Attempts = append(w.Attempts, attempt{Outcome: o, Class: statusClass(status)})
	}
	f.writes = append(f.writes, w)
	return w
}

// file is the file cupd writes for a put.
func file(w *write) []byte {
	b, err := json.MarshalIndent(map[string]any{
		"apiVersion": group + "/" + version, "kind": "Item",
		"metadata": map[string]any{"namespace": namespace, "name": w.Name, "labels": w.Labels},
		"spec":     w.Spec,
	}, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// commit commits w as cupd would, with extra files changed too, and
// makes it the answer of w's accepted attempt.
func (f *remoteFixture) commit(w *write, extra map[string][]byte) string {
	f.t.Helper()
	files := map[string][]byte{}
	if w.Op == "put" {
		files[pathOf(w.Name)] = file(w)
	} else {
		files[pathOf(w.Name)] = nil
	}
	for p, b := range extra {
		files[p] = b
	}
	msg := fmt.Sprintf("Put Item default/%s\n\nbench.cup.dev/v1 items\n\n%s: %s\n%s: fp-%d\n", w.Name, source.TrailerIdempotencyKey, w.Key, source.TrailerRequest, w.Seq)
	id, err := gitrepo.Commit(f.dir, branch, files, msg)
	if err != nil {
		f.t.Fatal(err)
	}
	if a := w.acceptedAttempt(); a != nil && a.Commit == "" {
		a.Commit = id
	}
	return id
}

// external commits a file as runExternal does and records it.
func (f *remoteFixture) external(path string) {
	f.t.Helper()
	f.seq++
	w := &write{Key: fmt.Sprintf("soak-ext-%06d", f.seq), Writer: -1, Seq: f.seq, Op: "external", Name: path, Path: path, Via: "git",
		Content: []byte("external\n"), Attempts: []attempt{{Outcome: "committed", Class: accepted}}}
	f.writes = append(f.writes, w)
	id, err := gitrepo.Commit(f.dir, branch, map[string][]byte{path: w.Content}, "External\n\n"+source.TrailerIdempotencyKey+": "+w.Key+"\n")
	if err != nil {
		f.t.Fatal(err)
	}
	w.Attempts[0].Commit = id
}

// rawCommit commits files with message, as someone other than cupd would.
func (f *remoteFixture) rawCommit(files map[string][]byte, msg string) {
	f.t.Helper()
	if _, err := gitrepo.Commit(f.dir, branch, files, msg); err != nil {
		f.t.Fatal(err)
	}
}

// check reads the fixture's remote and runs checks 1 to 3, and returns
// the numbers of those that failed.
func (f *remoteFixture) check() ([]string, []*checkResult) {
	f.t.Helper()
	st, err := readRemote(f.t.Context(), newGit(f.t.TempDir()), f.dir, f.initial, "refs/heads/"+branch)
	if err != nil {
		f.t.Fatal(err)
	}
	results := checkHistory(f.writes, st, pathOf)
	var failed []string
	for _, r := range results {
		if len(r.Failures) > 0 {
			failed = append(failed, r.Name[:1])
		}
	}
	return failed, results
}

func TestCheckHistory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// make writes and commits; want the numbers of the checks that fail
		// and a phrase of their failures.
		make   func(f *remoteFixture)
		failed []string
		phrase string
	}{
		{
			name: "clean",
			make: func(f *remoteFixture) {
				f.commit(f.write("put", benchrepo.Name(0)), nil)
				f.commit(f.write("delete", benchrepo.Name(1)), nil)
				f.write("put", benchrepo.Name(2), "409 aborted")
				f.commit(f.write("put", "soak-w00-00000", "transport error"), nil) // ambiguous, landed
				f.write("put", benchrepo.Name(3), "503 unavailable")               // ambiguous, did not land
				w := f.write("put", benchrepo.Name(0), "transport error", "202")   // repeated, then accepted
				f.commit(w, nil)
				w.Attempts[1].Replayed = true
				f.commit(f.write("put", benchrepo.Name(1)), nil) // created again
				f.commit(f.write("delete", benchrepo.Name(3)), nil)
				f.external("external/ext-000001.txt")
			},
		},
		{
			name: "given up, then refused, yet landed",
			make: func(f *remoteFixture) {
				// The first request's write landed after the repeat was refused.
				f.commit(f.write("put", benchrepo.Name(0), "transport error", "409 aborted"), nil)
			},
		},
		{
			name: "answer dropped, repeat answered it as a replay",
			make: func(f *remoteFixture) {
				w := f.write("put", benchrepo.Name(0), "transport error", "202")
				id := f.commit(w, nil)
				w.Attempts[0] = attempt{Outcome: "202", Class: ambiguous, Dropped: true, Commit: id}
				w.Attempts[1].Replayed = true
			},
		},
		{
			name: "answer dropped, repeat wrote again",
			make: func(f *remoteFixture) {
				w := f.write("put", benchrepo.Name(0), "transport error", "202")
				f.commit(w, nil)
				w.Attempts[0] = attempt{Outcome: "202", Class: ambiguous, Dropped: true, Commit: strings.Repeat("d", 40)}
			},
			failed: []string{"1"},
			phrase: "the dropped answer named commit dddd",
		},
		{
			name: "lost write",
			make: func(f *remoteFixture) {
				f.commit(f.write("put", benchrepo.Name(0)), nil)
				w := f.write("put", benchrepo.Name(0))
				w.Attempts[0].Commit = strings.Repeat("a", 40)
			},
			failed: []string{"1", "3"},
			phrase: "lost: put item-000000",
		},
		{
			name: "lost delete",
			make: func(f *remoteFixture) {
				w := f.write("delete", benchrepo.Name(2))
				w.Attempts[0].Commit = strings.Repeat("a", 40)
			},
			failed: []string{"1", "3"},
			phrase: "item-000002.json is at the head, but the last write of it deleted it",
		},
		{
			name: "duplicated commit",
			make: func(f *remoteFixture) {
				w := f.write("put", benchrepo.Name(0))
				f.commit(w, nil)
				w.Spec["replicas"] = float64(99) // a second commit of the same key
				f.commit(w, nil)
			},
			failed: []string{"1", "3"}, // 3: the first commit is not what the write now says
			phrase: "duplicated: put item-000000",
		},
		{
			name: "ambiguous write landed twice",
			make: func(f *remoteFixture) {
				w := f.write("put", benchrepo.Name(0), "transport error", "503 unavailable")
				f.commit(w, nil)
				w.Spec["replicas"] = float64(99)
				f.commit(w, nil)
			},
			failed: []string{"2", "3"},
			phrase: "duplicated: put item-000000",
		},
		{
			name: "refused write committed",
			make: func(f *remoteFixture) {
				f.commit(f.write("put", benchrepo.Name(0), "409 aborted"), nil)
			},
			failed: []string{"2", "3"},
			phrase: "was refused, yet commits",
		},
		{
			name: "answered another commit",
			make: func(f *remoteFixture) {
				w := f.write("put", benchrepo.Name(0))
				w.Attempts[0].Commit = strings.Repeat("b", 40)
				f.commit(w, nil)
			},
			failed: []string{"1"},
			phrase: "was answered with commit bbbb",
		},
		{
			name: "extra change in a write's commit",
			make: func(f *remoteFixture) {
				f.commit(f.write("put", benchrepo.Name(0)), map[string][]byte{pathOf(benchrepo.Name(3)): []byte("{}\n")})
			},
			failed: []string{"3"},
			phrase: "want only items/default/item-000000.json",
		},
		{
			name: "commit without a key",
			make: func(f *remoteFixture) {
				f.commit(f.write("put", benchrepo.Name(0)), nil)
				f.rawCommit(map[string][]byte{"README.md": []byte("changed\n")}, "by hand\n")
			},
			failed: []string{"3"},
			phrase: "has no Cup-Idempotency-Key trailer",
		},
		{
			name: "commit with a foreign key",
			make: func(f *remoteFixture) {
				f.rawCommit(map[string][]byte{pathOf("stray"): []byte("{}\n")}, "Put\n\nCup-Idempotency-Key: elsewhere-1\n")
			},
			failed: []string{"3"},
			phrase: `records key "elsewhere-1", which no request of this run sent`,
		},
		{
			name: "wrong content",
			make: func(f *remoteFixture) {
				w := f.write("put", benchrepo.Name(0))
				f.commit(w, nil)
				w.Spec["note"] = "what the client sent"
			},
			failed: []string{"3"},
			phrase: "other than asked",
		},
		{
			name: "out of order",
			make: func(f *remoteFixture) {
				first := f.write("put", benchrepo.Name(0), "transport error")
				second := f.write("put", benchrepo.Name(0))
				f.commit(second, nil)
				f.commit(first, nil) // the ambiguous first write lands last
			},
			failed: []string{"3"},
			phrase: "out of order",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newRemoteFixture(t)
			tc.make(f)
			failed, results := f.check()
			var all []string
			for _, r := range results {
				all = append(all, r.Failures...)
			}
			if !slices.Equal(failed, tc.failed) {
				t.Errorf("failed checks %v, want %v; failures:\n%s", failed, tc.failed, strings.Join(all, "\n"))
			}
			if tc.phrase != "" && !strings.Contains(strings.Join(all, "\n"), tc.phrase) {
				t.Errorf("no failure says %q; failures:\n%s", tc.phrase, strings.Join(all, "\n"))
			}
		})
	}
}

// A history that does not contain the initial commit is a rewrite.
func TestCheckHistoryRewritten(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t)
	other := newRemoteFixture(t)
	other.rawCommit(map[string][]byte{"README.md": []byte("other\n")}, "other\n")
	st, err := readRemote(t.Context(), newGit(t.TempDir()), other.dir, other.initial, "refs/heads/"+branch)
	if err != nil {
		t.Fatal(err)
	}
	st.Initial, st.InitialIsAncestor = f.initial, false
	results := checkHistory(nil, st, pathOf)
	if got := strings.Join(results[2].Failures, "\n"); !strings.Contains(got, "history was rewritten") {
		t.Errorf("check 3 failures %q, want a rewritten history", got)
	}
}

func TestFsck(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t)
	g := newGit(t.TempDir())
	if msg, err := g.fsck(t.Context(), f.dir); err != nil {
		t.Fatalf("fsck of a good repository: %v: %s", err, msg)
	}
	// Remove the blob of a commit's file: the repository is broken.
	w := f.write("put", benchrepo.Name(0))
	f.commit(w, nil)
	blob, err := g.run(t.Context(), f.dir, "rev-parse", "HEAD:"+pathOf(w.Name))
	if err != nil {
		t.Fatal(err)
	}
	blob = strings.TrimSpace(blob)
	if err := os.Remove(filepath.Join(f.dir, "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
	if msg, err := g.fsck(t.Context(), f.dir); err == nil || !strings.Contains(msg, blob) {
		t.Errorf("fsck of a repository without blob %s = %v, %q; want an error naming it", blob, err, msg)
	}
}

func TestParseProfiles(t *testing.T) {
	t.Parallel()
	n, err := parseGoroutines("goroutine profile: total 17\n3 @ 0x1 0x2\n")
	if err != nil || n != 17 {
		t.Errorf("parseGoroutines = %d, %v; want 17", n, err)
	}
	if _, err := parseGoroutines("heap profile: 1: 2 [3: 4] @ heap/1048576\n"); err == nil {
		t.Error("parseGoroutines of a heap profile succeeded")
	}
	heap := "heap profile: 1: 2 [3: 4] @ heap/1048576\n\n# runtime.MemStats\n# Alloc = 1\n# HeapInuse = 4431872\n# HeapIdle = 5\n"
	if n, err := parseHeapInuse(heap); err != nil || n != 4431872 {
		t.Errorf("parseHeapInuse = %d, %v; want 4431872", n, err)
	}
	if _, err := parseHeapInuse("goroutine profile: total 17\n"); err == nil {
		t.Error("parseHeapInuse without HeapInuse succeeded")
	}
}

func TestClass(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]class{
		0: ambiguous, 200: accepted, 202: accepted, 204: accepted, 400: refused, 404: refused,
		409: refused, 429: refused, 499: ambiguous, 500: ambiguous, 503: ambiguous, 504: ambiguous,
	} {
		if got := statusClass(status); got != want {
			t.Errorf("statusClass(%d) = %v, want %v", status, got, want)
		}
	}
	w := &write{Attempts: []attempt{{Class: ambiguous}, {Class: accepted}}}
	if w.Class() != accepted {
		t.Errorf("an ambiguous, then accepted write is %v", w.Class())
	}
	w = &write{Attempts: []attempt{{Class: ambiguous}, {Class: refused}}}
	if w.Class() != refused {
		t.Errorf("an ambiguous, then refused write is %v", w.Class())
	}
}

func TestSummarizeGoroutines(t *testing.T) {
	t.Parallel()
	dump := `goroutine 1 [select]:
main.runServe({0x1})
	/src/cmd/cupd/main.go:10 +0x1

goroutine 7 [sync.Mutex.Lock]:
sync.(*Mutex).Lock(...)
	/go/src/sync/mutex.go:1
github.com/cup-dev/cup/source/git.(*Source).Fetch(0x1, {0x2})
	/src/source/git/fetch.go:55 +0x1
github.com/cup-dev/cup/source/git.(*Source).Update(0x1)
	/src/source/git/update.go:50 +0x1

goroutine 8 [sync.Mutex.Lock]:
sync.(*Mutex).Lock(...)
	/go/src/sync/mutex.go:1
github.com/cup-dev/cup/source/git.(*Source).Fetch(0x1, {0x2})
	/src/source/git/fetch.go:55 +0x1
`
	got := strings.Join(summarizeGoroutines(dump), "\n")
	want := "3 goroutines:\n  2 sync.Mutex.Lock in github.com/cup-dev/cup/source/git.(*Source).Fetch\n  1 select in main.runServe"
	if got != want {
		t.Errorf("summarizeGoroutines =\n%s\nwant\n%s", got, want)
	}
}

// TestReplicas runs the soak briefly on three cupd replicas of one remote:
// writers send each request to any replica and repeat a request they gave
// up on, or whose answer they dropped, with the same key on another, a
// watcher on each replica follows every change, and every check must
// pass. It builds cupd.
func TestReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cupd and runs three of them for 10 s")
	}
	t.Parallel()
	fs := flag.NewFlagSet("cupsoak", flag.ContinueOnError)
	o := newOptions(fs)
	if err := fs.Parse([]string{
		"-replicas", "3", "-duration", "10s", "-warmup", "1s", "-settle", "10s",
		"-resources", "200", "-writers", "4", "-readers", "3", "-watchers", "1", "-watch-reconnect", "2s",
		"-cut-percent", "20", "-drop-percent", "20", "-stall", "0",
	}); err != nil {
		t.Fatal(err)
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	var out strings.Builder
	ok, err := run(ctx, o, &out)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("a check failed: see the log above")
	}
	for _, want := range []string{"cupd 2:", "PASS      8 every watcher on every replica", "webhook fan-out:", "pushes that lost a race"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output does not say %q", want)
		}
	}
}

func TestParseGitMetrics(t *testing.T) {
	t.Parallel()
	text := `# HELP cup_git_pushes_total Pushes to the remote repository, by outcome.
# TYPE cup_git_pushes_total counter
cup_git_pushes_total{outcome="conflict"} 7
cup_git_pushes_total{outcome="success"} 12
cup_git_fetches_total{outcome="unchanged"} 3
cup_git_fetch_duration_seconds_bucket{le="0.005"} 1
`
	var m gitMetrics
	m.fetches, m.pushes = map[string]float64{}, map[string]float64{}
	if err := parseGitMetrics(strings.NewReader(text), &m); err != nil {
		t.Fatal(err)
	}
	if m.pushes["conflict"] != 7 || m.pushes["success"] != 12 || m.fetches["unchanged"] != 3 {
		t.Errorf("parsed %v, %v", m.pushes, m.fetches)
	}
	if err := parseGitMetrics(strings.NewReader(`cup_git_pushes_total{outcome="x"} many`), &m); err == nil {
		t.Error("a value that is no number was taken")
	}
}

// watchedFixture makes a history of item changes and a watcher that saw
// them, fed through apply as the lines of a REST watch would be.
func watchedFixture(t *testing.T) (*remoteFixture, *watcher) {
	t.Helper()
	f := newRemoteFixture(t)
	put0 := f.write("put", benchrepo.Name(0))
	f.commit(put0, nil)
	f.external("external/ext-000001.txt") // no item: no event
	del1 := f.write("delete", benchrepo.Name(1))
	f.commit(del1, nil)
	add := f.write("put", "soak-w00-00000")
	f.commit(add, nil)
	o := newOptions(flag.NewFlagSet("cupsoak", flag.ContinueOnError))
	w := newWatcher(o, 0, 1, "http://127.0.0.1:1")
	feed := func(line string) {
		t.Helper()
		var ln watchLine
		if err := json.Unmarshal([]byte(line), &ln); err != nil {
			t.Fatal(err)
		}
		if err := w.apply(&ln, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	item := func(typ string, b []byte, commit, resume string) string {
		return fmt.Sprintf(`{"type":%q,"object":%s,"commit":%q,"resumeRevision":%q}`, typ, b, commit, resume)
	}
	for i := range 4 {
		feed(item("ADDED", benchrepo.Item(i, "generated"), f.initial, ""))
	}
	feed(fmt.Sprintf(`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":%q,"annotations":{"k8s.io/initial-events-end":"true"}}}}`, f.initial))
	for _, wr := range []*write{put0, del1, add} {
		a := wr.acceptedAttempt()
		typ := map[string]string{"put": "MODIFIED", "delete": "DELETED"}[wr.Op]
		if wr == add {
			typ = "ADDED"
		}
		body := file(wr)
		if wr.Op == "delete" {
			body = benchrepo.Item(1, "generated")
		}
		feed(item(typ, body, a.Commit, a.Commit))
	}
	return f, w
}

func TestCheckWatchers(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, f *remoteFixture, w *watcher) *checkResult {
		t.Helper()
		g := newGit(t.TempDir())
		st, err := readRemote(t.Context(), g, f.dir, f.initial, "refs/heads/"+branch)
		if err != nil {
			t.Fatal(err)
		}
		blobs, err := itemBlobs(t.Context(), g, f.dir, st)
		if err != nil {
			t.Fatal(err)
		}
		return checkWatchers([]*watcher{w}, st, blobs)
	}
	for _, tc := range []struct {
		name   string
		change func(w *watcher)
		phrase string // "" when the check passes
	}{
		{name: "every change once", change: func(*watcher) {}},
		{name: "missing", phrase: "1 missing", change: func(w *watcher) { w.events = w.events[1:] }},
		{name: "twice", phrase: "1 duplicated", change: func(w *watcher) { w.events = append(w.events, w.events[2]) }},
		{name: "out of order", phrase: "first difference at event 0", change: func(w *watcher) {
			w.events[0], w.events[1] = w.events[1], w.events[0]
		}},
		{name: "branch went back", phrase: "1 unexpected", change: func(w *watcher) {
			e := w.events[1]
			w.events = slices.Insert(w.events, 2, seenEvent{Commit: w.events[0].Commit, Name: e.Name, Type: "ADDED"})
		}},
		{name: "other final state", phrase: "1 different", change: func(w *watcher) {
			w.state[benchrepo.Name(2)] = watchedItem{Labels: map[string]string{"x": "y"}}
		}},
		{name: "start not on the branch", phrase: "not on the branch", change: func(w *watcher) { w.start = strings.Repeat("c", 40) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, w := watchedFixture(t)
			tc.change(w)
			c := check(t, f, w)
			got := strings.Join(c.Failures, "\n")
			switch {
			case tc.phrase == "" && got != "":
				t.Errorf("failures: %s", got)
			case tc.phrase != "" && !strings.Contains(got, tc.phrase):
				t.Errorf("failures %q, want one saying %q", got, tc.phrase)
			}
		})
	}
}
