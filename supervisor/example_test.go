package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
)

// An owner spawns a child that dies with it: whatever the owner's death,
// its supervisor sends TERM to the group, then KILL after the grace. Close
// is the clean death.
func Example() {
	ctx := context.Background()
	o, err := supervisor.New(supervisor.Options{Grace: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	c, err := o.SpawnOwned(ctx, supervisor.Spec{Unit: "worker", Argv: []string{"sleep", "1000"}, Env: os.Environ()})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("running:", c.Leader.Alive())
	if err := o.Close(); err != nil {
		log.Fatal(err)
	}
	<-c.Done()
	fmt.Println("after the owner:", c.Leader.Alive())
	// Output:
	// running: true
	// after the owner: false
}

// A spawned child's exit is an event: Done is closed once the leader is
// reaped, and Err says how it ended.
func ExampleOwner_SpawnOwned() {
	o, err := supervisor.New(supervisor.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer o.Close()
	c, err := o.SpawnOwned(context.Background(), supervisor.Spec{Unit: "job", Argv: []string{"sh", "-c", "exit 3"}, Env: os.Environ()})
	if err != nil {
		log.Fatal(err)
	}
	<-c.Done()
	var ee *supervisor.ExitError
	fmt.Println("exit error:", errors.As(c.Err(), &ee))
	// Output:
	// exit error: true
}

// An owner of many children runs a func at each exit with AfterExit,
// rather than a goroutine waiting on each Done.
func ExampleChild_AfterExit() {
	o, err := supervisor.New(supervisor.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer o.Close()
	exits := make(chan string)
	for _, code := range []string{"0", "4"} {
		c, err := o.SpawnOwned(context.Background(), supervisor.Spec{Unit: "job" + code, Argv: []string{"sh", "-c", "exit " + code}, Env: os.Environ()})
		if err != nil {
			log.Fatal(err)
		}
		c.AfterExit(func() { exits <- fmt.Sprintf("%s: %v", c.Unit, c.Err()) })
	}
	got := []string{<-exits, <-exits}
	slices.Sort(got)
	fmt.Println(got[0])
	fmt.Println(got[1])
	// Output:
	// job0: <nil>
	// job4: exit status 4
}

// Own makes a group that something else started die with the owner, as a
// gateway does with the groups a previous gateway left.
func ExampleOwner_Own() {
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	id, err := proc.Read(cmd.Process.Pid)
	if err != nil {
		log.Fatal(err)
	}
	o, err := supervisor.New(supervisor.Options{Grace: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	g := supervisor.Group{Unit: "adopted", PGID: id.PID, Leader: id}
	if err := o.Own(context.Background(), g); err != nil {
		log.Fatal(err)
	}
	o.Close()
	fmt.Println(cmd.Wait())
	// Output:
	// signal: terminated
}

// Release lets a group outlive its owner: the owner's death no longer ends
// it, and it is the releaser's to stop.
func ExampleOwner_Release() {
	ctx := context.Background()
	o, err := supervisor.New(supervisor.Options{Grace: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	c, err := o.SpawnOwned(ctx, supervisor.Spec{Unit: "kept", Argv: []string{"sleep", "1000"}, Env: os.Environ()})
	if err != nil {
		log.Fatal(err)
	}
	if err := o.Release(ctx, c.Group); err != nil {
		log.Fatal(err)
	}
	o.Close()
	fmt.Println("after the owner:", c.Leader.Alive())
	syscall.Kill(-c.PGID, syscall.SIGTERM)
	<-c.Done()
	fmt.Println("after its TERM:", c.Leader.Alive())
	// Output:
	// after the owner: true
	// after its TERM: false
}

// ReleaseOnceEmpty hands a group back once nothing is left in it: here a
// leader that exits, leaving no child behind.
func ExampleOwner_ReleaseOnceEmpty() {
	ctx := context.Background()
	o, err := supervisor.New(supervisor.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer o.Close()
	c, err := o.SpawnOwned(ctx, supervisor.Spec{Unit: "batch", Argv: []string{"sleep", "0.1"}, Env: os.Environ()})
	if err != nil {
		log.Fatal(err)
	}
	if err := o.ReleaseOnceEmpty(ctx, c.Group); err != nil {
		log.Fatal(err)
	}
	<-c.Done()
	fmt.Println("empty:", o.Empty(c.Group))
	// Output:
	// empty: true
}

// StopAll stops groups together: every group has its signal before any is
// waited for, so one that ignores TERM holds back no other.
func ExampleOwner_StopAll() {
	ctx := context.Background()
	o, err := supervisor.New(supervisor.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer o.Close()
	var orders []supervisor.StopOrder
	for _, argv := range [][]string{{"sleep", "1000"}, {"sh", "-c", "trap '' TERM; while :; do sleep 1; done"}} {
		c, err := o.SpawnOwned(ctx, supervisor.Spec{Unit: "u", Argv: argv, Env: os.Environ()})
		if err != nil {
			log.Fatal(err)
		}
		orders = append(orders, supervisor.StopOrder{Group: c.Group, Signal: syscall.SIGTERM, Grace: 200 * time.Millisecond})
	}
	errs := make([]error, len(orders))
	err = o.StopAll(ctx, orders, nil, func(i int, err error) { errs[i] = err })
	fmt.Println(err, errs)
	for _, s := range orders {
		fmt.Println("empty:", o.Empty(s.Group))
	}
	// Output:
	// <nil> [<nil> <nil>]
	// empty: true
	// empty: true
}
