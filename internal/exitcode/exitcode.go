// Package exitcode names the exit statuses of hermesd and hermesctl, so
// that both binaries, their tests and the README speak of the same numbers.
// Scripts rely on them: a code keeps its number and its meaning.
//
// Success, Failure and Usage mean the same in both binaries. Above them
// each binary has its own codes, named for it (Hermesd…, Hermesctl…):
// the same number means one thing for hermesd and another for hermesctl
// (3 is a locked state directory for hermesd, a unit not running for
// hermesctl status), so a code is read with the binary that exited.
//
// The constants are untyped, as os.Exit and exec.ExitError.ExitCode speak
// plain ints.
package exitcode

// The codes both binaries exit with.
const (
	// Success: done. hermesd stopped cleanly (TERM or INT); for hermesctl
	// status it also means that all is well (see HermesctlNotRunning).
	Success = 0
	// Failure: something failed, said in one line on stderr. hermesctl's
	// questions answer "no" with it too: is-active when some unit is not
	// active, is-failed when none is failed, is-enabled when some unit is
	// disabled, status (no unit named) when a unit file did not load.
	Failure = 1
	// Usage: a bad flag, argument or path setting, or for hermesd a
	// configuration that does not load (role, config file, units
	// directory); nothing was done.
	Usage = 2
)

// hermesd's own codes.
const (
	// HermesdLocked: the state directory is locked by another hermesd.
	HermesdLocked = 3
	// HermesdSocket: the control socket is served by another daemon, is
	// unsafe, or its path is too long.
	HermesdSocket = 4
	// HermesdProxy: the provider proxy cannot listen on gateway.listen
	// (address in use, or not loopback), or its token file is unusable.
	HermesdProxy = 5
	// HermesdMetrics: metrics cannot be served on metrics.listen (address
	// in use, not loopback, or an unusable metrics.token_file).
	HermesdMetrics = 6
)

// hermesctl's own codes. Those of status are LSB's for an init script's
// status action (Linux Standard Base Core, "Init Script Actions"), which
// systemctl status follows; those of run past its child's own are
// timeout(1)'s for a budget that ran out and the shell's for a command
// that could not be run (POSIX, "Command Search and Execution").
const (
	// HermesctlNotRunning: status found a unit not active (named), or
	// starting, stopping or failed (none named). LSB: "program is not
	// running". Any command exits with it too when hermesd accepts the
	// connection but does not answer in time (stopped, wedged).
	HermesctlNotRunning = 3
	// HermesctlUnknownUnit: status or show named a unit hermesd does not
	// know.
	// LSB: "program or service status is unknown".
	HermesctlUnknownUnit = 4
	// HermesctlBudget: run --run-budget: the budget ran out and the
	// command's group was stopped.
	HermesctlBudget = 124
	// HermesctlNotExecutable: run: the program was found but could not be
	// executed (not executable, a directory, no #! line).
	HermesctlNotExecutable = 126
	// HermesctlNotFound: run: no such program.
	HermesctlNotFound = 127
)
