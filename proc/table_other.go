//go:build !linux && !darwin

package proc

// The process table where neither /proc (Linux) nor darwin's sysctl
// records are read: every call says so.

func unsupportedTable() error {
	return &UnsupportedError{What: "the process table", Why: "hermes reads it from /proc on Linux and from sysctl kern.proc on darwin only"}
}

// ReadStat is unsupported here.
func ReadStat(int) (Stat, error) { return Stat{}, unsupportedTable() }

// BootID is unsupported here.
func BootID() (string, error) { return "", unsupportedTable() }

// Cmdline is unsupported here.
func Cmdline(int) ([]string, error) { return nil, unsupportedTable() }

// Environ is unsupported here.
func Environ(int) ([]string, error) { return nil, unsupportedTable() }

// Pids is unsupported here.
func Pids() ([]int, error) { return nil, unsupportedTable() }

// Find is unsupported here.
func Find(func(Stat) bool) ([]int, error) { return nil, unsupportedTable() }

// UID is unsupported here.
func UID(int) (int, error) { return 0, unsupportedTable() }

// RSS is unsupported here.
func RSS(int) (int64, error) { return 0, unsupportedTable() }
