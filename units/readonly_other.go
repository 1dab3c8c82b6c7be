//go:build !linux

package units

// readOnlyMount is false where the mount flags are not read: the mode
// bits decide, as they always did.
func readOnlyMount(string) bool { return false }
