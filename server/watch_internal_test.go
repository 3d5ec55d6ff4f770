package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/template"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/memsource"
)

// watchedServer serves items (one YAML file each under items/<namespace>/)
// from an in-memory repository.
func watchedServer(t testing.TB, opts ...Option) (*Server, *memsource.Repo) {
	t.Helper()
	c, err := template.New(template.Spec{ListTemplate: "items/{{ .Namespace }}/*.yaml", ResourceTemplate: "items/{{ .Namespace }}/{{ .Name }}.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	repo := memsource.NewRepo()
	if _, err := repo.Init("main", map[string][]byte{"README.md": []byte("items\n")}, "initial\n"); err != nil {
		t.Fatal(err)
	}
	src, err := memsource.New(repo)
	if err != nil {
		t.Fatal(err)
	}
	types := []*Type{{Type: controller.Type{Group: "example.com", Version: "v1", Kind: "Item", Plural: "items"}, Singular: "item", Controller: c}}
	s, err := New(src, types, append([]Option{WithLogger(slog.New(slog.DiscardHandler)), WithWatchPollInterval(time.Millisecond), WithWatchBookmarkInterval(5 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s, repo
}

func itemFile(namespace, name string, v int) []byte {
	return fmt.Appendf(nil, "apiVersion: example.com/v1\nkind: Item\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  v: %d\n", name, namespace, v)
}

var items = ref{group: "example.com", version: "v1", plural: "items"}

// note is how the tests write down an event: "MODIFIED a/x@<commit>".
func note(ev *watchEvent) string {
	if ev.entry == nil {
		return fmt.Sprintf("%s@%s", eventTypeName(ev.typ), ev.commit)
	}
	r, err := ev.entry.resource()
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("%s %s/%s=%s@%s", eventTypeName(ev.typ), r.Metadata.Namespace, r.Metadata.Name, r.Spec, ev.commit)
}

// TestWatchSlowConsumer: a watch whose client stops reading is closed,
// once live, when its buffer is full, with ResourceExhausted and the
// revision to resume from; resuming from there gives the rest, each event
// once.
func TestWatchSlowConsumer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, repo := watchedServer(t, WithWatchBuffer(2))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		no := false
		var got []string
		gate := make(chan struct{})
		errc := make(chan error, 1)
		go func() {
			errc <- s.watch(ctx, items, watchQuery{sendInitial: &no}, func(ev *watchEvent) error {
				if ev.typ == cupv1alpha1.WatchEventType_WATCH_EVENT_TYPE_BOOKMARK {
					return nil
				}
				got = append(got, note(ev))
				if len(got) == 1 {
					<-gate // the client stops reading after its first event
				}
				return nil
			})
		}()
		synctest.Wait()
		var want []string
		for i := range 8 {
			c, err := repo.Commit("main", map[string][]byte{fmt.Sprintf("items/a/x%d.yaml", i): itemFile("a", fmt.Sprintf("x%d", i), i)}, "add\n")
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, fmt.Sprintf(`ADDED a/x%d={"v":%d}@%s`, i, i, c))
			time.Sleep(time.Second) // the head is read: the events pile up
			synctest.Wait()
		}
		close(gate) // the client reads again, and learns it fell behind
		err := <-errc
		var re *resumeError
		if !errors.As(err, &re) || !errors.Is(err, errWatchTooSlow) || toConnect(err).Code().String() != "resource_exhausted" {
			t.Fatalf("watch ended with %v, want ResourceExhausted with a revision to resume from", err)
		}
		if len(got) == 0 || !strings.HasSuffix(got[len(got)-1], "@"+re.revision) {
			t.Fatalf("resume revision %s is not the commit of the last event sent, %v", re.revision, got)
		}
		// Resume: the rest, each once.
		rctx, rcancel := context.WithCancel(ctx)
		defer rcancel()
		go func() {
			_ = s.watch(rctx, items, watchQuery{revision: re.revision}, func(ev *watchEvent) error {
				if ev.typ == cupv1alpha1.WatchEventType_WATCH_EVENT_TYPE_BOOKMARK {
					return nil
				}
				got = append(got, note(ev))
				if len(got) == len(want) {
					rcancel()
				}
				return nil
			})
		}()
		<-rctx.Done()
		synctest.Wait()
		if !slices.Equal(got, want) {
			t.Fatalf("events, with the resume:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

// TestWatchResumesExactlyOnce: writers through the server and commits made
// behind its back (several resources at once, deletes, a commit that
// changes nothing the watch sees); watchers cut after a random number of
// events resume from the last resume revision they had, and between them
// receive exactly what one uncut watcher does, which in turn turns the
// initial state into the final one.
func TestWatchResumesExactlyOnce(t *testing.T) {
	t.Parallel()
	s, repo := watchedServer(t)
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	start := mustHead(t, s)
	const commits = 60
	exists := map[string]bool{}
	for i := range commits {
		files := map[string][]byte{}
		if rng.IntN(10) == 0 {
			files["README.md"] = fmt.Appendf(nil, "readme %d\n", i) // nothing the watch sees
		}
		for range 1 + rng.IntN(3) {
			ns, name := []string{"a", "b"}[rng.IntN(2)], fmt.Sprintf("x%d", rng.IntN(6))
			p := "items/" + ns + "/" + name + ".yaml"
			if _, picked := files[p]; picked {
				continue
			}
			if exists[p] && rng.IntN(3) == 0 {
				files[p] = nil
				delete(exists, p)
			} else {
				files[p] = itemFile(ns, name, i)
				exists[p] = true
			}
		}
		if i%3 == 0 {
			// Through the server, as a caller writes.
			for p, data := range files {
				parts := strings.Split(strings.TrimSuffix(p, ".yaml"), "/")
				if len(parts) != 3 {
					continue
				}
				at := items
				at.namespace, at.name = parts[1], parts[2]
				if data == nil {
					_, err := s.del(ctx, at, writeOptions{})
					if err != nil && toConnect(err).Code().String() != "not_found" {
						t.Fatal(err)
					}
					continue
				}
				r := controller.Resource{APIVersion: "example.com/v1", Kind: "Item",
					Metadata: controller.Metadata{Namespace: at.namespace, Name: at.name}, Spec: fmt.Appendf(nil, `{"v":%d}`, i)}
				if _, _, err := s.put(ctx, at, &putInput{resource: r, specField: "resource.spec"}, writeOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		if _, err := repo.Commit("main", files, fmt.Sprintf("outside %d\n", i)); err != nil && !strings.Contains(err.Error(), "nothing") {
			t.Fatal(err)
		}
	}
	end := mustHead(t, s)

	// One watcher, never cut, from start to end.
	all := collect(t, s, start, end, -1)
	// The events turn the state at start into the state at end.
	state := map[string]string{}
	for _, e := range all {
		typ, rest, _ := strings.Cut(e, " ")
		key, val, _ := strings.Cut(rest[:strings.LastIndex(rest, "@")], "=")
		switch typ {
		case "ADDED", "MODIFIED":
			state[key] = val
		case "DELETED":
			delete(state, key)
		}
	}
	final := map[string]string{}
	for _, ns := range []string{"a", "b"} {
		l, err := s.list(ctx, ref{group: "example.com", version: "v1", plural: "items", namespace: ns}, listQuery{revision: end})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range l.items {
			r, _ := e.resource()
			final[ns+"/"+e.name] = string(r.Spec)
		}
	}
	if fmt.Sprint(state) != fmt.Sprint(final) {
		t.Fatalf("the events make\n%v\nof the initial state, but the branch holds\n%v", state, final)
	}
	if len(all) < commits {
		t.Fatalf("only %d events for %d commits", len(all), commits)
	}

	// Watchers cut at random points, each resuming where the last stopped.
	for run := range 20 {
		var got []string
		rev := start
		for rev != end {
			cut := rng.IntN(6)
			evs, next := collectFrom(t, s, rev, end, cut)
			got = append(got, evs...)
			rev = next
		}
		if !slices.Equal(got, all) {
			t.Fatalf("run %d: resumed watchers got\n%s\nwant\n%s", run, strings.Join(got, "\n"), strings.Join(all, "\n"))
		}
	}
}

func mustHead(t *testing.T, s *Server) string {
	t.Helper()
	snap, err := s.src.View(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	return snap.Commit
}

// collect watches from revision until a bookmark or event at end, or after
// cut events (cut < 0: no cut), and returns the events.
func collect(t *testing.T, s *Server, from, end string, cut int) []string {
	evs, _ := collectFrom(t, s, from, end, cut)
	return evs
}

// collectFrom is collect, also returning the revision to resume from.
func collectFrom(t *testing.T, s *Server, from, end string, cut int) ([]string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var got []string
	resume := from
	err := s.watch(ctx, items, watchQuery{revision: from, bookmarks: true}, func(ev *watchEvent) error {
		if ev.typ != cupv1alpha1.WatchEventType_WATCH_EVENT_TYPE_BOOKMARK {
			got = append(got, note(ev))
		}
		resume = ev.resume
		if ev.commit == end && ev.resume == end || cut >= 0 && len(got) >= cut {
			cancel()
		}
		return nil
	})
	if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("watch from %s ended: %v", from, err)
	}
	return got, resume
}

// resource decodes the entry's REST form, for tests.
func (e *entry) resource() (*controller.Resource, error) {
	in, err := decodeResource(e.json)
	if err != nil {
		return nil, err
	}
	return &in.resource, nil
}

// BenchmarkWatchMemory measures what 1,000 idle watches cost the server:
// heap and goroutine stacks, per watch, reported as bytes/watcher. (The
// HTTP/2 stream of each, Go's own, is not counted.)
func BenchmarkWatchMemory(b *testing.B) {
	const n = 1000
	for b.Loop() {
		b.StopTimer()
		s, _ := watchedServer(b, WithMaxWatches(n))
		ctx, cancel := context.WithCancel(b.Context())
		no := false
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var started sync.WaitGroup
		var done sync.WaitGroup
		for range n {
			started.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				_ = s.watch(ctx, items, watchQuery{sendInitial: &no, ready: started.Done}, func(*watchEvent) error { return nil })
			}()
		}
		started.Wait()
		for s.hub.head() == "" || s.hubMembers() < n {
			time.Sleep(time.Millisecond)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		used := int64(after.HeapAlloc+after.StackInuse) - int64(before.HeapAlloc+before.StackInuse)
		b.ReportMetric(float64(used)/n, "bytes/watcher")
		cancel()
		done.Wait()
		b.StartTimer()
	}
}

// hubMembers is how many watches follow the head.
func (s *Server) hubMembers() int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.hub.members
}

// TestWatchJoinsBehindHub starts a watch at a head that the hub, kept by
// an earlier watch, has not read yet. The watch must not take the hub's
// older head for the branch going back: it sent that "change" back, then
// the commit's own events once more (several cupd replicas on one remote,
// whose fetches move the head between two polls, did so at every watch
// that resumed).
func TestWatchJoinsBehindHub(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, repo := watchedServer(t, WithWatchPollInterval(time.Hour))
		ctx, cancel := context.WithCancel(t.Context())
		no := false
		errc := make(chan error, 2)
		go func() {
			errc <- s.watch(ctx, items, watchQuery{sendInitial: &no}, func(*watchEvent) error { return nil })
		}()
		synctest.Wait() // the first watch is live: the hub read the initial head
		h1, err := repo.Commit("main", map[string][]byte{"items/a/x.yaml": itemFile("a", "x", 1)}, "outside\n")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		go func() {
			errc <- s.watch(ctx, items, watchQuery{revision: h1}, func(ev *watchEvent) error {
				if ev.typ != cupv1alpha1.WatchEventType_WATCH_EVENT_TYPE_BOOKMARK {
					got = append(got, note(ev))
				}
				return nil
			})
		}()
		synctest.Wait() // the second watch is live, from h1
		h2, err := repo.Commit("main", map[string][]byte{"items/a/x.yaml": itemFile("a", "x", 2)}, "outside\n")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour) // the hub reads the head
		synctest.Wait()
		cancel()
		for range 2 {
			if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("watch: %v", err)
			}
		}
		if want := []string{fmt.Sprintf(`MODIFIED a/x={"v":2}@%s`, h2)}; !slices.Equal(got, want) {
			t.Errorf("the watch from %s got\n%s\nwant\n%s", h1, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
