package supervisor

import (
	"errors"
	"testing"
)

// TestParseWords: the mode and backend words parse strictly, empty to
// their defaults, and an unknown word wraps the package's sentinel.
func TestParseWords(t *testing.T) {
	for s, want := range map[string]Mode{"": "", "cgroup": ModeCgroup, "pgroup": ModePGroup} {
		if m, err := ParseMode(s); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", s, m, err, want)
		}
	}
	for s, want := range map[string]Backend{"": BackendNative, "native": BackendNative, "portable": BackendPortable} {
		if b, err := ParseBackend(s); err != nil || b != want {
			t.Errorf("ParseBackend(%q) = %q, %v; want %q", s, b, err, want)
		}
	}
	if _, err := ParseMode("cgroups"); !errors.Is(err, ErrMode) || err.Error() != `unknown supervisor mode "cgroups": want cgroup or pgroup` {
		t.Errorf("ParseMode(cgroups) = %v, want ErrMode listing cgroup or pgroup", err)
	}
	if _, err := ParseBackend("ps"); !errors.Is(err, ErrBackend) {
		t.Errorf("ParseBackend(ps) = %v, want ErrBackend", err)
	}
}
