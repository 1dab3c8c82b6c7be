package supervisor

import (
	"os/exec"
	"strconv"
)

// NotFoundError reports a program name (no slash) found in no directory of
// the PATH the child would get. It matches exec.ErrNotFound with
// errors.Is. The text names the program only, not the PATH: a PATH is long
// and the fix is rarely in it (the program is missing, or the unit should
// name it by its absolute path).
type NotFoundError struct {
	Name string // argv[0] as given
}

func (e *NotFoundError) Error() string { return strconv.Quote(e.Name) + " is not in PATH" }

// Is reports whether target is exec.ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == exec.ErrNotFound }
