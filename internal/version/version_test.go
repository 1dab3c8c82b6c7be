package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"release", debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3 (go1.25.0)"},
		{"checkout", debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"},
		}}, "(devel) (rev 0123456789ab, modified, 2026-12-01T10:00:00Z, go1.25.0)"},
		{"clean checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"},
		}}, "(devel) (rev abc)"},
		{"nothing", debug.BuildInfo{}, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fromBuildInfo(&tc.bi).String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
