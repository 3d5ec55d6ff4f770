package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/server"
)

// startWatched serves the demo with a short poll interval, so that commits
// made in the repository behind the server's back show quickly.
func startWatched(t *testing.T, opts ...server.Option) *servertest.Server {
	t.Helper()
	return servertest.Start(t, servertest.WithServerOptions(append([]server.Option{server.WithWatchPollInterval(5 * time.Millisecond)}, opts...)...))
}

// seen is one event as a test notes it: "ADDED default/dark-mode @commit".
func seen(ev *cupv1alpha1.WatchResponse) string {
	typ := strings.TrimPrefix(ev.GetType().String(), "WATCH_EVENT_TYPE_")
	if ev.GetType() == cupv1alpha1.WatchEventType_WATCH_EVENT_TYPE_BOOKMARK {
		return fmt.Sprintf("%s %s end=%v", typ, ev.GetCommit(), ev.GetInitialEventsEnd())
	}
	m := ev.GetResource().GetMetadata()
	return fmt.Sprintf("%s %s/%s", typ, m.GetNamespace(), m.GetName())
}

// watchStream opens a watch and returns a function that waits for the
// next event.
func watchStream(t *testing.T, srv *servertest.Server, p servertest.Protocol, req *cupv1alpha1.WatchRequest) (next func() *cupv1alpha1.WatchResponse, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	stream, err := srv.Clients(p).Resources.Watch(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan *cupv1alpha1.WatchResponse, 100)
	errc := make(chan error, 1)
	go func() {
		defer close(events)
		for stream.Receive() {
			events <- stream.Msg()
		}
		errc <- stream.Err()
	}()
	t.Cleanup(func() { cancel(); _ = stream.Close() })
	return func() *cupv1alpha1.WatchResponse {
			t.Helper()
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("watch ended: %v", <-errc)
				}
				return ev
			case <-time.After(10 * time.Second):
				t.Fatal("no event within 10 seconds")
				return nil
			}
		}, func() {
			cancel()
		}
}

func flagsWatch(namespace string) *cupv1alpha1.WatchRequest {
	return &cupv1alpha1.WatchRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags", Namespace: namespace}
}

func TestWatch(t *testing.T) {
	t.Parallel()
	for _, p := range servertest.Protocols {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			srv := startWatched(t)
			next, _ := watchStream(t, srv, p, flagsWatch("default"))
			for _, want := range []string{"ADDED default/dark-mode", "ADDED default/new-checkout", "ADDED default/search-v2",
				"BOOKMARK " + srv.Head(t) + " end=true"} {
				if got := seen(next()); got != want {
					t.Fatalf("got %s, want %s", got, want)
				}
			}
			// A write through the server.
			res := srv.Do(t, "PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/dark-mode", `{"spec": {"enabled": false}}`)
			if res.Status != http.StatusAccepted {
				t.Fatalf("put: %d %s", res.Status, res.Body)
			}
			ev := next()
			if seen(ev) != "MODIFIED default/dark-mode" || ev.GetCommit() != srv.Head(t) || ev.GetResumeRevision() != ev.GetCommit() {
				t.Fatalf("after the put: %s at %s (resume %s), want MODIFIED default/dark-mode at %s", seen(ev), ev.GetCommit(), ev.GetResumeRevision(), srv.Head(t))
			}
			// A commit made behind the server's back, changing two flags of
			// default and one of staging, which this watch does not see.
			if _, err := srv.Repo.Commit("main", map[string][]byte{
				"flags/default/new-flag.yaml":  []byte("apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata:\n  name: new-flag\n  namespace: default\nspec:\n  enabled: true\n"),
				"flags/default/search-v2.yaml": nil,
				"flags/staging/dark-mode.yaml": nil,
			}, "outside\n"); err != nil {
				t.Fatal(err)
			}
			head := srv.Head(t)
			first, second := next(), next()
			if seen(first) != "ADDED default/new-flag" || seen(second) != "DELETED default/search-v2" {
				t.Fatalf("after the outside commit: %s, %s", seen(first), seen(second))
			}
			if first.GetResumeRevision() != head+".1" || second.GetResumeRevision() != head || second.GetCommit() != head {
				t.Fatalf("resume revisions %s, %s; want %s.1, %s", first.GetResumeRevision(), second.GetResumeRevision(), head, head)
			}
			if second.GetResource().GetSpec() == nil {
				t.Fatal("DELETED carries no last state")
			}
		})
	}
}

