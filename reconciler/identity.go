package reconciler

import (
	"os/user"

	"github.com/hermes-units/hermes/units"
)

// userEnv is the environment systemd gives a unit with User=: HOME, USER,
// LOGNAME and SHELL of the user (from the user database), so that a
// program run as postgres does not take root's HOME for its own. It goes
// after hermesd's environment and before the unit's env files and env:,
// which may set any of them. None for a unit without user:, or a user the
// database does not know (the spawn says so).
func userEnv(e units.Exec) []string {
	if e.User == "" {
		return nil
	}
	u, err := user.Lookup(e.User)
	if err != nil {
		if u, err = user.LookupId(e.User); err != nil {
			return nil
		}
	}
	env := []string{"USER=" + u.Username, "LOGNAME=" + u.Username}
	if u.HomeDir != "" {
		env = append(env, "HOME="+u.HomeDir)
	}
	if sh := loginShell(u.Username); sh != "" {
		env = append(env, "SHELL="+sh)
	}
	return env
}
