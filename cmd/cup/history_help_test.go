package main

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/app"
)

// TestWatchHistoryRevertCompletion: the new commands complete types, names,
// flags' values and --to's commits, and their help says what they do.
func TestWatchHistoryRevertCompletion(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	demo := shortRevision(headCommit(t, url))
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"history types", []string{"__complete", "history", ""}, []string{"flags\n", "services\n"}},
		{"history names", []string{"__complete", "history", "fl", ""}, []string{"dark-mode\n", "new-checkout\n"}},
		{"history -o", []string{"__complete", "history", "flags", "dark-mode", "-o", ""}, []string{"table\n", "json\n", "yaml\n"}},
		{"revert names", []string{"__complete", "revert", "flags", ""}, []string{"search-v2\n"}},
		{"revert --to", []string{"__complete", "revert", "flags", "dark-mode", "--to", ""}, []string{demo + "\tcreated: Demo repository for cup\n"}},
		{"get flags", []string{"__complete", "get", "flags", "-"}, []string{"--watch\t", "--watch-only\t", "--output-watch-events\t"}},
		{"help lists the commands", []string{"help"}, []string{"List the commits that changed a resource\n", "Write a resource back as it was at an earlier revision\n"}},
		{"history help", []string{"history", "--help"}, []string{"REQUESTED-BY", "--limit int", "cup history flags new-checkout"}},
		{"revert help", []string{"revert", "--help"}, []string{"--to string", "--dry-run", "is deleted", "cup revert flags new-checkout --to"}},
		{"get help", []string{"get", "--help"}, []string{"-w, --watch", "--watch-only", "--output-watch-events", "cup get flags -w"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ok(t, url, tc.args...)
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("lacks %q:\n%s", want, got)
				}
			}
		})
	}
}

// TestWatchHistoryAsUser: against a cupd that wants credentials, a watch
// sends the token, and history says who asked for a change.
func TestWatchHistoryAsUser(t *testing.T) {
	t.Parallel()
	const token = "cup-test-token-carol-0123456789abcdef"
	dir := t.TempDir()
	sum := sha256.Sum256([]byte(token))
	policy := writeFile(t, dir, "policy.yaml", `apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: admin}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: ["*"]}]
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata: {name: admins}
subjects: [{kind: User, name: carol}]
roleRef: {kind: ClusterRole, name: admin}
`)
	tokens := writeFile(t, dir, "tokens.yaml", "tokens:\n- sha256: "+hex.EncodeToString(sum[:])+"\n  user: carol\n  groups: []\n")
	url := newServer(t, func(o *app.Options) { o.Auth = app.Auth{PolicyPath: policy, TokensFile: tokens} })

	fails(t, url, "credentials", "get", "flags", "-w")
	w := startCup(t, url, "--token", token, "get", "flags", "dark-mode", "-w")
	w.waitFor(t, "the initial state", func(out string) bool { return lines(out) >= 2 })
	if r := cup(t, url, darkModeOn, "--token", token, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	w.waitFor(t, "the change", func(out string) bool { return lines(out) >= 3 })
	if r := w.stop(); r.code != 0 || !strings.HasSuffix(r.stdout, "dark-mode   true      30        11a49dd\n") {
		t.Fatalf("%+v", r)
	}
	got := ok(t, url, "--token", token, "history", "flags", "dark-mode", "--limit", "1")
	if m := historyRow.FindStringSubmatch(strings.Split(got, "\n")[1]); m == nil || m[4] != "carol" || m[5] != "modified" {
		t.Fatalf("got %q", got)
	}
	// explain reads the OpenAPI document with the token too.
	if got := ok(t, url, "--token", token, "explain", "flags.spec.rollout"); !strings.Contains(got, "maximum: 100") {
		t.Errorf("explain as carol:\n%s", got)
	}
}
