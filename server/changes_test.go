package server_test

import (
	"testing"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// TestListWithChanges: with_changes answers, per item, the commit that
// last changed it and its time: the newest entry of its History, found by
// one walk for the whole page, across namespaces too, and at an older
// revision as of that revision.
func TestListWithChanges(t *testing.T) {
	t.Parallel()
	eachProtocol(t, func(t *testing.T, f *fixture, p protocol) {
		rs, _ := f.clients(p)
		before := f.head(t)
		put, err := rs.Put(t.Context(), connect.NewRequest(putReq(flag(t, "dark-mode", true, nil))))
		if err != nil {
			t.Fatal(err)
		}
		// Another file changes later: it is nobody's last change.
		if _, err := f.repo.Commit("main", map[string][]byte{"README.md": []byte("later\n")}, "Unrelated"); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, namespace, revision string
		}{
			{"one namespace", "default", ""},
			{"every namespace", "", ""},
			{"at an older revision", "default", before},
		} {
			list, err := rs.List(t.Context(), connect.NewRequest(&cupv1alpha1.ListRequest{
				Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags", Namespace: tc.namespace,
				Revision: tc.revision, WithChanges: true,
			}))
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			items, changes := list.Msg.GetItems(), list.Msg.GetChanges()
			if len(items) < 2 || len(changes) != len(items) {
				t.Fatalf("%s: %d items, %d changes", tc.name, len(items), len(changes))
			}
			sawPut := false
			for i, r := range items {
				md := r.GetMetadata()
				h, err := rs.History(t.Context(), connect.NewRequest(&cupv1alpha1.HistoryRequest{
					Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags",
					Namespace: md.GetNamespace(), Name: md.GetName(), Until: tc.revision, PageSize: 1,
				}))
				if err != nil {
					t.Fatal(err)
				}
				want := h.Msg.GetEntries()[0]
				if got := changes[i]; got.GetCommit() != want.GetCommit() || got.GetTime() != want.GetTime() {
					t.Errorf("%s: %s/%s: change %v, want the history's newest entry %s at %s",
						tc.name, md.GetNamespace(), md.GetName(), got, want.GetCommit(), want.GetTime())
				}
				if changes[i].GetCommit() == put.Msg.GetResult().GetCommit() {
					sawPut = md.GetName() == "dark-mode" && md.GetNamespace() == "default"
				}
			}
			if sawPut != (tc.revision == "") {
				t.Errorf("%s: the put's commit named for dark-mode: %v", tc.name, sawPut)
			}
		}
		// Without with_changes, none.
		list, err := rs.List(t.Context(), connect.NewRequest(&cupv1alpha1.ListRequest{
			Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags", Namespace: "default",
		}))
		if err != nil || len(list.Msg.GetChanges()) != 0 {
			t.Fatalf("without with_changes: %v, %v", list.Msg.GetChanges(), err)
		}
	})
}
