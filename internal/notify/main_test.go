package notify

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"go.uber.org/goleak"
)

// The test binary is its own helper process: with HERMES_NOTIFY_HELPER set
// it sends HERMES_NOTIFY_STATE to $NOTIFY_SOCKET with go-systemd, as a
// program written for Type=notify does, and exits.
func TestMain(m *testing.M) {
	if os.Getenv("HERMES_NOTIFY_HELPER") == "sdnotify" {
		sent, err := daemon.SdNotify(false, os.Getenv("HERMES_NOTIFY_STATE"))
		if err != nil || !sent {
			fmt.Fprintf(os.Stderr, "SdNotify: sent=%v err=%v\n", sent, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

const patience = 20 * time.Second

func receive(t *testing.T, msgs <-chan Message) Message {
	t.Helper()
	select {
	case m := <-msgs:
		return m
	case <-time.After(patience):
		t.Fatalf("no notification within %v", patience)
		return Message{}
	}
}

func helper(t *testing.T, socket, state string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(),
		"HERMES_NOTIFY_HELPER=sdnotify",
		"HERMES_NOTIFY_STATE="+state,
		"NOTIFY_SOCKET="+socket,
		"GORACE=atexit_sleep_ms=0",
	)
	cmd.Stderr = os.Stderr
	return cmd
}
