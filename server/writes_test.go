package server_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// changeSet makes a change set in the fixture's repository: a branch with
// the source's change-set prefix at the default branch's head, as a write in
// branch mode would.
func (f *fixture) changeSet(t *testing.T, name string) string {
	t.Helper()
	if err := f.repo.Branch(name, "main"); err != nil {
		t.Fatal(err)
	}
	return f.resolve(t, name)
}

// resolve is the commit rev names in the fixture's repository.
func (f *fixture) resolve(t *testing.T, rev string) string {
	t.Helper()
	id, err := f.repo.Resolve(rev)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// commits counts the first-parent history of rev.
func (f *fixture) commits(t *testing.T, rev string) int {
	t.Helper()
	log, err := f.repo.Log(rev)
	if err != nil {
		t.Fatal(err)
	}
	return len(log)
}

func TestChangeSet(t *testing.T) {
	t.Parallel()
	eachProtocol(t, func(t *testing.T, f *fixture, p protocol) {
		rs, _ := f.clients(p)
		ctx := t.Context()
		main := f.head(t)
		base := f.changeSet(t, "cup/feature")

		put := putReq(flag(t, "beta-banner", true, nil))
		put.ChangeSet = "cup/feature"
		res, err := rs.Put(ctx, connect.NewRequest(put))
		if err != nil {
			t.Fatal(err)
		}
		r := res.Msg.Result
		if r.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED || r.Branch != "cup/feature" ||
			r.BaseCommit != base || f.resolve(t, "cup/feature") != r.Commit || r.Replayed {
			t.Fatalf("Put in change set = %v", r)
		}
		if f.head(t) != main {
			t.Fatal("a write to a change set moved main")
		}
		// Reads name the change set as revision.
		got, err := rs.Get(ctx, connect.NewRequest(getReq("beta-banner", "cup/feature")))
		if err != nil || got.Msg.Commit != r.Commit {
			t.Fatalf("Get in change set = %v, %v", got, err)
		}
		_, err = rs.Get(ctx, connect.NewRequest(getReq("beta-banner", "")))
		wantCode(t, err, connect.CodeNotFound)

		// A second write adds a commit on top of the first.
		del := deleteReq("dark-mode")
		del.ChangeSet = "cup/feature"
		d, err := rs.Delete(ctx, connect.NewRequest(del))
		if err != nil {
			t.Fatal(err)
		}
		if d.Msg.Result.BaseCommit != r.Commit || d.Msg.Result.Branch != "cup/feature" || f.resolve(t, "cup/feature") != d.Msg.Result.Commit {
			t.Fatalf("Delete in change set = %v", d.Msg.Result)
		}
		if f.head(t) != main {
			t.Fatal("a delete in a change set moved main")
		}

		// Unknown change sets, and branches that are not change sets.
		refs := f.refs(t)
		for _, name := range []string{"cup/nope", "main"} {
			put := putReq(flag(t, "x", true, nil))
			put.ChangeSet = name
			_, err := rs.Put(ctx, connect.NewRequest(put))
			wantCode(t, err, connect.CodeNotFound)
			if !strings.Contains(err.Error(), `"`+name+`"`) {
				t.Fatalf("error %v does not name change set %q", err, name)
			}
		}
		if f.head(t) != main || f.resolve(t, "cup/feature") != d.Msg.Result.Commit || strings.Join(f.refs(t), ",") != strings.Join(refs, ",") {
			t.Fatal("a write to an unknown change set changed the repository")
		}
	})
}

func TestChangeSetREST(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	main := f.head(t)
	f.changeSet(t, "cup/rest")

	put := f.do(t, "PUT", flagsPath+"/beta-banner?changeSet=cup/rest", `{"spec": {"enabled": true}}`)
	if put.status != 202 {
		t.Fatalf("PUT ?changeSet = %d %s", put.status, put.body)
	}
	result := put.json(t)["result"].(map[string]any)
	if result["branch"] != "cup/rest" || result["commit"] != f.resolve(t, "cup/rest") || f.head(t) != main {
		t.Fatalf("PUT ?changeSet = %s", put.body)
	}
	if got := f.do(t, "GET", flagsPath+"/beta-banner?revision=cup/rest", ""); got.status != 200 || got.header.Get("Cup-Commit") != result["commit"] {
		t.Fatalf("GET ?revision=<change set> = %d %s", got.status, got.body)
	}
	del := f.do(t, "DELETE", flagsPath+"/beta-banner?changeSet=cup%2Frest", "")
	if del.status != 202 || f.head(t) != main || f.resolve(t, "cup/rest") != del.header.Get("Cup-Commit") {
		t.Fatalf("DELETE ?changeSet = %d %s", del.status, del.body)
	}
	unknown := f.do(t, "PUT", flagsPath+"/x?changeSet=cup/nope", `{"spec": {"enabled": true}}`)
	if m := unknown.json(t); unknown.status != 404 || m["code"] != "not_found" || !strings.Contains(m["message"].(string), `"cup/nope"`) {
		t.Fatalf("PUT ?changeSet=<unknown> = %d %s", unknown.status, unknown.body)
	}
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	eachProtocol(t, func(t *testing.T, f *fixture, p protocol) {
		rs, _ := f.clients(p)
		ctx := t.Context()
		before := f.commits(t, "main")

		put := func(key string, enabled bool) (*cupv1alpha1.WriteResult, error) {
			req := putReq(flag(t, "beta-banner", enabled, map[string]string{"team": "web"}))
			req.IdempotencyKey = key
			res, err := rs.Put(ctx, connect.NewRequest(req))
			if err != nil {
				return nil, err
			}
			return res.Msg.Result, nil
		}
		first, err := put("create:beta-banner/1", true)
		if err != nil {
			t.Fatal(err)
		}
		if first.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED || first.Replayed {
			t.Fatalf("first Put = %v", first)
		}
		again, err := put("create:beta-banner/1", true)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Replayed || again.Commit != first.Commit || again.Outcome != first.Outcome || again.Branch != first.Branch {
			t.Fatalf("repeated Put = %v, want a replay of %v", again, first)
		}
		if n := f.commits(t, "main"); n != before+1 || f.head(t) != first.Commit {
			t.Fatalf("%d commits after a put and its repeat, want %d", n-before, 1)
		}

		// The same key for a different request.
		_, err = put("create:beta-banner/1", false)
		wantCode(t, err, connect.CodeFailedPrecondition)
		if !strings.Contains(err.Error(), "create:beta-banner/1") {
			t.Fatalf("error %v does not name the key", err)
		}

		// A dry run neither uses nor records its key.
		for _, key := range []string{"create:beta-banner/1", "update:beta-banner/2"} {
			dry := putReq(flag(t, "beta-banner", false, map[string]string{"team": "web"}))
			dry.IdempotencyKey, dry.DryRun = key, true
			d, err := rs.Put(ctx, connect.NewRequest(dry))
			if err != nil || d.Msg.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_DRY_RUN || d.Msg.Result.Replayed {
				t.Fatalf("dry run with key %q = %v, %v", key, d, err)
			}
		}
		second, err := put("update:beta-banner/2", false)
		if err != nil || second.Replayed || second.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED {
			t.Fatalf("Put after a dry run with its key = %v, %v", second, err)
		}

		// A repeated delete replays instead of failing with NotFound.
		del := deleteReq("beta-banner")
		del.IdempotencyKey = "delete:beta-banner"
		d1, err := rs.Delete(ctx, connect.NewRequest(del))
		if err != nil {
			t.Fatal(err)
		}
		d2, err := rs.Delete(ctx, connect.NewRequest(del))
		if err != nil {
			t.Fatal(err)
		}
		if d1.Msg.Result.Replayed || !d2.Msg.Result.Replayed || d2.Msg.Result.Commit != d1.Msg.Result.Commit || f.head(t) != d1.Msg.Result.Commit {
			t.Fatalf("Delete twice = %v, then %v", d1.Msg.Result, d2.Msg.Result)
		}
	})
}

func TestIdempotencyKeyREST(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rs, _ := f.clients(protocols[0])
	before := f.commits(t, "main")

	body := `{"metadata": {"labels": {"team": "web"}}, "spec": {"enabled": true, "rollout": 10}}`
	first := f.do(t, "PUT", flagsPath+"/beta-banner", body, "Idempotency-Key", "k-1")
	if first.status != 202 || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first PUT = %d %v %s", first.status, first.header, first.body)
	}
	commit := first.header.Get("Cup-Commit")
	// The same write again, by header, by query parameter and with the
	// body's keys in another order.
	for _, again := range []restResponse{
		f.do(t, "PUT", flagsPath+"/beta-banner", body, "Idempotency-Key", "k-1"),
		f.do(t, "PUT", flagsPath+"/beta-banner?idempotencyKey=k-1", body),
		f.do(t, "PUT", flagsPath+"/beta-banner?idempotencyKey=k-1", `{"spec":{"rollout":10,"enabled":true},"metadata":{"labels":{"team":"web"}}}`, "Idempotency-Key", "k-1"),
	} {
		result := again.json(t)["result"].(map[string]any)
		if again.status != 202 || again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("Cup-Commit") != commit ||
			result["replayed"] != true || result["commit"] != commit {
			t.Fatalf("repeated PUT = %d %v %s", again.status, again.header, again.body)
		}
	}
	if n := f.commits(t, "main"); n != before+1 {
		t.Fatalf("%d commits after a put and its repeats, want 1", n-before)
	}

	// Connect and REST make the same request of the same write.
	req := putReq(flag(t, "beta-banner", true, map[string]string{"team": "web"}))
	req.IdempotencyKey = "k-1"
	res, err := rs.Put(t.Context(), connect.NewRequest(req))
	if err != nil || !res.Msg.Result.Replayed || res.Msg.Result.Commit != commit {
		t.Fatalf("Connect Put with the REST write's key = %v, %v", res, err)
	}

	reused := f.do(t, "PUT", flagsPath+"/beta-banner", `{"spec": {"enabled": false}}`, "Idempotency-Key", "k-1")
	if m := reused.json(t); reused.status != 400 || m["code"] != "failed_precondition" || !strings.Contains(m["message"].(string), "k-1") {
		t.Fatalf("PUT reusing a key = %d %s", reused.status, reused.body)
	}
	del := f.do(t, "DELETE", flagsPath+"/beta-banner", "", "Idempotency-Key", "k-2")
	delAgain := f.do(t, "DELETE", flagsPath+"/beta-banner", "", "Idempotency-Key", "k-2")
	if del.status != 202 || delAgain.status != 202 || delAgain.header.Get("Idempotent-Replayed") != "true" ||
		delAgain.header.Get("Cup-Commit") != del.header.Get("Cup-Commit") {
		t.Fatalf("DELETE twice = %d, then %d %v %s", del.status, delAgain.status, delAgain.header, delAgain.body)
	}

	for _, tc := range []struct {
		name    string
		header  []string
		path    string
		mention string
	}{
		{"space in the header", []string{"Idempotency-Key", "a b"}, "", `Idempotency-Key: "a b"`},
		{"header and query disagree", []string{"Idempotency-Key", "a"}, "?idempotencyKey=b", "Idempotency-Key"},
	} {
		r := f.do(t, "PUT", flagsPath+"/x"+tc.path, `{"spec": {"enabled": true}}`, tc.header...)
		if m := r.json(t); r.status != 400 || m["code"] != "invalid_argument" || !strings.Contains(m["message"].(string), tc.mention) {
			t.Fatalf("%s: PUT = %d %s", tc.name, r.status, r.body)
		}
	}
}
