package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// roleEnv makes the test binary play hermesd ("hermesd"), a unit
// ("unit") or a client asking hermesd to keep groups ("own", playOwn)
// instead of running the tests, as os/exec's tests do.
const roleEnv = "HERMESD_TEST_ROLE"

func TestMain(m *testing.M) {
	role := os.Getenv(roleEnv)
	if len(os.Args) > 1 && os.Args[1] == relayArg {
		// A log relay started by a test's hermesd (startRelay runs its own
		// executable, with no environment).
		role = "hermesd"
	}
	switch role {
	case "hermesd":
		os.Exit(exitCode(run(os.Args[1:])))
	case "unit":
		playUnit()
	case "own":
		playOwn()
	}
	goleak.VerifyTestMain(m)
}

// needsProcesses skips the test in -short mode, saying that it starts
// what: the end-to-end tests run the test binary as hermesd, its units
// and its clients.
func needsProcesses(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts " + what)
	}
}

// playUnit writes "started PID" to its output (the unit's log file), then a
// "ping N" line for each SIGUSR1, until TERM. With HERMESD_TEST_LISTEN set
// it first listens on that TCP address (a port the unit holds).
func playUnit() {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	if addr := os.Getenv("HERMESD_TEST_LISTEN"); addr != "" {
		if _, err := net.Listen("tcp", addr); err != nil {
			fmt.Println("listen:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("started %d\n", os.Getpid())
	for n := 1; ; n++ {
		<-usr1
		fmt.Printf("ping %d\n", n)
	}
}
