package units

import "golang.org/x/sys/unix"

// readOnlyMount reports whether path is on a file system mounted
// read-only: nobody can write there without remounting it, which only
// root can do (a Kubernetes ConfigMap or Secret volume is one, though its
// directory's mode says 0777).
func readOnlyMount(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Flags&unix.ST_RDONLY != 0
}
