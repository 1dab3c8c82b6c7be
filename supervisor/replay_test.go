package supervisor

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestReplayLargerThanPipe: a replay of more bytes than a pipe holds by
// default reaches a new supervisor in full and in order, each line answered
// once, and the group registered by its last line dies at EOF. On Linux the
// death pipe was grown to hold it all before the script started: an owner
// killed at that moment loses none of it.
func TestReplayLargerThanPipe(t *testing.T) {
	cmd, id := sleeper(t)
	killed := reaper(cmd)
	const far = 1 << 23 // over pid_max: no such group
	pad := strings.Repeat("p", 150)
	var replay [][]byte
	size := 0
	for i := range 3000 {
		l := fmt.Appendf(nil, "R %s%d %d %d 0 - -\n", pad, i, far+i, far+i)
		replay, size = append(replay, l), size+len(l)
	}
	replay = append(replay, fmt.Appendf(nil, "R last %d %d %d - -\n", id.PID, id.PID, id.StartTime))
	answers := make(chan int, len(replay))
	p, err := launchShell(300*time.Millisecond, syscall.Getpgrp(), "", "", "proc", replay, func(i int, err error) {
		if err != nil {
			t.Errorf("replay line %d: %v", i, err)
		}
		answers <- i
	})
	if err != nil {
		t.Fatal(err)
	}
	if size <= 1<<16 {
		t.Fatalf("the replay is %d bytes: not more than a pipe's default", size)
	}
	if got, ok := pipeSize(t, p.(*shellPipe).w); ok && got < size {
		t.Errorf("death pipe holds %d bytes, the replay %d", got, size)
	}
	for want := range replay {
		select {
		case i := <-answers:
			if i != want {
				t.Fatalf("answer for line %d, want line %d", i, want)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%d of %d replay lines answered", want, len(replay))
		}
	}
	p.Close()
	testkit.Receive(t, 20*time.Second, p.Exited(), "supervisor did not exit after EOF")
	if !killed() {
		t.Error("the group of the replay's last line survived EOF")
	}
}

// TestPrefillBeforeStart: the replay is in the death pipe as soon as
// prefill returns, before any script or writer runs, in order, and on
// Linux all of it (the pipe grown to hold it); elsewhere what does not fit
// stays queued for the writer.
func TestPrefillBeforeStart(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var replay [][]byte
	var all []byte
	for i := range 3000 {
		l := fmt.Appendf(nil, "R %s%d %d %d 0 - -\n", strings.Repeat("p", 150), i, 1<<23+i, 1<<23+i)
		replay, all = append(replay, l), append(all, l...)
	}
	p := &shellPipe{w: w, kick: make(chan struct{}, 1)}
	p.Send(replay, nil)
	p.prefill()
	written := len(all) - len(p.unsent)
	if _, grown := pipeSize(t, w); grown && written != len(all) {
		t.Fatalf("prefill wrote %d of the replay's %d bytes", written, len(all))
	}
	if written == 0 {
		t.Fatal("prefill wrote nothing")
	}
	got := make([]byte, written)
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, all[:written]) || !bytes.Equal(p.unsent, all[written:]) {
		t.Error("the pipe and the queue do not hold the replay in order")
	}
}
