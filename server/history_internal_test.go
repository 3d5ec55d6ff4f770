package server

import "testing"

func TestMergedProposal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ msg, want string }{
		{"Merge pull request #42 from acme/cup/3ae1f1e4d5\n\nPut Flag default/x\n", "42"},
		{"Merge pull request 'Put Flag default/x' (#7) from cup/abc into main\n", "7"},
		{"Merge branch 'cup/abc' into 'main'\n\nPut Flag\n\nSee merge request acme/config!13\n", "13"},
		{"Put Flag default/x\n\nfixes #42\n", ""},
		{"Merge branch 'feature'\n", ""},
	} {
		if got := mergedProposal(tc.msg); got != tc.want {
			t.Errorf("mergedProposal(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}
