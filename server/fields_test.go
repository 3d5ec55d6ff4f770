package server_test

import (
	"bufio"
	"net/http"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/servertest"
)

func TestListFieldSelector(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	// The demo's flags: default/{dark-mode,new-checkout,search-v2},
	// production/new-checkout, staging/{dark-mode,new-checkout}.
	tests := []struct {
		name, namespace, fields, labels string
		want                            []string
	}{
		{"name", "default", "metadata.name=dark-mode", "", []string{"default/dark-mode"}},
		{"name ==", "default", "metadata.name==search-v2", "", []string{"default/search-v2"}},
		{"missing name", "default", "metadata.name=nope", "", nil},
		{"invalid name", "default", "metadata.name=No_Such", "", nil},
		{"not the name", "default", "metadata.name!=dark-mode", "", []string{"default/new-checkout", "default/search-v2"}},
		{"own namespace", "default", "metadata.namespace=default", "", []string{"default/dark-mode", "default/new-checkout", "default/search-v2"}},
		{"other namespace", "default", "metadata.namespace=staging", "", nil},
		{"name across", "", "metadata.name=new-checkout", "", []string{"default/new-checkout", "production/new-checkout", "staging/new-checkout"}},
		{"namespace across", "", "metadata.namespace!=default", "", []string{"production/new-checkout", "staging/dark-mode", "staging/new-checkout"}},
		{"both across", "", "metadata.name=dark-mode,metadata.namespace!=default", "", []string{"staging/dark-mode"}},
		{"contradiction", "", "metadata.name=dark-mode,metadata.name!=dark-mode", "", nil},
		{"with labels", "", "metadata.namespace=default", "team=payments", []string{"default/new-checkout"}},
		{"empty", "", "", "", []string{"default/dark-mode", "default/new-checkout", "default/search-v2", "production/new-checkout", "staging/dark-mode", "staging/new-checkout"}},
	}
	for _, p := range servertest.Protocols {
		rs := srv.Clients(p).Resources
		for _, tc := range tests {
			t.Run(p.Name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				// One resource a page, to check that paging keeps the selector.
				req := &cupv1alpha1.ListRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags",
					Namespace: tc.namespace, FieldSelector: tc.fields, LabelSelector: tc.labels, PageSize: 1}
				var got []string
				for {
					res, err := rs.List(t.Context(), connect.NewRequest(req))
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range res.Msg.GetItems() {
						got = append(got, r.GetMetadata().GetNamespace()+"/"+r.GetMetadata().GetName())
					}
					if req.PageToken = res.Msg.GetNextPageToken(); req.PageToken == "" {
						break
					}
					if len(got) > 10 {
						t.Fatal("too many pages")
					}
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			})
		}
	}
}

func TestFieldSelectorErrors(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	rs := srv.Clients(servertest.Protocols[0]).Resources
	for _, tc := range []struct{ fields, mention string }{
		{"spec.enabled=true", "field label not supported: spec.enabled"},
		{"metadata.labels=x", "field label not supported: metadata.labels"},
		{"metadata.name", "field_selector"},
		{"metadata.name in (a,b)", "field_selector"},
	} {
		t.Run(tc.fields, func(t *testing.T) {
			t.Parallel()
			_, err := rs.List(t.Context(), connect.NewRequest(&cupv1alpha1.ListRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags",
				Namespace: "default", FieldSelector: tc.fields}))
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), "field_selector") {
				t.Fatalf("list: %v, want InvalidArgument naming field_selector and %q", err, tc.mention)
			}
			stream, err := rs.Watch(t.Context(), connect.NewRequest(&cupv1alpha1.WatchRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags",
				Namespace: "default", FieldSelector: tc.fields}))
			if err == nil {
				for stream.Receive() {
					t.Fatal("an event from a refused watch")
				}
				err = stream.Err()
				_ = stream.Close()
			}
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("watch: %v, want InvalidArgument mentioning %q", err, tc.mention)
			}
		})
	}
	t.Run("token of another selector", func(t *testing.T) {
		t.Parallel()
		req := &cupv1alpha1.ListRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags", Namespace: "default", PageSize: 1}
		res, err := rs.List(t.Context(), connect.NewRequest(req))
		if err != nil {
			t.Fatal(err)
		}
		req.PageToken, req.FieldSelector = res.Msg.GetNextPageToken(), "metadata.name!=x"
		if _, err := rs.List(t.Context(), connect.NewRequest(req)); connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "page_token") {
			t.Fatalf("got %v, want InvalidArgument on page_token", err)
		}
	})
	t.Run("REST", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{
			"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags?fieldSelector=spec.enabled%3Dtrue",
			"/apis/flags.cup.dev/v1alpha1/flags?watch=true&fieldSelector=spec.enabled%3Dtrue",
		} {
			res := srv.Do(t, "GET", path, "")
			if res.Status != http.StatusBadRequest || !strings.Contains(res.Body, "fieldSelector") || !strings.Contains(res.Body, "field label not supported: spec.enabled") {
				t.Errorf("%s: %d %s", path, res.Status, res.Body)
			}
		}
		// Unknown parameters are still refused.
		res := srv.Do(t, "GET", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags?fieldselector=metadata.name%3Dx", "")
		if res.Status != http.StatusBadRequest || !strings.Contains(res.Body, "fieldselector") {
			t.Errorf("unknown parameter: %d %s", res.Status, res.Body)
		}
	})
}

