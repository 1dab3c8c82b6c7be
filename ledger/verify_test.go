//go:build linux

package ledger

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// TestCheck: an entry is trusted only when the kernel confirms it: the
// leader alive, leading the recorded group, carrying the spawn key and this
// state directory, and in the entry's cgroup, itself a hermes cgroup of
// that spawn. A crafted or stale entry fails with ErrUntrusted (or
// proc.ErrGone for a leader that exited), never naming a stranger as ours.
func TestCheck(t *testing.T) {
	l := openTemp(t)
	const key = "4242_77_3"
	tagged := func(t *testing.T, spawn, state string) proc.Identity {
		t.Helper()
		h := startHelper(t, "sleeper", []string{EnvUnit + "=web", EnvSpawn + "=" + spawn, EnvState + "=" + state},
			&syscall.SysProcAttr{Setpgid: true}, "ready")
		id, err := proc.Read(h.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	entry := func(id proc.Identity) Entry { return Entry{Unit: "web", Leader: id, PGID: id.PID, Spawn: key} }
	tests := []struct {
		name string
		make func(t *testing.T) Entry
		want error // nil: trusted
	}{
		{"spawned here", func(t *testing.T) Entry { return entry(tagged(t, key, l.Dir())) }, nil},
		{"leader exited", func(t *testing.T) Entry {
			h := startHelper(t, "sleeper", nil, &syscall.SysProcAttr{Setpgid: true}, "ready")
			id, _ := proc.Read(h.cmd.Process.Pid)
			h.stop()
			return entry(id)
		}, proc.ErrGone},
		{"a stranger as leader (no tags)", func(t *testing.T) Entry {
			h := startHelper(t, "sleeper", nil, &syscall.SysProcAttr{Setpgid: true}, "ready")
			id, _ := proc.Read(h.cmd.Process.Pid)
			return entry(id)
		}, ErrUntrusted},
		{"another start time (the leader's, edited)", func(t *testing.T) Entry {
			e := entry(tagged(t, key, l.Dir()))
			e.Leader.StartTime++
			return e
		}, ErrUntrusted},
		{"another spawn key", func(t *testing.T) Entry { return entry(tagged(t, "4242_77_4", l.Dir())) }, ErrUntrusted},
		{"another state directory", func(t *testing.T) Entry { return entry(tagged(t, key, t.TempDir())) }, ErrUntrusted},
		{"no spawn key recorded", func(t *testing.T) Entry {
			e := entry(tagged(t, key, l.Dir()))
			e.Spawn = ""
			return e
		}, ErrUntrusted},
		{"another process group", func(t *testing.T) Entry {
			e := entry(tagged(t, key, l.Dir()))
			e.PGID = syscall.Getpgrp()
			return e
		}, ErrUntrusted},
		{"a cgroup outside hermes", func(t *testing.T) Entry {
			e := entry(tagged(t, key, l.Dir()))
			e.Cgroup = filepath.Join(cgroupMountOr(t), "system.slice")
			return e
		}, ErrUntrusted},
		{"a hermes-shaped cgroup without the leader", func(t *testing.T) Entry {
			e := entry(tagged(t, key, l.Dir()))
			e.Cgroup = filepath.Join(cgroupMountOr(t), "hermes-kept", "web."+key)
			return e
		}, ErrUntrusted},
		{"a cgroup path with ..", func(t *testing.T) Entry {
			e := entry(tagged(t, key, l.Dir()))
			e.Cgroup = filepath.Join(cgroupMountOr(t), "hermes-kept") + "/../system.slice/web." + key
			return e
		}, ErrUntrusted},
	}
	// Programs that write their process title over their environment
	// (nginx, redis-server) keep no tags: the spawn's log, held as stdout
	// or stderr, vouches for them instead.
	logged := func(t *testing.T, env []string, stderr string) Entry {
		t.Helper()
		log := filepath.Join(l.Dir(), "logs", "web.log")
		os.MkdirAll(filepath.Dir(log), 0o700)
		f, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd := exec.Command("sleep", "300")
		cmd.Env, cmd.Stdout, cmd.SysProcAttr = append([]string{"PATH=" + os.Getenv("PATH")}, env...), f, &syscall.SysProcAttr{Setpgid: true}
		if stderr != "" {
			other, err := os.Create(stderr)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			cmd.Stdout = other
		}
		e := entry(testkit.StartIdentified(t, cmd))
		e.Log = log
		// Start returns once exec has closed the descriptors, before the
		// new program's environment is set: until then it reads empty,
		// which is no tags.
		testkit.Eventually(t, 10*time.Second, "the sleep's environment", func() bool {
			env, _ := proc.Environ(e.Leader.PID)
			return len(env) > 0
		})
		return e
	}
	tests = append(tests, []struct {
		name string
		make func(t *testing.T) Entry
		want error
	}{
		{"no tags, holding the spawn's log", func(t *testing.T) Entry { return logged(t, nil, "") }, nil},
		{"no tags, holding another file", func(t *testing.T) Entry { return logged(t, nil, filepath.Join(t.TempDir(), "other.log")) }, ErrUntrusted},
		{"no tags, no log recorded", func(t *testing.T) Entry {
			e := logged(t, nil, "")
			e.Log = ""
			return e
		}, ErrUntrusted},
		{"no tags, the log recorded is a directory", func(t *testing.T) Entry {
			e := logged(t, nil, "")
			e.Log = filepath.Dir(e.Log)
			return e
		}, ErrUntrusted},
		{"another spawn's tags, holding the spawn's log", func(t *testing.T) Entry {
			return logged(t, []string{EnvSpawn + "=4242_77_4", EnvState + "=" + l.Dir()}, "")
		}, ErrUntrusted},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := l.Check(tc.make(t))
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Check: %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("in its own hermes cgroup", func(t *testing.T) {
		mount := proc.CgroupMount()
		if mount == "" {
			t.Skip("no cgroup v2 hierarchy: the cgroup rule is covered by the cases above only")
		}
		owner := filepath.Join(mount, "hermes-"+strconv.Itoa(os.Getpid())+"_1")
		if err := os.Mkdir(owner, 0o755); err != nil {
			t.Skipf("cgroup v2 at %s is not writable (%v): a hermes cgroup cannot be made here", mount, err)
		}
		t.Cleanup(func() { os.Remove(owner) })
		dir := filepath.Join(owner, "web."+key)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(dir) })
		fd, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer fd.Close()
		h := startHelper(t, "sleeper", []string{EnvSpawn + "=" + key, EnvState + "=" + l.Dir()},
			&syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: int(fd.Fd())}, "ready")
		id, _ := proc.Read(h.cmd.Process.Pid)
		e := entry(id)
		e.Cgroup = dir
		if err := l.Check(e); err != nil {
			t.Errorf("Check of a spawn in its own cgroup: %v, want trusted", err)
		}
		e.Cgroup = filepath.Join(owner, "db."+key+"9")
		if err := l.Check(e); !errors.Is(err, ErrUntrusted) {
			t.Errorf("Check naming another spawn's cgroup: %v, want ErrUntrusted", err)
		}
		// Its environment overwritten (a process title), the cgroup alone
		// vouches for it; tags naming another spawn still contradict it.
		for _, c := range []struct {
			name string
			env  []string
			want error
		}{
			{"no tags", nil, nil},
			{"another spawn's tags", []string{EnvSpawn + "=4242_77_4", EnvState + "=" + l.Dir()}, ErrUntrusted},
			{"another state directory's tags", []string{EnvSpawn + "=" + key, EnvState + "=" + t.TempDir()}, ErrUntrusted},
		} {
			h := startHelper(t, "sleeper", c.env, &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: int(fd.Fd())}, "ready")
			id, _ := proc.Read(h.cmd.Process.Pid)
			e := entry(id)
			e.Cgroup = dir
			if err := l.Check(e); c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("Check of a spawn in its own cgroup, %s: %v, want %v", c.name, err, c.want)
			}
			h.stop()
		}
	})
}

// cgroupMountOr is the cgroup v2 mount, or /sys/fs/cgroup where there is
// none (a path outside any hierarchy is refused all the same).
func cgroupMountOr(t *testing.T) string {
	if m := proc.CgroupMount(); m != "" {
		return m
	}
	return "/sys/fs/cgroup"
}
