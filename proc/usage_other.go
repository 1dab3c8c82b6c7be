//go:build !linux

package proc

// Resource use is read from /proc and cgroups on Linux only: darwin's
// process table holds neither the CPU times nor the resident set.

// ReadSnapshot is unsupported here.
func ReadSnapshot() (*Snapshot, error) {
	return nil, &UnsupportedError{What: "resource use of processes", Why: "hermes reads it from /proc on Linux only"}
}

// CgroupUsage is unsupported: there are no cgroups.
func CgroupUsage(string) (Usage, bool, error) {
	return Usage{}, false, &UnsupportedError{What: "cgroup resource use", Why: "cgroups are Linux's"}
}

// CgroupProcs is unsupported: there are no cgroups.
func CgroupProcs(string) ([]int, error) {
	return nil, &UnsupportedError{What: "cgroup processes", Why: "cgroups are Linux's"}
}
