//go:build !linux

package proc

// Cgroups are Linux's: elsewhere there is no hierarchy and no process is in
// one, which callers take as "no cgroup v2" (and use process groups).

// CgroupMount returns "": there is no cgroup v2 hierarchy.
func CgroupMount() string { return "" }

// Cgroup returns "": no process has a cgroup.
func Cgroup(int) string { return "" }
