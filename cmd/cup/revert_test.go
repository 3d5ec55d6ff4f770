package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// historyCommits is the commits of a resource's history, newest first.
func historyCommits(t *testing.T, url string, args ...string) []string {
	t.Helper()
	var h struct {
		Entries []struct{ Commit, Subject string }
	}
	if err := json.Unmarshal([]byte(ok(t, url, append([]string{"history", "-o", "json"}, args...)...)), &h); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range h.Entries {
		out = append(out, e.Commit)
	}
	return out
}

// applied is a setup that applies the resource in yaml.
func applied(yaml string) func(*testing.T, string) {
	return func(t *testing.T, url string) { committed(t, url, yaml, "apply", "-f", "-") }
}

func TestRevert(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// setup writes before the revert.
		setup func(t *testing.T, url string)
		// args of the revert; {demo} is the demo repository's commit, as
		// cup history prints it.
		args []string
		want string // a regular expression, {demo} as in args
		// check looks at the resource after the revert.
		check func(t *testing.T, url string)
	}{
		{
			name:  "to an older revision",
			setup: applied(darkModeOn),
			args:  []string{"revert", "flags", "dark-mode", "--to", "{demo}"},
			want:  `^flags\.flags\.cup\.dev/dark-mode reverted to {demo}: committed [0-9a-f]{7}\n$`,
			check: func(t *testing.T, url string) {
				got := ok(t, url, "get", "flags", "dark-mode", "-o", "yaml")
				for _, want := range []string{"team: web", "rollout: 0", "enabled: false", "resourceVersion: 7ca4267"} {
					if !strings.Contains(got, want) {
						t.Errorf("restored resource lacks %q:\n%s", want, got)
					}
				}
			},
		},
		{
			name:  "dry run",
			setup: applied(darkModeOn),
			args:  []string{"revert", "flag/dark-mode", "--to", "{demo}", "--dry-run"},
			want:  `(?s)^--- a/flags/default/dark-mode\.yaml\n.*\n-  rollout: 30\n.*\n\+  rollout: 0\n.*flags\.flags\.cup\.dev/dark-mode reverted to {demo}: dry run: 1 file\n$`,
			check: func(t *testing.T, url string) {
				if got := ok(t, url, "get", "flags", "dark-mode", "-o", "yaml"); !strings.Contains(got, "rollout: 30") {
					t.Errorf("a dry run wrote:\n%s", got)
				}
			},
		},
		{
			name:  "absent at the revision: deleted",
			setup: applied(betaBanner),
			args:  []string{"revert", "flags", "beta-banner", "--to", "{demo}"},
			want:  `^flags\.flags\.cup\.dev/beta-banner reverted to {demo} \(deleted\): committed [0-9a-f]{7}\n$`,
			check: func(t *testing.T, url string) { fails(t, url, "not found", "get", "flags", "beta-banner") },
		},
		{
			name:  "absent now: created",
			setup: func(t *testing.T, url string) { ok(t, url, "delete", "flags", "search-v2") },
			args:  []string{"revert", "flags", "search-v2", "--to", "{demo}", "--message", "Bring search-v2 back"},
			want:  `^flags\.flags\.cup\.dev/search-v2 reverted to {demo} \(created\): committed [0-9a-f]{7}\n$`,
			check: func(t *testing.T, url string) {
				if got := ok(t, url, "get", "flags", "search-v2", "-o", "wide"); !strings.Contains(got, "95daf1f") {
					t.Errorf("got %s", got)
				}
				if got := ok(t, url, "history", "flags", "search-v2", "--limit", "1"); !strings.Contains(got, " created   Bring search-v2 back\n") {
					t.Errorf("history: %s", got)
				}
			},
		},
		{
			name: "as it is: unchanged",
			args: []string{"revert", "flags", "dark-mode", "--to", "main"},
			want: `^flags\.flags\.cup\.dev/dark-mode reverted to {demo}: unchanged\n$`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := newServer(t)
			demo := shortRevision(headCommit(t, url))
			if tc.setup != nil {
				tc.setup(t, url)
			}
			resource := tc.args[1:] // TYPE NAME or TYPE/NAME, before the flags
			for i, a := range resource {
				if strings.HasPrefix(a, "-") {
					resource = resource[:i]
					break
				}
			}
			before := historyCommits(t, url, resource...)
			var args []string
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "{demo}", demo))
			}
			got := ok(t, url, args...)
			if !regexp.MustCompile(strings.ReplaceAll(tc.want, "{demo}", demo)).MatchString(got) {
				t.Fatalf("got %q, want %s", got, tc.want)
			}
			after := historyCommits(t, url, resource...)
			// A revert that writes is a new commit on top; others add none.
			if m := regexp.MustCompile(`committed ([0-9a-f]{7})\n$`).FindStringSubmatch(got); m != nil {
				if len(after) != len(before)+1 || !strings.HasPrefix(after[0], m[1]) {
					t.Errorf("history after the revert %q, before %q", after, before)
				}
			} else if len(after) != len(before) {
				t.Errorf("history after the revert %q, before %q", after, before)
			}
			if tc.check != nil {
				tc.check(t, url)
			}
		})
	}
}

func TestRevertErrors(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no revision", []string{"revert", "flags", "dark-mode"}, "--to is required"},
		{"no name", []string{"revert", "flags", "--to", "main"}, "name the resource"},
		{"unknown revision", []string{"revert", "flags", "dark-mode", "--to", "nope"}, "--to nope does not name a commit"},
		{"unknown commit", []string{"revert", "flags", "dark-mode", "--to", "0123456789ab"}, "--to 0123456789ab does not name a commit"},
		{"never existed", []string{"revert", "flags", "never", "--to", "main"}, "flags.flags.cup.dev/never exists neither at main nor now"},
		{"unknown type", []string{"revert", "widgets", "x", "--to", "main"}, `no resource type "widgets"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fails(t, url, tc.want, tc.args...)
		})
	}
}
