package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
)

// darkModeOn is dark-mode changed: without labels, rolled out to 30%.
const darkModeOn = "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: dark-mode}\nspec: {enabled: true, rollout: 30}\n"

// watchWrites makes the changes the watch tests watch: search-v2 deleted,
// then dark-mode changed, in two commits.
func watchWrites(t *testing.T, url string) {
	t.Helper()
	ok(t, url, "delete", "flags", "search-v2")
	if r := cup(t, url, darkModeOn, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: exit %d\nstderr: %s", r.code, r.stderr)
	}
}

// lines counts the lines of s.
func lines(s string) int { return strings.Count(s, "\n") }

// jsonEvents is the events of -o json --output-watch-events, a line each:
// "TYPE name".
func jsonEvents(t *testing.T, out string) string {
	var b strings.Builder
	for l := range strings.Lines(out) {
		var ev struct {
			Type   string
			Object struct{ Metadata struct{ Name string } }
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		fmt.Fprintf(&b, "%s %s\n", ev.Type, ev.Object.Metadata.Name)
	}
	return b.String()
}

// yamlEvents is the events of -o yaml --output-watch-events, YAML
// documents: "TYPE name" a line.
func yamlEvents(t *testing.T, out string) string {
	var b strings.Builder
	for doc := range strings.SplitSeq(out, "---\n") {
		if doc == "" {
			continue
		}
		var ev struct {
			Type   string
			Object struct{ Metadata struct{ Name string } }
		}
		if err := yaml.Unmarshal([]byte(doc), &ev); err != nil || ev.Type == "" {
			t.Fatalf("document %q: %v", doc, err)
		}
		fmt.Fprintf(&b, "%s %s\n", ev.Type, ev.Object.Metadata.Name)
	}
	return b.String()
}

// jsonObjects is the resources of -o json, indented objects one after
// another: "name rollout" a line.
func jsonObjects(t *testing.T, out string) string {
	var b strings.Builder
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var r struct {
			Metadata struct{ Name string }
			Spec     struct{ Rollout int }
		}
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			return b.String() // an object not yet whole
		}
		fmt.Fprintf(&b, "%s %d\n", r.Metadata.Name, r.Spec.Rollout)
	}
	return b.String()
}

func TestGetWatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		// fromHead starts the watch at the head commit (--revision), so
		// that no change can come before the watch started; otherwise the
		// writes wait for the first `initial` lines of output.
		fromHead bool
		initial  int
		// summary turns the output into want's form; nil keeps it as is.
		summary func(*testing.T, string) string
		want    string
	}{
		{
			name: "table: the state, then a row per change, a deletion's too", args: []string{"get", "flags", "-w"}, initial: 4,
			want: "NAME           ENABLED   ROLLOUT   RESOURCE VERSION\n" +
				"dark-mode      false     0         7ca4267\n" +
				"new-checkout   true      50        c4ff311\n" +
				"search-v2      true      100       95daf1f\n" +
				"search-v2      true      100       95daf1f\n" +
				"dark-mode      true      30        11a49dd\n",
		},
		{
			name: "one resource: its changes only", args: []string{"get", "flags", "dark-mode", "--watch"}, initial: 2,
			want: "NAME        ENABLED   ROLLOUT   RESOURCE VERSION\n" +
				"dark-mode   false     0         7ca4267\n" +
				"dark-mode   true      30        11a49dd\n",
		},
		{
			name: "TYPE/NAME", args: []string{"get", "flag/dark-mode", "-w", "-o", "name"}, initial: 1,
			want: "flags.flags.cup.dev/dark-mode\nflags.flags.cup.dev/dark-mode\n",
		},
		{
			name: "label selector: a resource that stops matching is a row", args: []string{"get", "flags", "-w", "-l", "team=web"}, initial: 2,
			want: "NAME        ENABLED   ROLLOUT   RESOURCE VERSION\n" +
				"dark-mode   false     0         7ca4267\n" +
				"dark-mode   true      30        11a49dd\n",
		},
		{
			name: "watch-only: no state", args: []string{"get", "flags", "--watch-only"}, fromHead: true,
			want: "NAME        ENABLED   ROLLOUT   RESOURCE VERSION\n" +
				"search-v2   true      100       95daf1f\n" +
				"dark-mode   true      30        11a49dd\n",
		},
		{
			name: "wide with events", args: []string{"get", "flags", "--watch-only", "-o", "wide", "--output-watch-events"}, fromHead: true,
			want: "EVENT     NAME        ENABLED   ROLLOUT   DESCRIPTION                       RESOURCE VERSION   NAMESPACE   LABELS\n" +
				"DELETED   search-v2   true      100       Search backed by the new index.   95daf1f            default     team=search\n" +
				"MODIFIED   dark-mode   true      30        <none>                            11a49dd            default     <none>\n",
		},
		{
			name: "all namespaces: a NAMESPACE column first", args: []string{"get", "flags", "-w", "-A"}, initial: 7,
			want: "NAMESPACE    NAME           ENABLED   ROLLOUT   RESOURCE VERSION\n" +
				"default      dark-mode      false     0         7ca4267\n" +
				"default      new-checkout   true      50        c4ff311\n" +
				"default      search-v2      true      100       95daf1f\n" +
				"production   new-checkout   false     0         81b0c5c\n" +
				"staging      dark-mode      true      100       24eeff0\n" +
				"staging      new-checkout   true      100       aeaa9fe\n" +
				"default      search-v2      true      100       95daf1f\n" +
				"default      dark-mode      true      30        11a49dd\n",
		},
		{
			name: "json events, one a line", args: []string{"get", "flags", "-w", "-o", "json", "--output-watch-events"}, initial: 3,
			summary: jsonEvents,
			want:    "ADDED dark-mode\nADDED new-checkout\nADDED search-v2\nDELETED search-v2\nMODIFIED dark-mode\n",
		},
		{
			name: "yaml events", args: []string{"get", "flags", "--watch-only", "-o", "yaml", "--output-watch-events"}, fromHead: true,
			summary: yamlEvents,
			want:    "DELETED search-v2\nMODIFIED dark-mode\n",
		},
		{
			name: "json objects", args: []string{"get", "flags", "dark-mode", "-w", "-o", "json"}, initial: 1,
			summary: jsonObjects,
			want:    "dark-mode 0\ndark-mode 30\n",
		},
		{
			name: "over gRPC", args: []string{"--protocol", "grpc", "get", "flags", "dark-mode", "-w"}, initial: 2,
			want: "NAME        ENABLED   ROLLOUT   RESOURCE VERSION\n" +
				"dark-mode   false     0         7ca4267\n" +
				"dark-mode   true      30        11a49dd\n",
		},
		{
			name: "from a branch", args: []string{"get", "flags", "-w", "--revision", "main", "-o", "name"}, initial: 3,
			want: "flags.flags.cup.dev/dark-mode\nflags.flags.cup.dev/new-checkout\nflags.flags.cup.dev/search-v2\n" +
				"flags.flags.cup.dev/search-v2\nflags.flags.cup.dev/dark-mode\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := newServer(t)
			args := tc.args
			if tc.fromHead {
				args = append(args, "--revision", headCommit(t, url))
			}
			summary := tc.summary
			if summary == nil {
				summary = func(_ *testing.T, s string) string { return s }
			}
			w := startCup(t, url, args...)
			if !tc.fromHead {
				w.waitFor(t, "the initial state", func(out string) bool { return lines(summary(t, out)) >= tc.initial })
			}
			watchWrites(t, url)
			w.waitFor(t, "the changes", func(out string) bool { return lines(summary(t, out)) >= lines(tc.want) })
			r := w.stop()
			if got := summary(t, r.stdout); got != tc.want || r.code != 0 || r.stderr != "" {
				t.Errorf("exit %d, stderr %q\ngot:\n%s\nwant:\n%s", r.code, r.stderr, got, tc.want)
			}
		})
	}
}

