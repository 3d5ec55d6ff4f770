package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

const betaBanner = "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: beta-banner}\nspec: {enabled: true, rollout: 10}\n"

// committed runs a write and returns the commit it printed (7 characters).
func committed(t *testing.T, url, stdin string, args ...string) string {
	t.Helper()
	r := cup(t, url, stdin, args...)
	m := regexp.MustCompile(`committed ([0-9a-f]{7})\n$`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("cup %s: exit %d, stdout %q\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return m[1]
}

// historyRow is a row of cup history: REVISION AGE AUTHOR REQUESTED-BY CHANGE SUBJECT.
var historyRow = regexp.MustCompile(`^([0-9a-f]{12})   +(\S+)   +(\S+)   +(\S+)   +(created|modified|deleted)   +(.+)$`)

func TestHistory(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	// beta-banner: created, modified, deleted.
	var commits []string
	commits = append(commits,
		committed(t, url, betaBanner, "apply", "-f", "-", "--message", "Add beta-banner"),
		committed(t, url, strings.Replace(betaBanner, "rollout: 10", "rollout: 20", 1), "apply", "-f", "-", "--message", "Roll out beta-banner"),
		committed(t, url, "", "delete", "flags", "beta-banner", "--message", "Remove beta-banner"))
	// A commit that does not touch beta-banner is no entry.
	committed(t, url, darkModeOn, "apply", "-f", "-")
	newestFirst := []string{
		commits[2] + " cup <none> deleted Remove beta-banner",
		commits[1] + " cup <none> modified Roll out beta-banner",
		commits[0] + " cup <none> created Add beta-banner",
	}
	// rows is a table's rows as "commit(7) author requested-by change subject".
	rows := func(t *testing.T, out string) []string {
		t.Helper()
		ls := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if !regexp.MustCompile(`^REVISION   +AGE   +AUTHOR   +REQUESTED-BY   +CHANGE   +SUBJECT$`).MatchString(ls[0]) {
			t.Fatalf("header %q", ls[0])
		}
		var got []string
		for _, l := range ls[1:] {
			m := historyRow.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("row %q", l)
			}
			if !regexp.MustCompile(`^[0-9]+[smhdy]`).MatchString(m[2]) {
				t.Errorf("AGE %q", m[2])
			}
			got = append(got, strings.Join(append([]string{m[1][:7]}, m[3:]...), " "))
		}
		return got
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"newest first", []string{"history", "flags", "beta-banner"}, newestFirst},
		{"TYPE/NAME", []string{"history", "fl/beta-banner"}, newestFirst},
		{"limit", []string{"history", "flags", "beta-banner", "--limit", "2"}, newestFirst[:2]},
		{"a page per entry", []string{"history", "flags", "beta-banner", "--chunk-size", "1"}, newestFirst},
		{"a limit across pages", []string{"history", "flags", "beta-banner", "--chunk-size", "1", "--limit", "2"}, newestFirst[:2]},
		{"the demo's commit", []string{"history", "flags", "new-checkout"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := rows(t, ok(t, url, tc.args...))
			if tc.want == nil { // the demo repository's one commit
				if len(got) != 1 || !strings.HasSuffix(got[0], " gitrepo <none> created Demo repository for cup") {
					t.Fatalf("got %q", got)
				}
				return
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		var h struct {
			Commit  string
			Entries []struct {
				Commit, Time, AuthorName, AuthorEmail, Subject, Change, ResourceVersion string
			}
		}
		if err := json.Unmarshal([]byte(ok(t, url, "history", "flags", "beta-banner", "-o", "json")), &h); err != nil {
			t.Fatal(err)
		}
		if len(h.Entries) != 3 || len(h.Commit) != 40 {
			t.Fatalf("%+v", h)
		}
		for i, want := range []string{"CHANGE_TYPE_DELETED", "CHANGE_TYPE_MODIFIED", "CHANGE_TYPE_CREATED"} {
			e := h.Entries[i]
			if e.Change != want || !strings.HasPrefix(e.Commit, commits[2-i]) || e.AuthorEmail != "cup@localhost" || e.Time == "" ||
				(e.ResourceVersion == "") != (i == 0) {
				t.Errorf("entry %d: %+v", i, e)
			}
		}
	})
	t.Run("yaml", func(t *testing.T) {
		t.Parallel()
		got := ok(t, url, "history", "flags", "beta-banner", "-o", "yaml", "--limit", "1")
		if !strings.Contains(got, "change: CHANGE_TYPE_DELETED\n") || strings.Contains(got, "CHANGE_TYPE_CREATED") {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("no history", func(t *testing.T) {
		t.Parallel()
		r := cup(t, url, "", "history", "flags", "never")
		if r.code != 0 || r.stdout != "" || r.stderr != "No history found for flags.flags.cup.dev/never in namespace default.\n" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"history", "flags"}, "name the resource"},
			{[]string{"history", "widgets", "x"}, `no resource type "widgets"`},
			{[]string{"history", "flags", "x", "-o", "xml"}, `-o: "xml"`},
			{[]string{"history", "flags", "x", "--limit", "-1"}, "--limit must not be negative"},
		} {
			fails(t, url, tc.want, tc.args...)
		}
	})
}

func TestAge(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{now.Add(-30 * time.Second), "30s"},
		{now.Add(-5 * time.Minute), "5m"},
		{now.Add(-3 * time.Hour), "3h"},
		{now.Add(-49 * time.Hour), "2d1h"},
		{now.Add(-400 * 24 * time.Hour), "400d"},
		{now.Add(time.Minute), "<invalid>"},
	} {
		if got := age(now, tc.at.Format(time.RFC3339)); got != tc.want {
			t.Errorf("age of %v: %q, want %q", now.Sub(tc.at), got, tc.want)
		}
	}
	if got := age(now, "yesterday"); got != "<unknown>" {
		t.Errorf("age of a bad time: %q", got)
	}
}
