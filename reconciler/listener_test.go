package reconciler

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// stranger listens on a free loopback port from this test process, which
// is no unit's, and accepts (and closes) connections until stop; it
// returns the port.
func stranger(t *testing.T) (port int, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop = testkit.Serve(t, ln, nil)
	return ln.Addr().(*net.TCPAddr).Port, stop
}

// TestTCPProbeStrangerListener: a tcp probe that reaches a listener held
// by a process outside the unit does not make it ready; the row says
// whose the port is, and so does the start timeout's error. (A unit's own
// listener makes it ready: TestReadiness.)
func TestTCPProbeStrangerListener(t *testing.T) {
	port, stop := stranger(t)
	st, err := proc.ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	held := fmt.Sprintf("port %d is held by pid %d (%s), not by this unit", port, os.Getpid(), st.Comm)
	probe := fmt.Sprintf("ready: {tcp: \"127.0.0.1:%d\"}\n", port)
	l := startLive(t, map[string]string{
		"web.yaml":   unitYAML("sleep", probe+"timeouts: {start: 1h}\n"),
		"short.yaml": unitYAML("sleep", probe+"timeouts: {start: 3s}\nrestart: \"no\"\n"),
	})
	m := l.waitFor("web told whose port it reaches", func(m map[string]control.Unit) bool {
		return m["web"].Error == held
	})
	if u := m["web"]; u.State != control.StateStarting || u.Ready || u.PID == 0 {
		t.Errorf("web: got state %s ready %v pid %d, want started, not ready", u.State, u.Ready, u.PID)
	}
	want := "not ready within the start timeout (3s): " + held
	l.waitFor("short failed at its start timeout", func(m map[string]control.Unit) bool {
		return m["short"].State == control.StateFailed && m["short"].Error == want
	})
	stop()
	l.waitFor("web no longer told of a port held", func(m map[string]control.Unit) bool {
		return m["web"].Error == "" && m["web"].State == control.StateStarting && !m["web"].Ready
	})
}
