package main

import (
	"fmt"
	"io"

	"github.com/hermes-units/hermes/control"
)

// writeOwned writes the groups hermesd keeps for control owners (agents
// through clients/python and clients/node): one row each, with its owner,
// its ownership and, for a persist_on_release group, its reason.
func writeOwned(w io.Writer, st control.Status) {
	if len(st.Owned) == 0 {
		return
	}
	t := table{{{text: "NAME"}, {text: "PGID"}, {text: "OWNER"}, {text: "OWNERSHIP"}, {text: "STATE"}, {text: "REASON"}}}
	for _, g := range st.Owned {
		t = append(t, []cell{{text: g.Name}, {text: num(g.PGID)}, {text: "pid " + num(g.Owner)}, {text: string(g.Ownership)}, {text: string(g.State)}, {text: dash(g.Reason)}})
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "groups kept for their owners (owned ones die with the owner, and with hermesd):")
	t.write(w, "  ")
}
