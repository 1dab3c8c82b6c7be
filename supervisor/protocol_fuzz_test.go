//go:build linux

package supervisor

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// deadBase is above PID_MAX_LIMIT (2^22): no process or group ever has a
// number this high, so a fuzzed line can name only groups that do not exist,
// or the canary through its placeholders.
const deadBase = 1 << 22

// maxFuzzInput bounds what one iteration writes to the pipe.
const maxFuzzInput = 16 << 10

// Placeholders in fuzzed input, replaced by the free canary's numbers.
var (
	digitRun = regexp.MustCompile(`[0-9]+`)
	phPGID   = []byte("@F") // the free canary's pgid (= its leader's pid)
	phStart  = []byte("@T") // its leader's start time
	// closeLines are the lines the script reads as C (its fields split
	// on blanks), with their newline.
	closeLines = regexp.MustCompile(`(?m)^[ \t]*C[ \t]*(\n|$)`)
)

// FuzzProtocol drives the real supervisor script (run by /bin/sh as the
// owner runs it) with fuzzed lines on its stdin, then a proper registration
// of a "registered" canary group, then EOF. It checks that the script exits,
// that the registered canary dies, and that the "free" canary, a live group
// that fuzzed lines may name through the placeholders @F (its pgid) and @T
// (its leader's start time), is signalled exactly when a line that the
// protocol accepts registered it and nothing unregistered or replaced it
// since (a model of the protocol's rules decides; lines the model cannot
// judge, with control or non-ASCII bytes, leave that check out).
//
// Every other number in the input is rewritten to one above PID_MAX_LIMIT
// first, so that no fuzzed line can reach a real process on the machine.
// Run longer with
// go test -run '^$' -fuzz FuzzProtocol -fuzztime 60s ./supervisor
func FuzzProtocol(f *testing.F) {
	for _, seed := range []string{
		"",
		"R a @F @F @T - -\n",
		"R a @F @F @T - -\nU a\n",
		"R a @F @F @T - -\nR a 77 77 0 - -\n",
		"R a @F @F 5 - -\n",
		"R a @F 0 0 key_1-x -\n",
		"R a @F @F @T - /nowhere\n",
		"R a @F @F @T -\n",
		"R a;b @F @F @T - -\n",
		"R\ta\t@F\t@F\t@T\t-\t-\n",
		"  R a @F @F @T - -  \n",
		"R a 1 1 0 - -\n",
		"R a 0 0 0 - -\n",
		"U\nU a b\nR\n\n\n",
		"R a @F @F @T - -\nU zcanary\n",
		"R zcanary @F @F @T - -\n",
		"R $(kill -9 -1) @F @F @T - -\n",
		"R a `id` @F @T - -\nR b @F @F @T * -\n",
		"R a @F @F @T - -\x00\n",
		"R " + string(bytes.Repeat([]byte("x"), 300)) + " @F @F @T - -\n",
		"R a @F @F @T - -",
	} {
		f.Add([]byte(seed))
	}
	base := shortTempDir(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			data = data[:maxFuzzInput]
		}
		free, freeDone, freeID := canary(t)
		reg, regDone, regID := canary(t)
		_ = reg

		// C is the owner's last line (Close sends it once nothing else
		// can be sent, then closes the pipe): a fuzzed C would end the
		// script before the canary's registration, which no owner sends
		// after it. TestScriptCloseLine tests C.
		data = closeLines.ReplaceAll(data, nil)
		in := digitRun.ReplaceAllFunc(data, func(d []byte) []byte {
			// A number of its own, never a live pid, and stable for a
			// given input so that failures reproduce.
			var h uint32 = 2166136261
			for _, c := range d {
				h = (h ^ uint32(c)) * 16777619
			}
			return strconv.AppendUint(nil, deadBase+uint64(h%1_000_000), 10)
		})
		in = bytes.ReplaceAll(in, phPGID, []byte(strconv.Itoa(freeID.PID)))
		in = bytes.ReplaceAll(in, phStart, []byte(strconv.FormatUint(freeID.StartTime, 10)))
		final := fmt.Sprintf("\nR zcanary %d %d %d - -\n", regID.PID, regID.PID, regID.StartTime)
		in = append(in, final...)
		want, judged := freeSignalled(in, freeID, base)

		p, err := startShell(20*time.Millisecond, syscall.Getpgrp(), base, "-", "")
		if err != nil {
			t.Fatal(err)
		}
		werr := rawWrite(p, in)
		p.Close()
		exitWithin(t, p, 10*time.Second, "the supervisor did not exit within 10s of EOF; input %q", in)
		if werr != nil {
			t.Errorf("writing the lines: %v (the supervisor exited before reading them all)", werr)
		}
		testkit.Receive(t, 5*time.Second, regDone, "the registered canary (pgid %d) survived the supervisor's EOF; input %q", regID.PID, in)
		gone := false
		select {
		case <-freeDone:
			gone = true
		default:
		}
		if gone && !want && judged {
			t.Fatalf("the free canary (pgid %d) was signalled, but no line that the protocol accepts registered it; input %q", freeID.PID, in)
		}
		if !gone && want && judged {
			// It may still be on its way out: TERM was sent before the
			// supervisor exited, so the exit follows at once.
			testkit.Receive(t, 5*time.Second, freeDone, "the free canary (pgid %d) was registered but survived; input %q", freeID.PID, in)
		}
		_ = free
	})
}

