package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

// keptFor finds, when hermesd answers, the group it keeps for a control
// owner that holds the process: the process's own group, or that of the
// owner its ledger entry names (the `hermesctl run` a client library's
// spawn_owned started, which hermesd keeps for the agent).
func (r *whoReport) keptFor(ctx context.Context, g *globals) {
	c, err := dial(g)
	if err != nil {
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, askPathsTimeout)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return
	}
	pgids := []int{r.Process.PGID}
	if r.Entry != nil {
		pgids = append(pgids, r.Entry.Owner.PID) // hermesctl run leads its own group
	}
	for _, pg := range pgids {
		for i := range st.Owned {
			if st.Owned[i].PGID == pg {
				r.Kept = &st.Owned[i]
				return
			}
		}
	}
}

// writeKept says for whom hermesd keeps the process's group, if it does.
func (r *whoReport) writeKept(w io.Writer) {
	k := r.Kept
	if k == nil {
		return
	}
	what := string(k.Ownership)
	if k.Reason != "" {
		what += " (reason: " + k.Reason + ")"
	}
	fmt.Fprintf(w, "%-11s pid %d, group %d (%s), %s, since %s\n", "kept for:", k.Owner, k.PGID, k.Name, what, k.Since.Format(time.RFC3339))
}