func TestRESTFieldSelector(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	res := srv.Do(t, "GET", "/apis/flags.cup.dev/v1alpha1/flags?fieldSelector=metadata.name%3Ddark-mode", "")
	if res.Status != http.StatusOK {
		t.Fatalf("list: %d %s", res.Status, res.Body)
	}
	if n := strings.Count(res.Body, `"name":"dark-mode"`); n != 2 || strings.Contains(res.Body, "new-checkout") {
		t.Fatalf("list: %s", res.Body)
	}
}

func TestWatchFieldSelector(t *testing.T) {
	t.Parallel()
	srv := startWatched(t)
	for _, p := range servertest.Protocols[:1] {
		req := flagsWatch("")
		req.FieldSelector = "metadata.name=dark-mode,metadata.namespace=default"
		next, _ := watchStream(t, srv, p, req)
		for _, want := range []string{"ADDED default/dark-mode", "BOOKMARK " + srv.Head(t) + " end=true"} {
			if got := seen(next()); got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
		}
		// REST, from the same start: one line, then the bookmark.
		rest, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags?watch=true&fieldSelector=metadata.name!%3Dnew-checkout", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(rest)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		lines := bufio.NewScanner(resp.Body)
		var restSeen []string
		for len(restSeen) < 3 && lines.Scan() {
			l := lines.Text()
			restSeen = append(restSeen, l[strings.Index(l, `"type":"`)+8:][:5]+" "+l[strings.Index(l, `"name":"`)+8:][:9])
		}
		if want := []string{`ADDED dark-mode`, `ADDED search-v2`, `BOOKM`}; !slices.Equal(restSeen[:2], want[:2]) || !strings.HasPrefix(restSeen[2], want[2]) {
			t.Fatalf("REST watch: %q", restSeen)
		}
		for _, path := range []string{"default/flags/new-checkout", "staging/flags/dark-mode", "default/flags/dark-mode"} {
			if res := srv.Do(t, "PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/"+path, `{"spec": {"enabled": false}}`); res.Status != http.StatusAccepted {
				t.Fatalf("put: %d %s", res.Status, res.Body)
			}
		}
		// Only the last write is of the resource selected.
		if got := seen(next()); got != "MODIFIED default/dark-mode" {
			t.Fatalf("after the writes: %s", got)
		}
	}
}

// TestListFieldSelectorByName: a list by name reads that resource alone:
// a file of the namespace that does not decode, which a listing warns
// of, goes unread.
func TestListFieldSelectorByName(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	if _, err := srv.Repo.Commit("main", map[string][]byte{"flags/default/broken.yaml": []byte("spec: [\n")}, "a broken file\n"); err != nil {
		t.Fatal(err)
	}
	rs := srv.Clients(servertest.Protocols[0]).Resources
	list := func(fields string) *cupv1alpha1.ListResponse {
		res, err := rs.List(t.Context(), connect.NewRequest(&cupv1alpha1.ListRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags",
			Namespace: "default", FieldSelector: fields}))
		if err != nil {
			t.Fatal(err)
		}
		return res.Msg
	}
	if all := list("metadata.name!=x"); len(all.GetWarnings()) != 1 || len(all.GetItems()) != 3 {
		t.Fatalf("a listing: %d warnings, %d items; want the broken file's warning and 3 items", len(all.GetWarnings()), len(all.GetItems()))
	}
	if one := list("metadata.name=dark-mode"); len(one.GetWarnings()) != 0 || len(one.GetItems()) != 1 || one.GetItems()[0].GetMetadata().GetName() != "dark-mode" {
		t.Fatalf("by name: %v", one)
	}
	// The broken file itself, by name: a warning, as a listing gives it.
	if broken := list("metadata.name=broken"); len(broken.GetWarnings()) != 1 || len(broken.GetItems()) != 0 {
		t.Fatalf("the broken file by name: %v", broken)
	}
}
