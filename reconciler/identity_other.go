//go:build !linux

package reconciler

// loginShell is name's shell where /etc/passwd is not the user database
// (macOS: Directory Services): none.
func loginShell(string) string { return "" }
