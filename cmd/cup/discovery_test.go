package main

import (
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/servertest"
)

func TestAPIResources(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	golden(t, "api_resources.golden", ok(t, url, "api-resources"))
}

func TestExplain(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	golden(t, "explain_flags.golden", ok(t, url, "explain", "flags"))
	golden(t, "explain_flags_spec.golden", ok(t, url, "explain", "flags.spec"))
	golden(t, "explain_flags_spec_rollout.golden", ok(t, url, "explain", "fl.spec.rollout"))
	if got := ok(t, url, "explain", "flags.flags.cup.dev.spec.variants.key"); !strings.Contains(got, "FIELD:    key <string>") {
		t.Fatalf("got %q", got)
	}
	if got := ok(t, url, "explain", "flags.spec.variants"); !strings.Contains(got, "FIELD:    variants <[]Object>") || !strings.Contains(got, "key\t") && !strings.Contains(got, "  key ") {
		t.Fatalf("got %q", got)
	}
	fails(t, url, `field "spec.nope" does not exist in Flag`, "explain", "flags.spec.nope")
	fails(t, url, `the server has no resource type "widgets"`, "explain", "widgets")
	// Constraints, and required fields in the parent's list.
	golden(t, "explain_flags_spec_variants_key.golden", ok(t, url, "explain", "flags.spec.variants.key"))
	golden(t, "explain_services_recursive.golden", ok(t, url, "explain", "services", "--recursive"))
	golden(t, "explain_flags_recursive.golden", ok(t, url, "explain", "flags", "--recursive"))
	// metadata is a $ref to cup's ObjectMeta.
	if got := ok(t, url, "explain", "flags.metadata.name"); !strings.Contains(got, "FIELD:    name <string>") || !strings.Contains(got, "maxLength: 253") {
		t.Errorf("explain flags.metadata.name:\n%s", got)
	}
	fails(t, url, `unknown flag: --recursve`, "explain", "flags", "--recursve")
}

// TestExplainTrickySchemas explains types whose schemas hold themselves
// ($ref cycles), nullable and exclusive bounds, numbers float64 cannot
// hold, and $ref with siblings, against a cupd serving them.
func TestExplainTrickySchemas(t *testing.T) {
	t.Parallel()
	files, err := servertest.SchemaFiles()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := gitrepo.Init(dir, "main", files, "schemas\n"); err != nil {
		t.Fatal(err)
	}
	url := newServer(t, func(o *app.Options) { o.Repository = dir })
	golden(t, "explain_trees_recursive.golden", ok(t, url, "explain", "trees", "--recursive"))
	golden(t, "explain_trees_spec_parent.golden", ok(t, url, "explain", "trees.spec.parent"))
	golden(t, "explain_gadgets_spec.golden", ok(t, url, "explain", "gadgets.spec", "--recursive"))
	golden(t, "explain_widgets_spec_color.golden", ok(t, url, "explain", "widgets.spec.color"))
	golden(t, "explain_gadgets_spec_size.golden", ok(t, url, "explain", "gadgets.spec.size"))
	// Deep schemas stop at ten levels, and say where.
	golden(t, "explain_widgets_recursive.golden", ok(t, url, "explain", "widgets", "--recursive"))
	// A path through the cycle goes on as deep as asked.
	if got := ok(t, url, "explain", "trees.spec.children.children.children.weight"); !strings.Contains(got, "minimum: 0 (exclusive)") ||
		!strings.Contains(got, "maximum: 1000") || !strings.Contains(got, "default: 1") {
		t.Errorf("explain trees.spec.children.children.children.weight:\n%s", got)
	}
	fails(t, url, `field "spec.children.nope" does not exist in Tree`, "explain", "trees.spec.children.nope")
}

func TestProposalsWithoutSCM(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	// The demo has no SCM: the server's message is printed, without the code.
	r := cup(t, url, "", "proposals")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "error: ") || strings.Contains(r.stderr, "failed_precondition:") {
		t.Fatalf("%+v", r)
	}
	fails(t, url, "", "proposals", "get", "42")
	fails(t, url, `--state: "pending"`, "proposals", "--state", "pending")
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	got := ok(t, url, "__complete", "get", "")
	for _, want := range []string{"flags\n", "segments\n", "services\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("completion lacks %q:\n%s", want, got)
		}
	}
	if got := ok(t, url, "__complete", "delete", "fl", ""); !strings.Contains(got, "new-checkout\n") || !strings.Contains(got, "search-v2\n") {
		t.Errorf("name completion:\n%s", got)
	}
	if got := ok(t, url, "__complete", "get", "fl", "-n", "production", ""); strings.Contains(got, "search-v2") || !strings.Contains(got, "new-checkout") {
		t.Errorf("name completion in production:\n%s", got)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if out := ok(t, "", "completion", shell); !strings.Contains(out, "cup") {
			t.Errorf("%s completion: %q", shell, out)
		}
	}
}
