package units

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogDirChecked: a log.path in a directory other users could use to
// swap the log for a link is refused at load, at the line of log.path, with
// the fix; a sticky shared directory (/tmp) and one's own are fine.
func TestLogDirChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode fs.FileMode
		want string // "" loads
	}{
		{"own directory", 0o700, ""},
		{"sticky and open to all, like /tmp", 0o777 | fs.ModeSticky, ""},
		{"open to all, not sticky", 0o777, "not sticky, so they could swap the log for a link; choose a directory of your own, or fix it with `chmod go-w "},
		{"open to the group", 0o770, "mode 0770"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "logs")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			_, es := parse(t, "command: [sleep, \"1\"]\nlog:\n  path: "+filepath.Join(dir, "web.log")+"\n")
			if tc.want == "" {
				if len(es) > 0 {
					t.Fatalf("got %v, want it to load", es)
				}
				return
			}
			if len(es) != 1 || !strings.Contains(es[0].Error(), tc.want) || es[0].Line != 3 || !strings.Contains(es[0].Error(), "log.path: log directory "+dir) {
				t.Fatalf("got %v, want one error at line 3 that says %q", es, tc.want)
			}
		})
	}
}
