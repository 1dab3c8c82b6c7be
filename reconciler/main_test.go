package reconciler

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"

	"github.com/coreos/go-systemd/v22/daemon"
	"go.uber.org/goleak"
)

// helperEnv makes the test binary play a unit instead of running the tests
// (as os/exec's tests do). Its value is the behaviour; HELPER_ADDR the
// address for tcp and http.
const helperEnv = "RECONCILER_TEST_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		playHelper(h)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func playHelper(kind string) {
	fmt.Printf("started %d\n", os.Getpid())
	switch kind {
	case "sleep":
	case "tcp":
		ln, err := net.Listen("tcp", os.Getenv("HELPER_ADDR"))
		if err != nil {
			fmt.Println("listen:", err)
			os.Exit(1)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	case "http":
		ln, err := net.Listen("tcp", os.Getenv("HELPER_ADDR"))
		if err != nil {
			fmt.Println("listen:", err)
			os.Exit(1)
		}
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	case "log":
		fmt.Println("warming up")
		fmt.Println("server ready to serve")
	case "notify":
		if ok, err := daemon.SdNotify(false, daemon.SdNotifyReady); !ok {
			fmt.Println("sd_notify not sent:", err)
			os.Exit(1)
		}
	case "joinsend": // a unit whose child joins another unit's group and speaks for it
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), helperEnv+"=joinchild")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		if err := child.Start(); err != nil {
			fmt.Println("child:", err)
			os.Exit(1)
		}
	case "joinchild":
		pgid, _ := strconv.Atoi(os.Getenv("JOIN_PGID"))
		fmt.Println("setpgid:", syscall.Setpgid(0, pgid)) // refused where units have sessions of their own
		for range 20 {
			daemon.SdNotify(false, "READY=1\nWATCHDOG=1")
		}
		daemon.SdNotify(false, "STATUS=attack-done")
		fmt.Println("sent")
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	<-term
}
