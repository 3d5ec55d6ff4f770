package main

import (
	"encoding/json"
	"testing"
)

func TestGetNamespaces(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	t.Run("table", func(t *testing.T) {
		t.Parallel()
		want := "NAME         RESOURCES\n" +
			"default      15\n" +
			"org          1\n" +
			"production   3\n" +
			"staging      8\n"
		for _, typ := range []string{"namespaces", "namespace", "ns", "NS"} {
			if got := ok(t, url, "get", typ); got != want {
				t.Errorf("get %s:\n%s\nwant:\n%s", typ, got, want)
			}
		}
	})
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		var list struct {
			Kind  string
			Items []struct {
				Name      string
				Resources int
				Types     []struct {
					Group, Version, Plural, Kind string
					Count                        int
				}
			}
		}
		if err := json.Unmarshal([]byte(ok(t, url, "get", "ns", "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		if list.Kind != "List" || len(list.Items) != 4 {
			t.Fatalf("%+v", list)
		}
		prod := list.Items[2]
		if prod.Name != "production" || prod.Resources != 3 || len(prod.Types) != 3 {
			t.Fatalf("%+v", prod)
		}
		if f := prod.Types[2]; f.Group != "flags.cup.dev" || f.Version != "v1alpha1" || f.Plural != "flags" || f.Kind != "Flag" || f.Count != 1 {
			t.Fatalf("%+v", f)
		}
	})
	t.Run("one by name", func(t *testing.T) {
		t.Parallel()
		var ns struct {
			Name      string
			Resources int
		}
		if err := json.Unmarshal([]byte(ok(t, url, "get", "ns", "staging", "-o", "json")), &ns); err != nil {
			t.Fatal(err)
		}
		if ns.Name != "staging" || ns.Resources != 8 {
			t.Fatalf("%+v", ns)
		}
		if got := ok(t, url, "get", "ns", "org", "default", "-o", "name"); got != "namespaces/org\nnamespaces/default\n" {
			t.Fatalf("-o name: %q", got)
		}
	})
	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		fails(t, url, `namespace "nope" not found`, "get", "ns", "nope")
		fails(t, url, "-l, --field-selector, --problems and --watch are for resources", "get", "ns", "-l", "a=b")
		fails(t, url, "-l, --field-selector, --problems and --watch are for resources", "get", "ns", "-w")
		fails(t, url, "revision", "get", "ns", "--revision", "no-such-branch")
	})
}
