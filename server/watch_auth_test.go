package server_test

import (
	"os"
	"testing"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/app"
)

// watchPolicy lets group editors (alice) watch flags in staging only, and
// carol do everything.
const watchPolicy = `
apiVersion: cup.dev/v1alpha1
kind: Role
metadata: {name: flag-watcher, namespace: staging}
rules:
- apiGroups: [flags.cup.dev]
  resources: [flags]
  verbs: [watch]
---
apiVersion: cup.dev/v1alpha1
kind: RoleBinding
metadata: {name: watchers, namespace: staging}
subjects: [{kind: Group, name: editors}]
roleRef: {kind: Role, name: flag-watcher}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: admin}
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: ["*"]
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata: {name: admins}
subjects: [{kind: User, name: carol}]
roleRef: {kind: ClusterRole, name: admin}
`

// TestWatchAuthorization: a watch of one namespace needs the watch verb
// there; a watch across namespaces sees the namespaces the caller may
// watch, and nothing of the others.
func TestWatchAuthorization(t *testing.T) {
	t.Parallel()
	policy, tokens := writeAuthFiles(t)
	if err := os.WriteFile(policy, []byte(watchPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newAppFixture(t, func(o *app.Options) { o.Auth = app.Auth{PolicyPath: policy, TokensFile: tokens} })
	p := protocols[0]
	client := cupv1alpha1connect.NewResourceServiceClient(p.httpClient(), f.url, p.opts...)
	watch := func(user, namespace string) (*connect.ServerStreamForClient[cupv1alpha1.WatchResponse], error) {
		req := connect.NewRequest(&cupv1alpha1.WatchRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags", Namespace: namespace})
		req.Header().Set("Authorization", "Bearer "+tokenOf(user))
		s, err := client.Watch(t.Context(), req)
		if err != nil {
			return nil, err
		}
		if !s.Receive() {
			return nil, s.Err()
		}
		return s, nil
	}
	for _, tc := range []struct {
		user, namespace string
		code            connect.Code
	}{
		{"alice", "default", connect.CodePermissionDenied},
		{"bob", "staging", connect.CodePermissionDenied},
		{"", "staging", connect.CodeUnauthenticated},
		{"", "", connect.CodeUnauthenticated},
	} {
		if _, err := watch(tc.user, tc.namespace); connect.CodeOf(err) != tc.code {
			t.Errorf("%q watching %q: %v, want %v", tc.user, tc.namespace, err, tc.code)
		}
	}
	s, err := watch("alice", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var seen []string
	for ev := s.Msg(); ev.GetType() != cupv1alpha1.WatchEventType_WATCH_EVENT_TYPE_BOOKMARK; ev = s.Msg() {
		seen = append(seen, ev.GetResource().GetMetadata().GetNamespace()+"/"+ev.GetResource().GetMetadata().GetName())
		if !s.Receive() {
			t.Fatal(s.Err())
		}
	}
	if len(seen) != 2 || seen[0] != "staging/dark-mode" || seen[1] != "staging/new-checkout" {
		t.Fatalf("alice's initial state across namespaces: %v, want staging's flags only", seen)
	}
	// carol changes a flag in default, then one in staging: alice sees the
	// second only.
	for _, ns := range []string{"default", "staging"} {
		req := connect.NewRequest(putReq(flag(t, "dark-mode", false, nil)))
		req.Msg.Namespace = ns
		req.Header().Set("Authorization", "Bearer "+tokenOf("carol"))
		if _, err := client.Put(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	if !s.Receive() {
		t.Fatal(s.Err())
	}
	if m := s.Msg().GetResource().GetMetadata(); m.GetNamespace() != "staging" || m.GetName() != "dark-mode" {
		t.Fatalf("alice saw %s/%s first, want staging/dark-mode", m.GetNamespace(), m.GetName())
	}
}
