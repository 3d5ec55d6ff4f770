package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// flagsAllNamespaces is the demo's flags in every namespace, as cup get
// flags -A prints them.
// (at demoNow): NAME, the printer columns of priority 0, AGE.
const flagsAllNamespaces = "NAMESPACE    NAME           ENABLED   ROLLOUT   AGE\n" +
	"default      dark-mode      false     0         5d\n" +
	"default      new-checkout   true      50        5d\n" +
	"default      search-v2      true      100       5d\n" +
	"production   new-checkout   false     0         5d\n" +
	"staging      dark-mode      true      100       5d\n" +
	"staging      new-checkout   true      100       5d\n"

func TestGet(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	t.Run("golden", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ name, golden string }{
			{"table", "get_table.golden"},
			{"wide", "get_wide.golden"},
			{"yaml", "get_yaml.golden"},
			{"json", "get_json.golden"},
			{"name", "get_name.golden"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				golden(t, tc.golden, okAt(t, demoNow, url, "get", "flags", "-o", tc.name))
			})
		}
	})
	t.Run("one resource as yaml", func(t *testing.T) {
		t.Parallel()
		golden(t, "get_one_yaml.golden", ok(t, url, "get", "fl", "new-checkout", "-o", "yaml"))
	})
	t.Run("type names", func(t *testing.T) {
		t.Parallel()
		want := ok(t, url, "get", "flags", "new-checkout", "-o", "name")
		if want != "flags.flags.cup.dev/new-checkout\n" {
			t.Fatalf("got %q", want)
		}
		for _, typ := range []string{"flag", "Flag", "FLAGS", "fl", "flags.flags.cup.dev", "Flag.flags.cup.dev"} {
			if got := ok(t, url, "get", typ, "new-checkout", "-o", "name"); got != want {
				t.Errorf("get %s: %q, want %q", typ, got, want)
			}
		}
		if got := ok(t, url, "get", "flag/new-checkout", "fl/dark-mode", "-o", "name"); got != want+"flags.flags.cup.dev/dark-mode\n" {
			t.Errorf("TYPE/NAME: %q", got)
		}
	})
	t.Run("several types", func(t *testing.T) {
		t.Parallel()
		got := ok(t, url, "get", "flag/new-checkout", "svc/api")
		if !strings.Contains(got, "flags.flags.cup.dev/new-checkout ") || !strings.Contains(got, "services.apps.cup.dev/api ") {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("several names are a List", func(t *testing.T) {
		t.Parallel()
		var list struct {
			APIVersion, Kind string
			Items            []struct{ Metadata struct{ Name string } }
		}
		if err := json.Unmarshal([]byte(ok(t, url, "get", "flags", "new-checkout", "dark-mode", "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		if list.APIVersion != "v1" || list.Kind != "List" || len(list.Items) != 2 || list.Items[1].Metadata.Name != "dark-mode" {
			t.Fatalf("%+v", list)
		}
	})
	t.Run("selector", func(t *testing.T) {
		t.Parallel()
		if got := ok(t, url, "get", "flags", "-l", "team in (payments,web)", "-o", "name"); got != "flags.flags.cup.dev/dark-mode\nflags.flags.cup.dev/new-checkout\n" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("paging", func(t *testing.T) {
		t.Parallel()
		if got, want := ok(t, url, "get", "flags", "--limit", "1", "-o", "name"), ok(t, url, "get", "flags", "-o", "name"); got != want || strings.Count(got, "\n") != 3 {
			t.Fatalf("paged %q, unpaged %q", got, want)
		}
	})
	t.Run("namespace", func(t *testing.T) {
		t.Parallel()
		got := ok(t, url, "get", "flags", "-n", "production", "-o", "wide")
		if !strings.Contains(got, "new-checkout") || !strings.Contains(got, "production") || strings.Contains(got, "dark-mode") {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("all namespaces", func(t *testing.T) {
		t.Parallel()
		want := flagsAllNamespaces
		if got := okAt(t, demoNow, url, "get", "flags", "-A"); got != want {
			t.Errorf("-A:\n%s\nwant:\n%s", got, want)
		}
		// Paged, the same; -n is overridden.
		if got := okAt(t, demoNow, url, "get", "flags", "--all-namespaces", "--limit", "2", "-n", "staging"); got != want {
			t.Errorf("-A --limit 2:\n%s\nwant:\n%s", got, want)
		}
		wide := okAt(t, demoNow, url, "get", "flags", "-A", "-o", "wide")
		if first, _, _ := strings.Cut(wide, "\n"); first != "NAMESPACE    NAME           ENABLED   ROLLOUT   DESCRIPTION                             AGE   RESOURCE VERSION   LABELS" ||
			!strings.Contains(wide, "\nproduction   new-checkout   false     0         The redesigned checkout flow.           5d    81b0c5c            team=payments\n") {
			t.Errorf("-A -o wide:\n%s", wide)
		}
	})
	t.Run("all namespaces with a selector", func(t *testing.T) {
		t.Parallel()
		want := ""
		for l := range strings.Lines(flagsAllNamespaces) {
			if strings.HasPrefix(l, "NAMESPACE") || strings.Contains(l, "new-checkout") { // team=payments
				want += l
			}
		}
		if got := okAt(t, demoNow, url, "get", "flags", "-A", "-l", "team=payments"); got != want {
			t.Errorf("got:\n%s\nwant:\n%s", got, want)
		}
		r := cup(t, url, "", "get", "flags", "-A", "-l", "team=nobody")
		if r.code != 0 || r.stdout != "" || r.stderr != "No resources found.\n" {
			t.Errorf("no match: %+v", r)
		}
	})
	t.Run("all namespaces as json", func(t *testing.T) {
		t.Parallel()
		var list struct {
			Kind  string
			Items []struct {
				Metadata struct{ Namespace, Name string }
			}
		}
		if err := json.Unmarshal([]byte(ok(t, url, "get", "flags", "-A", "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range list.Items {
			got = append(got, it.Metadata.Namespace+"/"+it.Metadata.Name)
		}
		want := "default/dark-mode default/new-checkout default/search-v2 production/new-checkout staging/dark-mode staging/new-checkout"
		if list.Kind != "List" || strings.Join(got, " ") != want {
			t.Fatalf("%s: %v", list.Kind, got)
		}
	})
	t.Run("grpc", func(t *testing.T) {
		t.Parallel()
		if got := ok(t, url, "--protocol", "grpc", "get", "services", "api", "-o", "name"); got != "services.apps.cup.dev/api\n" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("segments through the wasm controller", func(t *testing.T) {
		t.Parallel()
		if got := ok(t, url, "get", "segments", "-o", "name"); !strings.Contains(got, "segments.flags.cup.dev/beta-testers") {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("revision", func(t *testing.T) {
		t.Parallel()
		if got := ok(t, url, "get", "flags", "new-checkout", "--revision", "HEAD", "-o", "name"); got != "flags.flags.cup.dev/new-checkout\n" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		fails(t, url, `the server has no resource type "widgets"`, "get", "widgets")
		fails(t, url, "not found", "get", "flags", "nope")
		fails(t, url, `-o: "xml"`, "get", "flags", "-o", "xml")
		fails(t, url, "a resource cannot be retrieved by name across all namespaces", "get", "flags", "dark-mode", "-A")
		fails(t, url, "a resource cannot be retrieved by name across all namespaces", "get", "flag/dark-mode", "-A")
		fails(t, url, "a resource cannot be retrieved by name across all namespaces", "get", "flags", "dark-mode", "-A", "-w")
		fails(t, url, "revision", "get", "flags", "--revision", "no-such-branch")
		fails(t, url, "--protocol", "--protocol", "http3", "get", "flags")
	})
	t.Run("unreachable server", func(t *testing.T) {
		t.Parallel()
		fails(t, "http://127.0.0.1:1", "", "get", "flags")
	})
}

func TestAmbiguousType(t *testing.T) {
	t.Parallel()
	// Two definitions that share a name: the error lists both.
	defs := testDefs("flags.cup.dev", "other.example")
	if got := lookupType(defs, "flag"); len(got) != 2 {
		t.Fatalf("lookupType: %d matches", len(got))
	}
	c := &cli{defs: defs}
	_, err := c.resolveType(t.Context(), "fl")
	if err == nil || !strings.Contains(err.Error(), "flags.flags.cup.dev, flags.other.example") {
		t.Fatalf("err = %v", err)
	}
	tr, err := c.resolveType(t.Context(), "flags.other.example")
	if err != nil || tr.qualified() != "flags.other.example" || tr.version != "v1" {
		t.Fatalf("%+v, %v", tr, err)
	}
}