// TestGetWatchInitialIsGet: the state a watch starts with prints as cup get
// prints it, but for AGE: a watch's rows show each change's RESOURCE
// VERSION instead.
func TestGetWatchInitialIsGet(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	for _, output := range []string{"table", "wide"} {
		t.Run(output, func(t *testing.T) {
			t.Parallel()
			get := ok(t, url, "get", "flags", "-o", output)
			w := startCup(t, url, "get", "flags", "-w", "-o", output)
			initial := w.waitFor(t, "the initial state", func(out string) bool { return lines(out) >= lines(get) })
			r := w.stop()
			want, got := cellsWithout(get, "AGE"), cellsWithout(initial)
			if output == "table" {
				want, got = cellsWithout(get, "AGE", "RESOURCE VERSION"), cellsWithout(initial, "RESOURCE VERSION")
			}
			if got != want || r.code != 0 {
				t.Errorf("exit %d\ngot:\n%s\nwant:\n%s", r.code, got, want)
			}
			if strings.Contains(get, "RESOURCE VERSION") != (output == "wide") || !strings.Contains(r.stdout, "RESOURCE VERSION") {
				t.Errorf("get:\n%s\nwatch:\n%s", get, r.stdout)
			}
		})
	}
}

func TestGetWatchErrors(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"several names", []string{"get", "flags", "dark-mode", "search-v2", "-w"}, "--watch watches one TYPE"},
		{"events without watch", []string{"get", "flags", "--output-watch-events"}, "needs --watch"},
		{"problems", []string{"get", "flags", "--problems", "-w"}, "--problems cannot be used with --watch"},
		{"events as names", []string{"get", "flags", "-w", "--output-watch-events", "-o", "name"}, "--output-watch-events works with"},
		{"selector with a name", []string{"get", "flags", "dark-mode", "-l", "a=b", "-w"}, "-l and --field-selector cannot be used"},
		{"missing resource", []string{"get", "flags", "nope", "-w"}, `flag "nope" not found`},
		{"unknown revision", []string{"get", "flags", "-w", "--revision", "no-such-branch"}, "revision"},
		{"revision not on the branch", []string{"get", "flags", "--watch-only", "--revision", "0123456789abcdef0123456789abcdef01234567"}, "list again"},
		{"unknown type", []string{"get", "widgets", "-w"}, `no resource type "widgets"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fails(t, url, tc.want, tc.args...)
		})
	}
}

// cutWatches passes watches on to a cupd, and cuts the first one after
// cutAfter events with RESOURCE_EXHAUSTED, as a cupd closes a watcher that
// falls behind (naming where to resume in a trailer when trailer is set).
// With cutAfter 0 it refuses the first watch, as a cupd at its bound of
// watches does.
type cutWatches struct {
	cupv1alpha1connect.UnimplementedResourceServiceHandler
	upstream cupv1alpha1connect.ResourceServiceClient
	cutAfter int
	trailer  bool

	mu       sync.Mutex
	requests []*cupv1alpha1.WatchRequest
}

func (c *cutWatches) Watch(ctx context.Context, req *connect.Request[cupv1alpha1.WatchRequest], stream *connect.ServerStream[cupv1alpha1.WatchResponse]) error {
	c.mu.Lock()
	c.requests = append(c.requests, proto.CloneOf(req.Msg))
	first := len(c.requests) == 1
	c.mu.Unlock()
	if first && c.cutAfter == 0 {
		return connect.NewError(connect.CodeResourceExhausted, errors.New("too many watches: at most 1 (cupd --max-watches)"))
	}
	up, err := c.upstream.Watch(ctx, connect.NewRequest(req.Msg))
	if err != nil {
		return err
	}
	defer up.Close()
	for sent := 0; up.Receive(); {
		ev := up.Msg()
		if err := stream.Send(ev); err != nil {
			return err
		}
		if sent++; first && sent == c.cutAfter {
			ce := connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("the watch fell more than 1 events behind: resume from revision %s", ev.GetResumeRevision()))
			if c.trailer {
				ce.Meta().Set(headerResumeRevision, ev.GetResumeRevision())
			}
			return ce
		}
	}
	return up.Err()
}

// serveCut serves a cupd whose watches go through cut.
func serveCut(t *testing.T, cut *cutWatches) string {
	t.Helper()
	h := newHandler(t)
	cut.upstream = cupv1alpha1connect.NewResourceServiceClient(http.DefaultClient, serve(t, h))
	_, watches := cupv1alpha1connect.NewResourceServiceHandler(cut)
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == cupv1alpha1connect.ResourceServiceWatchProcedure {
			watches.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// TestGetWatchResumes: a watch the server cuts for falling behind goes on
// from where it was cut, without a gap or a repeat; one the server refuses
// is an error.
func TestGetWatchResumes(t *testing.T) {
	t.Parallel()
	const want = "NAME           ENABLED   ROLLOUT   RESOURCE VERSION\n" +
		"dark-mode      false     0         7ca4267\n" +
		"new-checkout   true      50        c4ff311\n" +
		"search-v2      true      100       95daf1f\n" +
		"search-v2      true      100       95daf1f\n" +
		"dark-mode      true      30        11a49dd\n"
	for _, tc := range []struct {
		name     string
		cutAfter int // 3 ADDED, a BOOKMARK, then the changes
		trailer  bool
		protocol string
	}{
		{"from the trailer", 5, true, "connect"},
		{"from the trailer, over gRPC", 5, true, "grpc"},
		{"from the last event", 5, false, "connect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cut := &cutWatches{cutAfter: tc.cutAfter, trailer: tc.trailer}
			url := serveCut(t, cut)
			w := startCup(t, url, "--protocol", tc.protocol, "get", "flags", "-w")
			w.waitFor(t, "the initial state", func(out string) bool { return lines(out) >= 4 })
			watchWrites(t, url)
			w.waitFor(t, "the changes", func(out string) bool { return lines(out) >= lines(want) })
			r := w.stop()
			if r.stdout != want || r.code != 0 || r.stderr != "" {
				t.Errorf("exit %d, stderr %q\ngot:\n%s\nwant:\n%s", r.code, r.stderr, r.stdout, want)
			}
			cut.mu.Lock()
			defer cut.mu.Unlock()
			if len(cut.requests) != 2 || cut.requests[1].GetRevision() == "" {
				t.Fatalf("watch requests: %v", cut.requests)
			}
			if resumed := cut.requests[1]; resumed.GetSendInitialEvents() || resumed.GetLabelSelector() != "" {
				t.Errorf("the resumed watch: %v", resumed)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		fails(t, serveCut(t, &cutWatches{}), "too many watches", "get", "flags", "-w")
	})
}

// cellsWithout is a table's cells, a line per row and separated by |,
// without the columns headed by one of headings.
func cellsWithout(table string, headings ...string) string {
	sep := regexp.MustCompile(`\s{2,}`)
	var drop []int
	var out strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
		cells := sep.Split(strings.TrimSpace(l), -1)
		if i == 0 {
			for j, c := range cells {
				if slices.Contains(headings, c) {
					drop = append(drop, j)
				}
			}
		}
		var kept []string
		for j, c := range cells {
			if !slices.Contains(drop, j) {
				kept = append(kept, c)
			}
		}
		out.WriteString(strings.Join(kept, "|") + "\n")
	}
	return out.String()
}
