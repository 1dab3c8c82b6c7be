// Package version reads what the Go toolchain recorded in a binary about its
// build: the module version and the VCS revision it was built from.
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Info is a binary's build: Version is the module version ("(devel)" for a
// build inside the source tree, "v1.2.3" for `go install …@v1.2.3`);
// Revision, Time and Modified come from the VCS stamp (absent when the
// build was not made in a checkout, or with -buildvcs=false).
type Info struct {
	Version  string
	Revision string
	Time     string
	Modified bool
	Go       string
}

// Read is the running binary's build info; Version is "unknown" when the
// binary carries none.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown"}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, Go: bi.GoVersion}
	if in.Version == "" {
		in.Version = "unknown"
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

// String is one line for a person: "v1.2.3 (rev 0123456789ab, modified,
// 2026-12-01T10:00:00Z, go1.25.0)"; what is unknown is left out.
func (in Info) String() string {
	var extra []string
	if in.Revision != "" {
		rev := in.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		extra = append(extra, "rev "+rev)
		if in.Modified {
			extra = append(extra, "modified")
		}
	}
	if in.Time != "" {
		extra = append(extra, in.Time)
	}
	if in.Go != "" {
		extra = append(extra, in.Go)
	}
	if len(extra) == 0 {
		return in.Version
	}
	return fmt.Sprintf("%s (%s)", in.Version, strings.Join(extra, ", "))
}
