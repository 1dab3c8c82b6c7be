package supervisor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSpawnMissingWorkdir: a missing working directory is named as such,
// not reported as the program missing (what exec's chdir errno says).
func TestSpawnMissingWorkdir(t *testing.T) {
	dir := t.TempDir()
	o := newTestOwner(t, Options{StateDir: filepath.Join(dir, "state"), Role: "worker", Mode: ModePGroup})
	defer o.Close()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, want string
		is              error
	}{
		{"missing", filepath.Join(dir, "missing"), "spawn web: working directory: stat " + filepath.Join(dir, "missing") + ": no such file or directory", fs.ErrNotExist},
		{"a file", file, "spawn web: working directory " + file + " is not a directory", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := o.SpawnOwned(t.Context(), Spec{Unit: "web", Argv: []string{"sleep", "100"}, Env: []string{"PATH=" + os.Getenv("PATH")}, Dir: tt.dir})
			if err == nil {
				syscallKill(c.PGID)
				t.Fatalf("SpawnOwned with workdir %s: no error", tt.dir)
			}
			if err.Error() != tt.want || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("SpawnOwned: got %q, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "sleep") {
				t.Errorf("the error blames the program: %v", err)
			}
		})
	}
}

func syscallKill(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
