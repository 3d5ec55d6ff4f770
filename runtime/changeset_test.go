package runtime_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cup-dev/cup/internal/memsource"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/runtime"
	"github.com/cup-dev/cup/source"
)

const (
	flagsPath  = "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags"
	bundlePath = "/apis/flags.cup.dev/v1alpha1/namespaces/default/flagbundles/web"
)

// branchOf returns the branch a REST write answered with.
func branchOf(t *testing.T, r servertest.Response) string {
	t.Helper()
	if r.Status != 202 {
		t.Fatalf("write: %d %s", r.Status, r.Body)
	}
	var body struct {
		Result struct{ Branch, Commit string }
	}
	if err := json.Unmarshal([]byte(r.Body), &body); err != nil || body.Result.Branch == "" {
		t.Fatalf("write answered %s: no branch (%v)", r.Body, err)
	}
	return body.Result.Branch
}

// bundledFlags returns the names of the flags the web bundle holds at
// revision, or its status when it cannot be read.
func bundledFlags(t *testing.T, srv *servertest.Server, revision string) string {
	t.Helper()
	status, m := getJSON(t, srv, bundlePath+"?revision="+revision)
	if status != 200 {
		return fmt.Sprint("HTTP ", status)
	}
	spec, _ := m["spec"].(map[string]any)
	flags, _ := spec["flags"].(map[string]any)
	var names []string
	for n := range flags {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// gauge returns the value of the gauge name in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// TestOutputsJoinTheChangeSetOfTheirInputs: when cupd writes change sets,
// a flag put through the API becomes a change set, and the bundle its
// change affects is committed into that same change set, on top of the
// flag's commit, by the reconciler; a second change added to the change
// set moves the bundle again; commits pushed to it from elsewhere are
// picked up when the reconciler's write finds the change set moved; the
// served branch is not touched until the change set is merged, and then
// nothing more is written. Once the change set is gone (its branch
// deleted), it is no longer followed.
func TestOutputsJoinTheChangeSetOfTheirInputs(t *testing.T) {
	var calls atomic.Int64
	srv := servertest.Start(t, servertest.WithBundles(), servertest.WithSourceOptions(memsource.WithWriteMode(source.ModeBranch)))
	r := bundleReconciler(compile(&calls))
	r.Write.Mode = runtime.WriteProposal
	reg := prometheus.NewRegistry()
	rt := servertest.Reconcile(t, srv, []*runtime.Reconciler{r}, runtime.Options{Poll: 10 * time.Millisecond, Metrics: runtime.NewMetrics(reg)})
	ctx := t.Context()
	if err := rt.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	served := srv.Head(t)
	// The served branch has no bundle yet: the reconciler proposed the
	// first one in a change set of its own.
	own, err := srv.Repo.Branches(source.DefaultBranchPrefix)
	if err != nil || len(own) != 1 {
		t.Fatalf("change sets %v (%v): want the reconciler's own", own, err)
	}

	// A flag labelled into web's selection: its change set gets the bundle.
	cs := branchOf(t, srv.Do(t, "PUT", flagsPath+"/search-v2", `{"metadata": {"labels": {"team": "web"}}, "spec": {"enabled": true}}`))
	if _, ok := own[cs]; ok {
		t.Fatalf("the put went into the reconciler's change set %s", cs)
	}
	if err := rt.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := bundledFlags(t, srv, cs); got != "dark-mode,search-v2" {
		t.Fatalf("the change set's bundle holds %q; want dark-mode,search-v2", got)
	}
	log, err := srv.Repo.Log(cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) < 3 || !strings.HasPrefix(log[0].Message, "Reconcile flag-bundles: 1 output(s) for default/web") ||
		!strings.Contains(log[0].Message, "Requested-by: reconciler:flag-bundles") || log[2].ID != served {
		t.Fatalf("the change set's log: want the bundle's commit on the flag's, on the served head %s; got %+v", served, log[:min(3, len(log))])
	}
	if h := srv.Head(t); h != served {
		t.Fatalf("the served branch moved from %s to %s", served, h)
	}

	// A second change to the same change set: dark-mode labelled out.
	again := branchOf(t, srv.Do(t, "PUT", flagsPath+"/dark-mode?changeSet="+cs, `{"metadata": {"labels": {"team": "ops"}}, "spec": {"enabled": false}}`))
	if again != cs {
		t.Fatalf("the second put went to %s, not %s", again, cs)
	}
	if err := rt.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := bundledFlags(t, srv, cs); got != "search-v2" {
		t.Fatalf("after the second change the change set's bundle holds %q; want search-v2", got)
	}
	if n := gauge(t, reg, "cup_reconciler_change_sets"); n != 1 {
		t.Fatalf("cup_reconciler_change_sets = %v; want 1", n)
	}

	// Converged: poking the change set again writes nothing.
	before, _ := srv.Repo.Resolve(cs)
	rt.PokeChangeSet(cs, before, before)
	if err := rt.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if after, _ := srv.Repo.Resolve(cs); after != before {
		t.Fatalf("a converged change set moved from %s to %s", before, after)
	}

	// Two commits pushed to the change set from elsewhere, of which the
	// runtime hears only of the first (as from a write through a server
	// that then failed): its write finds the change set moved, and the
	// outputs are computed again at the change set's head.
	flagFile := func(name, team string) map[string][]byte {
		return map[string][]byte{"flags/default/" + name + ".yaml": fmt.Appendf(nil,
			"apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata:\n  labels: {team: %s}\n  name: %s\n  namespace: default\nspec: {enabled: true}\n", team, name)}
	}
	first, err := srv.Repo.Commit(cs, flagFile("new-checkout", "web"), "new-checkout joins web\n")
	if err != nil {
		t.Fatal(err)
	}
	second, err := srv.Repo.Commit(cs, flagFile("dark-mode", "web"), "dark-mode joins web again\n")
	if err != nil {
		t.Fatal(err)
	}
	rt.PokeChangeSet(cs, before, first)
	if err := rt.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := bundledFlags(t, srv, cs); got != "dark-mode,new-checkout,search-v2" {
		t.Fatalf("after commits from elsewhere the change set's bundle holds %q; want dark-mode,new-checkout,search-v2", got)
	}
	if log, err := srv.Repo.Log(cs); err != nil || log[1].ID != second {
		t.Fatalf("the bundle's commit is not on the change set's head %s: %+v (%v)", second, log[:2], err)
	}

	// Squash-merged onto the served branch: the outputs match there
	// already, so nothing more is written, on the branch or in the
	// reconciler's own change set.
	csFiles, err := srv.Repo.Files(cs)
	if err != nil {
		t.Fatal(err)
	}
	mainFiles, err := srv.Repo.Files("main")
	if err != nil {
		t.Fatal(err)
	}
	squash := map[string][]byte{}
	for p, c := range csFiles {
		if !bytes.Equal(mainFiles[p], c) {
			squash[p] = c
		}
	}
	for p := range mainFiles {
		if _, ok := csFiles[p]; !ok {
			squash[p] = nil
		}
	}
	merged, err := srv.Repo.Commit("main", squash, "Merge "+cs+"\n")
	if err != nil {
		t.Fatal(err)
	}
	rt.Poke()
	if err := rt.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if h := srv.Head(t); h != merged {
		t.Fatalf("the served branch moved past the merge %s to %s", merged, h)
	}
	now, err := srv.Repo.Branches(source.DefaultBranchPrefix)
	if err != nil {
		t.Fatal(err)
	}
	for name, commit := range own {
		if now[name] != commit {
			t.Fatalf("the reconciler's change set %s moved from %s to %s after the merge", name, commit, now[name])
		}
	}

	// Merged elsewhere and its branch deleted while outputs were due: the
	// write finds the change set gone, and it is no longer followed.
	if err := srv.Repo.DeleteBranch(cs); err != nil {
		t.Fatal(err)
	}
	rt.PokeChangeSet(cs, "", log[1].ID) // back to the first flag change: the bundle differs
	if err := rt.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Repo.Resolve(cs); err == nil {
		t.Fatalf("the deleted change set %s was made again", cs)
	}
	if n := gauge(t, reg, "cup_reconciler_change_sets"); n != 0 {
		t.Fatalf("cup_reconciler_change_sets = %v after the change set was gone; want 0", n)
	}

	// Another proposal goes on as before, from the served branch.
	other := branchOf(t, srv.Do(t, "PUT", flagsPath+"/brand-new", `{"metadata": {"labels": {"team": "web"}}, "spec": {"enabled": true}}`))
	if err := rt.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := bundledFlags(t, srv, other); got != "brand-new,dark-mode,new-checkout,search-v2" {
		t.Fatalf("the other change set's bundle holds %q; want brand-new,dark-mode,new-checkout,search-v2", got)
	}
	if n := gauge(t, reg, "cup_reconciler_change_sets"); n != 1 {
		t.Fatalf("cup_reconciler_change_sets = %v; want 1", n)
	}
}
