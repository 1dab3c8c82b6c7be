package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestStatusOneRequest: a status, and the commands that only read one,
// ask hermesd in one request, its status: no version asked first. The
// bound on hermesd's first answer (TestNoAnswer) is then the status's.
func TestStatusOneRequest(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"status"}, []string{"GET /v1/status"}},
		{[]string{"status", "web"}, []string{"GET /v1/status?unit=web"}},
		{[]string{"-o", "json", "status"}, []string{"GET /v1/status"}},
		{[]string{"is-active", "web"}, []string{"GET /v1/status?unit=web"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			socket, asked := countingDaemon(t)
			root := newRoot()
			dir := t.TempDir()
			root.SetArgs(append([]string{"--socket", socket, "--state", filepath.Join(dir, "state"), "--units", filepath.Join(dir, "units")}, tc.args...))
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			if err := root.ExecuteContext(t.Context()); err != nil {
				t.Fatalf("hermesctl %s: %v\n%s", strings.Join(tc.args, " "), err, out.String())
			}
			if got := asked(); !slices.Equal(got, tc.want) {
				t.Errorf("got requests %q, want %q", got, tc.want)
			}
		})
	}
}

// countingDaemon serves, on a socket of the test's, a daemon that knows
// one unit, web, running, and answers its status to every request; it
// returns the socket and the requests it was sent so far ("GET /v1/status").
func countingDaemon(t *testing.T) (string, func() []string) {
	t.Helper()
	dir := t.TempDir()
	socket := filepath.Join(dir, "hermesd.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		got []string
	)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"daemon":{},"supervisor":{},"units":[{"name":"web","state":"running","pid":10,"pgid":10}],"config_errors":[]}`)
	})}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return socket, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}
