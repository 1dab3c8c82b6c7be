package units

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hermes-units/hermes/internal/word"
)

var (
	types    = word.Strings("type", Simple, Oneshot, Forking)
	restarts = word.Strings("restart policy", RestartNo, RestartOnFailure, RestartAlways)
)

// ParseType parses a unit type; unknown values are an error.
func ParseType(s string) (Type, error) { return types.Parse(s) }

// UnmarshalText parses text with ParseType.
func (t *Type) UnmarshalText(text []byte) error { return types.Unmarshal(t, text) }

// ParseRestart parses a restart policy; unknown values are an error.
func ParseRestart(s string) (Restart, error) { return restarts.Parse(s) }

// maxSignal is SIGRTMAX on Linux.
const maxSignal = 64

// ParseSignal accepts "TERM", "SIGTERM", "term" or "15".
func ParseSignal(s string) (Signal, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > maxSignal {
			return 0, fmt.Errorf("signal %d is out of range 1..%d", n, maxSignal)
		}
		return Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if n := unix.SignalNum(name); n != 0 {
		return Signal(n), nil
	}
	return 0, fmt.Errorf("unknown signal %s: want a name like TERM or SIGINT, or a number", excerpt(s))
}

// String is the name without "SIG" ("TERM"), or the number for signals
// without a name (real-time ones).
func (s Signal) String() string {
	if n := unix.SignalName(syscall.Signal(s)); n != "" {
		return strings.TrimPrefix(n, "SIG")
	}
	return strconv.Itoa(int(s))
}

// Syscall is the signal to pass to kill(2).
func (s Signal) Syscall() syscall.Signal { return syscall.Signal(s) }

var sizeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]+)\s*([KMGT]i?B|[kKMGT]|kB|B)?$`) })

var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	"K": 1 << 10, "k": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
}

// ParseSize accepts a number of bytes ("1048576") or a number with a unit:
// B, KB/MB/GB/TB (powers of 1000), KiB/MiB/GiB/TiB or K/M/G/T (powers of 1024).
func ParseSize(s string) (Size, error) {
	m := sizeRE().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%s is not a size: write bytes or a number with a unit, like 10MiB or 512KB", excerpt(s))
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	mul := sizeUnits[m[2]]
	if err != nil || n > math.MaxInt64/mul {
		return 0, fmt.Errorf("size %s is too large", excerpt(s))
	}
	return Size(n * mul), nil
}

// String renders the largest binary unit that divides the size exactly,
// so that ParseSize(s.String()) == s.
func (s Size) String() string {
	for _, u := range []struct {
		name string
		mul  int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if s != 0 && int64(s)%u.mul == 0 {
			return strconv.FormatInt(int64(s)/u.mul, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}
