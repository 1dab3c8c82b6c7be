// Package testkit is what the project's tests share: waiting for a
// condition with a deadline, unit directories written for a test, a daemon
// started with the sd_notify handshake, checks of the descriptors a
// process holds, lines collected from any goroutine (a log, a fake's
// calls), pipes closed with the test, and systemd-analyze verify.
//
// Only tests import it (it imports testing); it imports no package of the
// project that a package under test could import in turn, other than
// internal/notify and internal/procfd, so that any package's internal
// tests but theirs and proc's may use it.
package testkit
