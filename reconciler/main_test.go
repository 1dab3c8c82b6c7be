package reconciler

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
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
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	<-term
}
