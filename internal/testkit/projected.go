package testkit

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ProjectVolume writes files (a key such as "web.yaml" → its content) into
// dir as the kubelet writes a ConfigMap or Secret volume (its atomic
// writer), one step at a time and in its order:
//
//  1. the payload goes into a new hidden directory named after the
//     version, "..2026_12_05_v2";
//  2. a symlink "..data_tmp" to it is made, then renamed over "..data";
//  3. each key gets its symlink "web.yaml -> ..data/web.yaml" if it had
//     none; the symlinks of keys no longer in files are removed;
//  4. the previous version's directory is removed.
//
// The first call makes the volume; each later call is an update. dir is
// created (0700) when missing; payload files are 0600.
func ProjectVolume(t testing.TB, dir, version string, files map[string]string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(dir, 0o700))
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	ts := "..2026_12_05_" + version
	must(os.Mkdir(filepath.Join(dir, ts), 0o755))
	for key, content := range files {
		must(os.WriteFile(filepath.Join(dir, ts, key), []byte(content), 0o600))
	}
	must(os.Symlink(ts, filepath.Join(dir, "..data_tmp")))
	must(os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	keys := slices.Sorted(maps.Keys(files))
	for _, key := range keys {
		link := filepath.Join(dir, key)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		must(os.Symlink(filepath.Join("..data", key), link))
	}
	entries, err := os.ReadDir(dir)
	must(err)
	for _, e := range entries {
		if _, ok := files[e.Name()]; !ok && !strings.HasPrefix(e.Name(), "..") {
			if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(target, "..data/") {
				must(os.Remove(filepath.Join(dir, e.Name())))
			}
		}
	}
	if old != "" {
		must(os.RemoveAll(filepath.Join(dir, old)))
	}
}
