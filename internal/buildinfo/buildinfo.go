// Package buildinfo reads what the Go toolchain recorded about the running
// binary: its module version, the Go version that built it, and the
// version-control revision it was built from. cupd answers it at
// GET /version and prints it for --version; cup prints it for `cup version`.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Info describes one build of a binary. Its JSON form is the body of
// GET /version.
type Info struct {
	// Version is the main module's version: a tag such as v0.3.0, a
	// pseudo-version for an untagged commit, or "(devel)" when the go
	// command recorded none.
	Version string `json:"version"`
	// GoVersion is the Go toolchain that built the binary, e.g. go1.25.1.
	GoVersion string `json:"goVersion"`
	// Revision is the commit the binary was built from; empty when the
	// build recorded none (go run, go test, or -buildvcs=false).
	Revision string `json:"revision,omitempty"`
	// Time is the commit time of Revision, in RFC 3339 form.
	Time string `json:"time,omitempty"`
	// Modified reports whether the work tree had uncommitted changes.
	Modified bool `json:"modified"`
}

// Read returns the running binary's build information. It never fails: a
// binary built without module support reports the version "unknown".
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown"}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is the one-line form printed by --version, e.g.
// "v0.3.0 (go1.25.1, commit 1ce1610c2a4b, 2026-11-25T03:12:09Z, modified)".
func (in Info) String() string {
	parts := []string{in.GoVersion}
	if in.Revision != "" {
		parts = append(parts, "commit "+in.Revision[:min(12, len(in.Revision))])
	}
	if in.Time != "" {
		parts = append(parts, in.Time)
	}
	if in.Modified {
		parts = append(parts, "modified")
	}
	return fmt.Sprintf("%s (%s)", in.Version, strings.Join(parts, ", "))
}