// canary starts `sleep` leading its own process group, reaped as soon as it
// exits (a zombie would keep its group non-empty); done is closed then.
func canary(t *testing.T) (*exec.Cmd, <-chan struct{}, proc.Identity) {
	t.Helper()
	// When the fuzzing engine stops a worker mid-iteration, Cleanup does
	// not run: the death signal and a bounded sleep keep a canary from
	// outliving it for long.
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	id, err := proc.Read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, done, id
}

// shortTempDir is a temporary directory with a short path, so that cgroup
// paths below it fit in a 256-byte line; it stands for the cgroup base and
// holds nothing, so no fuzzed cgroup registration names a live cgroup.
func shortTempDir(f *testing.F) string {
	dir, err := os.MkdirTemp("", "hfz")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// freeSignalled models the protocol (see supervisor.sh) for the free
// canary: it reports whether, after the lines of in, some id registers the
// canary's group without a cgroup and with a leader identity that matches
// (or is not checked), so that EOF signals it. judged is false when a line
// that might matter holds bytes the model does not follow (control bytes
// other than tab, NUL, non-ASCII), or is near the length limit.
func freeSignalled(in []byte, free proc.Identity, base string) (signalled, judged bool) {
	pgid := strconv.Itoa(free.PID)
	start := strconv.FormatUint(free.StartTime, 10)
	ids := map[string]bool{} // id -> registers the free canary and would signal it
	lines := bytes.Split(in, []byte("\n"))
	lines = lines[:len(lines)-1] // the part after the last newline is never read as a line
	judged = true
	for _, l := range lines {
		f := bytes.FieldsFunc(l, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(f) == 0 || (string(f[0]) != "R" && string(f[0]) != "U") {
			continue
		}
		if odd(l) || (len(l) > 240 && len(l) < 270) {
			judged = false
			continue
		}
		if len(l) > 256 {
			continue
		}
		switch {
		case string(f[0]) == "U" && len(f) == 2 && validID(f[1]):
			delete(ids, string(f[1]))
		case string(f[0]) == "R" && len(f) == 7 && validID(f[1]) && num(f[2]) && num(f[3]) && num(f[4]) && validKey(f[5]):
			cg := string(f[6])
			if cg == "-" {
				if n, _ := strconv.Atoi(string(f[2])); n <= 1 {
					continue
				}
			} else {
				// A cgroup relative to the base, which is empty: no such
				// directory exists, so the supervisor refuses the line
				// and nothing is replaced.
				continue
			}
			if string(f[2]) == strconv.Itoa(syscall.Getpgrp()) {
				continue // the owner's group (the script's own is never named: its pid is not in the input)
			}
			ids[string(f[1])] = cg == "-" && string(f[2]) == pgid &&
				(string(f[3]) != strconv.Itoa(free.PID) || string(f[4]) == "0" || string(f[4]) == start)
		}
	}
	for _, hit := range ids {
		if hit {
			return true, judged
		}
	}
	return false, judged
}

func odd(l []byte) bool {
	for _, c := range l {
		if c >= 0x80 || (c < 0x20 && c != '\t') || c == 0x7f {
			return true
		}
	}
	return false
}

func num(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func validID(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !alnum(c) {
			return false
		}
	}
	return true
}

func validKey(b []byte) bool {
	if string(b) == "-" {
		return true
	}
	if len(b) == 0 || !alnum(b[0]) {
		return false
	}
	for _, c := range b {
		if !alnum(c) && c != '-' {
			return false
		}
	}
	return true
}