func TestWatchResume(t *testing.T) {
	t.Parallel()
	srv := startWatched(t)
	start := srv.Head(t)
	var commits []string
	for i, name := range []string{"dark-mode", "new-checkout", "dark-mode"} {
		res := srv.Do(t, "PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/"+name, fmt.Sprintf(`{"spec": {"enabled": true, "rollout": %d}}`, i))
		if res.Status != http.StatusAccepted {
			t.Fatalf("put: %d %s", res.Status, res.Body)
		}
		commits = append(commits, srv.Head(t))
	}
	p := servertest.Protocols[0]
	req := flagsWatch("default")
	req.Revision = start[:12]
	next, _ := watchStream(t, srv, p, req)
	// It says where it starts, the revision as it resolves.
	if ev := next(); seen(ev) != "BOOKMARK "+start+" end=false" || ev.GetResumeRevision() != start {
		t.Fatalf("first event %s (resume %s), want a BOOKMARK at %s", seen(ev), ev.GetResumeRevision(), start)
	}
	for i, want := range []string{"MODIFIED default/dark-mode", "MODIFIED default/new-checkout", "MODIFIED default/dark-mode"} {
		if ev := next(); seen(ev) != want || ev.GetCommit() != commits[i] {
			t.Fatalf("event %d: %s at %s, want %s at %s", i, seen(ev), ev.GetCommit(), want, commits[i])
		}
	}

	// With initial events, from a revision: the state there, then what
	// follows.
	req = flagsWatch("default")
	req.Revision = commits[1]
	yes := true
	req.SendInitialEvents = &yes
	next, _ = watchStream(t, srv, p, req)
	for _, want := range []string{"ADDED default/dark-mode", "ADDED default/new-checkout", "ADDED default/search-v2",
		"BOOKMARK " + commits[1] + " end=true", "MODIFIED default/dark-mode"} {
		if got := seen(next()); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}

	// A commit that is not in the branch's history.
	for _, rev := range []string{"0123456789abcdef0123456789abcdef01234567", "deadbeef"} {
		req = flagsWatch("default")
		req.Revision = rev
		stream, err := srv.Clients(p).Resources.Watch(t.Context(), connect.NewRequest(req))
		if err == nil {
			for stream.Receive() {
			}
			err = stream.Err()
		}
		if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "list again") {
			t.Fatalf("watch from %s: %v, want FailedPrecondition telling to list again", rev, err)
		}
		res := srv.Do(t, "GET", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags?watch=true&resourceVersion="+rev, "")
		if res.Status != http.StatusGone {
			t.Fatalf("REST watch from %s: %d %s, want 410", rev, res.Status, res.Body)
		}
	}
}

func TestWatchREST(t *testing.T) {
	t.Parallel()
	srv := startWatched(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/apis/flags.cup.dev/v1alpha1/flags?watch=true&labelSelector=team%3Dpayments&allowWatchBookmarks=true", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("watch: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	lines := bufio.NewScanner(res.Body)
	type line struct {
		Type   string `json:"type"`
		Object struct {
			Metadata struct {
				Namespace       string            `json:"namespace"`
				Name            string            `json:"name"`
				ResourceVersion string            `json:"resourceVersion"`
				Annotations     map[string]string `json:"annotations"`
			} `json:"metadata"`
		} `json:"object"`
		Commit string `json:"commit"`
	}
	read := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("watch ended: %v", lines.Err())
		}
		var l line
		if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", lines.Text(), err)
		}
		if l.Type == "BOOKMARK" {
			return fmt.Sprintf("BOOKMARK %s %s", l.Object.Metadata.ResourceVersion, l.Object.Metadata.Annotations["k8s.io/initial-events-end"])
		}
		return fmt.Sprintf("%s %s/%s", l.Type, l.Object.Metadata.Namespace, l.Object.Metadata.Name)
	}
	// The demo's flags of team payments, in every namespace.
	var initial []string
	for {
		l := read()
		if strings.HasPrefix(l, "BOOKMARK") {
			if l != "BOOKMARK "+srv.Head(t)+" true" {
				t.Fatalf("bookmark %q", l)
			}
			break
		}
		initial = append(initial, l)
	}
	if strings.Join(initial, ",") != "ADDED default/new-checkout,ADDED production/new-checkout,ADDED staging/new-checkout" {
		t.Fatalf("initial events: %q", initial)
	}
	// A flag that leaves the selection is DELETED for this watch; one that
	// joins it is ADDED.
	for _, put := range []struct{ path, body string }{
		{"staging/flags/new-checkout", `{"metadata": {"labels": {"team": "web"}}, "spec": {"enabled": true}}`},
		{"default/flags/dark-mode", `{"metadata": {"labels": {"team": "payments"}}, "spec": {"enabled": true}}`},
	} {
		if r := srv.Do(t, "PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/"+put.path, put.body); r.Status != http.StatusAccepted {
			t.Fatalf("put: %d %s", r.Status, r.Body)
		}
	}
	for _, want := range []string{"DELETED staging/new-checkout", "ADDED default/dark-mode"} {
		if got := read(); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
}

func TestWatchRefusals(t *testing.T) {
	t.Parallel()
	srv := startWatched(t, server.WithMaxWatches(1))
	for _, tc := range []struct{ path, want string }{
		{"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags?watch=true&limit=2", "unknown query parameter"},
		{"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags?watch=true&resourceVersion=xyz", "resourceVersion"},
		{"/apis/flags.cup.dev/v1alpha1/flags?watch=true&limit=2", "unknown query parameter"},
		{"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags?watch=true&resourceVersion=abcd.0", "resourceVersion"},
		{"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags?watch=true&allowWatchBookmarks=maybe", "allowWatchBookmarks"},
	} {
		if r := srv.Do(t, "GET", tc.path, ""); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, tc.want) {
			t.Errorf("GET %s: %d %s, want 400 naming %s", tc.path, r.Status, r.Body, tc.want)
		}
	}
	// One watch at a time.
	next, stop := watchStream(t, srv, servertest.Protocols[0], flagsWatch("default"))
	next()
	stream, err := srv.Clients(servertest.Protocols[0]).Resources.Watch(t.Context(), connect.NewRequest(flagsWatch("staging")))
	if err == nil {
		for stream.Receive() {
		}
		err = stream.Err()
	}
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "--max-watches") {
		t.Fatalf("second watch: %v, want ResourceExhausted naming --max-watches", err)
	}
	stop()
}
