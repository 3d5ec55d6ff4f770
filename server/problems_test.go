package server_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// TestListLeavesOutProblems checks that files which hold nothing readable by
// the name their path gives are left out of lists and reported, over
// Connect and REST, instead of failing the list: what a list shows, Get
// reads by that name.
func TestListLeavesOutProblems(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if _, err := f.repo.Commit("main", map[string][]byte{
		// What the original Cup writes for a PUT without apiVersion.
		"flags/default/no-api-version.yaml": []byte("kind: Flag\nmetadata:\n  name: no-api-version\nspec: {}\n"),
		"flags/default/broken.yaml":         []byte("apiVersion: [\n"),
		// A name the API refuses: Get could not ask for it.
		"flags/default/My_Res.yaml": []byte("apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata:\n  name: My_Res\n"),
		// A file whose content names another resource than its path.
		"flags/default/a.yaml": []byte("apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata:\n  name: b\n"),
	}, "add problems"); err != nil {
		t.Fatal(err)
	}
	wantPaths := []string{"flags/default/My_Res.yaml", "flags/default/a.yaml", "flags/default/broken.yaml", "flags/default/no-api-version.yaml"}
	wantReasons := []string{`"My_Res", which is not a valid name`, `holds Flag "b", whose file is flags/default/b.yaml`, "YAML", "missing apiVersion"}
	const wantNames = "dark-mode,new-checkout,search-v2"
	ctx := t.Context()

	rs, _ := f.clients(protocols[0])
	res, err := rs.List(ctx, connect.NewRequest(listReq("", 0, "")))
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if got := strings.Join(names(res.Msg.Items), ","); got != wantNames {
		t.Errorf("List = %s, want %s", got, wantNames)
	}
	checkWarnings := func(what string, ws []*cupv1alpha1.ListWarning) {
		t.Helper()
		var paths []string
		for i, w := range ws {
			paths = append(paths, w.GetPath())
			if i < len(wantReasons) && !strings.Contains(w.GetReason(), wantReasons[i]) {
				t.Errorf("%s: warning %s: %q does not say %q", what, w.GetPath(), w.GetReason(), wantReasons[i])
			}
		}
		if !slices.Equal(paths, wantPaths) {
			t.Errorf("%s warns of %v, want %v", what, paths, wantPaths)
		}
	}
	checkWarnings("List", res.Msg.Warnings)
	if res.Msg.MoreWarnings != 0 {
		t.Errorf("more_warnings = %d, want 0", res.Msg.MoreWarnings)
	}

	// Later pages do not repeat them; problems lists them all and no items.
	page, err := rs.List(ctx, connect.NewRequest(listReq("", 1, "")))
	if err != nil || len(page.Msg.Warnings) != 4 || page.Msg.NextPageToken == "" {
		t.Fatalf("first page = %v, %v", page, err)
	}
	page, err = rs.List(ctx, connect.NewRequest(listReq("", 1, page.Msg.NextPageToken)))
	if err != nil || len(page.Msg.Warnings) != 0 {
		t.Fatalf("second page = %v, %v; want no warnings", page, err)
	}
	req := listReq("", 0, "")
	req.Problems = true
	all, err := rs.List(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Msg.Items) != 0 || all.Msg.NextPageToken != "" {
		t.Errorf("problems lists items %v", names(all.Msg.Items))
	}
	checkWarnings("List with problems", all.Msg.Warnings)

	// Get agrees: the mismatched file is malformed under its path's name,
	// and the name its content claims is not there.
	_, err = rs.Get(ctx, connect.NewRequest(getReq("a", "")))
	wantCode(t, err, connect.CodeFailedPrecondition)
	if !strings.Contains(err.Error(), "flags/default/a.yaml") {
		t.Errorf("Get a = %v, want the file named", err)
	}
	_, err = rs.Get(ctx, connect.NewRequest(getReq("b", "")))
	wantCode(t, err, connect.CodeNotFound)

	// REST: the same, with Warning headers as Kubernetes sends them.
	r := f.do(t, "GET", flagsPath, "")
	if r.status != 200 {
		t.Fatalf("REST list: %d %s", r.status, r.body)
	}
	if got := itemNames(t, r.json(t)); got != wantNames {
		t.Errorf("REST list = %s, want %s", got, wantNames)
	}
	hs := r.header.Values("Warning")
	if len(hs) != 4 || !strings.HasPrefix(hs[0], `299 - "flags/default/My_Res.yaml: holds Flag \"My_Res\"`) {
		t.Errorf("Warning headers = %q", hs)
	}
	r = f.do(t, "GET", flagsPath+"?problems=true", "")
	m := r.json(t)
	if ws, _ := m["warnings"].([]any); r.status != 200 || len(ws) != 4 || itemNames(t, m) != "" {
		t.Errorf("REST problems = %d %s", r.status, r.body)
	}
	if r := f.do(t, "GET", flagsPath+"?problems=maybe", ""); r.status != 400 {
		t.Errorf("problems=maybe = %d, want 400", r.status)
	}
}

// TestListWarningsBounded checks that a list's first page carries at most
// 20 warnings, in its body and in Warning headers, and counts the rest.
func TestListWarningsBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	files := map[string][]byte{}
	for i := range 25 {
		files[fmt.Sprintf("flags/default/bad-%02d.yaml", i)] = []byte("apiVersion: [\n")
	}
	if _, err := f.repo.Commit("main", files, "add problems"); err != nil {
		t.Fatal(err)
	}
	rs, _ := f.clients(protocols[0])
	res, err := rs.List(t.Context(), connect.NewRequest(listReq("", 0, "")))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Msg.Warnings) != 20 || res.Msg.MoreWarnings != 5 || len(res.Msg.Items) != 3 {
		t.Errorf("List has %d items, %d warnings and %d more, want 3, 20 and 5", len(res.Msg.Items), len(res.Msg.Warnings), res.Msg.MoreWarnings)
	}
	r := f.do(t, "GET", flagsPath, "")
	hs := r.header.Values("Warning")
	if len(hs) != 21 || !strings.Contains(hs[20], "5 more files left out") {
		t.Errorf("Warning headers: %d, last %q", len(hs), hs[len(hs)-1])
	}
	if m := r.json(t); m["moreWarnings"] != float64(5) {
		t.Errorf("REST moreWarnings = %v", m["moreWarnings"])
	}
}
