package main

import (
	"strings"
	"testing"
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
	if got := ok(t, url, "explain", "flags.spec.variants"); !strings.Contains(got, "FIELD:    variants <[]object>") || !strings.Contains(got, "key\t") && !strings.Contains(got, "  key ") {
		t.Fatalf("got %q", got)
	}
	fails(t, url, `field "spec.nope" does not exist in Flag`, "explain", "flags.spec.nope")
	fails(t, url, `the server has no resource type "widgets"`, "explain", "widgets")
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
