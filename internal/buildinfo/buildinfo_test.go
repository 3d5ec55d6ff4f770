package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want Info
		str  string
	}{
		{
			name: "tagged clean build",
			bi: debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "1ce1610c2a4b5d6e7f8091a2b3c4d5e6f7089a1b"},
				{Key: "vcs.time", Value: "2026-11-25T03:12:09Z"},
				{Key: "vcs.modified", Value: "false"},
			}},
			want: Info{Version: "v0.3.0", GoVersion: "go1.25.1", Revision: "1ce1610c2a4b5d6e7f8091a2b3c4d5e6f7089a1b", Time: "2026-11-25T03:12:09Z"},
			str:  "v0.3.0 (go1.25.1, commit 1ce1610c2a4b, 2026-11-25T03:12:09Z)",
		},
		{
			name: "work tree with changes",
			bi: debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"},
			}},
			want: Info{Version: "(devel)", GoVersion: "go1.25.1", Revision: "abc", Modified: true},
			str:  "(devel) (go1.25.1, commit abc, modified)",
		},
		{
			name: "no version control",
			bi:   debug.BuildInfo{GoVersion: "go1.25.1"},
			want: Info{Version: "(devel)", GoVersion: "go1.25.1"},
			str:  "(devel) (go1.25.1)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := fromBuildInfo(&tc.bi)
			if got != tc.want {
				t.Errorf("fromBuildInfo = %+v, want %+v", got, tc.want)
			}
			if s := got.String(); s != tc.str {
				t.Errorf("String = %q, want %q", s, tc.str)
			}
		})
	}
}

func TestReadNeverEmpty(t *testing.T) {
	t.Parallel()
	if in := Read(); in.Version == "" || in.GoVersion == "" {
		t.Errorf("Read() = %+v, want a version and a Go version", in)
	}
}
