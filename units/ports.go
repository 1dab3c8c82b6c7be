package units

import (
	"fmt"
	"slices"
)

// The port rule: two units cannot hold one port. Of two units that declare
// a port, one holds it and the other fails (it is not loaded), with an
// error at its own declaration that names the holder and where the holder
// declares it.
//
// Which of the two holds the port is a matter of precedence. The files
// alone do not say which unit runs: LoadDir lets the earlier name hold it
// (deterministic, so that a first load of hermesd and `hermesctl validate`
// agree); LoadDirWith ranks the units of the directory before the files
// laid over it; a caller that knows more settles the rule again with
// Ports.Settle (the reconciler: a unit it has, unchanged, before one added
// or changed since).

// Claim is one declaration of a port in a unit file.
type Claim struct {
	Port   int
	File   string
	Line   int
	Column int
}

func (c Claim) at() string {
	return fmt.Sprintf("%s:%d:%d", c.File, c.Line, c.Column)
}

// Ports lists, for each unit the port rule applies to, its declarations
// of ports in file order.
type Ports map[string][]Claim

// Rank is a unit's precedence in the port rule. Units of a lower Tier
// claim their ports first. Why completes "unit X ..." in the error of a
// unit that loses a port to one of this tier ("was there first,
// unchanged"); between units of one tier, the later name fails.
type Rank struct {
	Tier int
	Why  string
}

// Settle applies the port rule. The units are taken in turn, by rank (a
// lower Tier first; rank nil: all of one tier) and then by name: a unit
// holds all its ports when none is held by a unit taken before it, else it
// fails and holds none, with an error (ErrDependency) at each port it
// lost. It returns the errors of the units that fail, by name; p is not
// modified.
func (p Ports) Settle(rank func(unit string) Rank) map[string]Errors {
	if rank == nil {
		rank = func(string) Rank { return Rank{} }
	}
	ranks := make(map[string]Rank, len(p))
	names := sortedKeys(p)
	for _, n := range names {
		ranks[n] = rank(n)
	}
	slices.SortStableFunc(names, func(a, b string) int { return ranks[a].Tier - ranks[b].Tier })
	type holding struct {
		unit  string
		claim Claim
	}
	held := map[int]holding{}
	failed := map[string]Errors{}
	for _, n := range names {
		for _, c := range p[n] {
			if h, ok := held[c.Port]; ok {
				failed[n] = append(failed[n], clashError(c, n, h.claim, h.unit, ranks[h.unit], ranks[n]))
			}
		}
		if len(failed[n]) > 0 {
			continue
		}
		for _, c := range p[n] {
			held[c.Port] = holding{n, c}
		}
	}
	return failed
}

// clashError is the error of unit, which loses c's port to holder (whose
// declaration is hc).
func clashError(c Claim, unit string, hc Claim, holder string, hr, ur Rank) *Error {
	why := fmt.Sprintf("the later name, %s, fails", unit)
	if hr.Tier != ur.Tier && hr.Why != "" {
		why = fmt.Sprintf("%s fails: %s %s", unit, holder, hr.Why)
	}
	return &Error{File: c.File, Line: c.Line, Column: c.Column, Err: ErrDependency,
		Msg: fmt.Sprintf("ports: %d is also declared by unit %q at %s; two units cannot hold one port, and %s; give one of them another port",
			c.Port, holder, hc.at(), why)}
}
