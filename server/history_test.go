package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/servertest"
)

func TestHistory(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	const item = "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/dark-mode"
	type step struct{ change, commit string }
	steps := []step{{"CREATED", srv.Initial}}
	write := func(method, body, change string) {
		t.Helper()
		r := srv.Do(t, method, item+"?message="+strings.ToLower(change), body)
		if r.Status != http.StatusAccepted {
			t.Fatalf("%s: %d %s", method, r.Status, r.Body)
		}
		steps = append(steps, step{change, srv.Head(t)})
	}
	write("PUT", `{"spec": {"enabled": false}}`, "MODIFIED")
	// A commit that does not touch the flag is no entry.
	if r := srv.Do(t, "PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/search-v2", `{"spec": {"enabled": false}}`); r.Status != http.StatusAccepted {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	if _, err := srv.Repo.Commit("main", map[string][]byte{"README.md": []byte("changed\n")}, "readme\n"); err != nil {
		t.Fatal(err)
	}
	write("DELETE", "", "DELETED")
	write("PUT", `{"spec": {"enabled": true}}`, "CREATED")
	// Newest first.
	var want []string
	for i := len(steps) - 1; i >= 0; i-- {
		want = append(want, steps[i].change+" "+steps[i].commit)
	}
	c := srv.Clients(servertest.Protocols[0]).Resources
	req := &cupv1alpha1.HistoryRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags", Namespace: "default", Name: "dark-mode", PageSize: 2}
	var got []string
	for page := 0; ; page++ {
		res, err := c.History(t.Context(), connect.NewRequest(req))
		if err != nil {
			t.Fatal(err)
		}
		if res.Msg.GetCommit() != srv.Head(t) {
			t.Fatalf("history read at %s, want the head %s", res.Msg.GetCommit(), srv.Head(t))
		}
		for _, e := range res.Msg.GetEntries() {
			got = append(got, strings.TrimPrefix(e.GetChange().String(), "CHANGE_TYPE_")+" "+e.GetCommit())
			if e.GetTime() == "" || e.GetAuthorName() == "" || e.GetSubject() == "" {
				t.Errorf("entry %+v lacks time, author or subject", e)
			}
			if (e.GetChange() == cupv1alpha1.ChangeType_CHANGE_TYPE_DELETED) != (e.GetResourceVersion() == "") {
				t.Errorf("entry %s has resourceVersion %q", e.GetChange(), e.GetResourceVersion())
			}
		}
		if res.Msg.GetNextPageToken() == "" {
			break
		}
		if page > 5 {
			t.Fatal("too many pages")
		}
		req.PageToken = res.Msg.GetNextPageToken()
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// REST, with since: the changes after the first put.
	r := srv.Do(t, "GET", item+"/history?since="+steps[1].commit, "")
	var h struct {
		Entries []struct {
			Commit, Change, Subject string
		}
	}
	if err := json.Unmarshal([]byte(r.Body), &h); r.Status != 200 || err != nil {
		t.Fatalf("REST history: %d %s", r.Status, r.Body)
	}
	if len(h.Entries) != 2 || h.Entries[0].Commit != steps[3].commit || h.Entries[1].Change != "CHANGE_TYPE_DELETED" || h.Entries[1].Subject != "deleted" {
		t.Fatalf("REST history since %s: %s", steps[1].commit, r.Body)
	}
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{item + "/history?limit=x", 400, "limit"},
		{item + "/history?page=2", 400, "unknown query parameter"},
		{item + "/history?continue=abc", 400, "page_token"},
		{item + "/history?until=nope", 404, "nope"},
		{"/apis/flags.cup.dev/v1alpha1/namespaces/default/nothings/x/history", 404, "nothings"},
	} {
		if r := srv.Do(t, "GET", tc.path, ""); r.Status != tc.status || !strings.Contains(r.Body, tc.want) {
			t.Errorf("GET %s: %d %s, want %d naming %s", tc.path, r.Status, r.Body, tc.status, tc.want)
		}
	}
	// A resource that never was has an empty history.
	r = srv.Do(t, "GET", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/never/history", "")
	if r.Status != 200 || strings.Contains(r.Body, "commit\":\"") && strings.Contains(r.Body, "entries") {
		t.Fatalf("history of a resource that never was: %d %s", r.Status, r.Body)
	}
}
