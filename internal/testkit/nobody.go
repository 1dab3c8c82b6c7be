package testkit

import (
	"os"
	"os/user"
	"testing"
)

// Nobody is the user nobody, for a test that runs something as another
// user. It skips t unless this process is root (only root may), saying
// why needs says root is needed, and unless the user exists.
func Nobody(t testing.TB, needs string) *user.User {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: " + needs)
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody here: %v", err)
	}
	return u
}
