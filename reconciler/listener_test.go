package reconciler

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
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

// httpStranger is stranger for HTTP: it answers 200 to every request.
func httpStranger(t *testing.T) (port int, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	stop = sync.OnceFunc(func() { srv.Close(); <-done })
	t.Cleanup(stop)
	return ln.Addr().(*net.TCPAddr).Port, stop
}

// TestHTTPProbeStrangerListener: an http probe whose request reaches a
// listener held by a process outside the unit does not make it ready,
// even when that process answers 200: it is judged as the tcp probe's
// connection is (TestTCPProbeStrangerListener).
func TestHTTPProbeStrangerListener(t *testing.T) {
	port, stop := httpStranger(t)
	probeStranger(t, port, stop, fmt.Sprintf("ready: {http: \"http://127.0.0.1:%d/health\"}\n", port))
}

// TestTCPProbeStrangerListener: a tcp probe that reaches a listener held
// by a process outside the unit does not make it ready; the row says
// whose the port is, and so does the start timeout's error. (A unit's own
// listener makes it ready: TestReadiness.)
func TestTCPProbeStrangerListener(t *testing.T) {
	port, stop := stranger(t)
	probeStranger(t, port, stop, fmt.Sprintf("ready: {tcp: \"127.0.0.1:%d\"}\n", port))
}

// probeStranger runs two units whose readiness is probe, which reaches
// port, held by this process until stop: web (an hour to start) stays
// started and not ready, its row saying whose the port is; short fails
// at its 3 s start timeout with that said; once stop frees the port,
// web's row no longer says it.
func probeStranger(t *testing.T, port int, stop func(), probe string) {
	t.Helper()
	st, err := proc.ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	held := fmt.Sprintf("port %d is held by pid %d (%s), not by this unit", port, os.Getpid(), st.Comm)
	l := startLive(t, map[string]string{
		"web.yaml":   unitYAML("sleep", probe+"timeouts: {start: 1h}\n"),
		"short.yaml": unitYAML("sleep", probe+"timeouts: {start: 3s}\nrestart: \"no\"\n"),
	})
	m := l.waitFor("web told whose port it reaches", func(m map[string]control.Unit) bool {
		return m["web"].Error == held || m["web"].Ready
	})
	if u := m["web"]; u.State != control.StateStarting || u.Ready || u.PID == 0 || u.Error != held {
		t.Errorf("web: got state %s ready %v pid %d error %q, want started, not ready, %q", u.State, u.Ready, u.PID, u.Error, held)
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

// TestListenerJoinsTheUnit: a stranger's verdict is not kept once its
// holder is among the unit's members, though the same socket listens: a
// forking unit's daemon found by a scan after the first verdict (its
// setsid raced the listing) makes the probe count.
func TestListenerJoinsTheUnit(t *testing.T) {
	port, _ := stranger(t)
	var members []int
	var told []*ListenerError
	c := &listenerCheck{members: func() []int { return members }, note: func(e *ListenerError) { told = append(told, e) }}
	to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	if c.reached(to) {
		t.Fatal("a listener held by no member counts")
	}
	if c.last == nil || c.last.PID != os.Getpid() {
		t.Fatalf("verdict %v, want the holder %d", c.last, os.Getpid())
	}
	if c.reached(to) {
		t.Fatal("the same stranger counts at the second look")
	}
	members = []int{os.Getpid()}
	if !c.reached(to) {
		t.Fatalf("the listener counts not once its holder is a member: verdict %v", c.last)
	}
	if len(told) != 2 || told[1] != nil {
		t.Errorf("verdicts told: %v, want the stranger then none", told)
	}
}
