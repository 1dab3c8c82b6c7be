package main

import (
	"reflect"
	"testing"

	"github.com/hermes-units/hermes/control"
)

// node holds itself: inertAll walks it, and its strings, as deep as it goes.
type node struct {
	Name string
	Next *node
	N    int
}

// TestInertAll: every string a status can carry, at any depth (fields,
// pointers, slices, map keys and values, a type that holds itself), is
// made inert; what is clean, and what holds no string, is left as it is.
func TestInertAll(t *testing.T) {
	const evil, tame = "a\x1b]0;pwned\a\u202e", `a\x1b]0;pwned\x07\u202e`
	st := control.Status{
		Daemon: control.Daemon{Units: evil},
		Units: []control.Unit{
			{Name: "clean\tname é", PID: 7, Ports: []int{80}, Error: evil},
			{Name: evil, Job: &control.Job{Schedule: evil, Runs: map[control.JobResult]int{control.JobResult(evil): 2}}},
		},
		ConfigErrors: []control.ConfigError{{File: evil, Message: evil}},
		Recovery:     &control.Recovery{Ended: []control.EndedGroup{{Unit: evil, Error: evil}}},
	}
	inertAll(&st)
	for _, tc := range []struct {
		where     string
		got, want any
	}{
		{"daemon units dir", st.Daemon.Units, tame},
		{"clean name", st.Units[0].Name, "clean\tname é"},
		{"pid", st.Units[0].PID, 7},
		{"ports", st.Units[0].Ports, []int{80}},
		{"error", st.Units[0].Error, tame},
		{"name", st.Units[1].Name, tame},
		{"job schedule", st.Units[1].Job.Schedule, tame},
		{"job runs", st.Units[1].Job.Runs, map[control.JobResult]int{tame: 2}},
		{"config error", st.ConfigErrors[0], control.ConfigError{File: tame, Message: tame}},
		{"recovery", st.Recovery.Ended[0], control.EndedGroup{Unit: tame, Error: tame}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.where, tc.got, tc.want)
		}
	}
	n := &node{Name: "one", Next: &node{Name: evil, N: 2}}
	inertAll(n)
	if n.Name != "one" || n.Next.Name != tame || n.Next.N != 2 {
		t.Errorf("a type that holds itself: got %q then %q (%d), want %q then %q (2)", n.Name, n.Next.Name, n.Next.N, "one", tame)
	}
}
